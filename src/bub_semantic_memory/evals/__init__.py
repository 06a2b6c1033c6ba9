"""The eval harness: fixtures with gold, and the products measured on them.

The folders, each depending only on those listed before it:

* :mod:`~bub_semantic_memory.evals._dataset` (exported here): fixture directories (a Bub
  tape, ``gold.json``, and ``facts.json`` where a fixture has gold facts), prediction files,
  the dataset hash; every product reads them;
* :mod:`~bub_semantic_memory.evals.importers`: conversations written elsewhere (plain
  annotated JSONL, the LoCoMo layout) turned into fixtures;
* :mod:`~bub_semantic_memory.evals.extraction`: the extraction eval: prompt versions run over
  the fixtures and scored against their gold (scoring, the runner and its response cache,
  the report data, re-scoring, the promotion gate, the hosted cost budget);
* :mod:`~bub_semantic_memory.evals.qa`: the memory-QA eval: does the context an agent
  receives hold the answer, and does a model answer from it;
* :mod:`~bub_semantic_memory.evals.reports`: both reports rendered for people (terminal,
  Markdown, HTML) and written to files.

This face re-exports the dataset and each product's entry points; each subpackage's face
holds the rest of its public names, and the modules behind the faces are private. Nothing
here imports the CLI or the plugin, and importing it does not import bub (the
plugin-cadence replay and the memory-QA contexts import bub's tape store when they run).
"""

from __future__ import annotations

from bub_semantic_memory.evals._dataset import (
    FACTS_FILE,
    GOLD_FILE,
    QUESTIONS_ONLY,
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
from bub_semantic_memory.evals.qa import QAOptions, QAReport, run_qa
from bub_semantic_memory.evals.reports import write_qa_report, write_report_files

__all__ = [
    "FACTS_FILE",
    "GOLD_FILE",
    "PRF",
    "QUESTIONS_ONLY",
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
    "QAOptions",
    "QAReport",
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
    "run_qa",
    "score_dataset",
    "score_fixture",
    "write_qa_report",
    "write_report_files",
]
