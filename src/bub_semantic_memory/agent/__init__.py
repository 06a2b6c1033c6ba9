"""The memory of running agents, without bub's hooks.

:class:`MemoryService` loads each tape's graph once, renders blocks for questions and
extracts in the background by a cadence; the notes module places memory notes between
turns so an agent's prompt prefix stays cacheable. :class:`MemoryEditor` makes a person's
edits of a tape's memory on its store (the CLI's ``memory`` verbs).
"""

from __future__ import annotations

from bub_semantic_memory.agent._editing import EditResult, MemoryEditor
from bub_semantic_memory.agent._service import MemoryPolicy, MemoryService

__all__ = ["EditResult", "MemoryEditor", "MemoryPolicy", "MemoryService"]
