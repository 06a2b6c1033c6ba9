"""Eval results as data: per-fixture results, per-run metrics, comparisons between runs.

This module owns the shape of ``report.json`` (rendering to tables, Markdown and HTML
lives in :mod:`bub_semantic_memory.evals.reports`). A report holds one :class:`PromptRun`
per prompt version, each with its :class:`Metrics` and every fixture's
:class:`FixtureResult` (scores, missed and spurious items, usage, the prediction itself),
so saved reports can be compared later without re-running anything.

Comparisons use a paired bootstrap over fixtures: resample fixture ids with
replacement, recompute both runs' micro F1 on the same resample, and take the 2.5th
and 97.5th percentiles of the difference (fixed seed, so reports are reproducible).
An F1 can be undefined (see :mod:`~bub_semantic_memory.evals.extraction._scoring`): when
either run's F1 over all shared fixtures is undefined there is no delta and no interval
(``None``); otherwise resamples in which either run's F1 is undefined (every drawn fixture
has empty gold and an empty prediction) are left out of the interval.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from bub_semantic_memory._models import Snapshot, Usage
from bub_semantic_memory.evals._dataset import Prediction
from bub_semantic_memory.evals.extraction._scoring import (
    PRF,
    FixtureDiff,
    FixtureScore,
    Recall,
    RelationMisses,
    aggregate,
)

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "Comparison",
    "FixtureResult",
    "Metrics",
    "PromptRun",
    "Report",
    "compare_runs",
    "load_report",
    "paired_bootstrap",
    "percentile",
    "run_metrics",
]

REPORT_SCHEMA_VERSION = 3
"""2: precision, recall, F1 and comparison deltas may be null (undefined). 3: relation diagnostics
(``relations_lenient``, ``relations_given_endpoints``, ``relation_misses``; null in reports made before)."""
DEFAULT_RESAMPLES = 2000


class FixtureResult(FixtureDiff):
    """One fixture under one prompt version: how it was extracted, and its :class:`FixtureDiff`.

    Attributes:
        ok: every window was extracted (False: ``error`` says why; partial results are scored).
        cached: the extraction came from the response cache (no model call in this run).
        calls: extraction calls (windows with a model call).
        first_try_valid_calls: calls whose first answer passed validation.
        usage: what the extraction cost when it ran (the original run's usage when cached).
        requests_made: HTTP requests made in this run (0 when cached).
        snapshots: the snapshots the extraction produced (the memory, with evidence).
    """

    fixture: str
    ok: bool = True
    error: str | None = None
    error_type: str | None = None
    cached: bool = False
    calls: int = 0
    first_try_valid_calls: int = 0
    usage: Usage = Field(default_factory=Usage)
    call_latencies_s: list[float] = Field(default_factory=list)
    requests_made: int = 0
    dropped: list[str] = Field(
        default_factory=list, description="Items the model kept getting wrong, left out with a reason each."
    )
    prediction: Prediction
    snapshots: list[Snapshot] = Field(
        default_factory=list,
        description="What the extraction stored, evidence included: the memory the plugin would hold "
        "(the memory-QA eval reads it; reports made before this field have none).",
    )


class Metrics(BaseModel):
    """Aggregates of one run over all fixtures (micro-averaged scores)."""

    fixtures: int
    failed_fixtures: int
    entities: PRF
    entities_untyped: PRF
    relations: PRF
    facts: PRF | None = Field(
        default=None,
        description="Facts summed over the fixtures with gold facts (facts.json); None when none has any.",
    )
    fact_dates: PRF | None = Field(
        default=None, description="Of the matched facts whose gold fact has a date, those dated right."
    )
    relations_lenient: PRF | None = Field(
        default=None, description="Relations with endpoints matched, type and direction ignored."
    )
    relations_given_endpoints: Recall | None = Field(
        default=None,
        description="Of the gold relations whose two endpoints were extracted, the share matched strictly.",
    )
    relation_misses: RelationMisses | None = Field(
        default=None, description="Missed gold relations by reason: no endpoint, unrelated, mislabelled."
    )
    per_entity_type: dict[str, PRF] = Field(default_factory=dict)
    per_relation_type: dict[str, PRF] = Field(default_factory=dict)
    schema_valid_first_try: float = Field(
        description="Share of extraction calls whose first answer was valid."
    )
    success_rate: float = Field(description="Share of fixtures extracted completely.")
    mean_attempts: float = Field(
        description="Model answers per extracted window: one per step of the strategy, plus re-asks."
    )
    mean_reasks: float = Field(default=0.0, description="Re-asks per extracted window (0.0: none).")
    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = Field(
        default=0, description="Prompt tokens the endpoint reported as served from its prefix cache."
    )
    completion_tokens: int = 0
    requests_made: int = Field(
        default=0, description="HTTP requests made by this run (0 for a cached re-run)."
    )
    cached_fixtures: int = 0
    dropped_items: int = Field(default=0, description="Answer items left out after the re-asks, summed.")
    forbidden_checked: int = Field(default=0, description="Fixtures whose gold forbids names (planted ones).")
    forbidden_fixtures: int = Field(
        default=0, description="Fixtures extracting a name their gold forbids (an injection obeyed)."
    )
    latency_p50_s: float | None = Field(
        default=None, description="Median call latency of fixtures extracted in this run (None: all cached)."
    )
    latency_p95_s: float | None = None


class PromptRun(BaseModel):
    """One prompt version run over the fixtures."""

    prompt: str
    prompt_sha256: str
    ontology_sha256: str | None = None
    """Set when a dataset's ontology replaced the prompt's own: its content hash."""
    model: str
    mode: str
    metrics: Metrics
    fixtures: list[FixtureResult]
    model_class: str | None = None
    """``local`` or ``hosted`` (how the model's requests are billed); None in reports made before."""
    model_note: str = ""
    """What the model is, when the harness knows (the packaged local smoke-test model)."""
    cadence: str = "tape"
    """``tape``: each tape whole, in windows of ``chunk_tokens``; ``plugin``: at the plugin's cadence."""
    states_facts: bool | None = None
    """Whether the prompt version states facts (``facts: true``); None in reports made before. A run
    that states none still has its fact counts (the gold facts all missed), but reports show its fact
    scores as "–": they measure the prompt version's design, not its extraction."""

    @property
    def label(self) -> str:
        """How comparisons and report tables name this run: ``extract@9 (model)``."""
        return f"{self.prompt} ({self.model})"


class Comparison(BaseModel):
    """A candidate run against a baseline run on the fixtures both share."""

    baseline: str
    candidate: str
    fixtures_compared: int
    entity_f1_delta: float | None
    entity_f1_ci95: tuple[float, float] | None
    relation_f1_delta: float | None
    relation_f1_ci95: tuple[float, float] | None
    resamples: int


class Report(BaseModel):
    """``report.json``: every run of an eval, and comparisons of each run with the first."""

    def model_classes(self) -> dict[str, str]:
        """``{model: class}`` for the runs that recorded their model class, in run order."""
        return {run.model: run.model_class for run in self.runs if run.model_class}

    def model_notes(self) -> dict[str, str]:
        """``{model: note}`` for the runs whose model carries a note, in run order."""
        return {run.model: run.model_note for run in self.runs if run.model_note}

    schema_version: int = REPORT_SCHEMA_VERSION
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    rescored_at: datetime | None = None
    """When the predictions were last re-scored (``eval rescore``) on the gold ``dataset_sha256`` names."""
    fixtures_dir: str
    dataset_sha256: str
    fixture_ids: list[str]
    runs: list[PromptRun]
    comparisons: list[Comparison] = Field(default_factory=list)


def load_report(path: Path) -> Report:
    """Read a saved ``report.json`` (raises :class:`~bub_semantic_memory._errors.EvalError` if malformed)."""
    from pydantic import ValidationError

    from bub_semantic_memory._errors import EvalError

    try:
        return Report.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise EvalError(f"cannot read report {path}: {exc}") from exc


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) with linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    if len(values) == 1:
        return float(values[0])
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _counts(
    results: Sequence[FixtureResult], field: Literal["entities", "relations"]
) -> list[tuple[int, int, int]]:
    return [(getattr(r, field).tp, getattr(r, field).predicted, getattr(r, field).gold) for r in results]


def _micro_f1(counts: Sequence[tuple[int, int, int]]) -> float | None:
    tp = sum(c[0] for c in counts)
    predicted = sum(c[1] for c in counts)
    gold = sum(c[2] for c in counts)
    return PRF(tp=tp, predicted=predicted, gold=gold).f1


def _f1_delta(cand: Sequence[tuple[int, int, int]], base: Sequence[tuple[int, int, int]]) -> float | None:
    after, before = _micro_f1(cand), _micro_f1(base)
    return None if after is None or before is None else after - before


def paired_bootstrap(
    baseline: Sequence[FixtureResult],
    candidate: Sequence[FixtureResult],
    field: Literal["entities", "relations"],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float | None, tuple[float, float] | None]:
    """Micro-F1 difference (candidate - baseline) and its 95% paired-bootstrap interval.

    Both sequences must be aligned: the same fixture at the same index. The delta and the
    interval are None when either run's F1 is undefined; resamples with an undefined F1
    are skipped (see the module docstring).
    """
    base, cand = _counts(baseline, field), _counts(candidate, field)
    delta = _f1_delta(cand, base)
    if delta is None:
        return None, None
    if not base:
        return delta, (delta, delta)
    rng = random.Random(seed)
    indices = range(len(base))
    deltas = []
    for _ in range(resamples):
        sample = rng.choices(indices, k=len(base))
        resampled = _f1_delta([cand[i] for i in sample], [base[i] for i in sample])
        if resampled is not None:
            deltas.append(resampled)
    return delta, (round(percentile(deltas, 0.025), 6), round(percentile(deltas, 0.975), 6))


def run_metrics(
    results: Sequence[FixtureResult], scores: Sequence[FixtureScore], *, forbidden_checked: int = 0
) -> Metrics:
    """A run's :class:`Metrics`: its fixtures' scores micro-averaged, and their calls, tokens and latency.

    Args:
        forbidden_checked: how many of the fixtures' golds forbid names.
    """
    dataset = aggregate(scores)
    calls = sum(r.calls for r in results)
    attempts = sum(r.usage.attempts for r in results)
    # A cached fixture carries the latencies of the run that filled the cache (the report says so).
    latencies = [latency for r in results for latency in r.call_latencies_s]
    return Metrics(
        fixtures=len(results),
        failed_fixtures=sum(1 for r in results if not r.ok),
        entities=dataset.entities,
        entities_untyped=dataset.entities_untyped,
        relations=dataset.relations,
        facts=dataset.facts,
        fact_dates=dataset.fact_dates,
        relations_lenient=dataset.relations_lenient,
        relations_given_endpoints=dataset.relations_given_endpoints,
        relation_misses=dataset.relation_misses,
        per_entity_type=dataset.per_entity_type,
        per_relation_type=dataset.per_relation_type,
        schema_valid_first_try=round(sum(r.first_try_valid_calls for r in results) / calls, 4)
        if calls
        else 1.0,
        success_rate=round(sum(1 for r in results if r.ok) / len(results), 4) if results else 0.0,
        mean_attempts=round(attempts / calls, 4) if calls else 0.0,
        mean_reasks=round(sum(r.usage.reasks for r in results) / calls, 4) if calls else 0.0,
        calls=calls,
        prompt_tokens=sum(r.usage.prompt_tokens for r in results),
        cached_tokens=sum(r.usage.cached_tokens for r in results),
        completion_tokens=sum(r.usage.completion_tokens for r in results),
        requests_made=sum(r.requests_made for r in results),
        cached_fixtures=sum(1 for r in results if r.cached),
        dropped_items=sum(len(r.dropped) for r in results),
        forbidden_checked=forbidden_checked,
        forbidden_fixtures=sum(1 for r in results if r.forbidden_extracted),
        latency_p50_s=round(percentile(latencies, 0.5), 3) if latencies else None,
        latency_p95_s=round(percentile(latencies, 0.95), 3) if latencies else None,
    )


def compare_runs(
    baseline: PromptRun, candidate: PromptRun, *, resamples: int = DEFAULT_RESAMPLES
) -> Comparison:
    """Compare two runs on the fixtures they share (paired by fixture id)."""
    theirs = {r.fixture: r for r in candidate.fixtures}
    pairs = [(r, theirs[r.fixture]) for r in baseline.fixtures if r.fixture in theirs]
    base = [b for b, _ in pairs]
    cand = [c for _, c in pairs]
    entity_delta, entity_ci = paired_bootstrap(base, cand, "entities", resamples=resamples)
    relation_delta, relation_ci = paired_bootstrap(base, cand, "relations", resamples=resamples)
    return Comparison(
        baseline=baseline.label,
        candidate=candidate.label,
        fixtures_compared=len(pairs),
        entity_f1_delta=_rounded(entity_delta),
        entity_f1_ci95=entity_ci,
        relation_f1_delta=_rounded(relation_delta),
        relation_f1_ci95=relation_ci,
        resamples=resamples,
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
