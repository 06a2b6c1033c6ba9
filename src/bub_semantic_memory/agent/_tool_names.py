"""The names of the agent's memory tools, which the plugin registers and notes never quote."""

from __future__ import annotations

__all__ = ["MEMORY_TOOLS", "is_memory_tool"]

MEMORY_TOOLS = ("memory.search", "memory.recall", "memory.forget")
"""The agent's memory tools, by the names bub registers (the model sees ``memory_search``...)."""


def is_memory_tool(name: str) -> bool:
    """Whether a tool call's ``name`` is one of :data:`MEMORY_TOOLS`, in either spelling."""
    return name.replace("_", ".", 1) in MEMORY_TOOLS
