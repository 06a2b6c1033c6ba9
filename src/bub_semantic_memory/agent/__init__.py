"""The memory of running agents, without bub's hooks.

:class:`MemorySetup` resolves, once, everything that decides a tape's memory (what extracts it,
the prompt version and ontology, the cadence and note budget, the redactor) and builds the rest:
the :class:`MemoryService` of running agents (a tape's graph loaded once, notes rendered for
questions, extraction in the background by the cadence) and a person's :class:`MemoryEditor`.
:class:`MemoryPolicy` holds the cadence and budget defaults, written once.

The names load on first use: the service and the editor import bub's tape stores, which the
policy and a command's ``--help`` do not need. :mod:`._injection` (memory notes between an
agent's turns), :mod:`._search` (what ``memory.search`` and ``memory.recall`` answer) and
:mod:`._tool_names` serve the plugin.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bub_semantic_memory.agent._editor import EditResult, MemoryEditor
    from bub_semantic_memory.agent._injection import MemoryNote, NoteBook, shown_lines, split_at_notes
    from bub_semantic_memory.agent._lag import ExtractionLag
    from bub_semantic_memory.agent._policy import ExtractionCadence, MemoryPolicy, default_cadence
    from bub_semantic_memory.agent._search import recall_entity, search_memory
    from bub_semantic_memory.agent._service import MemoryService
    from bub_semantic_memory.agent._setup import MemorySetup
    from bub_semantic_memory.agent._tool_names import MEMORY_TOOLS

__all__ = [
    "MEMORY_TOOLS",
    "EditResult",
    "ExtractionCadence",
    "ExtractionLag",
    "MemoryEditor",
    "MemoryNote",
    "MemoryPolicy",
    "MemoryService",
    "MemorySetup",
    "NoteBook",
    "default_cadence",
    "recall_entity",
    "search_memory",
    "shown_lines",
    "split_at_notes",
]

_MODULES = {
    "MEMORY_TOOLS": "_tool_names",
    "MemoryNote": "_injection",
    "NoteBook": "_injection",
    "recall_entity": "_search",
    "search_memory": "_search",
    "shown_lines": "_injection",
    "split_at_notes": "_injection",
    "EditResult": "_editor",
    "MemoryEditor": "_editor",
    "ExtractionCadence": "_policy",
    "ExtractionLag": "_lag",
    "MemoryPolicy": "_policy",
    "default_cadence": "_policy",
    "MemoryService": "_service",
    "MemorySetup": "_setup",
}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
