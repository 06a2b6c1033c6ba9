"""Progress of a memory-QA run as a person watches it: questions done of all, elapsed, ETA.

A LoCoMo split is about 800 questions: building every condition's context takes minutes without
a model, and a local model answers one context in tens of seconds. A line goes out when a
question is done and :data:`HEARTBEAT_S` seconds passed since the last line, and when the last
one is done: a log is not flooded, and a run is silent no longer than its slowest question.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console

from bub_semantic_memory.evals.extraction._progress import HEARTBEAT_S, format_duration

__all__ = ["QuestionProgress"]


class QuestionProgress:
    """A ``progress`` callback for :class:`~._run.QAOptions` that prints to ``console``.

    Args:
        console: where the lines go (the CLI passes stderr).
        clock: seconds, monotonic (tests pass a fake one).
    """

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self.started = clock()
        self._said = self.started

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if done < total and now - self._said < HEARTBEAT_S:
            return
        self._said = now
        elapsed = now - self.started
        eta = format_duration(elapsed / done * (total - done)) if done else "unknown"
        self.console.print(
            f"Memory QA: {done:,}/{total:,} questions; elapsed {format_duration(elapsed)}, ETA {eta}",
            markup=False,
        )
