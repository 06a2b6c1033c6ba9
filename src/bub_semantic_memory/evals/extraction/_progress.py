"""Progress of an eval run as a person watches it: fixtures done of all, requests, elapsed, ETA.

On a terminal, a ``rich`` progress bar per prompt version; anywhere else (a log, CI,
a pipe), one plain line per finished fixture, so a long run is never silent. Both go
to the console the caller gives (the CLI passes stderr: stdout stays for results).

The ETA is the mean time per finished fixture (since the run started, concurrency
included) times the fixtures left across all prompt versions; answers from the
response cache come back at once, so it settles after a few real model calls.

A fixture can take many minutes on a local model (a long tape, the plugin's cadence), and
opening a packaged model the first time assembles 1.1 GB: a heartbeat (:meth:`RunProgress.beat`)
says what is in progress whenever nothing was reported for :data:`HEARTBEAT_S` seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

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

from bub_semantic_memory._durations import format_duration
from bub_semantic_memory.evals.extraction._report import FixtureResult

__all__ = ["HEARTBEAT_S", "RunProgress", "format_duration"]

HEARTBEAT_S = 30.0
"""Longest silence of a run's progress (a line, or the bar's ticking clock on a terminal)."""
PHASE_QUIET_S = 2.0
"""A step before the fixtures that takes longer than this is said."""


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
        self._said = clock()  # when a line last went out
        self._phase = ""  # what runs before the fixtures (opening the model)
        self._in_flight: dict[str, float] = {}  # fixture -> when it started
        self._where: dict[str, str] = {}  # fixture -> how far its extraction got ("turn 3 of 9")

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

    def fixture_started(self, fixture: str) -> None:
        """A fixture's extraction starts (the heartbeat names the fixtures in flight)."""
        self._in_flight[fixture] = self.clock()

    def fixture_progress(self, fixture: str, where: str) -> None:
        """How far a fixture in flight got, said by the heartbeat (a long tape at the plugin's cadence)."""
        self._where[fixture] = where

    def note(self, line: str) -> None:
        """Say ``line`` now (something a person watching the run should know, such as a resume)."""
        self._say(line)

    def fixture_done(self, result: FixtureResult) -> None:
        """One fixture of the current prompt version is extracted and scored."""
        self._in_flight.pop(result.fixture, None)
        self._where.pop(result.fixture, None)
        self._said = self.clock()
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

    async def phase[T](self, what: str, work: Awaitable[T]) -> T:
        """Await ``work``, a step before the fixtures that ``what`` names: the heartbeat says it
        after :data:`PHASE_QUIET_S` seconds (a quick one says nothing), then as usual."""
        self._phase = what
        self._said = self.clock() - HEARTBEAT_S + PHASE_QUIET_S
        try:
            return await work
        finally:
            self._phase = ""

    def beat(self) -> str | None:
        """The heartbeat: a line saying what is in progress, if nothing was said for
        :data:`HEARTBEAT_S` seconds (and nothing when the bar's clock is ticking on a terminal)."""
        now = self.clock()
        if not self.enabled or now - self._said < HEARTBEAT_S:
            return None
        if self._phase:
            line = f"{self._phase}: {format_duration(now - self.started)} so far"
        elif self._in_flight and self._bar is None:
            running = ", ".join(
                f"{name} ({', '.join(filter(None, [format_duration(now - since), self._where.get(name)]))})"
                for name, since in self._in_flight.items()
            )
            line = f"[{self.done}/{self.total}] {self._label} · still extracting {running}"
        else:
            return None
        self._say(line)
        return line

    async def heartbeat(self, every: float = 1.0) -> None:
        """Call :meth:`beat` every ``every`` seconds until cancelled."""
        while True:
            await asyncio.sleep(every)
            self.beat()

    def _say(self, line: str) -> None:
        self._said = self.clock()
        if self.enabled:
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)

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
