"""The extraction eval: what an extractor found, scored against the gold of the fixtures.

This package owns how extraction is measured: the scoring (a one-to-one alignment of predicted
entities, relations and facts with the gold, then micro-averaged precision, recall and F1, with
undefined never read as perfect) and the label spaces of gold written elsewhere (label maps and
dataset ontologies).
"""

from __future__ import annotations

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
    "DATASET_ONTOLOGY_FILE",
    "PRF",
    "DatasetScore",
    "FixtureDiff",
    "FixtureScore",
    "LabelMap",
    "LabelSpaceReport",
    "Recall",
    "RelationMisses",
    "ScoringConfig",
    "check_label_space",
    "load_dataset_ontology",
    "load_label_map",
    "ontology_sha256",
    "score_dataset",
    "score_fixture",
    "scoring_config",
]
