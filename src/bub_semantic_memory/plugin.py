"""The Bub plugin: extract memory off the critical path, inject it into the system prompt.

Hooks (all failure-isolated: memory is an enhancement, the agent's turn never fails
because of it):

``provide_tape_sidecar``
    mounts the ``semantic_memory`` sidecar, so bub's tape reset and archive carry the
    memory along with the tape.
``load_state``
    loads the session tape's memory graph once per process (the only store read on
    the turn path) and records the tape name in the turn state, so subagent
    ``temp/...`` sessions read the memory of the session that spawned them.
``system_prompt``
    renders the memory block from the in-memory graph for the latest user message:
    no model call, no store read, within the token budget, nothing when the memory
    is empty. bub places system-prompt blocks in the leading system message.
``save_state``
    schedules an extraction of the entries after the watermark as a background task:
    one per tape at a time, at most one follow-up queued, once the cadence says so
    (every few turns, a long turn, or a handoff: recent turns are still in the agent's
    own context, so batching them costs no recall). The watermark only moves when a
    snapshot is stored, so a failed or unfinished extraction is redone later.
``provide_lifespan``
    at shutdown, extracts what the cadence deferred and waits for running
    extractions up to ``shutdown_timeout``.
``register_cli_commands``
    ``bub memory ...`` mirrors the ``semantic-memory`` console script.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bub import hookimpl

from bub_semantic_memory.graph import MemoryGraph
from bub_semantic_memory.render import render_memory
from bub_semantic_memory.store import MemoryLoad, MemorySidecar, SnapshotStore, fetch_tape, session_tape_name
from bub_semantic_memory.tokens import estimate_tokens
from bub_semantic_memory.transcript import render_transcript, strip_bub_header

if TYPE_CHECKING:
    from bub.framework import BubFramework
    from bub.store import AsyncTapeStore, TapeStore

    from bub_semantic_memory.extractor import Extractor
    from bub_semantic_memory.ontology import Ontology
    from bub_semantic_memory.settings import SemanticMemorySettings

__all__ = ["SemanticMemoryPlugin"]

logger = logging.getLogger(__name__)

TAPE_STATE_KEY = "_semantic_memory_tape"
QUERY_STATE_KEY = "_semantic_memory_query"


class SemanticMemoryPlugin:
    """Bub plugin entry point (``bub`` entry-point group, name ``semantic-memory``).

    Constructing it does no I/O: settings, prompts, the model client and the memory
    are all loaded on first use.

    Attributes:
        stats: counters of what happened (extractions, failures, injections...), for
            logs and tests.
    """

    def __init__(self, framework: BubFramework) -> None:
        self.framework = framework
        self.stats: Counter[str] = Counter()
        self._settings: SemanticMemorySettings | None = None
        self._ontology: Ontology | None = None
        self._extractor: Extractor | None = None
        self._extractor_failed = False
        self._graphs: dict[str, MemoryGraph] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._follow_up: set[str] = set()
        self._cooldown_until: dict[str, float] = {}
        self._deferred: dict[str, TapeStore | AsyncTapeStore] = {}
        self._semaphore: asyncio.Semaphore | None = None
        self._render_cache: dict[tuple[str, int, str, int], str] = {}
        self._since_checkpoint: dict[str, int] = {}

    # -- lazy configuration --------------------------------------------------------

    @property
    def settings(self) -> SemanticMemorySettings:
        if self._settings is None:
            from bub_semantic_memory.settings import load_settings

            self._settings = load_settings()
        return self._settings

    def _library(self) -> Any:
        from bub_semantic_memory.prompts import PromptLibrary

        return PromptLibrary(self.settings.prompts_dir) if self.settings.prompts_dir else PromptLibrary()

    @property
    def ontology(self) -> Ontology:
        if self._ontology is None:
            self._ontology = self._library().load(self.settings.prompt).ontology
        return self._ontology

    def _get_extractor(self) -> Extractor | None:
        if self._extractor is not None or self._extractor_failed:
            return self._extractor
        from bub_semantic_memory.extractor import Extractor
        from bub_semantic_memory.redact import Redactor
        from bub_semantic_memory.settings import resolve_endpoint
        from bub_semantic_memory.transport import RetryPolicy

        settings = self.settings
        try:
            endpoint = resolve_endpoint(settings)
            if endpoint is None:
                logger.warning(
                    "semantic memory: cannot derive an OpenAI-compatible endpoint from bub's model settings; "
                    "set BUB_SEMANTIC_MEMORY_MODEL and BUB_SEMANTIC_MEMORY_BASE_URL. Extraction is off."
                )
                self._extractor_failed = True
                return None
            self._extractor = Extractor(
                model=endpoint.model,
                base_url=endpoint.base_url,
                api_key=endpoint.api_key,
                mode=settings.mode,
                prompt=self._library().load(settings.prompt),
                retry=RetryPolicy(
                    request_timeout_s=settings.request_timeout,
                    reasks=settings.reasks,
                    transport_attempts=settings.transport_attempts,
                ),
                chunk_tokens=settings.chunk_tokens,
                redactor=Redactor(settings.redact_patterns, allowlist=settings.redact_allowlist),
            )
        except Exception as exc:
            logger.warning("semantic memory: extraction is off: %s", exc)
            self.stats["configuration_errors"] += 1
            self._extractor_failed = True
        return self._extractor

    # -- hooks ---------------------------------------------------------------------

    @hookimpl
    def provide_tape_sidecar(self) -> MemorySidecar:
        return MemorySidecar()

    @hookimpl
    async def load_state(self, message: Any, session_id: str) -> dict[str, Any]:
        tape = session_tape_name(session_id, self.framework.workspace)
        try:
            if self.settings.enabled and tape not in self._graphs:
                store = self.framework.get_tape_store()
                if store is not None:
                    self._remember(tape, await SnapshotStore(store).load_graph(tape, self.ontology))
                    self.stats["loads"] += 1
        except Exception as exc:
            self.stats["load_failures"] += 1
            logger.warning("semantic memory: cannot load the memory of tape %s: %s", tape, exc)
        return {TAPE_STATE_KEY: tape}

    def _remember(self, tape: str, loaded: MemoryLoad) -> None:
        self._graphs[tape] = loaded.graph
        self._since_checkpoint[tape] = loaded.tail_snapshots
        rejected = loaded.report.counts["bad_checkpoint"]
        self.stats["rejected_checkpoints"] += rejected
        if len(loaded.report.issues) > rejected:
            self.stats["unreadable_snapshots"] += len(loaded.report.issues) - rejected

    @hookimpl
    def system_prompt(self, prompt: str | list[dict[str, Any]], state: dict[str, Any]) -> str:
        try:
            return self._memory_block(prompt, state)
        except Exception as exc:
            self.stats["injection_failures"] += 1
            logger.warning("semantic memory: no memory block this call: %s", exc)
            return ""

    def _memory_block(self, prompt: str | list[dict[str, Any]], state: dict[str, Any]) -> str:
        if not self.settings.enabled:
            return ""
        tape = str(state.get(TAPE_STATE_KEY) or self._tape_of(state) or "")
        graph = self._graphs.get(tape)
        if graph is None or len(graph) == 0:
            return ""
        query = _prompt_text(prompt)
        if query:
            state[QUERY_STATE_KEY] = query
        else:
            query = str(state.get(QUERY_STATE_KEY, ""))  # later steps of a turn keep the turn's question
        budget = self.settings.budget
        key = (tape, graph.version, query, budget)
        text = self._render_cache.get(key)
        if text is None:
            if len(self._render_cache) > 256:
                self._render_cache.clear()
            text = render_memory(graph, query=query, budget=budget).text
            self._render_cache[key] = text
        self.stats["injections"] += bool(text)
        return text

    def _tape_of(self, state: dict[str, Any]) -> str | None:
        session_id = state.get("session_id")
        if not isinstance(session_id, str):
            return None
        workspace = state.get("_runtime_workspace") or self.framework.workspace
        return session_tape_name(session_id, Path(workspace))

    @hookimpl
    async def save_state(
        self, session_id: str, state: dict[str, Any], message: Any, model_output: str
    ) -> None:
        try:
            if not self.settings.enabled or session_id.startswith("temp/"):
                return  # bub does not merge temp/ forks back: their entries never reach the store.
            tape = state.get(TAPE_STATE_KEY) or session_tape_name(session_id, self.framework.workspace)
            store = self.framework.get_tape_store()
            if store is not None:
                self.schedule(tape, store)
        except Exception as exc:
            self.stats["schedule_failures"] += 1
            logger.warning("semantic memory: cannot schedule an extraction: %s", exc)

    @hookimpl
    async def provide_lifespan(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await self.drain(self.settings.shutdown_timeout if self._settings is not None else 0)

    @hookimpl
    def register_cli_commands(self, app: Any) -> None:
        from bub_semantic_memory.cli import app as memory_app

        app.add_typer(memory_app, name="memory", help="Semantic memory: extract, show, eval, prompts.")

    # -- background extraction -----------------------------------------------------

    def schedule(self, tape: str, store: TapeStore | AsyncTapeStore, *, force: bool = False) -> None:
        """Extract ``tape``'s new entries in the background (one run per tape, one follow-up at most).

        ``store`` is captured now: bub releases its store reference before the lifespan
        (which waits for these tasks) ends. ``force`` ignores the cadence (shutdown flush).
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

    async def _run(self, tape: str, store: TapeStore | AsyncTapeStore, *, force: bool = False) -> None:
        while True:
            self._follow_up.discard(tape)
            await self._extract_once(tape, store, force=force)
            if tape not in self._follow_up:
                return

    async def _extract_once(
        self, tape: str, store: TapeStore | AsyncTapeStore, *, force: bool = False
    ) -> None:
        if time.monotonic() < self._cooldown_until.get(tape, 0.0):
            self.stats["cooldown_skips"] += 1
            return
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.settings.max_concurrent)
        async with self._semaphore:
            try:
                stored = await self._extract_new_entries(tape, store, force=force)
            except Exception as exc:
                self.stats["extraction_failures"] += 1
                self._cooldown_until[tape] = time.monotonic() + self.settings.retry_cooldown
                logger.warning(
                    "semantic memory: extraction of tape %s failed, will retry on a later turn: %s", tape, exc
                )
                return
        self._cooldown_until.pop(tape, None)
        if stored:
            self.stats["extractions"] += 1

    async def _extract_new_entries(
        self, tape: str, store: TapeStore | AsyncTapeStore, *, force: bool = False
    ) -> int:
        """Extract what follows the watermark; return how many snapshots were stored.

        Not yet due by the cadence: the tape is remembered, and extracted at shutdown.
        """
        extractor = self._get_extractor()
        if extractor is None:
            return 0
        snapshots = SnapshotStore(store)
        graph = self._graphs.get(tape)
        if graph is None:
            self._remember(tape, await snapshots.load_graph(tape, self.ontology))
            graph = self._graphs[tape]
        entries = await fetch_tape(store, tape)
        if not (force or self.extraction_due(entries, graph.watermark)):
            if any(e.id > graph.watermark for e in entries):
                self._deferred[tape] = store
                self.stats["deferred"] += 1
            return 0
        self._deferred.pop(tape, None)
        stored = 0
        async for snapshot in extractor.iter_extract(entries, tape=tape, memory=graph):
            await snapshots.append(snapshot)  # the graph only learns what the store kept
            graph.add(snapshot)
            stored += 1
            self.stats["snapshots"] += 1
        if stored:
            graph.ranked_keys()  # rank here, off the model-call path, not on the next render
            await self._checkpoint_if_due(tape, snapshots, stored)
        return stored

    async def _checkpoint_if_due(self, tape: str, snapshots: SnapshotStore, stored: int) -> None:
        """Every ``checkpoint_every`` snapshots, store a checkpoint so cold loads read only the tail.

        The checkpoint is folded from the store, not from this process's graph; a failure
        is logged and counted and costs only load time later.
        """
        every = self.settings.checkpoint_every
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
        handoff (an anchor: the agent's context is about to lose the turns before it)."""
        new = [e for e in entries if e.id > watermark]
        settings = self.settings
        turns = sum(1 for e in new if e.kind == "message" and e.payload.get("role") == "user")
        if turns >= settings.every_turns:
            return True
        if any(e.kind == "anchor" and e.payload.get("name") != "session/start" for e in new):
            return True
        if settings.min_new_tokens > 0 and new:
            return estimate_tokens(render_transcript(new).text()) >= settings.min_new_tokens
        return False

    async def drain(self, grace_s: float) -> None:
        """Finish running extractions, extract what the cadence deferred, all within ``grace_s``
        seconds; then cancel what is left. What was cancelled is extracted again later:
        nothing was stored for it."""
        deadline = time.monotonic() + grace_s
        await self._wait_running(deadline)  # a running extraction may still defer its tape
        if grace_s > 0:
            for tape, store in list(self._deferred.items()):
                self.schedule(tape, store, force=True)
        await self._wait_running(deadline)
        for task in [t for t in self._running.values() if not t.done()]:
            task.cancel()
            self.stats["cancelled_at_shutdown"] += 1
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._extractor is not None:
            with contextlib.suppress(Exception):
                await self._extractor.aclose()
            self._extractor = None

    async def _wait_running(self, deadline: float) -> None:
        tasks = [t for t in self._running.values() if not t.done()]
        remaining = deadline - time.monotonic()
        if tasks and remaining > 0:
            await asyncio.wait(tasks, timeout=remaining)

    def graph(self, tape: str) -> MemoryGraph | None:
        """The in-memory graph of ``tape``, if it was loaded in this process."""
        return self._graphs.get(tape)


def _prompt_text(prompt: str | list[dict[str, Any]]) -> str:
    if isinstance(prompt, str):
        text = prompt
    else:
        text = "\n".join(
            str(p.get("text", "")) for p in prompt if isinstance(p, dict) and p.get("type") == "text"
        )
    return strip_bub_header(text)[0]  # bub's sender/date header is not part of the question
