"""The memories one process holds: each tape's graph, its retrieval index, its rendered blocks.

* :meth:`TapeMemories.load` reads a tape's memory graph once per process (the only store read
  on a turn's path); :meth:`TapeMemories.refresh` folds in what other processes added to the
  tape's memory sidecar since (their snapshots; an edit made elsewhere means the memory is read
  and folded again).
* :meth:`TapeMemories.block` renders the memory block for a question from the in-memory graph:
  no model call, no store read, cached per graph version.
* :meth:`TapeMemories.forget` is the agent's forget: applied to the loaded memory at once, stored
  as an edit by :meth:`TapeMemories.commit` when the turn ends (placed after the turn's last
  entry, so the request itself and the answer to it do not bring the fact back).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bub_semantic_memory._edits import Edit
from bub_semantic_memory._errors import EditError
from bub_semantic_memory.agent._tool_names import is_memory_tool
from bub_semantic_memory.memory import (
    MemoryBlock,
    MemoryGraph,
    MemoryIndex,
    Passage,
    QuotedLine,
    Ranking,
    changes,
    find_entity,
    forget_entity,
    render_memory,
)
from bub_semantic_memory.stores import MemoryLoad, SnapshotStore, fetch_tape
from bub_semantic_memory.tape import ReadReport, anchored_line, render_transcript

if TYPE_CHECKING:
    from bub.store import AsyncTapeStore, TapeStore

    from bub_semantic_memory._ontology import Ontology
    from bub_semantic_memory.agent._setup import MemorySetup

__all__ = ["TapeMemories"]

logger = logging.getLogger(__name__)

_RENDER_CACHE_SIZE = 256
_LEAST_CANDIDATE_LINES = 10
_TOKENS_PER_LINE = 20  # a short line of a chat: a block's lines budget asks for this many per line


class TapeMemories:
    """The memories of the tapes one process works on, read and kept up to date.

    Args:
        setup: the ontology the memories fold with, the policy (note budget, the agent's edits)
            and the redactor of the lines a note shows.
        stats: counters to add to (shared with the caller).

    Attributes:
        since_checkpoint: per tape, the snapshots stored after its newest checkpoint (a load
            counts them; the extraction scheduler adds what it stores).
    """

    def __init__(self, setup: MemorySetup, stats: Counter[str]) -> None:
        self.setup = setup
        self.policy = setup.policy
        self.stats = stats
        self.since_checkpoint: dict[str, int] = {}
        self._ontology: Ontology | None = None
        self._redactor = setup.redactor  # lines in notes never show a secret
        self._graphs: dict[str, MemoryGraph] = {}
        self._indexes: dict[str, MemoryIndex] = {}
        self._render_cache: dict[tuple[str, int, int, str], str] = {}
        self._read_through: dict[str, int] = {}  # tape -> last sidecar entry this process has read
        self._pending: dict[str, list[Edit]] = {}  # tape -> an agent's edits, stored when its turn ends
        self._pending_stores: dict[str, TapeStore | AsyncTapeStore] = {}

    @property
    def ontology(self) -> Ontology:
        """The ontology memories fold with (the setup's, read on first use)."""
        if self._ontology is None:
            self._ontology = self.setup.ontology
        return self._ontology

    @property
    def pending_stores(self) -> dict[str, TapeStore | AsyncTapeStore]:
        """The tapes with an agent's forget not stored yet, and their stores."""
        return dict(self._pending_stores)

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
            senders = {line.entry_id: line.sender for line in lines if line.sender and line.entry_id in said}
            index.refresh(
                {line.entry_id: line.text for line in lines if line.entry_id in said}, dates, senders
            )

    def _remember(self, tape: str, loaded: MemoryLoad) -> None:
        self._graphs[tape] = loaded.graph
        self._read_through[tape] = loaded.last_entry_id
        stale = self._indexes.pop(tape, None)
        if stale is not None:
            stale.close()
        self.since_checkpoint[tape] = loaded.tail_snapshots
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
            ranking=_dated_quotes(self.search(tape, query)) if query else None,
            passages=passages,
            passage_budget=passage_budget,
        )

    def _passages(self, tape: str, query: str) -> tuple[tuple[QuotedLine, ...], int]:
        """The transcript lines a block for ``query`` may show, and the budget they may take."""
        budget = int(self.policy.budget * self.policy.passage_share)
        index = self.index(tape)
        if not query or budget <= 0 or index is None:
            return (), 0
        candidates = max(_LEAST_CANDIDATE_LINES, budget // _TOKENS_PER_LINE)  # enough to fill it
        return tuple(_quoted(p) for p in index.passages(query, limit=candidates)), budget

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
            return await self.reload(tape, store)
        for snapshot in tail.snapshots:
            graph.add(snapshot)
        self._read_through[tape] = max(self._read_through.get(tape, 0), tail.last_entry_id)
        return graph

    async def reload(self, tape: str, store: TapeStore | AsyncTapeStore) -> MemoryGraph:
        """Forget this process's graph of ``tape`` and read its memory again."""
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
        after = await self.reload(tape, store)
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
        await self.reload(tape, store)
        return stored

    def prepare_renders(
        self, tape: str, graph: MemoryGraph, entries: Sequence[Any], *, stored: bool = False
    ) -> None:
        """Rank and index what the graph gained (this process's snapshots, or other workers'
        folded in), off the model-call path, so that the next render finds both up to date.
        Nothing to do when nothing was stored and the index is level with the graph."""
        index = self._indexes.get(tape)
        if not stored and index is not None and index.graph is graph and not index.stale:
            return
        graph.ranked_keys()
        self._index_lines(tape, entries)


def _quoted(passage: Passage) -> QuotedLine:
    """A line a note may quote, under its day, with what "yesterday" or "last week" meant that day."""
    text, day = anchored_line(passage.text, passage.date)
    return QuotedLine(text, day, passage.entry_id)


def _dated_quotes(ranking: Ranking | None) -> Ranking | None:
    """``ranking`` with the lines its facts quote as a note shows them: each with the day it was
    said after its entry's tag, its relative times anchored on that day (as the note's other lines)."""
    if ranking is None:
        return None
    facts = tuple(
        replace(fact, evidence_lines=tuple(map(_dated_quote, fact.evidence_lines, fact.evidence_dates)))
        if fact.evidence_dates
        else fact
        for fact in ranking.facts
    )
    return replace(ranking, facts=facts)


def _dated_quote(line: str, entry_date: str) -> str:
    """``[25] (Monday 8 May 2023) user: ... yesterday (Sunday 7 May 2023)``: the tag stays first, so
    that a line the block shows twice is still known by it."""
    text, day = anchored_line(line, entry_date)
    if not day:
        return text
    tag, _, said = text.partition(" ")
    return f"{tag} ({day}) {said}"


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
