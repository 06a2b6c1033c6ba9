"""The Bub plugin: bub's hooks over a :class:`~bub_semantic_memory.agent._service.MemoryService`.

Hooks (all failure-isolated: memory is an enhancement, the agent's turn never fails
because of it):

``provide_tape_sidecar``
    mounts the ``semantic_memory`` sidecar, so bub's tape reset and archive carry the
    memory along with the tape.
``load_state``
    loads the session tape's memory graph once per process and records the tape name in
    the turn state, so subagent ``temp/...`` sessions read the memory of the session that
    spawned them.
``system_prompt``
    records the turn's question (the latest user message) for the memory block. With
    ``placement = "system"`` it also returns the block, which bub puts in the leading
    system message.
``build_tape_context``
    with ``placement = "message"`` (the default), bub's own context selection plus memory
    notes between turns (:mod:`~bub_semantic_memory.agent._injection`): a turn's first call gets
    a note with what is relevant and not shown yet, and every later call puts the notes
    back where they were, so a provider's prefix cache keeps serving the system prompt and
    the whole history. Like any ``build_tape_context`` implementation, it replaces bub's
    builtin one; it wraps it rather than copying it.
``save_state``
    schedules an extraction of the entries after the watermark as a background task
    (see :meth:`MemoryService.schedule` for the cadence).
``provide_lifespan``
    at shutdown, extracts what the cadence deferred and waits for running
    extractions up to ``shutdown_timeout`` (none for a model in this process: its thread
    is stopped at once, so ``bub run`` prints its reply without waiting, and what it cut
    short is handed to a catch-up process, see :mod:`._catch_up`).
``register_cli_commands``
    ``bub memory ...`` mirrors the ``semantic-memory`` console script, with the ``memory`` verbs
    at its top (``bub memory forget``; ``bub memory memory forget`` still works).

Constructing the plugin registers the agent's memory tools with bub (``memory.search``,
``memory.recall``, ``memory.forget``; see :mod:`._tools`). ``save_state`` also stores what the
agent's ``memory.forget`` forgot during the turn, as an edit placed after the turn's last entry.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bub import hookimpl
from bub.tape import TapeContext

from bub_semantic_memory.agent import MemoryNote, MemorySetup, NoteBook, shown_lines, split_at_notes
from bub_semantic_memory.memory import MemoryGraph
from bub_semantic_memory.plugin._tools import SUBAGENT_PREFIX, register_memory_tools
from bub_semantic_memory.stores import MemorySidecar, session_tape_name
from bub_semantic_memory.tape import strip_bub_header

if TYPE_CHECKING:
    from bub.framework import BubFramework
    from bub.tape import TapeEntry

    from bub_semantic_memory._ontology import Ontology
    from bub_semantic_memory.agent import MemoryService
    from bub_semantic_memory.backends import ChatBackend
    from bub_semantic_memory.extraction import Extractor, ExtractorConfig
    from bub_semantic_memory.plugin._settings import SemanticMemorySettings

__all__ = ["SemanticMemoryPlugin"]

logger = logging.getLogger(__name__)

TAPE_STATE_KEY = "_semantic_memory_tape"
QUERY_STATE_KEY = "_semantic_memory_query"
NEW_TURN_STATE_KEY = "_semantic_memory_new_turn"
_MAX_NOTEBOOKS = 1024
_OURS = "_semantic_memory_notes"


class SemanticMemoryPlugin:
    """Bub plugin entry point (``bub`` entry-point group, name ``semantic-memory``).

    Constructing it does no I/O: settings, prompts, the model client and the memory
    are all loaded on first use.

    Args:
        framework: the bub framework that loaded the plugin.
        tune_extractor: applied to the extractor configuration read from the settings
            before the extractor is built (embedding applications and tests: bounds that
            have no setting, such as back-off times).
        open_backend: opens the backend for the configuration instead of the one its model
            spec selects (embedding applications with a backend of their own, tests).

    Attributes:
        stats: counters of what happened (extractions, failures, injections...), for
            logs and tests; shared with :attr:`memory`.
    """

    def __init__(
        self,
        framework: BubFramework,
        *,
        tune_extractor: Callable[[ExtractorConfig], ExtractorConfig] | None = None,
        open_backend: Callable[[ExtractorConfig], ChatBackend] | None = None,
    ) -> None:
        self.framework = framework
        self._tune_extractor = tune_extractor
        self._open_backend = open_backend
        self.stats: Counter[str] = Counter()
        self._settings: SemanticMemorySettings | None = None
        self._memory: MemoryService | None = None
        self._warned_foreign_context = False
        self._in_process = False  # the extractor runs its model in this process
        self._catching_up = False  # this process is a catch-up process: nothing to hand off
        register_memory_tools(
            lambda: self.memory,
            self._tool_tape,
            self._load_for_tool,
            self.stats,
            self.framework.get_tape_store,
        )

    # -- lazy configuration --------------------------------------------------------

    @property
    def settings(self) -> SemanticMemorySettings:
        if self._settings is None:
            from bub_semantic_memory.plugin._settings import load_settings

            self._settings = load_settings()
        return self._settings

    @property
    def memory(self) -> MemoryService:
        """The memory service, built from the settings on first use (no backend is opened)."""
        if self._memory is None:
            from bub_semantic_memory.agent import MemoryService

            self._memory = MemoryService.from_setup(
                self._setup(), extractor=self._build_extractor, stats=self.stats, claim=self._claim
            )
        return self._memory

    def _setup(self) -> MemorySetup:
        """The settings' memory setup; an invalid extraction setting leaves memory readable."""
        from bub_semantic_memory.plugin._settings import memory_setup

        try:
            setup = memory_setup(self.settings)
        except Exception as exc:
            logger.warning("semantic memory: extraction is off: %s", exc)
            self.stats["configuration_errors"] += 1
            return MemorySetup.from_settings(self.settings.model_dump(), extract=False)
        if setup.extractor is None:
            logger.warning(
                "semantic memory: cannot derive an OpenAI-compatible endpoint from bub's model settings; "
                "set BUB_SEMANTIC_MEMORY_MODEL and BUB_SEMANTIC_MEMORY_BASE_URL. Extraction is off."
            )
        elif self._tune_extractor is not None:
            setup = setup.replace(extractor=self._tune_extractor(setup.extractor))
        return setup

    def _claim(self, tape: str) -> contextlib.AbstractContextManager[bool]:
        """A model in this process extracts a tape only while no catch-up process does."""
        if self.memory.extractor is None or not self._in_process:
            return contextlib.nullcontext(True)
        from bub_semantic_memory.plugin._catch_up import claim_tape  # not on import: it runs as a script

        return claim_tape(tape)

    @property
    def ontology(self) -> Ontology:
        return self.memory.ontology

    def _build_extractor(self) -> Extractor | None:
        from bub_semantic_memory._logging import quiet_dependencies

        # The plugin's own warning says what failed, once; the host's own requests keep their logs.
        quiet_dependencies("extraction")
        config = self.memory.setup.extractor
        if config is None:
            return None
        try:
            backend = self._open_backend(config) if self._open_backend is not None else None
            extractor = self.memory.setup.open_extractor(backend=backend)
        except Exception as exc:
            logger.warning("semantic memory: extraction is off: %s", exc)
            self.stats["configuration_errors"] += 1
            return None
        self._in_process = extractor is not None and extractor.traits.in_process
        return extractor

    def _tool_tape(self, context: Any) -> str:
        """The tape whose memory a tool call reads: the one load_state recorded, else the call's own."""
        recorded = context.state.get(TAPE_STATE_KEY) if isinstance(context.state, dict) else None
        return str(recorded or context.tape.name)

    async def _load_for_tool(self, tape: str) -> None:
        store = self.framework.get_tape_store()
        if store is not None:
            await self.memory.load(tape, store)

    # -- hooks ---------------------------------------------------------------------

    @hookimpl
    def provide_tape_sidecar(self) -> MemorySidecar:
        return MemorySidecar()

    @hookimpl
    async def load_state(self, message: Any, session_id: str) -> dict[str, Any]:
        tape = _session_tape(session_id, str(self.framework.workspace))
        try:
            if self.settings.enabled:
                store = self.framework.get_tape_store()
                if store is not None:
                    await self.memory.load(tape, store)
        except Exception as exc:
            self.stats["load_failures"] += 1
            logger.warning("semantic memory: cannot load the memory of tape %s: %s", tape, exc)
        return {TAPE_STATE_KEY: tape}

    @hookimpl
    def system_prompt(self, prompt: str | list[dict[str, Any]], state: dict[str, Any]) -> str:
        try:
            if not self.settings.enabled:
                return ""
            query = _prompt_text(prompt)
            if query:
                state[QUERY_STATE_KEY] = query  # later steps of a turn keep the turn's question
                state[NEW_TURN_STATE_KEY] = True  # this call appends a new message: a note may go before it
            if self.settings.placement == "message" and self._notes_in_use(state):
                return ""
            return self._block_for(state)
        except Exception as exc:
            self.stats["injection_failures"] += 1
            logger.warning("semantic memory: no memory block this call: %s", exc)
            return ""

    def _notes_in_use(self, state: dict[str, Any]) -> bool:
        """Whether this agent's context is ours: another plugin's ``build_tape_context`` may have won,
        and then memory falls back to the system message instead of disappearing."""
        agent = state.get("_runtime_agent")
        context = getattr(getattr(agent, "tape", None), "context", None)
        if context is None:
            return True  # not an agent turn bub describes: nothing to check against
        ours = getattr(context.select, _OURS, False)
        if not ours and not self._warned_foreign_context:
            self._warned_foreign_context = True
            logger.warning(
                "semantic memory: another plugin provides the tape context; "
                "memory goes into the system message instead of notes (placement=system)"
            )
        return bool(ours)

    @hookimpl
    def build_tape_context(self) -> TapeContext:
        from bub.builtin.context import default_tape_context

        builtin = default_tape_context()
        select = builtin.select
        if select is None:  # not bub 0.5's default context: leave it as it is
            return builtin
        notebooks: dict[str, NoteBook] = {}  # this agent's sessions only

        async def select_with_notes(
            entries: Iterable[TapeEntry], context: TapeContext
        ) -> list[dict[str, Any]]:
            entries = list(entries)
            try:
                notes = self._notes(notebooks, entries, context.state)
            except Exception as exc:
                self.stats["injection_failures"] += 1
                logger.warning("semantic memory: no memory notes this call: %s", exc)
                notes = []
            return await split_at_notes(select, entries, context, notes)

        setattr(select_with_notes, _OURS, True)
        return TapeContext(anchor=builtin.anchor, select=select_with_notes, state=builtin.state)

    def _notes(
        self, notebooks: dict[str, NoteBook], entries: list[TapeEntry], state: dict[str, Any]
    ) -> list[MemoryNote]:
        """The notes of this session's context, with a new one when this call starts a turn."""
        new_turn = state.pop(NEW_TURN_STATE_KEY, False)
        if not self.settings.enabled or self.settings.placement != "message":
            return []
        session = self._tape_of(state) or str(state.get(TAPE_STATE_KEY) or "")
        book = notebooks.pop(session, None) or NoteBook()
        notebooks[session] = book  # most recently used last
        if len(notebooks) > _MAX_NOTEBOOKS:
            del notebooks[next(iter(notebooks))]  # that session's next call starts a new note
        notes = book.in_context(entries)
        if new_turn:
            note = self._new_note(book, notes, entries, self._memory_tape(state), state)
            if note is not None:
                notes.append(note)
        return notes

    def _new_note(
        self,
        book: NoteBook,
        notes: list[MemoryNote],
        entries: list[TapeEntry],
        tape: str,
        state: dict[str, Any],
    ) -> MemoryNote | None:
        """A note for this turn's question with what the notes in context have not shown.

        While the memory has not changed since the last note, only what the question names
        (and its neighbours) is added; once it has (a new snapshot, say of turns a handoff
        took out of the context), the overview is topped up too.
        """
        graph = self.memory.graph(tape)
        version = graph.version if graph is not None else 0
        overview = not notes or notes[-1].graph_version != version
        try:
            text = self.memory.block(
                tape, str(state.get(QUERY_STATE_KEY, "")), shown=shown_lines(notes), named_only=not overview
            )
        except Exception as exc:  # the notes already in place stay where they are
            self.stats["injection_failures"] += 1
            logger.warning("semantic memory: no new memory note this turn: %s", exc)
            return None
        return book.add(entries, text, version) if text else None

    def _block_for(self, state: dict[str, Any]) -> str:
        return self.memory.block(self._memory_tape(state), str(state.get(QUERY_STATE_KEY, "")))

    def _memory_tape(self, state: dict[str, Any]) -> str:
        """The tape whose memory this turn reads: the one load_state recorded (a subagent's parent),
        else the session's own."""
        return str(state.get(TAPE_STATE_KEY) or self._tape_of(state) or "")

    def _tape_of(self, state: dict[str, Any]) -> str | None:
        session_id = state.get("session_id")
        if not isinstance(session_id, str):
            return None
        workspace = state.get("_runtime_workspace") or self.framework.workspace
        return _session_tape(session_id, str(workspace))

    @hookimpl
    async def save_state(
        self, session_id: str, state: dict[str, Any], message: Any, model_output: str
    ) -> None:
        try:
            if session_id.startswith(SUBAGENT_PREFIX):
                return  # bub does not merge temp/ forks back: their entries never reach the store.
            tape = state.get(TAPE_STATE_KEY) or _session_tape(session_id, str(self.framework.workspace))
            store = self.framework.get_tape_store()
            if store is not None and self._memory is not None:
                await self._commit(tape, store)
            if not self.settings.enabled:
                return
            if store is not None:
                self.memory.schedule(tape, store)
        except Exception as exc:
            self.stats["schedule_failures"] += 1
            logger.warning("semantic memory: cannot schedule an extraction: %s", exc)

    async def _commit(self, tape: str, store: Any) -> None:
        """Store the agent's forget of this turn, placed after the turn's last entry (merged by now)."""
        try:
            await self.memory.commit(tape, store)
        except Exception as exc:
            self.stats["edit_failures"] += 1
            logger.warning("semantic memory: cannot store the forget yet; retried next turn: %s", exc)

    @hookimpl
    async def provide_lifespan(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if self._memory is not None:
                cut = await self._memory.drain()
                if cut and self._in_process and self.settings.catch_up and not self._catching_up:
                    self._hand_off(cut)

    def _hand_off(self, tapes: list[str]) -> None:
        """Start a catch-up process for each tape whose extraction shutdown cut short."""
        from bub_semantic_memory.plugin._catch_up import hand_off

        for tape in tapes:
            try:
                framework = self.framework
                pid = hand_off(tape, workspace=framework.workspace, config_file=framework.config_file)
            except Exception as exc:
                self.stats["hand_off_failures"] += 1
                logger.warning("semantic memory: tape %s is extracted by a later run: %s", tape, exc)
                continue
            if pid is not None:
                self.stats["handed_off"] += 1
                logger.info("semantic memory: catch-up process %d extracts the rest of tape %s", pid, tape)

    async def catch_up(self, tape: str, store: Any) -> int:
        """Extract ``tape``'s entries after its watermark now, as a catch-up process does.

        Returns the snapshots stored (0 also when another process holds the tape).
        """
        self._catching_up = True
        return await self.memory.catch_up(tape, store)

    @hookimpl
    def register_cli_commands(self, app: Any) -> None:
        from bub_semantic_memory.cli import bub_app

        commands = bub_app()
        app.add_typer(commands, name="memory", help=commands.info.help)

    def graph(self, tape: str) -> MemoryGraph | None:
        """The in-memory graph of ``tape``, if it was loaded in this process."""
        return self.memory.graph(tape)


@functools.lru_cache(maxsize=1024)
def _session_tape(session_id: str, workspace: str) -> str:
    """``session_tape_name``, remembered: it resolves the workspace path on disk, on every model call."""
    return session_tape_name(session_id, Path(workspace))


def _prompt_text(prompt: str | list[dict[str, Any]]) -> str:
    if isinstance(prompt, str):
        text = prompt
    else:
        text = "\n".join(
            str(p.get("text", "")) for p in prompt if isinstance(p, dict) and p.get("type") == "text"
        )
    return strip_bub_header(text)[0]  # bub's sender/date header is not part of the question
