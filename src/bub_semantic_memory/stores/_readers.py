"""Reading a memory sidecar by parts, per tape store: the newest checkpoint, then the entries after it.

bub's store protocol reads a tape whole (``fetch_all``), which makes a cold load cost
grow with the whole history. Each reader here answers two questions cheaply on its store:

* the newest ``memory.checkpoint`` anchor (the stores index anchors: the SQL plugin by
  name in ``tape_entries``, the Redis plugin in a sorted set; the file store is scanned
  from the end);
* the entries after a given entry id (an indexed range on SQL, ``LRANGE`` from that
  position on Redis, the lines after it in a file): snapshots and a person's edits.

The SQL and Redis readers use those plugins' tables and keys through attributes that
are not their public API (pinned versions, vendored beside the repository); if those
attributes are missing, :func:`sidecar_reader` falls back to the generic reader, which
reads through ``fetch_all`` like any bub store: slower, never wrong.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import pydantic_core
from bub.store import AsyncTapeStore, TapeQuery, TapeStore, is_async_tape_store
from pydantic import BaseModel, ValidationError

from bub_semantic_memory._edits import Edit
from bub_semantic_memory._errors import StoreError
from bub_semantic_memory._gc import gc_paused
from bub_semantic_memory._models import Snapshot
from bub_semantic_memory.stores._checkpoint import CHECKPOINT_ANCHOR
from bub_semantic_memory.tape import Entry, ReadIssue, ReadReport, coerce_entries, parse_tape_lines

__all__ = [
    "EDIT_EVENT",
    "SNAPSHOT_EVENT",
    "SidecarReader",
    "Tail",
    "edit_from_entry",
    "sidecar_reader",
    "snapshot_from_entry",
]

logger = logging.getLogger(__name__)

SNAPSHOT_EVENT = "memory.snapshot"
EDIT_EVENT = "memory.edit"
_CHECKPOINT_MARK = b'"' + CHECKPOINT_ANCHOR.encode() + b'"'
_LEADING_ID = re.compile(rb'^\{"id":\s*(\d+)')
_REDIS_REORDER_SLACK = 64
"""Entries the Redis reader reads before a position: ids are allocated and pushed atomically by the
plugin's Lua script (list index = id - 1), but its fallback without EVAL can interleave writers."""


@dataclass
class Tail:
    """Snapshots and edits read after some entry id, and the last entry id seen (0 if none)."""

    snapshots: list[Snapshot] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    last_entry_id: int = 0


class SidecarReader(Protocol):
    """Reads one store's sidecars by parts."""

    async def latest_checkpoint(self, sidecar: str) -> Entry | None:
        """The newest checkpoint anchor of ``sidecar``, if any."""
        ...

    async def read_after(self, sidecar: str, after: int, report: ReadReport) -> Tail:
        """Snapshots of entries with id > ``after``; what does not parse is reported."""
        ...


def _event_from_entry[M: BaseModel](
    entry: Entry, report: ReadReport, event: str, model: type[M], issue: str, noun: str
) -> M | None:
    """The ``model`` an ``event`` entry holds; None for other entries (reported if it does not validate)."""
    if entry.kind != "event" or entry.payload.get("name") != event:
        return None
    try:
        return model.model_validate(entry.payload.get("data"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = f"{noun} does not validate ({where}: {first['msg']}); skipped"
        report.add(ReadIssue(issue, message, entry_id=entry.id))
        return None


def snapshot_from_entry(entry: Entry, report: ReadReport) -> Snapshot | None:
    """The snapshot an entry holds; None for other entries (and reported if it fails to validate)."""
    return _event_from_entry(entry, report, SNAPSHOT_EVENT, Snapshot, "bad_snapshot", "snapshot")


def edit_from_entry(entry: Entry, report: ReadReport) -> Edit | None:
    """The edit an entry holds; None for other entries (and reported if it fails to validate)."""
    return _event_from_entry(entry, report, EDIT_EVENT, Edit, "bad_edit", "edit")


def _is_checkpoint(entry: Entry) -> bool:
    return entry.kind == "anchor" and entry.payload.get("name") == CHECKPOINT_ANCHOR


def _tail_of(entries: Iterable[Entry], after: int, report: ReadReport) -> Tail:
    tail = Tail()
    with gc_paused():
        for entry in entries:
            if entry.id <= after:
                continue
            tail.last_entry_id = max(tail.last_entry_id, entry.id)
            snapshot = snapshot_from_entry(entry, report)
            if snapshot is not None:
                tail.snapshots.append(snapshot)
                continue
            edit = edit_from_entry(entry, report)
            if edit is not None:
                tail.edits.append(edit)
    return tail


# -- any bub store -------------------------------------------------------------------------------


class GenericReader:
    """Any bub store, sync or async, through ``fetch_all`` (reads the whole sidecar)."""

    def __init__(self, store: TapeStore | AsyncTapeStore) -> None:
        self.store = store

    async def _entries(self, sidecar: str, report: ReadReport | None = None) -> list[Entry]:
        store = self.store
        query: TapeQuery[Any] = TapeQuery(tape=sidecar, store=store)
        try:
            if is_async_tape_store(store):
                result: Any = await store.fetch_all(query)
            else:
                result = await asyncio.to_thread(lambda: list(store.fetch_all(query)))
        except Exception as exc:
            raise StoreError(f"cannot read memory sidecar {sidecar}: {exc}") from exc
        return coerce_entries(list(result), report=report)[0]

    async def latest_checkpoint(self, sidecar: str) -> Entry | None:
        return next((e for e in reversed(await self._entries(sidecar)) if _is_checkpoint(e)), None)

    async def read_after(self, sidecar: str, after: int, report: ReadReport) -> Tail:
        return _tail_of(await self._entries(sidecar, report), after, report)


# -- bub's file store ----------------------------------------------------------------------------


class _SnapshotPayload(BaseModel):
    name: Literal["memory.snapshot"]
    data: Snapshot


class _SnapshotLine(BaseModel):
    """A sidecar line holding a snapshot, parsed in one pass by pydantic's JSON parser."""

    id: int
    kind: Literal["event"]
    payload: _SnapshotPayload


class FileReader:
    """bub's JSONL file store, read from the end: only the checkpoint and the lines after it are read.

    Blocks are read backwards (1 MiB, then doubling) until the lines held reach back far
    enough: to the newest checkpoint, and to the entry a checkpoint covers.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._held: dict[str, tuple[int, list[bytes]]] = {}
        """sidecar -> (file offset where the held lines start, complete lines from there)."""

    def _lines(self, sidecar: str, enough: Callable[[list[bytes]], bool]) -> list[bytes]:
        path = self.directory / f"{sidecar}.jsonl"
        start, lines = self._held.get(sidecar, (-1, []))
        if start == 0 or (start > 0 and enough(lines)):
            return lines
        try:
            with path.open("rb") as handle:
                size = handle.seek(0, 2)
                block = 1 << 20
                start = size if start < 0 else start
                while True:
                    start = max(0, start - block)
                    block *= 2
                    handle.seek(start)
                    pieces = handle.read(size - start).split(b"\n")
                    lines = pieces if start == 0 else pieces[1:]  # the first piece may be a partial line
                    if start == 0 or enough(lines):
                        break
        except FileNotFoundError:
            start, lines = 0, []
        except OSError as exc:
            raise StoreError(f"cannot read memory sidecar {path}: {exc.strerror or exc}") from exc
        if start > 0:
            start += len(pieces[0]) + 1  # the held lines start after the partial one
        self._held[sidecar] = (start, lines)
        return lines

    async def latest_checkpoint(self, sidecar: str) -> Entry | None:
        lines = await asyncio.to_thread(
            self._lines, sidecar, lambda held: _newest_checkpoint(held) is not None
        )
        return _newest_checkpoint(lines)

    async def read_after(self, sidecar: str, after: int, report: ReadReport) -> Tail:
        lines = await asyncio.to_thread(self._lines, sidecar, lambda held: _reaches(held, after))
        return await asyncio.to_thread(_parse_file_tail, lines, after, report)


def _newest_checkpoint(lines: list[bytes]) -> Entry | None:
    for number in range(len(lines) - 1, -1, -1):
        if _CHECKPOINT_MARK not in lines[number]:
            continue
        try:
            data = pydantic_core.from_json(lines[number])
        except ValueError:
            continue  # a torn checkpoint line: read_after reports it
        entries, _ = coerce_entries([data], report=ReadReport())
        if entries and _is_checkpoint(entries[0]):
            return entries[0]
    return None


def _is_checkpoint_line(line: bytes) -> bool:
    """A complete checkpoint line (read by :meth:`FileReader.latest_checkpoint`, not parsed again here).

    A torn one does not end with ``}`` and goes on to the tolerant reader, which reports it.
    """
    return b'"anchor"' in line[:48] and _CHECKPOINT_MARK in line[:160] and line.rstrip().endswith(b"}")


def _reaches(lines: list[bytes], after: int) -> bool:
    """Whether the lines held start at or before entry ``after`` (so every later entry is held)."""
    for line in lines:
        match = _LEADING_ID.match(line)
        if match is not None:
            return int(match.group(1)) <= after
    return False


def _parse_file_tail(lines: list[bytes], after: int, report: ReadReport) -> Tail:
    """Snapshots in the lines after entry ``after``: a fast path per line, the tolerant reader for the rest.

    Lines are in id order (appends are serialised by the store lock), so the scan walks
    back from the end until it meets an id at or before ``after``.
    """
    start = 0
    if after > 0:
        for index in range(len(lines) - 1, -1, -1):
            match = _LEADING_ID.match(lines[index])
            if match is not None and int(match.group(1)) <= after:
                start = index + 1
                break
    tail = Tail()
    slow: list[tuple[int, bytes]] = []
    with gc_paused():
        for number in range(start, len(lines)):
            line = lines[number]
            if not line.strip() or _is_checkpoint_line(line):
                continue
            try:
                parsed = _SnapshotLine.model_validate_json(line)
            except ValidationError:
                slow.append((number + 1, line))
                continue
            if parsed.id > after:
                tail.snapshots.append(parsed.payload.data)
                tail.last_entry_id = max(tail.last_entry_id, parsed.id)
    rest = _tail_of(parse_tape_lines(slow, report=report), after, report)
    tail.snapshots.extend(rest.snapshots)
    tail.edits.extend(rest.edits)
    tail.last_entry_id = max(tail.last_entry_id, rest.last_entry_id)
    report.entries = len(tail.snapshots)
    return tail


# -- bub's SQLAlchemy tape-store plugin ----------------------------------------------------------


def _name_key(value: str) -> str:
    """How the SQLAlchemy plugin keys tape and anchor names (SHA-256 hex)."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class SQLAlchemyReader:
    """The SQLAlchemy plugin's ``tapes`` / ``tape_entries`` tables, by index."""

    def __init__(self, session_factory: Any) -> None:
        self.session_factory = session_factory

    def _checkpoint_row(self, sidecar: str) -> Entry | None:
        from bub_tapestore_sqlalchemy.models import TapeEntryRecord, TapeRecord
        from sqlalchemy import select

        statement = (
            select(TapeEntryRecord.entry_id, TapeEntryRecord.kind, TapeEntryRecord.payload)
            .join(TapeRecord, TapeRecord.id == TapeEntryRecord.tape_id)
            .where(TapeRecord.name_key == _name_key(sidecar), TapeRecord.name == sidecar)
            .where(TapeEntryRecord.anchor_name_key == _name_key(CHECKPOINT_ANCHOR))
            .order_by(TapeEntryRecord.entry_id.desc())
            .limit(1)
        )
        with self.session_factory() as session:
            row = session.execute(statement).first()
        return None if row is None else Entry(int(row[0]), str(row[1]), dict(row[2] or {}))

    def _rows_after(self, sidecar: str, after: int) -> list[Entry]:
        from bub_tapestore_sqlalchemy.models import TapeEntryRecord, TapeRecord
        from sqlalchemy import select

        statement = (
            select(TapeEntryRecord.entry_id, TapeEntryRecord.kind, TapeEntryRecord.payload)
            .join(TapeRecord, TapeRecord.id == TapeEntryRecord.tape_id)
            .where(TapeRecord.name_key == _name_key(sidecar), TapeRecord.name == sidecar)
            .where(TapeEntryRecord.entry_id > after, TapeEntryRecord.kind == "event")
            .order_by(TapeEntryRecord.entry_id)
        )
        with self.session_factory() as session, gc_paused():
            return [
                Entry(int(i), str(k), p if isinstance(p, dict) else {})
                for i, k, p in session.execute(statement)
            ]

    async def latest_checkpoint(self, sidecar: str) -> Entry | None:
        try:
            return await asyncio.to_thread(self._checkpoint_row, sidecar)
        except Exception as exc:
            raise StoreError(f"cannot read memory sidecar {sidecar}: {exc}") from exc

    async def read_after(self, sidecar: str, after: int, report: ReadReport) -> Tail:
        try:
            entries = await asyncio.to_thread(self._rows_after, sidecar, after)
        except Exception as exc:
            raise StoreError(f"cannot read memory sidecar {sidecar}: {exc}") from exc
        return _tail_of(entries, after, report)


# -- bub's Redis tape-store plugin ---------------------------------------------------------------


class RedisReader:
    """The Redis plugin's per-tape entry list (index = id - 1) and anchor sorted set."""

    def __init__(self, client: Any, keys: Any) -> None:
        self.client = client
        self.keys = keys

    async def _range(self, sidecar: str, start: int, end: int) -> list[Entry]:
        raw = await self.client.lrange(self.keys.entries(sidecar), start, end)
        items = []
        for value in raw:
            try:
                items.append(json.loads(value))
            except ValueError:
                items.append(None)  # reported as not an object by coerce_entries
        return coerce_entries(items, report=ReadReport(source=sidecar))[0]

    async def latest_checkpoint(self, sidecar: str) -> Entry | None:
        try:
            # Only checkpoints are anchors in a memory sidecar; newest first by score (the entry id).
            members = await self.client.zrevrange(self.keys.anchors(sidecar), 0, 8, withscores=True)
            for _member, score in members:
                entry_id = int(score)
                window = await self._range(sidecar, max(0, entry_id - 1 - _REDIS_REORDER_SLACK), entry_id - 1)
                found = [e for e in window if e.id == entry_id and _is_checkpoint(e)]
                if found:
                    return found[0]
        except Exception as exc:
            raise StoreError(f"cannot read memory sidecar {sidecar}: {exc}") from exc
        return None

    async def read_after(self, sidecar: str, after: int, report: ReadReport) -> Tail:
        try:
            raw = await self.client.lrange(
                self.keys.entries(sidecar), max(0, after - _REDIS_REORDER_SLACK), -1
            )
        except Exception as exc:
            raise StoreError(f"cannot read memory sidecar {sidecar}: {exc}") from exc
        items: list[Any] = []
        with gc_paused():
            for value in raw:
                try:
                    items.append(json.loads(value))
                except ValueError:
                    items.append(None)
        entries, _ = coerce_entries(items, report=report)
        return _tail_of(entries, after, report)


def sidecar_reader(store: TapeStore | AsyncTapeStore, directory: Path | None) -> SidecarReader:
    """The fastest reader this store supports (``directory``: a file store's directory)."""
    if directory is not None:
        return FileReader(directory)
    kind = f"{type(store).__module__}.{type(store).__qualname__}"
    if kind == "bub_tapestore_sqlalchemy.store.SQLAlchemyTapeStore":
        session_factory = getattr(store, "_session_factory", None)
        if session_factory is not None:
            return SQLAlchemyReader(session_factory)
    elif kind == "bub_tapestore_redis.store.RedisTapeStore":
        client, keys = getattr(store, "_client", None), getattr(store, "_keys", None)
        if client is not None and keys is not None and hasattr(keys, "entries") and hasattr(keys, "anchors"):
            return RedisReader(client, keys)
    return GenericReader(store)
