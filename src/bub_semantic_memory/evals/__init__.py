"""The eval harness: fixtures with gold, importing conversations as fixtures, scoring.

* :mod:`~bub_semantic_memory.evals._dataset`: fixture directories (a Bub tape plus
  ``gold.json``), prediction files, the dataset hash;
* :mod:`~bub_semantic_memory.evals.importers`: plain annotated conversations (JSONL), and
  conversations in the LoCoMo benchmark's layout (dated sessions between two people, with
  questions), to fixture directories with realistic Bub tapes;
* :mod:`~bub_semantic_memory.evals.extraction`: one-to-one alignment of predictions with
  gold and micro-averaged precision, recall and F1.

Nothing here imports bub, the CLI or the plugin.
"""

from __future__ import annotations

from bub_semantic_memory.evals._dataset import (
    FACTS_FILE,
    GOLD_FILE,
    TAPE_FILE,
    UNKNOWN,
    Fixture,
    Gold,
    GoldEntity,
    GoldFact,
    GoldFacts,
    GoldRelation,
    Prediction,
    Question,
    QuestionCategory,
    dataset_hash,
    load_fixtures,
    load_predictions,
)
from bub_semantic_memory.evals.extraction import (
    PRF,
    DatasetScore,
    FixtureScore,
    Report,
    RunOptions,
    ScoringConfig,
    load_report,
    run_eval,
    score_dataset,
    score_fixture,
)
from bub_semantic_memory.evals.importers import (
    FixtureIssues,
    ImportReport,
    import_conversations,
    import_locomo,
)

__all__ = [
    "FACTS_FILE",
    "GOLD_FILE",
    "PRF",
    "TAPE_FILE",
    "UNKNOWN",
    "DatasetScore",
    "Fixture",
    "FixtureIssues",
    "FixtureScore",
    "Gold",
    "GoldEntity",
    "GoldFact",
    "GoldFacts",
    "GoldRelation",
    "ImportReport",
    "Prediction",
    "Question",
    "QuestionCategory",
    "Report",
    "RunOptions",
    "ScoringConfig",
    "dataset_hash",
    "import_conversations",
    "import_locomo",
    "load_fixtures",
    "load_predictions",
    "load_report",
    "run_eval",
    "score_dataset",
    "score_fixture",
]
