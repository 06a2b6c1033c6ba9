"""Background extraction of the tapes one process works on: when, one at a time, and at shutdown.

* :meth:`ExtractionScheduler.schedule` extracts a tape's new entries in the background: one run
  per tape at a time with at most one follow-up queued, once the cadence says so
  (:meth:`ExtractionScheduler.extraction_due`). The watermark only moves when a snapshot is
  stored, so a failed or unfinished extraction is redone later.
* :meth:`ExtractionScheduler.drain` extracts what the cadence deferred and waits for running
  extractions, within a grace period, at shutdown, and says which tapes it cut short.
* :meth:`ExtractionScheduler.catch_up` extracts everything after a tape's watermark now (a process
  that carries on what another one cut short).

Each extraction refreshes the tape's memory first (:class:`~._memories.TapeMemories`), so it sees
what other workers stored; it checkpoints the tape every ``checkpoint_every`` snapshots. Failures
are logged and counted, never raised into the agent's turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from bub_semantic_memory._errors import ValidationExhaustedError
from bub_semantic_memory.agent._lag import (
    ExtractionLag,
    ExtractionPace,
    entry_tokens,
    extraction_lag,
    transcript_tokens,
)
from bub_semantic_memory.stores import SnapshotStore, fetch_tape

if TYPE_CHECKING:
    from bub.store import AsyncTapeStore, TapeStore

    from bub_semantic_memory._models import Snapshot
    from bub_semantic_memory.agent._memories import TapeMemories
    from bub_semantic_memory.agent._policy import ExtractionCadence
    from bub_semantic_memory.extraction import Extractor
    from bub_semantic_memory.memory import MemoryGraph

__all__ = ["ExtractionScheduler"]

logger = logging.getLogger(__name__)


def _tape_was_reset(entries: Sequence[Any], watermark: int) -> bool:
    """Whether the tape now ends before the entry its memory was extracted up to."""
    return watermark > 0 and max((e.id for e in entries), default=0) < watermark


class ExtractionScheduler:
    """Extracts the tapes of :class:`~._memories.TapeMemories` by the setup's cadence.

    Args:
        memories: the memories extractions refresh and add to.
        extractor: returns the extractor, or None when extraction is off (called once, on the
            first extraction; the factory logs why it is off).
        stats: counters to add to (shared with the caller).
        claim: entered around each extraction of a tape, with the tape's name; it yields whether
            this process may extract the tape now (False: another process is at it, and the
            entries wait for a later turn). None: always.
    """

    def __init__(
        self,
        memories: TapeMemories,
        extractor: Callable[[], Extractor | None],
        stats: Counter[str],
        claim: Callable[[str], AbstractContextManager[bool]] | None = None,
    ) -> None:
        self.memories = memories
        self.policy = memories.policy
        self.stats = stats
        self._claim = claim
        self._extractor_factory = extractor
        self._extractor: Extractor | None = None
        self._extractor_built = False
        self._running: dict[str, asyncio.Task[None]] = {}
        self._follow_up: set[str] = set()
        self._cooldown_until: dict[str, float] = {}
        self._deferred: dict[str, TapeStore | AsyncTapeStore] = {}
        self._outlived_reset: dict[str, int] = {}  # tape -> watermark of a memory its reset left in place
        self._pace: dict[str, ExtractionPace] = {}  # tape -> its extractions timed in this process
        self._failing_window: dict[str, tuple[int, int, int]] = {}  # tape -> (first, last entry, runs failed)
        self._semaphore: asyncio.Semaphore | None = None

    @property
    def extractor(self) -> Extractor | None:
        """The extractor, built on first use (None: extraction is off, the log says why)."""
        return self._get_extractor()

    def _get_extractor(self) -> Extractor | None:
        if not self._extractor_built:
            self._extractor_built = True
            self._extractor = self._extractor_factory()
        return self._extractor

    def schedule(self, tape: str, store: TapeStore | AsyncTapeStore, *, force: bool = False) -> None:
        """Extract ``tape``'s new entries in the background (one run per tape, one follow-up at most).

        ``store`` is captured now: bub releases its store reference before the lifespan
        (which waits for these tasks) ends. ``force`` ignores the cadence (shutdown flush).
        Must be called from a running event loop.
        """
        running = self._running.get(tape)
        if running is not None and not running.done():
            self._follow_up.add(tape)
            self.stats["follow_ups"] += 1
            return
        task = asyncio.get_running_loop().create_task(
            self._run(tape, store, force=force), name=f"semantic-memory:{tape}"
        )
        self._running[tape] = task
        task.add_done_callback(
            lambda _: self._running.pop(tape, None) if self._running.get(tape) is task else None
        )

    def running(self) -> list[asyncio.Task[None]]:
        """Extractions not finished yet."""
        return [task for task in self._running.values() if not task.done()]

    async def _run(self, tape: str, store: TapeStore | AsyncTapeStore, *, force: bool) -> None:
        while True:
            self._follow_up.discard(tape)
            await self._extract_once(tape, store, force=force)
            if tape not in self._follow_up:
                return

    async def _extract_once(self, tape: str, store: TapeStore | AsyncTapeStore, *, force: bool) -> None:
        if time.monotonic() < self._cooldown_until.get(tape, 0.0):
            self.stats["cooldown_skips"] += 1
            return
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.policy.max_concurrent)
        async with self._semaphore:
            try:
                stored = await self._extract_claimed(tape, store, force=force)
            except Exception as exc:
                self.stats["extraction_failures"] += 1
                self._cooldown_until[tape] = time.monotonic() + self.policy.retry_cooldown
                logger.warning(
                    "semantic memory: extraction of tape %s failed, will retry on a later turn: %s", tape, exc
                )
                return
        self._cooldown_until.pop(tape, None)
        if stored:
            self.stats["extractions"] += 1

    async def _extract_claimed(self, tape: str, store: TapeStore | AsyncTapeStore, *, force: bool) -> int:
        """:meth:`_extract_new_entries` under the tape's claim; 0 when another process holds it."""
        if self._claim is None:
            return await self._extract_new_entries(tape, store, force=force)
        with self._claim(tape) as mine:
            if mine:
                return await self._extract_new_entries(tape, store, force=force)
        self.stats["claimed_elsewhere"] += 1
        return 0

    async def catch_up(self, tape: str, store: TapeStore | AsyncTapeStore) -> int:
        """Extract everything after ``tape``'s watermark now, cadence aside; the snapshots stored.

        Raises what the extraction raises (a caller that carries on another process's work
        wants to know); 0 when another process holds the tape's claim.
        """
        return await self._extract_claimed(tape, store, force=True)

    async def _extract_new_entries(self, tape: str, store: TapeStore | AsyncTapeStore, *, force: bool) -> int:
        """Extract what follows the watermark; return how many snapshots were stored.

        Not yet due by the cadence: the tape is remembered, and extracted at shutdown.
        """
        extractor = self._get_extractor()
        if extractor is None:
            return 0
        snapshots = SnapshotStore(store)
        graph = await self.memories.refresh(tape, store)
        entries = await fetch_tape(store, tape)
        if _tape_was_reset(entries, graph.watermark) and self._outlived_reset.get(tape) != graph.watermark:
            graph = await self._reload_after_reset(tape, store, graph.watermark)
        if not (force or self.extraction_due(entries, graph.watermark)):
            if any(e.id > graph.watermark for e in entries):
                self._deferred[tape] = store
                self.stats["deferred"] += 1
            self.memories.prepare_renders(tape, graph, entries)  # other workers' snapshots may have folded in
            return 0
        self._deferred.pop(tape, None)
        stored = 0
        try:
            while True:
                try:
                    async for _ in self._store_extractions(tape, extractor, entries, graph, snapshots):
                        stored += 1
                    break
                except ValidationExhaustedError as exc:
                    given_up = self._give_up(tape, extractor, exc)
                    if given_up is None:
                        raise
                    graph.add(await snapshots.append(given_up, memory=graph))  # and on past it
                    stored += 1
        except Exception:
            if stored:  # what was stored before the failure is kept: finish its bookkeeping
                with contextlib.suppress(Exception):
                    await self._after_storing(tape, store, snapshots, graph, entries, stored)
            raise
        self._failing_window.pop(tape, None)
        await self._after_storing(tape, store, snapshots, graph, entries, stored)
        return stored

    async def _after_storing(
        self,
        tape: str,
        store: TapeStore | AsyncTapeStore,
        snapshots: SnapshotStore,
        graph: MemoryGraph,
        entries: Sequence[Any],
        stored: int,
    ) -> None:
        """A run's bookkeeping: the renders prepared, a checkpoint when due, what still waits logged."""
        if any(erasure.id not in graph.edits for erasure in snapshots.erasures_read.get(tape, ())):
            graph = await self.memories.reload(tape, store)  # purged meanwhile: the loaded memory held it
        self.memories.prepare_renders(tape, graph, entries, stored=stored > 0)
        if stored:
            await self._checkpoint_if_due(tape, snapshots, stored)
            await self._log_lag(tape, store, graph.watermark)

    async def _store_extractions(
        self,
        tape: str,
        extractor: Extractor,
        entries: Sequence[Any],
        graph: MemoryGraph,
        snapshots: SnapshotStore,
    ) -> AsyncIterator[Snapshot]:
        """Extract what follows ``graph``'s watermark, storing each snapshot as it comes (the
        graph learns each one) and yielding it once stored. Raises what the extraction raises."""
        # the snapshots cover what follows the watermark: only those entries are counted
        tokens = entry_tokens([e for e in entries if e.id > graph.watermark])
        async for extracted in extractor.iter_extract(entries, tape=tape, memory=graph):
            # the store leaves out what a purge erased, even one made since the graph was read
            kept = await snapshots.append(extracted, memory=graph)
            graph.add(kept)
            pace = ExtractionPace.of([extracted], entries, tokens=tokens)
            self._pace[tape] = self._pace.get(tape, ExtractionPace()) + pace
            self.stats["snapshots"] += 1
            yield kept

    def _give_up(self, tape: str, extractor: Extractor, failure: ValidationExhaustedError) -> Snapshot | None:
        """The snapshot that stores the entries ``failure``'s window began with, with nothing kept,
        once runs starting there have failed ``policy.failed_window_tries`` times in a row; None
        while they have runs left, and for an answer that listed more items than the schema allows
        (its items were never checked: that is not an answer with nothing valid in it).

        The entries given up are those every failing run held: a tape's last window grows between
        runs. Counted in this process: a restart gives the window its runs again.
        """
        limit = self.policy.failed_window_tries
        if failure.window is None or failure.too_many_items or limit < 1:
            return None
        first, last = failure.window
        earlier_first, earlier_last, runs = self._failing_window.get(tape, (first, last, 0))
        if earlier_first == first:
            last, runs = min(last, earlier_last), runs + 1
        else:
            runs = 1
        if runs < limit:
            self._failing_window[tape] = (first, last, runs)
            return None
        self._failing_window.pop(tape, None)
        self.stats["windows_given_up"] += 1
        logger.warning(
            "semantic memory: tape %s: entries %d-%d failed %d run(s) in a row, every answer breaking a "
            "rule; stored with nothing kept, so the memory goes on past them: %s",
            tape,
            first,
            last,
            runs,
            failure.reason,
        )
        return extractor.given_up(failure, tape=tape, last_entry_id=last)

    async def _log_lag(self, tape: str, store: TapeStore | AsyncTapeStore, watermark: int) -> None:
        """Say what waits after an extraction (turns that arrived meanwhile), for a user of a slow
        model; the tape is read again, since the extraction read it before those turns."""
        try:
            entries = await fetch_tape(store, tape)
            said = self.lag(tape, entries, watermark).describe()
        except Exception as exc:  # a report only: the extraction is stored, and counts as done
            logger.debug("semantic memory: cannot say what tape %s lags: %s", tape, exc)
            return
        logger.info("semantic memory: tape %s: %s", tape, said)

    def lag(
        self, tape: str, entries: Sequence[Any], watermark: int, *, pace: ExtractionPace | None = None
    ) -> ExtractionLag:
        """What of ``entries`` waits for extraction, at ``pace`` (default: this process's on ``tape``)."""
        return extraction_lag(
            entries,
            watermark,
            pace if pace is not None else self._pace.get(tape, ExtractionPace()),
            due=self.extraction_due(list(entries), watermark),
        )

    async def _reload_after_reset(
        self, tape: str, store: TapeStore | AsyncTapeStore, watermark: int
    ) -> MemoryGraph:
        """Forget this process's graph of a tape that was reset, and read its memory again.

        bub's reset empties the tape and its memory sidecar, and the new entries count
        from 1 again: a graph kept from before would go on showing the old memory and
        skip every new entry up to its old watermark.
        """
        self.stats["tape_resets"] += 1
        self._failing_window.pop(tape, None)  # its entry ids count again from 1
        graph = await self.memories.reload(tape, store)
        if graph.watermark >= watermark:
            self._outlived_reset[tape] = graph.watermark  # reading it again each turn would change nothing
            logger.warning(
                "semantic memory: tape %s restarts below its memory (entry %d), but the memory sidecar "
                "was not reset with it; new entries are extracted once they pass that entry",
                tape,
                graph.watermark,
            )
        return graph

    async def _checkpoint_if_due(self, tape: str, snapshots: SnapshotStore, stored: int) -> None:
        """Every ``checkpoint_every`` snapshots, store a checkpoint so cold loads read only the tail.

        The checkpoint is folded from the store, not from this process's graph; a failure
        is logged and counted and costs only load time later.
        """
        every = self.policy.checkpoint_every
        self.memories.since_checkpoint[tape] = self.memories.since_checkpoint.get(tape, 0) + stored
        if every <= 0 or self.memories.since_checkpoint[tape] < every:
            return
        try:
            written = await snapshots.checkpoint(tape, self.memories.ontology, min_tail=max(1, every // 2))
        except Exception as exc:
            self.stats["checkpoint_failures"] += 1
            logger.warning("semantic memory: cannot store a checkpoint of tape %s: %s", tape, exc)
            return
        self.memories.since_checkpoint[tape] = 0
        self.stats["checkpoints"] += written

    @property
    def cadence(self) -> ExtractionCadence:
        """The cadence, resolved for the extractor (the setup's declared backend until one is built)."""
        extractor = self._extractor if self._extractor_built else None
        if extractor is not None:
            return self.policy.cadence(extractor.traits, extractor.chunk_tokens)
        return self.memories.setup.cadence()

    def extraction_due(self, entries: list[Any], watermark: int) -> bool:
        """The extraction cadence: every N-th user turn, once enough new text accumulated, or at a
        handoff (an anchor: the agent's context is about to lose the turns before it).

        Recent turns are still in the agent's own context, so batching them costs no recall.
        """
        cadence = self.cadence
        new = [e for e in entries if e.id > watermark]
        turns = sum(1 for e in new if e.kind == "message" and e.payload.get("role") == "user")
        if cadence.every_turns is not None and turns >= cadence.every_turns:
            return True
        if any(e.kind == "anchor" and e.payload.get("name") != "session/start" for e in new):
            return True
        if cadence.min_new_tokens > 0 and new:
            return transcript_tokens(new) >= cadence.min_new_tokens
        return False

    async def drain(self, grace_s: float | None = None) -> list[str]:
        """Finish running extractions, extract what the cadence deferred, all within ``grace_s``
        seconds; then cancel what is left and close the extractor. What was cancelled is
        extracted again later: nothing was stored for it.

        Args:
            grace_s: seconds to give extractions (``None``: the extractor's
                ``shutdown_grace_s``: 30 s for an endpoint, none for a model in this process,
                whose thread the backend then stops at once).

        Returns:
            The tapes whose extraction was cancelled, so still have entries after their watermark.
        """
        for tape, store in self.memories.pending_stores.items():  # a forget whose turn never ended
            try:
                await self.memories.commit(tape, store)
            except Exception as exc:
                self.stats["edit_failures"] += 1
                logger.warning("semantic memory: cannot store the forget of tape %s: %s", tape, exc)
        if grace_s is None:
            grace_s = self._shutdown_grace()
        deadline = time.monotonic() + grace_s
        await self._wait_running(deadline)  # a running extraction may still defer its tape
        if grace_s > 0:
            for tape, store in list(self._deferred.items()):
                self.schedule(tape, store, force=True)
        await self._wait_running(deadline)
        cut = [tape for tape, task in self._running.items() if not task.done()]
        for task in self.running():
            task.cancel()
            self.stats["cancelled_at_shutdown"] += 1
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._extractor is not None:
            with contextlib.suppress(Exception):
                await self._extractor.aclose()
            self._extractor = None
            self._extractor_built = False  # a later turn opens a new one
        return cut

    def _shutdown_grace(self) -> float:
        """The extractor's grace at shutdown; none when no extractor was built (nothing runs)."""
        extractor = self._extractor if self._extractor_built else None
        return extractor.shutdown_grace_s if extractor is not None else 0.0

    async def _wait_running(self, deadline: float) -> None:
        tasks = self.running()
        remaining = deadline - time.monotonic()
        if tasks and remaining > 0:
            await asyncio.wait(tasks, timeout=remaining)
