"""Finding the memory block in the messages an agent call sent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def injected_memory(messages: Sequence[dict[str, Any]]) -> str:
    """The memory block of one agent call ("" when none was injected).

    Also checks where it sits: never in the system message (which must stay the same
    from turn to turn), one user-role message after the conversation so far, followed
    at most by the turn's new prompt.
    """
    assert messages and messages[0]["role"] == "system", "bub sends its system prompt first"
    assert "<memory>" not in str(messages[0]["content"]), "the memory block changed the system message"
    found = [i for i, m in enumerate(messages) if "<memory>" in str(m.get("content"))]
    if not found:
        return ""
    assert len(found) == 1, f"{len(found)} memory blocks in one call"
    [index] = found
    assert messages[index]["role"] == "user"
    assert index >= len(messages) - 2, "the memory block must follow the conversation so far"
    return str(messages[index]["content"])
