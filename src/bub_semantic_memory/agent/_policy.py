"""When a tape's memory is extracted, how much of it a note holds, what the agent may edit.

:class:`MemoryPolicy` is the one place these defaults are written: the plugin's settings, the
CLI's options and the evals take theirs from it (a test checks that they agree). The cadence
depends on the backend, and :meth:`MemoryPolicy.cadence` is the one place it is decided from
what the backend declares.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bub_semantic_memory.backends import BackendTraits
from bub_semantic_memory.memory import DEFAULT_BUDGET, DEFAULT_PASSAGE_SHARE

__all__ = ["ExtractionCadence", "MemoryPolicy", "default_cadence"]

_EVERY_TURNS = 6
_MIN_NEW_TOKENS = 1200


@dataclass(frozen=True)
class ExtractionCadence:
    """When a tape's new entries are extracted, resolved for one extractor.

    Attributes:
        every_turns: after this many new user turns (None: turns are not counted).
        min_new_tokens: or once the new transcript reaches this many tokens (0: never by size).

    A handoff (an anchor) and shutdown extract whatever is new, whatever the cadence.
    """

    every_turns: int | None
    min_new_tokens: int


@dataclass(frozen=True, kw_only=True)
class MemoryPolicy:
    """When to extract, how much to inject, how hard to try.

    Attributes:
        budget: estimated tokens of a rendered memory block.
        every_turns: extract after every N-th user turn (and at handoffs and shutdown); None:
            the backend's default (see :meth:`cadence`).
        min_new_tokens: or as soon as the new transcript reaches this many tokens (0: off);
            None: the backend's default.
        max_concurrent: extractions running at once across tapes.
        retry_cooldown: seconds before a tape whose extraction failed is tried again.
        failed_window_tries: runs in a row (counted in this process) a window may fail because
            every answer of the model broke a rule, with nothing in it valid, before the entries
            every such run held are stored as extracted with nothing kept (the reason in the
            snapshot's ``dropped``, a warning logged), so the memory goes on past them; 0: retried
            for as long as they fail. The default gives up at the first such run: the re-asks have
            already shown the model its errors, a model at temperature 0 answers the same window the
            same way again, and a ``bub run`` (or a catch-up process) is one run, so a count above
            1 is reached only by a process that lives for many turns. The lines stay in the tape,
            where the note's quoted lines find them. Transport failures, cut answers and answers
            with more items than the schema allows are always retried.
        checkpoint_every: store a checkpoint after this many new snapshots (0: never).
        passage_share: the share of ``budget`` the transcript lines that match the latest
            message best may take, shown after the facts (0: facts only). The facts get what the
            lines leave unused.
        max_agent_forgets: forgets the agent's ``memory.forget`` may make in one turn; a further
            call is refused (text in the tape could make the agent forget everything).
    """

    budget: int = DEFAULT_BUDGET
    every_turns: int | None = None
    min_new_tokens: int | None = None
    max_concurrent: int = 2
    retry_cooldown: float = 30.0
    failed_window_tries: int = 1
    checkpoint_every: int = 200
    passage_share: float = DEFAULT_PASSAGE_SHARE
    max_agent_forgets: int = 3

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> MemoryPolicy:
        """The policy ``settings`` describe, by the settings' names (``None`` and unknown names
        leave the default)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in settings.items() if k in names and v is not None})

    def cadence(self, traits: BackendTraits, chunk_tokens: int) -> ExtractionCadence:
        """The cadence for an extractor whose backend declares ``traits`` and whose windows hold
        ``chunk_tokens`` of new transcript: the one place its defaults are decided.

        What is set wins. Unset, an endpoint extracts every 6th user turn or once 1,200 tokens
        are new: short windows, a memory that keeps up. A model in this process extracts once a
        window's worth is new (``chunk_tokens``), turns uncounted: every window pays a fixed part
        (instructions, known entities, earlier lines, a request per step) that a CPU evaluates
        again, and on the fixtures a window's worth extracted as well or better (issue 48: tune
        and test, benchmarks section 6); the recent turns are in the agent's own context meanwhile.
        """
        if traits.in_process:
            every, tokens = None, chunk_tokens
        else:
            every, tokens = _EVERY_TURNS, _MIN_NEW_TOKENS
        return ExtractionCadence(
            every_turns=self.every_turns if self.every_turns is not None else every,
            min_new_tokens=self.min_new_tokens if self.min_new_tokens is not None else tokens,
        )


def default_cadence() -> dict[str, str]:
    """How each cadence setting left unset is decided, in words, for the settings' descriptions
    and the CLI's help (as :func:`~bub_semantic_memory.extraction.default_bounds` does the bounds)."""
    return {
        "every_turns": f"{_EVERY_TURNS}; for a local model, off: it extracts by size",
        "min_new_tokens": f"{_MIN_NEW_TOKENS}; for a local model, its window size",
    }
