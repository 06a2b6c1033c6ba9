"""The memory of one tape: snapshots folded into a graph, and the block rendered from it.

:class:`MemoryGraph` folds extraction snapshots (deduplication, aliases, superseded
relations and facts, ranking) under a person's edits (:class:`EditBook`: forget, set, merge,
end...; each built against a graph by :mod:`._edit_builder`, which also says what it
:func:`changes`); :class:`MemoryIndex` ranks what a question is about; :func:`render_memory`
renders a token-budgeted block for a question; :func:`export_memory` writes the memory as
JSON, GraphML or JSON-LD, and :func:`read_export` reads the JSON back.
Nothing here calls a model or reads a store.
"""

from __future__ import annotations

from bub_semantic_memory.memory import _edit_builder as edit_builder
from bub_semantic_memory.memory._edit_builder import Changes, changes, find_entity, forget_entity
from bub_semantic_memory.memory._edit_rules import EditBook, key_digest
from bub_semantic_memory.memory._export import EXPORT_FORMATS, MemoryExport, export_memory, read_export
from bub_semantic_memory.memory._graph import EntityView, FactView, MemoryGraph, RelationView
from bub_semantic_memory.memory._index import Finding, MemoryIndex, Passage, Ranking
from bub_semantic_memory.memory._render import (
    DEFAULT_BUDGET,
    DEFAULT_PASSAGE_SHARE,
    MemoryBlock,
    QuotedLine,
    render_memory,
)

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_PASSAGE_SHARE",
    "EXPORT_FORMATS",
    "Changes",
    "EditBook",
    "EntityView",
    "FactView",
    "Finding",
    "MemoryBlock",
    "MemoryExport",
    "MemoryGraph",
    "MemoryIndex",
    "Passage",
    "QuotedLine",
    "Ranking",
    "RelationView",
    "changes",
    "edit_builder",
    "export_memory",
    "find_entity",
    "forget_entity",
    "key_digest",
    "read_export",
    "render_memory",
]
