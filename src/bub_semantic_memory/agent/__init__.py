"""The memory of running agents, without bub's hooks.

:class:`MemoryService` loads each tape's graph once, renders blocks for questions and
extracts in the background by a cadence; the notes module places memory notes between
turns so an agent's prompt prefix stays cacheable.
"""

from __future__ import annotations

from bub_semantic_memory.agent._service import MemoryPolicy, MemoryService

__all__ = ["MemoryPolicy", "MemoryService"]
