"""Importers: conversations written elsewhere turned into eval fixtures (a Bub tape plus gold).

This package owns the way in to the dataset: :func:`import_conversations` reads plain annotated
conversations (JSONL, one per line, written by hand or by the generators under
``evals/sources``) and :func:`import_locomo` reads conversations in the LoCoMo benchmark's layout
(dated sessions between two people, with questions). Both write fixture directories that
:func:`~bub_semantic_memory.evals.load_fixtures` reads, byte-identical for the same input, and
report what they skipped or could not check in an :class:`ImportReport`.
"""

from __future__ import annotations

from bub_semantic_memory.evals.importers._locomo import SPLITS as LOCOMO_SPLITS
from bub_semantic_memory.evals.importers._locomo import import_locomo, locomo_fixtures
from bub_semantic_memory.evals.importers._plain import FixtureIssues, ImportReport, import_conversations

__all__ = [
    "LOCOMO_SPLITS",
    "FixtureIssues",
    "ImportReport",
    "import_conversations",
    "import_locomo",
    "locomo_fixtures",
]
