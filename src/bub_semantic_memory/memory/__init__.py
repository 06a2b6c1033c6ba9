"""The memory of one tape: snapshots folded into a graph, and the block rendered from it.

:class:`MemoryGraph` folds extraction snapshots (deduplication, aliases, superseded
relations and facts, ranking) under a person's edits (:class:`EditBook`: forget, set, merge,
end...; each built against a graph by :mod:`._editing`, which also says what it
:func:`changes`); :class:`MemoryIndex` ranks what a question is about; :func:`render_memory`
renders a token-budgeted block for a question; :func:`export_memory` writes the memory as
JSON, GraphML or JSON-LD, and :func:`read_export` reads the JSON back.
Nothing here calls a model or reads a store.
"""

from __future__ import annotations

from bub_semantic_memory.memory._editing import Changes, changes
from bub_semantic_memory.memory._edits import EditBook
from bub_semantic_memory.memory._export import MemoryExport, export_memory, read_export
from bub_semantic_memory.memory._graph import EntityView, FactView, MemoryGraph, RelationView
from bub_semantic_memory.memory._index import Finding, MemoryIndex, Ranking
from bub_semantic_memory.memory._render import DEFAULT_BUDGET, MemoryBlock, render_memory

__all__ = [
    "DEFAULT_BUDGET",
    "Changes",
    "EditBook",
    "EntityView",
    "FactView",
    "Finding",
    "MemoryBlock",
    "MemoryExport",
    "MemoryGraph",
    "MemoryIndex",
    "Ranking",
    "RelationView",
    "changes",
    "export_memory",
    "read_export",
    "render_memory",
]
