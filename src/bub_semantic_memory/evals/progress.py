"""Progress of an eval run as a person watches it: fixtures done of all, requests, elapsed, ETA.

On a terminal, a ``rich`` progress bar per prompt version; anywhere else (a log, CI,
a pipe), one plain line per finished fixture, so a long run is never silent. Both go
to the console the caller gives (the CLI passes stderr: stdout stays for results).

The ETA is the mean time per finished fixture (since the run started, concurrency
included) times the fixtures left across all prompt versions; answers from the
response cache come back at once, so it settles after a few real model calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bub_semantic_memory.evals.report import FixtureResult

__all__ = ["RunProgress", "format_duration"]


def format_duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s`` or ``1 h 02 min``."""
    seconds = max(round(seconds), 0)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class RunProgress:
    """Reports an eval of ``total`` fixture extractions (fixtures × prompt versions).

    Args:
        console: where to report; a bar when it is a terminal, lines otherwise.
        total: extractions in the whole eval.
        enabled: ``False`` reports nothing at all.
        clock: seconds, monotonic (tests pass a fake one).
    """

    def __init__(
        self,
        console: Console,
        total: int,
        *,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.total = total
        self.enabled = enabled
        self.clock = clock
        self.done = 0
        self.requests = 0
        self.started = clock()
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._label = ""
        self._run_total = 0
        self._run_done = 0

    @property
    def interactive(self) -> bool:
        return self.enabled and self.console.is_terminal

    def __enter__(self) -> RunProgress:
        if self.interactive:
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[requests]} requests"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def start_run(self, label: str, fixtures: int) -> None:
        """A prompt version starts over ``fixtures`` fixtures."""
        self._label, self._run_total, self._run_done = label, fixtures, 0
        if self._bar is not None:
            self._task = self._bar.add_task(label, total=fixtures, requests=0)

    def fixture_done(self, result: FixtureResult) -> None:
        """One fixture of the current prompt version is extracted and scored."""
        self.done += 1
        self._run_done += 1
        self.requests += result.requests_made
        if not self.enabled:
            return
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, requests=self.requests)
            return
        status = "ok" if result.ok else f"failed ({result.error_type or 'error'})"
        source = "cached" if result.cached else f"{result.requests_made} request(s)"
        self.console.print(
            f"[{self.done}/{self.total}] {self._label} · {result.fixture}: {status}, {source}; "
            f"elapsed {format_duration(self.elapsed)}, ETA {self.eta()}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def finish_run(self) -> None:
        """The current prompt version is done."""
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=f"{self._label} · {format_duration(self.elapsed)}")

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def eta(self) -> str:
        """Time left, estimated from the mean time per finished fixture; ``-`` before the first one."""
        if self.done == 0:
            return "-"
        if self.done >= self.total:
            return "0 s"
        return format_duration(self.elapsed / self.done * (self.total - self.done))
