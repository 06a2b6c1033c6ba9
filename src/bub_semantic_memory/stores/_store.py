"""Snapshots stored as entries of the tape's memory sidecar, in whatever tape store bub uses.

Memory is derived data of a tape, so it lives beside it: a sibling tape
``<tape>__sidecar__semantic_memory`` in the same store (bub's JSONL file store by
default; SQL or Redis stores that bub plugins provide work unchanged). Tape reset
and archive carry the sidecar along. Each snapshot is one ``event`` entry named
``memory.snapshot`` whose data is the snapshot; each edit a person made (forget, set,
merge...) is one ``event`` entry named ``memory.edit``, folded with the snapshots.

Every write goes through the erasure rule (:mod:`bub_semantic_memory.stores._erasure`): under
the sidecar's write lock, the erasures a purge recorded are read right before the write, and
what they recognise is not written.

bub's file store has no cross-process lock and appends right after a torn last
line (a writer killed mid-write), fusing the two. For that store this module holds
an ``fcntl`` lock around every append, cuts a torn tail off first (keeping the
bytes in ``<file>.torn`` and reporting them), fsyncs, and creates files readable by
the user only. Readers skip and count what they cannot parse.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bub.sidecars import sidecar_tape_name
from bub.store import (
    AsyncTapeStore,
    AsyncTapeStoreAdapter,
    FileTapeStore,
    TapeQuery,
    TapeStore,
    is_async_tape_store,
)
from bub.tape import TapeEntry

from bub_semantic_memory._edits import Edit
from bub_semantic_memory._errors import EditError, StoreError, TapeNameError
from bub_semantic_memory._gc import gc_paused
from bub_semantic_memory._models import PromptRef, Relation, RelationKey, Snapshot
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.memory import EditBook, MemoryGraph
from bub_semantic_memory.stores._checkpoint import (
    CHECKPOINT_ANCHOR,
    CheckpointError,
    decode_checkpoint,
    encode_checkpoint,
    is_purged_checkpoint,
)
from bub_semantic_memory.stores._erasure import file_erasures, read_erasures, sidecar_lock
from bub_semantic_memory.stores._readers import EDIT_EVENT, SNAPSHOT_EVENT, Tail, sidecar_reader
from bub_semantic_memory.tape import Entry, ReadIssue, ReadReport, coerce_entries

__all__ = [
    "EDIT_EVENT",
    "SIDECAR_NAME",
    "SNAPSHOT_EVENT",
    "MemoryLoad",
    "MemorySidecar",
    "SnapshotStore",
    "append_entries",
    "fetch_tape",
    "file_lock",
    "file_tape_directory",
    "memory_tape_name",
    "open_bub_tape_store",
    "session_tape_name",
    "tapes_with_memory",
    "validate_tape_name",
]

logger = logging.getLogger(__name__)

SIDECAR_NAME = "semantic_memory"
MAX_TAPE_NAME = 200
_TAPE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_FILE_MODE = 0o600


def validate_tape_name(name: str) -> str:
    """Return ``name`` if it is a safe tape name; raise :class:`TapeNameError` otherwise.

    A tape name becomes a file name in the store directory, so anything that could
    leave it (``/``, ``..``, an absolute path, NUL) or hide it (a leading dot) is refused.
    """
    if not name:
        raise TapeNameError("tape name is empty")
    if "\x00" in name:
        raise TapeNameError("tape name contains a NUL byte")
    if len(name) > MAX_TAPE_NAME:
        raise TapeNameError(f"tape name is {len(name)} characters long; the limit is {MAX_TAPE_NAME}")
    if name.startswith(("/", "\\")) or Path(name).is_absolute():
        raise TapeNameError(f"tape name {name!r} is an absolute path")
    if ".." in name or "/" in name or "\\" in name:
        raise TapeNameError(f"tape name {name!r} could escape the tape directory ('..', '/' or '\\')")
    if not _TAPE_NAME.match(name):
        raise TapeNameError(f"tape name {name!r} may only contain letters, digits, '.', '_' and '-'")
    return name


def session_tape_name(session_id: str, workspace: Path) -> str:
    """The tape name bub gives a session in a workspace (``Tape.session_tape``'s naming).

    Two workspaces never share a tape, and ``temp/...`` subagent sessions get an
    ordinary hashed name.
    """
    workspace_hash = hashlib.md5(str(workspace.resolve()).encode("utf-8"), usedforsecurity=False).hexdigest()
    session_hash = hashlib.md5(session_id.encode("utf-8"), usedforsecurity=False).hexdigest()
    return f"{workspace_hash[:16]}__{session_hash[:16]}"


def memory_tape_name(tape: str) -> str:
    """The sidecar tape that holds ``tape``'s snapshots."""
    return sidecar_tape_name(validate_tape_name(tape), SIDECAR_NAME)


@dataclass(frozen=True)
class MemoryLoad:
    """What a cold load of a tape's memory read.

    Attributes:
        graph: the folded memory.
        report: what could not be read (snapshots, a rejected checkpoint...).
        checkpoint_through: the sidecar entry the checkpoint used covers (0: none used).
        last_entry_id: the last sidecar entry read.
        tail_snapshots: snapshots folded on top of the checkpoint (all of them without one).
        refolded: the newest checkpoint was older than an edit, so everything was folded again
            under every edit (the next checkpoint makes loads short again).
    """

    graph: MemoryGraph
    report: ReadReport
    checkpoint_through: int
    last_entry_id: int
    tail_snapshots: int
    refolded: bool = False


@dataclass(frozen=True)
class MemorySidecar:
    """The sidecar declaration bub mounts on every session tape (``provide_tape_sidecar``)."""

    name: str = SIDECAR_NAME


def file_tape_directory(store: object) -> Path | None:
    """The directory of a bub :class:`FileTapeStore` (possibly wrapped in an async adapter), else None.

    Reads bub's private ``_directory`` / ``_store`` attributes (stable across bub 0.5.x,
    which the package pins); any other store is treated as opaque.
    """
    inner = getattr(store, "_store", store) if isinstance(store, AsyncTapeStoreAdapter) else store
    if isinstance(inner, FileTapeStore):
        directory = getattr(inner, "_directory", None)
        return directory if isinstance(directory, Path) else None
    return None


async def tapes_with_memory(store: TapeStore | AsyncTapeStore) -> list[str]:
    """The tapes of ``store`` (sync or async) that have a memory sidecar, sorted.

    bub's file store leaves sidecars out of ``list_tapes`` (and lists only names with one
    ``__``), so its directory is read instead; the SQL and Redis stores list them.
    """
    suffix = sidecar_tape_name("", SIDECAR_NAME)
    directory = file_tape_directory(store)
    if directory is not None:
        names = [path.stem for path in directory.glob(f"*{suffix}.jsonl")] if directory.is_dir() else []
    elif is_async_tape_store(store):
        names = await store.list_tapes()
    else:
        names = await asyncio.to_thread(store.list_tapes)
    return sorted(name.removesuffix(suffix) for name in names if name.endswith(suffix) and name != suffix)


class SnapshotStore:
    """Read and append snapshots in the memory sidecars of one tape store.

    Args:
        store: a bub tape store, sync or async (``FileTapeStore`` gets the locked,
            torn-tail-safe append path).
        fsync: flush each append to disk (file store only).
    """

    def __init__(self, store: TapeStore | AsyncTapeStore, *, fsync: bool = True) -> None:
        self.store = store
        self.fsync = fsync
        self.directory = file_tape_directory(store)
        self.erasures_read: dict[str, tuple[Edit, ...]] = {}
        """tape -> the erasures the last write to its sidecar read (see :meth:`append`)."""

    # -- reading -----------------------------------------------------------------

    async def load(self, tape: str) -> tuple[list[Snapshot], ReadReport]:
        """All snapshots of ``tape`` that parse, plus a report of what did not."""
        sidecar = memory_tape_name(tape)
        report = ReadReport(source=sidecar)
        tail = await sidecar_reader(self.store, self.directory).read_after(sidecar, 0, report)
        return tail.snapshots, report

    async def graph(self, tape: str, ontology: Ontology | None = None) -> tuple[MemoryGraph, ReadReport]:
        """Fold ``tape``'s memory into a graph: the newest valid checkpoint plus the snapshots after it."""
        loaded = await self.load_graph(tape, ontology)
        return loaded.graph, loaded.report

    async def load_graph(
        self, tape: str, ontology: Ontology | None = None, *, edits: Iterable[Edit] = ()
    ) -> MemoryLoad:
        """Like :meth:`graph`, and says what was read (see :class:`MemoryLoad`).

        A checkpoint that cannot be used (another version or ontology, a hash that does
        not match, malformed) is reported as ``bad_checkpoint`` and all snapshots are
        folded instead. So is a checkpoint older than an edit: edits apply before anything
        is folded (see :mod:`bub_semantic_memory.memory._edit_rules`), so a new one means a new
        fold. A checkpoint a purge invalidated is passed over without a report.

        ``edits``: edits not stored yet (an agent's forget until its turn ends), applied as if
        they were.
        """
        pending = list(edits)
        sidecar = memory_tape_name(tape)
        report = ReadReport(source=sidecar)
        reader = sidecar_reader(self.store, self.directory)
        base: MemoryGraph | None = None
        through = 0
        stored = await reader.latest_checkpoint(sidecar)
        if stored is not None and not is_purged_checkpoint(stored.payload.get("state")):
            try:
                checkpoint = decode_checkpoint(stored.payload.get("state"), ontology, tape=tape)
                base, through = checkpoint.graph, checkpoint.through
            except CheckpointError as exc:
                report.add(
                    ReadIssue("bad_checkpoint", f"{exc}; folding all snapshots instead", entry_id=stored.id)
                )
        first = ReadReport(source=sidecar, log_level=logging.DEBUG)  # logged once, below or on the re-read
        tail = await reader.read_after(sidecar, through, first)
        refolded = base is not None and any(edit.id not in base.edits for edit in [*tail.edits, *pending])
        if refolded:
            base, through = None, 0
            tail = await reader.read_after(sidecar, 0, report)
        else:
            for issue in first.issues:
                report.add(issue)
            report.entries = first.entries
        graph = base if base is not None else MemoryGraph(ontology, tape=tape, edits=[*tail.edits, *pending])
        with gc_paused():
            for snapshot in tail.snapshots:
                graph.add(snapshot)
        return MemoryLoad(
            graph, report, through, max(through, tail.last_entry_id), len(tail.snapshots), refolded
        )

    async def read_after(
        self, tape: str, after: int, *, log_level: int = logging.WARNING
    ) -> tuple[Tail, ReadReport]:
        """The snapshots and edits of ``tape``'s sidecar after entry ``after`` (what other writers added);
        what cannot be read is reported (and logged at ``log_level``)."""
        sidecar = memory_tape_name(tape)
        report = ReadReport(source=sidecar, log_level=log_level)
        tail = await sidecar_reader(self.store, self.directory).read_after(sidecar, after, report)
        return tail, report

    async def extracted_by(self, tape: str) -> PromptRef | None:
        """The prompt version that extracted ``tape``'s newest snapshot (None: nothing extracted yet)."""
        tail, _ = await self.read_after(tape, 0, log_level=logging.DEBUG)
        newest = max(tail.snapshots, key=lambda s: s.last_entry_id, default=None)
        return newest.prompt if newest is not None else None

    async def erasures(self, tape: str) -> list[Edit]:
        """The erasures a purge recorded in ``tape``'s sidecar (see :mod:`._erasure`)."""
        return await read_erasures(self.store, self.directory, memory_tape_name(tape))

    async def edits(self, tape: str) -> list[Edit]:
        """Every edit of ``tape``'s memory, in the order they apply."""
        tail, _ = await self.read_after(tape, 0)
        return sorted({e.id: e for e in tail.edits}.values(), key=lambda e: e.order)

    async def checkpoint(
        self,
        tape: str,
        ontology: Ontology | None = None,
        *,
        min_tail: int = 1,
        loaded: MemoryLoad | None = None,
    ) -> bool:
        """Store a checkpoint of ``tape``'s memory if at least ``min_tail`` snapshots follow the newest one.

        The checkpoint is folded from what the store holds now (checkpoint plus tail, read
        fresh, or ``loaded``: a :meth:`load_graph` made just before by the caller, so that it
        is not read and folded twice), never from a process's in-memory graph, so it is exactly
        the fold of the sidecar up to the entry it names. Returns True if one was written.

        Raises:
            StoreError: the store refused the read or the write.
        """
        if loaded is None:
            loaded = await self.load_graph(tape, ontology)
        if loaded.tail_snapshots < max(1, min_tail) and not (loaded.refolded and loaded.tail_snapshots):
            return False
        state = await asyncio.to_thread(encode_checkpoint, loaded.graph, loaded.last_entry_id)
        graph = loaded.graph

        def checkpoint(erasures: Sequence[Edit]) -> TapeEntry | None:
            if any(erasure.id not in graph.edits for erasure in erasures):
                logger.info("%s: a checkpoint folded before a purge is not stored", tape)
                return None  # folded before a purge: it may hold what the purge erased
            return TapeEntry.anchor(CHECKPOINT_ANCHOR, state)

        return await self._append_entry(tape, checkpoint)

    # -- writing -----------------------------------------------------------------

    async def append(self, snapshot: Snapshot, *, memory: MemoryGraph | None = None) -> Snapshot:
        """Append one snapshot to its tape's sidecar, without what a purge erased; return what was stored.

        The erasures are read from the sidecar right before the write, under its write lock, so a
        snapshot extracted before a purge, or by another worker, is stored as if extracted after it.
        ``memory``: the graph the snapshot was extracted against; its merges and relation rules
        decide which stored relation a relation of the snapshot is.

        Raises:
            StoreError: the store refused the write (disk full, read-only, ...).
                Nothing already stored is changed by a failed append.
        """
        canonical: Callable[[Relation], RelationKey] = (
            (lambda r: memory.relation_key(r.source, r.type, r.target))
            if memory is not None
            else (lambda r: (r.source, r.type, r.target))
        )
        resolve: Callable[[str], str] = memory.resolve if memory is not None else (lambda key: key)
        stored = snapshot

        def entry(erasures: Sequence[Edit]) -> TapeEntry:
            nonlocal stored
            if erasures:
                stored = EditBook(erasures).erase(snapshot, canonical, resolve)
            return TapeEntry.event(SNAPSHOT_EVENT, snapshot_payload(stored), schema=stored.schema_version)

        await self._append_entry(snapshot.tape, entry)
        return stored

    async def append_edit(self, edit: Edit) -> None:
        """Append one edit to its tape's sidecar: every later fold, in any process, applies it.

        Raises:
            EditError: the edit undoes an erasure (a purged forget cannot be undone).
            StoreError: the store refused the write.
        """

        def entry(erasures: Sequence[Edit]) -> TapeEntry:
            if edit.op == "undo" and edit.undoes in {e.id for e in erasures}:
                raise EditError(f"edit {edit.undoes} is a purged forget: an erasure cannot be undone")
            return TapeEntry.event(EDIT_EVENT, edit_payload(edit), schema=edit.schema_version)

        await self._append_entry(edit.tape, entry)

    async def _append_entry(self, tape: str, make: Callable[[Sequence[Edit]], TapeEntry | None]) -> bool:
        """Write the entry ``make`` builds from the sidecar's erasures, read under its write lock
        (None: write nothing); whether one was written."""
        sidecar = memory_tape_name(tape)
        if self.directory is not None:
            return await asyncio.to_thread(self._append_file, tape, sidecar, make)
        async with sidecar_lock(self.store, None, sidecar):
            erasures = await read_erasures(self.store, None, sidecar)
            self.erasures_read[tape] = tuple(erasures)
            entry = make(erasures)
            if entry is None:
                return False
            await self.write_locked(sidecar, entry)
        return True

    async def write_locked(self, sidecar: str, entry: TapeEntry) -> None:
        """Append ``entry`` to ``sidecar`` as it is: the caller holds the sidecar's write lock and
        applied the erasure rule (a purge recording its erasure). Not for bub's file store."""
        try:
            if is_async_tape_store(self.store):
                await self.store.append(sidecar, entry)
            else:
                await asyncio.to_thread(self.store.append, sidecar, entry)
        except Exception as exc:
            raise StoreError(f"cannot append to {sidecar}: {exc}") from exc

    def _append_file(
        self, tape: str, sidecar: str, make: Callable[[Sequence[Edit]], TapeEntry | None]
    ) -> bool:
        assert self.directory is not None
        path = self.directory / f"{sidecar}.jsonl"
        try:
            with file_lock(path.with_name(path.name + ".lock")):
                erasures = file_erasures(path)
                self.erasures_read[tape] = erasures
                entry = make(erasures)
                if entry is None:
                    return False
                self.append_file_locked(path, entry)
        except OSError as exc:
            raise StoreError(f"cannot append to {path}: {_describe(exc)}") from exc
        return True

    def append_file_locked(self, path: Path, entry: TapeEntry) -> None:
        """Append ``entry`` to the sidecar file ``path`` of bub's file store, under its lock (held
        by the caller): creates the file user-only, cuts a torn tail off first, fsyncs."""
        # One descriptor for the whole append: creates the file user-only, checks
        # the last byte, and fsyncs what bub's store wrote (same file, same inode).
        fd = os.open(path, os.O_RDWR | os.O_CREAT, _FILE_MODE)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                repair_torn_tail(path)
            self._file_store().append(path.name.removesuffix(".jsonl"), entry)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def _file_store(self) -> FileTapeStore:
        inner = getattr(self.store, "_store", self.store)
        assert isinstance(inner, FileTapeStore)
        return inner


def repair_torn_tail(path: Path) -> int:
    """Cut an unterminated last line off ``path``; return how many bytes were cut.

    The cut bytes are appended to ``<path>.torn`` (so nothing is silently discarded)
    and reported in the log. Complete lines are never touched. Call under the lock.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    if size == 0:
        return 0
    with path.open("rb+") as handle:
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return 0
        keep = _last_newline_end(handle, size)
        handle.seek(keep)
        torn = handle.read()
        quarantine_fd = os.open(
            path.with_name(path.name + ".torn"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, _FILE_MODE
        )
        with os.fdopen(quarantine_fd, "ab") as quarantine:  # memory bytes: user-only, like the sidecar
            quarantine.write(torn + b"\n")
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    logger.warning("%s: cut a torn last line of %d bytes (kept in %s.torn)", path, len(torn), path.name)
    return len(torn)


def _last_newline_end(handle: Any, size: int) -> int:
    """Offset just after the last newline before ``size`` (0 if there is none)."""
    block = 65536
    position = size
    while position > 0:
        start = max(0, position - block)
        handle.seek(start)
        chunk = handle.read(position - start)
        index = chunk.rfind(b"\n")
        if index >= 0:
            return int(start + index + 1)
        position = start
    return 0


@contextlib.contextmanager
def file_lock(lock_path: Path) -> Iterator[None]:
    """Hold the ``fcntl`` lock every writer of a file store's sidecar takes (appends, purges)."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, _FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _describe(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"the memory directory is not writable ({exc.strerror})"
    return exc.strerror or str(exc)


def snapshot_payload(snapshot: Snapshot) -> dict[str, Any]:
    """The stored form of a snapshot: its JSON fields, empty lists left out.

    bub's Redis store rewrites every entry through Lua's ``cjson``, which turns an
    empty JSON array into ``{}``; a snapshot with an alias-less entity would then no
    longer validate. Every list field defaults to empty, so leaving empty ones out
    loses nothing on any store (and makes each line shorter).
    """
    data = snapshot.model_dump(mode="json", exclude_defaults=True)
    data["schema_version"] = snapshot.schema_version  # always explicit: a later default must not rewrite it
    return data


def edit_payload(edit: Edit) -> dict[str, Any]:
    """The stored form of an edit: its JSON fields, defaults (so empty lists) left out, as for snapshots."""
    data = edit.model_dump(mode="json", exclude_defaults=True)
    data["schema_version"] = edit.schema_version
    return data


async def fetch_tape(
    store: TapeStore | AsyncTapeStore, tape: str, *, report: ReadReport | None = None
) -> list[Entry]:
    """All entries of ``tape`` in ``store`` (sync or async), as :class:`Entry` objects.

    Entries that do not fit the tape format are skipped and counted in ``report``.
    """
    query: TapeQuery[Any] = TapeQuery(tape=validate_tape_name(tape), store=store)
    if is_async_tape_store(store):
        result: Any = await store.fetch_all(query)
    else:
        result = await asyncio.to_thread(lambda: list(store.fetch_all(query)))
    entries, _ = coerce_entries(list(result), report=report)
    return entries


def append_entries(store: TapeStore, tape: str, entries: Iterable[Entry]) -> None:
    """Append ``entries`` to ``tape`` in a sync ``store`` as bub's entries, in the order given
    (what :func:`fetch_tape` reads back; a store that numbers entries itself numbers these too)."""
    for entry in entries:
        store.append(tape, TapeEntry(entry.id, entry.kind, entry.payload, entry.meta, entry.date))


@contextlib.asynccontextmanager
async def open_bub_tape_store() -> AsyncIterator[TapeStore | AsyncTapeStore]:
    """Open the tape store a running bub would use (plugins included), for CLI and scripts.

    Builds a bub framework with its installed plugins and enters its lifespan, so a
    SQL or Redis store provided by a plugin is honoured; with none, this is bub's
    file store under ``bub.home / "tapes"`` (``BUB_HOME`` respected).
    """
    from bub.framework import BubFramework

    framework = BubFramework()
    framework.load_hooks()
    async with framework.running():
        store = framework.get_tape_store()
        if store is None:
            raise StoreError("bub provided no tape store")
        yield store
