"""The extraction eval: prompt versions run over the fixtures, scored against their gold.

This package owns the product of ``eval run``, ``eval score``, ``eval rescore`` and ``prompts
promote``:

* scoring: a one-to-one alignment of predicted entities, relations and facts with the gold, then
  micro-averaged precision, recall and F1 (undefined is never read as perfect), and the label
  spaces of gold written elsewhere (label maps, dataset ontologies);
* the run: :func:`run_eval` extracts every fixture with each prompt version (bounded concurrency,
  the response cache, progress on stderr, the whole tape or the plugin's cadence replayed turn by
  turn) and scores it;
* the results as data: :class:`Report` (the shape of ``report.json``) with its runs, metrics and
  paired-bootstrap comparisons; :func:`rescore_report` scores a saved report's predictions again;
* the promotion gate (:func:`promote`) and what a prompt version is billed on a hosted endpoint
  (:func:`measure_cost`, held to :data:`BUDGETS`).

Rendering a report for people lives in :mod:`bub_semantic_memory.evals.reports`.
"""

from __future__ import annotations

from bub_semantic_memory.evals.extraction._cache import ResponseCache
from bub_semantic_memory.evals.extraction._cost import (
    BUDGET_TAPE,
    BUDGETS,
    CACHED_PRICE,
    Cost,
    billed_prompt,
    cached_prefix_tokens,
    common_prefix_length,
    load_budget_session,
    measure_cost,
    over_budget,
)
from bub_semantic_memory.evals.extraction._gate import GateOutcome, check_gate, promote
from bub_semantic_memory.evals.extraction._labels import (
    DATASET_ONTOLOGY_FILE,
    LabelMap,
    LabelSpaceReport,
    check_label_space,
    load_dataset_ontology,
    load_label_map,
    ontology_sha256,
    scoring_config,
)
from bub_semantic_memory.evals.extraction._report import (
    REPORT_SCHEMA_VERSION,
    Comparison,
    FixtureResult,
    Metrics,
    PromptRun,
    Report,
    compare_runs,
    load_report,
    percentile,
)
from bub_semantic_memory.evals.extraction._rescore import rescore_report
from bub_semantic_memory.evals.extraction._runner import CachePolicy, Cadence, RunOptions, run_eval
from bub_semantic_memory.evals.extraction._scoring import (
    PRF,
    DatasetScore,
    FixtureDiff,
    FixtureScore,
    Recall,
    RelationMisses,
    ScoringConfig,
    score_dataset,
    score_fixture,
)

__all__ = [
    "BUDGETS",
    "BUDGET_TAPE",
    "CACHED_PRICE",
    "DATASET_ONTOLOGY_FILE",
    "PRF",
    "REPORT_SCHEMA_VERSION",
    "CachePolicy",
    "Cadence",
    "Comparison",
    "Cost",
    "DatasetScore",
    "FixtureDiff",
    "FixtureResult",
    "FixtureScore",
    "GateOutcome",
    "LabelMap",
    "LabelSpaceReport",
    "Metrics",
    "PromptRun",
    "Recall",
    "RelationMisses",
    "Report",
    "ResponseCache",
    "RunOptions",
    "ScoringConfig",
    "billed_prompt",
    "cached_prefix_tokens",
    "check_gate",
    "check_label_space",
    "common_prefix_length",
    "compare_runs",
    "load_budget_session",
    "load_dataset_ontology",
    "load_label_map",
    "load_report",
    "measure_cost",
    "ontology_sha256",
    "over_budget",
    "percentile",
    "promote",
    "rescore_report",
    "run_eval",
    "score_dataset",
    "score_fixture",
    "scoring_config",
]
