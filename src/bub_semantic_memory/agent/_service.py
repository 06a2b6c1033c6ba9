"""The memory of running agents: per-tape graphs, background extraction, rendered blocks.

This is everything the Bub plugin does apart from speaking bub's hooks, so it can be
used and tested without a bub framework: give it a tape store and tape names.

* :meth:`MemoryService.load` reads a tape's memory graph once per process (the only
  store read on a turn's path).
* :meth:`MemoryService.block` renders the memory block for a question from the
  in-memory graph: no model call, no store read, cached per graph version.
* :meth:`MemoryService.schedule` extracts a tape's new entries in the background: one
  run per tape at a time with at most one follow-up queued, once the cadence says so
  (:meth:`MemoryService.extraction_due`). The watermark only moves when a snapshot is
  stored, so a failed or unfinished extraction is redone later.
* :meth:`MemoryService.drain` extracts what the cadence deferred and waits for running
  extractions, within a grace period, at shutdown, and says which tapes it cut short.
* :meth:`MemoryService.catch_up` extracts everything after a tape's watermark now (a process
  that carries on what another one cut short).
* :meth:`MemoryService.refresh` folds in what other processes added to a tape's memory
  sidecar since it was read (their snapshots; an edit makes it read the memory again), before
  each background extraction: a forget made elsewhere leaves this process's notes within a turn.
* :meth:`MemoryService.forget` is the agent's forget: applied to the loaded memory at once,
  stored as an edit by :meth:`MemoryService.commit` when the turn ends (placed after the turn's
  last entry, so the request itself and the answer to it do not bring the fact back).

Failures are logged and counted in :attr:`MemoryService.stats`, never raised into the
agent's turn from a background task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bub_semantic_memory._edits import Edit
from bub_semantic_memory._errors import EditError
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.agent._tool_names import is_memory_tool
from bub_semantic_memory.memory._editing import changes, find_entity, forget_entity
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.memory._index import MemoryIndex, Ranking
from bub_semantic_memory.memory._render import (
    DEFAULT_BUDGET,
    DEFAULT_PASSAGE_SHARE,
    MemoryBlock,
    render_memory,
)
from bub_semantic_memory.stores._store import MemoryLoad, SnapshotStore, fetch_tape
from bub_semantic_memory.tape._redact import Redactor
from bub_semantic_memory.tape._transcript import ReadReport, render_transcript

if TYPE_CHECKING:
    from bub.store import AsyncTapeStore, TapeStore

    from bub_semantic_memory._ontology import Ontology
    from bub_semantic_memory.extraction._extractor import Extractor

__all__ = ["MemoryPolicy", "MemoryService"]

logger = logging.getLogger(__name__)

_RENDER_CACHE_SIZE = 256


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


def _tape_was_reset(entries: Sequence[Any], watermark: int) -> bool:
    """Whether the tape now ends before the entry its memory was extracted up to."""
    return watermark > 0 and max((e.id for e in entries), default=0) < watermark


class MemoryService:
    """The memory of the tapes one process works on.

    Args:
        ontology: returns the ontology snapshots are folded with (called on first use).
        extractor: returns the extractor, or None when extraction is off (called once,
            on the first extraction; the factory logs why it is off).
        policy: cadence, budget and bounds.
        stats: counters to add to (shared with the caller); a new one by default.
        redactor: what hides secrets in the transcript lines a note shows: the one extraction
            uses (the plugin's ``redact_patterns`` and ``redact_allowlist``); the built-in
            patterns by default.
        claim: entered around each extraction of a tape, with the tape's name; it yields whether
            this process may extract the tape now (False: another process is at it, and the
            entries wait for a later turn). None: always.
    """

    def __init__(
        self,
        *,
        ontology: Callable[[], Ontology],
        extractor: Callable[[], Extractor | None],
        policy: MemoryPolicy | None = None,
        stats: Counter[str] | None = None,
        redactor: Redactor | None = None,
        claim: Callable[[str], AbstractContextManager[bool]] | None = None,
    ) -> None:
        self.policy = policy or MemoryPolicy()
        self._claim = claim
        self.stats: Counter[str] = stats if stats is not None else Counter()
        self._ontology_factory = ontology
        self._extractor_factory = extractor
        self._ontology: Ontology | None = None
        self._extractor: Extractor | None = None
        self._extractor_built = False
        self._graphs: dict[str, MemoryGraph] = {}
        self._since_checkpoint: dict[str, int] = {}
        self._render_cache: dict[tuple[str, int, int, str], str] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._follow_up: set[str] = set()
        self._cooldown_until: dict[str, float] = {}
        self._deferred: dict[str, TapeStore | AsyncTapeStore] = {}
        self._indexes: dict[str, MemoryIndex] = {}
        self._redactor = redactor or Redactor()  # lines in notes never show a secret
        self._outlived_reset: dict[str, int] = {}  # tape -> watermark of a memory its reset left in place
        self._semaphore: asyncio.Semaphore | None = None
        self._read_through: dict[str, int] = {}  # tape -> last sidecar entry this process has read
        self._pending: dict[str, list[Edit]] = {}  # tape -> an agent's edits, stored when its turn ends
        self._pending_stores: dict[str, TapeStore | AsyncTapeStore] = {}

    @property
    def ontology(self) -> Ontology:
        if self._ontology is None:
            self._ontology = self._ontology_factory()
        return self._ontology

    @property
    def extractor(self) -> Extractor | None:
        """The extractor, built on first use (None: extraction is off, the log says why)."""
        return self._get_extractor()

    def _get_extractor(self) -> Extractor | None:
        if not self._extractor_built:
            self._extractor_built = True
            self._extractor = self._extractor_factory()
        return self._extractor

    # -- reading -------------------------------------------------------------------

    def graph(self, tape: str) -> MemoryGraph | None:
        """The in-memory graph of ``tape``, if it was loaded in this process."""
        return self._graphs.get(tape)

    async def load(self, tape: str, store: TapeStore | AsyncTapeStore) -> MemoryGraph:
        """The graph of ``tape``, read from ``store`` the first time it is asked for in this process.

        Snapshots that cannot be read are counted (``unreadable_snapshots``), not raised.
        """
        graph = self._graphs.get(tape)
        if graph is None:
            pending = self._pending.get(tape, ())
            self._remember(tape, await SnapshotStore(store).load_graph(tape, self.ontology, edits=pending))
            self.stats["loads"] += 1
            graph = self._graphs[tape]
            try:
                entries = await fetch_tape(store, tape)
            except Exception as exc:  # the memory works without the lines its facts cite
                self.stats["evidence_unread"] += 1
                logger.warning("semantic memory: cannot read tape %s for evidence lines: %s", tape, exc)
                entries = []
            self._index_lines(tape, entries)
        return graph

    def _index_lines(self, tape: str, entries: Sequence[Any]) -> None:
        """Refresh ``tape``'s retrieval index, with the transcript lines that facts cite as evidence
        and a note may quote: what was said, not the agent's own tool calls (see :func:`_said`).

        Only the entries from the last line indexed on are rendered (from that line's own entry:
        a tool result's line names the call before it): rendering and redacting a long tape
        again after each extraction held the event loop for seconds."""
        index = self.index(tape)
        if index is not None:
            entries = _from_line(entries, index.last_line_id)
            # A line cut to its limit is what a note would quote, by design: not worth a warning to
            # whoever shows or searches the memory (or to bub's log on every load). Debug level.
            report = ReadReport(source=tape, log_level=logging.DEBUG)
            lines = render_transcript(entries, redact=self._redactor, report=report).lines
            said = _said(entries)
            dates = {entry.id: entry.date for entry in entries if getattr(entry, "date", "")}
            index.refresh({line.entry_id: line.text for line in lines if line.entry_id in said}, dates)

    def _remember(self, tape: str, loaded: MemoryLoad) -> None:
        self._graphs[tape] = loaded.graph
        self._read_through[tape] = loaded.last_entry_id
        stale = self._indexes.pop(tape, None)
        if stale is not None:
            stale.close()
        self._since_checkpoint[tape] = loaded.tail_snapshots
        rejected = loaded.report.counts["bad_checkpoint"]
        self.stats["rejected_checkpoints"] += rejected
        if len(loaded.report.issues) > rejected:
            self.stats["unreadable_snapshots"] += len(loaded.report.issues) - rejected

    def render(self, tape: str, query: str) -> MemoryBlock:
        """The block for ``query`` with its statistics, as :meth:`block` renders it (for ``show``)."""
        graph = self._graphs.get(tape)
        if graph is None:
            return render_memory(MemoryGraph(self.ontology), query=query, budget=self.policy.budget)
        return self._fresh_block(tape, graph, query)

    def block(self, tape: str, query: str, *, shown: Collection[str] = (), named_only: bool = False) -> str:
        """The memory block for ``query`` from ``tape``'s loaded graph ("" when there is nothing).

        ``shown``: lines the agent already has in its context (earlier notes), left out of
        the block. ``named_only``: only what ``query`` names and its neighbours, not the
        rest of the memory (see :func:`render_memory`).
        """
        graph = self._graphs.get(tape)
        if graph is None or len(graph) == 0:
            return ""
        text = self._render(tape, graph, query, shown, named_only)
        self.stats["injections"] += bool(text)
        return text

    def _render(
        self, tape: str, graph: MemoryGraph, query: str, shown: Collection[str], named_only: bool
    ) -> str:
        if shown or named_only:  # a note: rendered once per turn, never asked for twice
            return self._fresh_block(tape, graph, query, shown=shown, named_only=named_only).text
        index = self._indexes.get(tape)
        key = (tape, graph.version, index.line_count if index is not None else 0, query)
        cached = self._render_cache.get(key)
        if cached is not None:  # a tool round's second call: a look-up, no search
            self.stats["render_cache_hits"] += 1
            return cached
        if len(self._render_cache) >= _RENDER_CACHE_SIZE:
            self._render_cache.clear()
        cached = self._render_cache[key] = self._fresh_block(tape, graph, query).text
        return cached

    def _fresh_block(
        self,
        tape: str,
        graph: MemoryGraph,
        query: str,
        *,
        shown: Collection[str] = (),
        named_only: bool = False,
    ) -> MemoryBlock:
        """The block for ``query``: the facts ranked for it, then the lines that match it best."""
        passages, passage_budget = self._passages(tape, query)
        return render_memory(
            graph,
            query=query,
            budget=self.policy.budget,
            shown=shown,
            named_only=named_only,
            ranking=self.search(tape, query) if query else None,
            passages=passages,
            passage_budget=passage_budget,
        )

    def _passages(self, tape: str, query: str) -> tuple[tuple[str, ...], int]:
        """The transcript lines a block for ``query`` may show, and the budget they may take."""
        budget = int(self.policy.budget * self.policy.passage_share)
        index = self.index(tape)
        if not query or budget <= 0 or index is None:
            return (), 0
        return tuple(p.text for p in index.passages(query)), budget

    def index(self, tape: str) -> MemoryIndex | None:
        """The retrieval index of ``tape``'s loaded graph (built on first use, then refreshed)."""
        graph = self._graphs.get(tape)
        if graph is None:
            return None
        index = self._indexes.get(tape)
        if index is None or index.graph is not graph:
            index = self._indexes[tape] = MemoryIndex(graph)
        return index

    def search(self, tape: str, query: str, *, limit: int = 20) -> Ranking | None:
        """What ``query`` is about in ``tape``'s memory: entities and facts, best first (None: no memory)."""
        index = self.index(tape)
        if index is None or len(index.graph) == 0:
            return None
        return index.rank(query, limit=limit)

    # -- what other processes and the agent changed ----------------------------------

    async def refresh(self, tape: str, store: TapeStore | AsyncTapeStore) -> MemoryGraph:
        """``tape``'s graph with what its sidecar gained since this process read it.

        Snapshots other workers stored are folded in; an edit (a forget made elsewhere, by the
        CLI or another worker's agent) means the memory is read and folded again.
        """
        graph = await self.load(tape, store)
        # An unreadable line has no id to move past: it is read (and was counted) at the load, and
        # on each refresh again, so a refresh neither counts nor logs it above DEBUG.
        tail, _ = await SnapshotStore(store).read_after(
            tape, self._read_through.get(tape, 0), log_level=logging.DEBUG
        )
        if any(edit.id not in graph.edits for edit in tail.edits):
            self.stats["edits_seen"] += 1
            return await self._reload(tape, store)
        for snapshot in tail.snapshots:
            graph.add(snapshot)
        self._read_through[tape] = max(self._read_through.get(tape, 0), tail.last_entry_id)
        return graph

    async def _reload(self, tape: str, store: TapeStore | AsyncTapeStore) -> MemoryGraph:
        self._graphs.pop(tape, None)
        self._render_cache = {key: text for key, text in self._render_cache.items() if key[0] != tape}
        return await self.load(tape, store)

    async def forget(
        self, tape: str, store: TapeStore | AsyncTapeStore, name: str, *, by: str
    ) -> dict[str, Any]:
        """Forget the entity ``name`` names in ``tape``'s memory, as the agent's ``memory.forget`` does.

        The loaded memory forgets it at once; :meth:`commit` stores the edit when the turn ends.
        Never a purge: an agent's instructions can come from text in the tape. An unknown or
        ambiguous name is an ``error`` in the result, and so is a forget past
        :attr:`MemoryPolicy.max_agent_forgets` in one turn.
        """
        cap = self.policy.max_agent_forgets
        if len(self._pending.get(tape, ())) >= cap:
            self.stats["forgets_refused"] += 1
            return {
                "error": f"at most {cap} forget(s) per turn: ask the user to run 'semantic-memory memory "
                "forget' for more"
            }
        before = await self.load(tape, store)
        try:
            key = find_entity(before, name)
        except EditError as exc:
            return {"error": str(exc)}
        # placed at the tape's end: what was said up to now, extracted yet or not, is forgotten,
        # and no note quotes it (commit places it there again when it stores it)
        edit = forget_entity(before, key, at=await self._tape_end(tape, store, before), by=by)
        self._pending.setdefault(tape, []).append(edit)
        self._pending_stores[tape] = store
        after = await self._reload(tape, store)
        removed = changes(before, after)
        self.stats["forgets"] += 1
        return {
            "forgotten": edit.names[0] if edit.names else key,
            "removed": {
                "entities": removed.entities_removed,
                "relations": removed.relations_removed,
                "facts": removed.facts_removed,
                "attributes": removed.attributes_changed,
            },
            "note": "stored as an edit when this turn ends; a person can undo it "
            "('semantic-memory memory edits' lists it). Nothing is erased from storage.",
        }

    async def _tape_end(self, tape: str, store: TapeStore | AsyncTapeStore, graph: MemoryGraph) -> int:
        """The last entry of ``tape`` (the extracted range's end when the tape cannot be read)."""
        try:
            entries = await fetch_tape(store, tape)
        except Exception as exc:  # the forget still holds up to what was extracted
            logger.warning("semantic memory: cannot read tape %s to place a forget: %s", tape, exc)
            entries = []
        return max([graph.extracted_through, *(e.id for e in entries)])

    async def commit(self, tape: str, store: TapeStore | AsyncTapeStore) -> int:
        """Store the agent's pending edits of ``tape``, placed at the tape's last entry; how many.

        An edit that cannot be stored stays pending (and applied here) for the next turn's commit.
        """
        pending = self._pending.get(tape)
        if not pending:
            return 0
        entries = await fetch_tape(store, tape)
        graph = self._graphs.get(tape)
        at = max([graph.extracted_through if graph is not None else 0, *(e.id for e in entries)])
        snapshots = SnapshotStore(store)
        stored = 0
        while pending:
            edit = pending[0]
            placed = Edit.model_validate(edit.model_dump(exclude={"id"}) | {"at": max(at, edit.at)})
            await snapshots.append_edit(placed)
            pending.pop(0)
            stored += 1
        self._pending.pop(tape, None)
        self._pending_stores.pop(tape, None)
        self.stats["edits_stored"] += stored
        await self._reload(tape, store)
        return stored

    # -- background extraction -----------------------------------------------------

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
        graph = await self.refresh(tape, store)
        entries = await fetch_tape(store, tape)
        if _tape_was_reset(entries, graph.watermark) and self._outlived_reset.get(tape) != graph.watermark:
            graph = await self._reload_after_reset(tape, store, graph.watermark)
        if not (force or self.extraction_due(entries, graph.watermark)):
            if any(e.id > graph.watermark for e in entries):
                self._deferred[tape] = store
                self.stats["deferred"] += 1
            self._prepare_renders(tape, graph, entries)  # other workers' snapshots may have folded in
            return 0
        self._deferred.pop(tape, None)
        stored = 0
        async for extracted in extractor.iter_extract(entries, tape=tape, memory=graph):
            # the store leaves out what a purge erased, even one made since the graph was read
            graph.add(await snapshots.append(extracted, memory=graph))  # the graph learns what it kept
            stored += 1
            self.stats["snapshots"] += 1
        if any(erasure.id not in graph.edits for erasure in snapshots.erasures_read.get(tape, ())):
            graph = await self._reload(tape, store)  # purged meanwhile: the loaded memory still held it
        self._prepare_renders(tape, graph, entries, stored=stored > 0)
        if stored:
            await self._checkpoint_if_due(tape, snapshots, stored)
        return stored

    def _prepare_renders(
        self, tape: str, graph: MemoryGraph, entries: Sequence[Any], *, stored: bool = False
    ) -> None:
        """Rank and index what the graph gained (this process's snapshots, or other workers'
        folded in), here, off the model-call path, so that the next render finds both up to
        date. Nothing to do when nothing was stored and the index is level with the graph."""
        index = self._indexes.get(tape)
        if not stored and index is not None and index.graph is graph and not index.stale:
            return
        graph.ranked_keys()
        self._index_lines(tape, entries)

    async def _reload_after_reset(
        self, tape: str, store: TapeStore | AsyncTapeStore, watermark: int
    ) -> MemoryGraph:
        """Forget this process's graph of a tape that was reset, and read its memory again.

        bub's reset empties the tape and its memory sidecar, and the new entries count
        from 1 again: a graph kept from before would go on showing the old memory and
        skip every new entry up to its old watermark.
        """
        self.stats["tape_resets"] += 1
        graph = await self._reload(tape, store)
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
        self._since_checkpoint[tape] = self._since_checkpoint.get(tape, 0) + stored
        if every <= 0 or self._since_checkpoint[tape] < every:
            return
        try:
            written = await snapshots.checkpoint(tape, self.ontology, min_tail=max(1, every // 2))
        except Exception as exc:
            self.stats["checkpoint_failures"] += 1
            logger.warning("semantic memory: cannot store a checkpoint of tape %s: %s", tape, exc)
            return
        self._since_checkpoint[tape] = 0
        self.stats["checkpoints"] += written

    def extraction_due(self, entries: list[Any], watermark: int) -> bool:
        """The extraction cadence: every N-th user turn, once enough new text accumulated, or at a
        handoff (an anchor: the agent's context is about to lose the turns before it).

        Recent turns are still in the agent's own context, so batching them costs no recall.
        """
        new = [e for e in entries if e.id > watermark]
        turns = sum(1 for e in new if e.kind == "message" and e.payload.get("role") == "user")
        if turns >= self.policy.every_turns:
            return True
        if any(e.kind == "anchor" and e.payload.get("name") != "session/start" for e in new):
            return True
        if self.policy.min_new_tokens > 0 and new:
            return estimate_tokens(render_transcript(new).text()) >= self.policy.min_new_tokens
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
        for tape, store in list(self._pending_stores.items()):  # a forget whose turn never ended
            try:
                await self.commit(tape, store)
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


def _said(entries: Sequence[Any]) -> set[int]:
    """The entries whose lines a note may quote: all but the agent's own tool calls and what the
    memory tools answered.

    A call (``assistant called memory_search({...})``) is the agent's action, not something said;
    a memory tool's result is the memory itself, which quoted back would feed on itself. What an
    assistant said beside a call, and what other tools returned (a file, a page), stay.
    """
    said: set[int] = set()
    calling_memory = False
    for entry in entries:
        if entry.kind == "tool_call":
            calls = entry.payload.get("calls")
            names = [_call_name(call) for call in calls] if isinstance(calls, list) else []
            calling_memory = any(is_memory_tool(name) for name in names)
            if str(entry.payload.get("content") or "").strip():
                said.add(entry.id)
        elif entry.kind == "tool_result":
            if not calling_memory:
                said.add(entry.id)
            calling_memory = False
        else:
            said.add(entry.id)
    return said


def _call_name(call: Any) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    return str(function.get("name") or "") if isinstance(function, dict) else ""


def _from_line(entries: Sequence[Any], since: int) -> Sequence[Any]:
    """The entries to render to index the lines after entry ``since``: from ``since`` on, or
    from the tool call a tool result at or after it answers (its line names the call's tool)."""
    if not since:
        return entries
    start = since
    for entry in reversed([e for e in entries if e.id < since]):
        if entry.kind == "tool_result":
            break
        if entry.kind == "tool_call":
            start = entry.id
            break
    return [entry for entry in entries if entry.id >= start]
