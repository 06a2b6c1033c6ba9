"""When a tape's memory is extracted, how much of it a note holds, what the agent may edit.

:class:`MemoryPolicy` is the one place these defaults are written: the plugin's settings, the
CLI's options and the evals take theirs from it (a test checks that they agree).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bub_semantic_memory.memory import DEFAULT_BUDGET, DEFAULT_PASSAGE_SHARE

__all__ = ["MemoryPolicy"]


@dataclass(frozen=True, kw_only=True)
class MemoryPolicy:
    """When to extract, how much to inject, how hard to try.

    Attributes:
        budget: estimated tokens of a rendered memory block.
        every_turns: extract after every N-th user turn (and at handoffs and shutdown).
        min_new_tokens: or as soon as the new transcript reaches this many tokens (0: off).
        max_concurrent: extractions running at once across tapes.
        retry_cooldown: seconds before a tape whose extraction failed is tried again.
        checkpoint_every: store a checkpoint after this many new snapshots (0: never).
        passage_share: the share of ``budget`` kept for the transcript lines that match the
            latest message best, shown after the facts (0: facts only). The facts get what the
            lines leave unused.
        max_agent_forgets: forgets the agent's ``memory.forget`` may make in one turn; a further
            call is refused (text in the tape could make the agent forget everything).
    """

    budget: int = DEFAULT_BUDGET
    every_turns: int = 6
    min_new_tokens: int = 1200
    max_concurrent: int = 2
    retry_cooldown: float = 30.0
    checkpoint_every: int = 200
    passage_share: float = DEFAULT_PASSAGE_SHARE
    max_agent_forgets: int = 3

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> MemoryPolicy:
        """The policy ``settings`` describe, by the settings' names (``None`` and unknown names
        leave the default)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in settings.items() if k in names and v is not None})
