"""Re-scoring saved reports: the same predictions, today's gold and scorer, no model call.

A report holds every fixture's prediction, so when the gold is corrected or the scorer learns
something (inverse types, the relation diagnostics), its numbers can be brought up to date.
:func:`rescore_report` scores every run's predictions against the fixtures' current gold with
the scoring the run's ontology implies, recomputes each run's metrics and the report's
comparisons, and records when (``rescored_at``) and on which dataset (``dataset_sha256``,
``fixtures_dir``). Everything else a run recorded (predictions, snapshots, usage, latencies,
errors, dropped items) is kept as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from bub_semantic_memory._errors import EvalError
from bub_semantic_memory.evals._dataset import Fixture, dataset_hash
from bub_semantic_memory.evals.extraction._report import PromptRun, Report, compare_runs, run_metrics
from bub_semantic_memory.evals.extraction._scoring import ScoringConfig, score_fixture

__all__ = ["rescore_report"]


def rescore_report(
    report: Report,
    fixtures: Sequence[Fixture],
    scoring: Callable[[PromptRun], ScoringConfig],
    *,
    fixtures_dir: Path | str,
    now: datetime | None = None,
) -> Report:
    """``report`` with every run's predictions scored again on ``fixtures``' gold.

    Args:
        fixtures: the fixtures to score on; every fixture a run holds must be among them.
        scoring: the scoring configuration of a run (its ontology's symmetric and inverse
            types, a label map, synonyms).
        fixtures_dir: recorded as the report's fixture directory.
        now: the time recorded as ``rescored_at`` (default: the current time).

    Raises:
        EvalError: a run holds a fixture that ``fixtures`` lacks.
    """
    by_id = {fixture.id: fixture for fixture in fixtures}
    wanted = list(dict.fromkeys([*report.fixture_ids, *_run_fixture_ids(report)]))
    missing = [fid for fid in wanted if fid not in by_id]
    if missing:
        raise EvalError(f"the report holds fixtures the fixture directory lacks: {', '.join(missing)}")
    runs = [_rescore_run(run, by_id, scoring(run)) for run in report.runs]
    labels = {run.label: run for run in runs}
    comparisons = [
        compare_runs(labels[c.baseline], labels[c.candidate], resamples=c.resamples)
        if c.baseline in labels and c.candidate in labels
        else c
        for c in report.comparisons
    ]
    return report.model_copy(
        update={
            "runs": runs,
            "comparisons": comparisons,
            "fixtures_dir": str(fixtures_dir),
            "dataset_sha256": dataset_hash([by_id[fid] for fid in wanted]),
            "rescored_at": now or datetime.now(UTC),
        }
    )


def _run_fixture_ids(report: Report) -> list[str]:
    return [result.fixture for run in report.runs for result in run.fixtures]


def _rescore_run(run: PromptRun, fixtures: dict[str, Fixture], config: ScoringConfig) -> PromptRun:
    results, scores = [], []
    for result in run.fixtures:
        fixture = fixtures[result.fixture]
        score = score_fixture(fixture.gold, result.prediction, config, facts=fixture.facts)
        scores.append(score)
        results.append(result.model_copy(update=score.diff_fields()))
    checked = sum(1 for result in run.fixtures if fixtures[result.fixture].gold.forbidden)
    return run.model_copy(
        update={"fixtures": results, "metrics": run_metrics(results, scores, forbidden_checked=checked)}
    )
