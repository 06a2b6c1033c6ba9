"""The promotion gate: a candidate prompt version replaces the promoted one only if it does not regress.

Promotions are per model class (``local``: a model in this process; ``hosted``: an endpoint
that bills every request with its tool schemas), decided on that class's code path: the
model the gate runs decides the class, and the candidate replaces that class's promotion.

The gate runs the class's promoted version (the baseline; or one given) and the candidate
on the same fixtures with the same model, and refuses the candidate when its entity F1,
relation F1 or success rate falls more than ``tolerance`` below the baseline's, or when
it costs more than :data:`MAX_TOKEN_GROWTH` times the baseline's prompt tokens per
fixture without an F1 gain outside the comparison's 95% interval (a gain is "outside"
when the interval's lower bound is above 0), or when it obeys an injection (extracts a
name the gold forbids) in more fixtures than the baseline. With nothing promoted yet, the candidate
only has to extract at least one fixture.

The relative rules alone let a chain of promotions drift: each version passes against the one
before it. So a billed class also has an absolute budget (:data:`~._cost.BUDGETS`): the
candidate's billed prompt tokens on the budget session, tool schemas included, per token of
the session (:func:`~._cost.measure_cost`); a candidate over it is refused whatever it scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from bub_semantic_memory._errors import GateError
from bub_semantic_memory.backends import ModelClass, declared_traits
from bub_semantic_memory.evals._dataset import Fixture
from bub_semantic_memory.evals.extraction._cost import (
    BUDGETS,
    Cost,
    load_budget_session,
    measure_cost,
    over_budget,
)
from bub_semantic_memory.evals.extraction._report import Comparison, PromptRun, Report
from bub_semantic_memory.evals.extraction._runner import RunOptions, run_eval
from bub_semantic_memory.extraction import Promotion, PromptLibrary, PromptTemplate

__all__ = ["DEFAULT_TOLERANCE", "MAX_TOKEN_GROWTH", "GateOutcome", "check_gate", "promote"]

DEFAULT_TOLERANCE = 0.02
MAX_TOKEN_GROWTH = 1.5


def check_gate(
    baseline: PromptRun | None,
    candidate: PromptRun,
    *,
    tolerance: float,
    comparison: Comparison | None = None,
) -> list[str]:
    """Reasons to refuse ``candidate`` (empty: it passes); ``comparison`` is candidate against baseline."""
    reasons: list[str] = []
    if candidate.metrics.success_rate == 0:
        reasons.append(f"{candidate.prompt} extracted no fixture successfully")
    if baseline is None:
        return reasons
    checks = [
        ("entity F1", baseline.metrics.entities.f1, candidate.metrics.entities.f1),
        ("relation F1", baseline.metrics.relations.f1, candidate.metrics.relations.f1),
        ("success rate", baseline.metrics.success_rate, candidate.metrics.success_rate),
    ]
    for label, before, after in checks:
        if before is None or after is None:
            continue  # undefined (no gold and no prediction at all): nothing to compare
        if after < before - tolerance:
            reasons.append(
                f"{label} dropped from {before:.3f} ({baseline.prompt}) to {after:.3f} ({candidate.prompt}), "
                f"more than the tolerance of {tolerance:.3f}"
            )
    obeyed, before_obeyed = candidate.metrics.forbidden_fixtures, baseline.metrics.forbidden_fixtures
    if obeyed > before_obeyed:
        reasons.append(
            f"{candidate.prompt} extracts names planted by an injection in {obeyed} fixture(s), "
            f"{baseline.prompt} in {before_obeyed}"
        )
    growth = _token_growth(baseline, candidate)
    if growth is not None and growth > MAX_TOKEN_GROWTH and not _significant_gain(comparison):
        reasons.append(
            f"{candidate.prompt} sends {growth:.2f}x the prompt tokens per fixture of {baseline.prompt} "
            f"(more than {MAX_TOKEN_GROWTH}x) without an F1 gain outside the 95% interval"
        )
    return reasons


def _token_growth(baseline: PromptRun, candidate: PromptRun) -> float | None:
    """Candidate prompt tokens per fixture over the baseline's (None when the baseline sent none)."""
    before = baseline.metrics.prompt_tokens / max(1, baseline.metrics.fixtures)
    after = candidate.metrics.prompt_tokens / max(1, candidate.metrics.fixtures)
    return after / before if before else None


def _significant_gain(comparison: Comparison | None) -> bool:
    if comparison is None:
        return False
    intervals = (comparison.entity_f1_ci95, comparison.relation_f1_ci95)
    return any(ci is not None and ci[0] > 0 for ci in intervals)


@dataclass(frozen=True)
class GateOutcome:
    """What the gate decided, and the eval it decided on."""

    promotion: Promotion
    report: Report


def _scores(run: PromptRun) -> dict[str, float]:
    """The run's headline scores for the promotion record; undefined ones are left out."""
    metrics = run.metrics
    ratios = {
        "entity_precision": metrics.entities.precision,
        "entity_recall": metrics.entities.recall,
        "entity_f1": metrics.entities.f1,
        "relation_precision": metrics.relations.precision,
        "relation_recall": metrics.relations.recall,
        "relation_f1": metrics.relations.f1,
    }
    scores = {name: round(value, 4) for name, value in ratios.items() if value is not None}
    return scores | {
        "schema_valid_first_try": metrics.schema_valid_first_try,
        "success_rate": metrics.success_rate,
        "fixtures": float(metrics.fixtures),
    }


async def promote(
    library: PromptLibrary,
    candidate: PromptTemplate,
    fixtures: Sequence[Fixture],
    options: RunOptions,
    *,
    baseline: PromptTemplate | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    fixtures_dir: Path | str = "",
    console: Console | None = None,
    budget_session: Fixture | None = None,
    budgets: Mapping[ModelClass, float] = BUDGETS,
) -> GateOutcome:
    """Run baseline and candidate, and promote the candidate for the model's class if it passes the gate.

    Args:
        baseline: the version to compare with (default: the one promoted for the model's class).
        budget_session: the session the cost budget is measured on (default:
            :data:`~._cost.BUDGET_TAPE` under the repository's ``evals/``, found beside ``fixtures_dir``).
        budgets: billed prompt tokens per session token allowed per class (tests of the
            relative rules alone pass none).

    Raises:
        GateError: the candidate regressed or is over its class's budget; the message lists
            every reason.
    """
    model_class = declared_traits(options.model).model_class
    cost = await _cost_within_budget(candidate, model_class, options, budget_session, fixtures_dir, budgets)
    if baseline is None:
        current = library.manifest().promotion(candidate.name, model_class)
        if (
            current is not None
            and current.model_class == model_class
            and current.version != candidate.version
        ):
            baseline = library.load(f"{candidate.name}@{current.version}")
    prompts = [baseline, candidate] if baseline is not None else [candidate]
    report = await run_eval(fixtures, prompts, options, fixtures_dir=fixtures_dir, console=console)
    base_run = report.runs[0] if baseline is not None else None
    cand_run = report.runs[-1]
    comparison = report.comparisons[-1] if base_run is not None and report.comparisons else None
    reasons = check_gate(base_run, cand_run, tolerance=tolerance, comparison=comparison)
    if reasons:
        raise GateError(
            f"{candidate} was not promoted for {model_class} models: " + "; ".join(reasons), report=report
        )
    promotion = library.promote(
        candidate,
        model=options.model,
        model_class=model_class,
        scores=_scores(cand_run),
        baseline=base_run.prompt if base_run else None,
        tolerance=tolerance,
        cost=_cost_record(cost),
    )
    return GateOutcome(promotion=promotion, report=report)


async def _cost_within_budget(
    candidate: PromptTemplate,
    model_class: ModelClass,
    options: RunOptions,
    session: Fixture | None,
    fixtures_dir: Path | str,
    budgets: Mapping[ModelClass, float],
) -> Cost | None:
    """The candidate's billed cost on the budget session, for a billed class; refuses it when over."""
    if model_class not in budgets:
        return None
    if session is None:
        session = load_budget_session(Path(fixtures_dir).parent if fixtures_dir else Path("evals"))
    cost = await measure_cost(candidate, session, config=options.extractor)
    problem = over_budget(cost, model_class, budgets)
    if problem is not None:
        raise GateError(f"{candidate} was not promoted for {model_class} models: {problem}")
    return cost


def _cost_record(cost: Cost | None) -> dict[str, float]:
    if cost is None:
        return {}
    return {
        "ratio": round(cost.ratio, 3),
        "effective_ratio": round(cost.effective_ratio, 3),
        "cached_share": round(cost.cached_share, 4),
        "requests": float(cost.requests),
    }
