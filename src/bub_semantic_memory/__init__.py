"""bub-semantic-memory: a memory of entities and relations, extracted from Bub tapes.

The public surface, by concept:

* data model: :class:`Entity`, :class:`Relation`, :class:`Fact`, :class:`Snapshot`,
  :class:`Usage`, :class:`Ontology`, :class:`MemoryGraph`, and a person's :class:`Edit`;
* input: :func:`read_tape_file`, :func:`render_transcript`;
* prompts: :class:`PromptLibrary`, :class:`PromptTemplate`;
* extraction: :class:`Extractor`, :class:`ExtractorConfig`, :class:`RetryPolicy`,
  :class:`Redactor`;
* storage and injection: :class:`SnapshotStore`, :func:`render_memory`,
  :class:`MemoryService` and :class:`MemoryPolicy` (an agent's memory without bub's hooks),
  :class:`MemoryEditor` (forget, correct, merge, end, undo, import on a store) and
  :func:`export_memory`;
* errors: :class:`SemanticMemoryError` and its subclasses.

The Bub plugin lives in :mod:`bub_semantic_memory.plugin` and the eval harness in
:mod:`bub_semantic_memory.evals`; importing this package imports neither. Importing
it does not import bub either (bub loads a ``.env`` file when imported): the store
names, which need bub, are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bub_semantic_memory._edits import Edit
from bub_semantic_memory._errors import (
    ConfigurationError,
    EditError,
    EvalError,
    ExtractionError,
    FixtureError,
    GateError,
    OutputTruncatedError,
    PromptError,
    PromptFormatError,
    PromptIntegrityError,
    PromptNotFoundError,
    ReplayMissError,
    SemanticMemoryError,
    StoreError,
    TapeNameError,
    TapeReadError,
    TransportError,
    ValidationExhaustedError,
)
from bub_semantic_memory._models import (
    Entity,
    Fact,
    PromptRef,
    Relation,
    Snapshot,
    Usage,
    entity_key,
    normalize_name,
)
from bub_semantic_memory._ontology import Ontology, RelationType
from bub_semantic_memory.backends._transport import RetryPolicy
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.extraction._prompts import PromptLibrary, PromptTemplate
from bub_semantic_memory.memory._export import export_memory
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.memory._render import MemoryBlock, render_memory
from bub_semantic_memory.tape._redact import Redactor
from bub_semantic_memory.tape._transcript import ReadReport, Transcript, read_tape_file, render_transcript

if TYPE_CHECKING:
    from bub_semantic_memory.agent._editor import MemoryEditor
    from bub_semantic_memory.agent._policy import MemoryPolicy
    from bub_semantic_memory.agent._service import MemoryService
    from bub_semantic_memory.agent._setup import MemorySetup
    from bub_semantic_memory.stores._store import SnapshotStore, session_tape_name, validate_tape_name

# Names whose modules import bub, loaded on first use.
_LAZY = {
    "SnapshotStore": "stores._store",
    "session_tape_name": "stores._store",
    "validate_tape_name": "stores._store",
    "MemoryService": "agent._service",
    "MemoryPolicy": "agent._policy",
    "MemorySetup": "agent._setup",
    "MemoryEditor": "agent._editor",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ConfigurationError",
    "Edit",
    "EditError",
    "Entity",
    "EvalError",
    "ExtractionError",
    "Extractor",
    "ExtractorConfig",
    "Fact",
    "FixtureError",
    "GateError",
    "MemoryBlock",
    "MemoryEditor",
    "MemoryGraph",
    "MemoryPolicy",
    "MemoryService",
    "MemorySetup",
    "Ontology",
    "OutputTruncatedError",
    "PromptError",
    "PromptFormatError",
    "PromptIntegrityError",
    "PromptLibrary",
    "PromptNotFoundError",
    "PromptRef",
    "PromptTemplate",
    "ReadReport",
    "Redactor",
    "Relation",
    "RelationType",
    "ReplayMissError",
    "RetryPolicy",
    "SemanticMemoryError",
    "Snapshot",
    "SnapshotStore",
    "StoreError",
    "TapeNameError",
    "TapeReadError",
    "Transcript",
    "TransportError",
    "Usage",
    "ValidationExhaustedError",
    "entity_key",
    "export_memory",
    "normalize_name",
    "read_tape_file",
    "render_memory",
    "render_transcript",
    "session_tape_name",
    "validate_tape_name",
]
