"""The memory of running agents: a setup's memories and their background extraction, as one object.

This is everything the Bub plugin does apart from speaking bub's hooks, so it can be used and
tested without a bub framework: give it a tape store and tape names. It is two jobs, each with
an owner, behind one face:

* :class:`~._memories.TapeMemories`: each tape's graph read once and kept up to date, its
  retrieval index and rendered blocks, the agent's forget until its turn ends;
* :class:`~._scheduler.ExtractionScheduler`: background extraction by the cadence, one run per
  tape, checkpoints, and the drain at shutdown.

A :class:`MemoryService` is made from a :class:`~._setup.MemorySetup` only
(:meth:`MemoryService.from_setup`), so every entry point runs the same ontology, policy and
redactor for the same settings.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from bub_semantic_memory.agent._lag import ExtractionLag, ExtractionPace
from bub_semantic_memory.agent._memories import TapeMemories
from bub_semantic_memory.agent._policy import MemoryPolicy
from bub_semantic_memory.agent._scheduler import ExtractionScheduler
from bub_semantic_memory.stores import SnapshotStore, fetch_tape

if TYPE_CHECKING:
    from bub.store import AsyncTapeStore, TapeStore

    from bub_semantic_memory._ontology import Ontology
    from bub_semantic_memory.agent._setup import MemorySetup
    from bub_semantic_memory.extraction import Extractor
    from bub_semantic_memory.memory import MemoryBlock, MemoryGraph, MemoryIndex, Ranking

__all__ = ["MemoryPolicy", "MemoryService"]


class MemoryService:
    """The memory of the tapes one process works on (see the module docstring).

    Args:
        setup: what decides the memories (ontology, policy, redactor).
        extractor: returns the extractor, or None when extraction is off (called once).
        stats: counters to add to (shared with the caller); a new one by default.
        claim: entered around each extraction of a tape (see :class:`~._scheduler.ExtractionScheduler`).

    Attributes:
        memories: the tapes' graphs, indexes and blocks.
        scheduler: their background extraction.
        stats: counters of what happened (loads, extractions, failures, injections...).
    """

    def __init__(
        self,
        setup: MemorySetup,
        *,
        extractor: Callable[[], Extractor | None],
        stats: Counter[str] | None = None,
        claim: Callable[[str], AbstractContextManager[bool]] | None = None,
    ) -> None:
        self.setup = setup
        self.policy = setup.policy
        self.stats: Counter[str] = stats if stats is not None else Counter()
        self.memories = TapeMemories(setup, self.stats)
        self.scheduler = ExtractionScheduler(self.memories, extractor, self.stats, claim)

    @classmethod
    def from_setup(
        cls,
        setup: MemorySetup,
        *,
        extractor: Callable[[], Extractor | None] | None = None,
        stats: Counter[str] | None = None,
        claim: Callable[[str], AbstractContextManager[bool]] | None = None,
    ) -> MemoryService:
        """The memory of running agents under ``setup`` (the one way to make one).

        Args:
            extractor: builds the extractor on first use (default: the setup's
                :meth:`~._setup.MemorySetup.open_extractor`); a caller with a backend of its own, or
                a replay sharing one, passes its own.
            stats: counters to add to (shared with the caller).
            claim: entered around each extraction of a tape (see :class:`~._scheduler.ExtractionScheduler`).
        """
        return cls(setup, extractor=extractor or setup.open_extractor, stats=stats, claim=claim)

    @property
    def ontology(self) -> Ontology:
        return self.memories.ontology

    @property
    def extractor(self) -> Extractor | None:
        """The extractor, built on first use (None: extraction is off, the log says why)."""
        return self.scheduler.extractor

    # -- the memories --------------------------------------------------------------

    def graph(self, tape: str) -> MemoryGraph | None:
        """The in-memory graph of ``tape``, if it was loaded in this process."""
        return self.memories.graph(tape)

    async def load(self, tape: str, store: TapeStore | AsyncTapeStore) -> MemoryGraph:
        """``tape``'s graph, read the first time it is asked for (see :meth:`TapeMemories.load`)."""
        return await self.memories.load(tape, store)

    async def refresh(self, tape: str, store: TapeStore | AsyncTapeStore) -> MemoryGraph:
        """``tape``'s graph with what its sidecar gained since it was read."""
        return await self.memories.refresh(tape, store)

    def render(self, tape: str, query: str) -> MemoryBlock:
        """The block for ``query`` with its statistics (for ``show``)."""
        return self.memories.render(tape, query)

    def block(self, tape: str, query: str, *, shown: Collection[str] = (), named_only: bool = False) -> str:
        """The memory block for ``query`` ("" when there is nothing; see :meth:`TapeMemories.block`)."""
        return self.memories.block(tape, query, shown=shown, named_only=named_only)

    def index(self, tape: str) -> MemoryIndex | None:
        """The retrieval index of ``tape``'s loaded graph."""
        return self.memories.index(tape)

    def search(self, tape: str, query: str, *, limit: int = 20) -> Ranking | None:
        """What ``query`` is about in ``tape``'s memory, best first (None: no memory)."""
        return self.memories.search(tape, query, limit=limit)

    async def forget(
        self, tape: str, store: TapeStore | AsyncTapeStore, name: str, *, by: str
    ) -> dict[str, Any]:
        """The agent's forget of the entity ``name`` names (see :meth:`TapeMemories.forget`)."""
        return await self.memories.forget(tape, store, name, by=by)

    async def commit(self, tape: str, store: TapeStore | AsyncTapeStore) -> int:
        """Store the agent's pending edits of ``tape``; how many."""
        return await self.memories.commit(tape, store)

    # -- their extraction ------------------------------------------------------------

    def schedule(self, tape: str, store: TapeStore | AsyncTapeStore, *, force: bool = False) -> None:
        """Extract ``tape``'s new entries in the background (see :meth:`ExtractionScheduler.schedule`)."""
        self.scheduler.schedule(tape, store, force=force)

    def running(self) -> list[asyncio.Task[None]]:
        """Extractions not finished yet."""
        return self.scheduler.running()

    async def catch_up(self, tape: str, store: TapeStore | AsyncTapeStore) -> int:
        """Extract everything after ``tape``'s watermark now; the snapshots stored."""
        return await self.scheduler.catch_up(tape, store)

    def extraction_due(self, entries: list[Any], watermark: int) -> bool:
        """Whether the cadence says to extract the entries after ``watermark`` now."""
        return self.scheduler.extraction_due(entries, watermark)

    async def lag(self, tape: str, store: TapeStore | AsyncTapeStore) -> ExtractionLag:
        """What of ``tape`` waits for extraction and how long it should take, at the pace of every
        snapshot stored for it (other processes' too; see :mod:`~._lag`)."""
        graph = await self.refresh(tape, store)
        entries = await fetch_tape(store, tape)
        snapshots, _ = await SnapshotStore(store).load(tape)
        pace = ExtractionPace.of(snapshots, entries)
        return self.scheduler.lag(tape, entries, graph.watermark, pace=pace)

    async def drain(self, grace_s: float | None = None) -> list[str]:
        """Finish or cancel extractions at shutdown; the tapes it cut short."""
        return await self.scheduler.drain(grace_s)
