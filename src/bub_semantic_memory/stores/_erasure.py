"""The erasure rule at the point of storing: what a purge erased is never written to a sidecar again.

A purge (``forget --purge``) records its forget, reduced to digests, as an **erasure**: an
``anchor`` entry named ``memory.erasure`` in the tape's memory sidecar, written before the purge
rewrites anything. Every write of memory (a snapshot, a checkpoint, an edit) reads the sidecar's
erasures right before it writes, under the sidecar's write lock, which the purge holds while it
records its erasure and rewrites what the sidecar held:

* a snapshot is stored without what an erasure recognises, whatever graph its writer folded
  (an extraction started before the purge, another worker, a replayed window, an import);
* a checkpoint folded without one of the erasures is not stored (it was folded before the purge);
* an undo of an erasure is refused.

So a write either ends before the purge starts (and the purge rewrites it) or reads the erasure.

The write lock, per store:

* bub's file store: the ``fcntl`` lock every writer of the sidecar file takes (``<sidecar>.jsonl.lock``);
* SQLite: an ``fcntl`` lock on ``<database>.semantic-memory.lock`` beside the database file;
* PostgreSQL: a session advisory lock (``pg_advisory_lock``) keyed by the sidecar's name;
* Redis: a Redis lock (redis-py's ``Lock``: a key set with ``NX`` and a time to live) beside the
  sidecar's keys (a Redis-compatible server without scripting gets none, and a warning);
* any other store: a lock of this process only.

Anchors are indexed by name in every store bub has (a SQL index, a Redis sorted set; the file store
is scanned for the anchor's name), so reading the erasures costs little on each write.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import weakref
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from bub.store import AsyncTapeStore, TapeQuery, TapeStore, is_async_tape_store
from pydantic import ValidationError

from bub_semantic_memory._edits import Edit
from bub_semantic_memory._errors import StoreError
from bub_semantic_memory.tape import Entry, ReadReport, coerce_entries

__all__ = ["ERASURE_ANCHOR", "erasure_state", "erasures_from", "read_erasures", "sidecar_lock", "store_kind"]

logger = logging.getLogger(__name__)

ERASURE_ANCHOR = "memory.erasure"
_ERASURE_MARK = b'"' + ERASURE_ANCHOR.encode() + b'"'
_LOCK_MODE = 0o600
_REDIS_LOCK_TTL_S = 600.0
"""A Redis lock outlives a purge of a long sidecar; it expires if its holder died."""
_REDIS_REORDER_SLACK = 64

_PROCESS_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)
_FILE_SCANS: dict[Path, tuple[int, int, tuple[Edit, ...]]] = {}
"""sidecar file -> (inode, bytes scanned, erasures found there): a file is scanned from where the
last scan stopped; a file that shrank or was replaced is scanned again whole."""


def store_kind(store: object) -> str:
    """``sqlite``, ``postgresql`` or ``redis`` for bub's SQL and Redis store plugins, else ``other``."""
    kind = f"{type(store).__module__}.{type(store).__qualname__}"
    if kind == "bub_tapestore_sqlalchemy.store.SQLAlchemyTapeStore":
        engine = getattr(store, "_engine", None)
        return "sqlite" if engine is not None and engine.url.get_backend_name() == "sqlite" else "postgresql"
    if kind == "bub_tapestore_redis.store.RedisTapeStore":
        return "redis"
    return "other"


def erasure_state(edit: Edit) -> dict[str, Any]:
    """The anchor state that records ``edit`` (a purged forget: digests only) as an erasure."""
    if not edit.erases:
        raise ValueError("only a purged forget is an erasure")
    return {
        "edit": edit.model_dump(mode="json", exclude_defaults=True) | {"schema_version": edit.schema_version}
    }


def erasures_from(entries: Iterable[Entry]) -> list[Edit]:
    """The erasures that ``entries`` of a sidecar record (an unreadable one is skipped)."""
    found: dict[str, Edit] = {}
    for entry in entries:
        if entry.kind != "anchor" or entry.payload.get("name") != ERASURE_ANCHOR:
            continue
        state = entry.payload.get("state")
        try:
            edit = Edit.model_validate(state.get("edit") if isinstance(state, dict) else None)
        except ValidationError:
            continue
        if edit.erases:
            found.setdefault(edit.id, edit)
    return list(found.values())


# -- reading ---------------------------------------------------------------------------------------


async def read_erasures(
    store: TapeStore | AsyncTapeStore, directory: Path | None, sidecar: str
) -> list[Edit]:
    """Every erasure recorded in ``sidecar`` (read by the store's anchor index where it has one).

    Raises:
        StoreError: the store cannot be read.
    """
    try:
        if directory is not None:
            return list(await asyncio.to_thread(file_erasures, directory / f"{sidecar}.jsonl"))
        kind = store_kind(store)
        if kind in ("sqlite", "postgresql"):
            return await asyncio.to_thread(_sql_erasures, store, sidecar)
        if kind == "redis":
            return await _redis_erasures(store, sidecar)
        query: TapeQuery[Any] = TapeQuery(tape=sidecar, store=store)
        if is_async_tape_store(store):
            result: Any = await store.fetch_all(query)
        else:
            result = await asyncio.to_thread(lambda: list(store.fetch_all(query)))
        return erasures_from(coerce_entries(list(result), report=ReadReport(source=sidecar))[0])
    except StoreError:
        raise
    except Exception as exc:
        raise StoreError(f"cannot read the erasures of memory sidecar {sidecar}: {exc}") from exc


def file_erasures(path: Path) -> tuple[Edit, ...]:
    """The erasures of a sidecar file of bub's file store (scanned from where the last scan stopped)."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        _FILE_SCANS.pop(path, None)
        return ()
    with handle:
        stat = os.fstat(handle.fileno())
        inode, scanned, found = _FILE_SCANS.get(path, (stat.st_ino, 0, ()))
        if inode != stat.st_ino or stat.st_size < scanned:
            scanned, found = 0, ()
        handle.seek(scanned)
        data = handle.read(stat.st_size - scanned)
    complete = data.rfind(b"\n") + 1  # an unterminated last line is read again next time
    lines = [line for line in data[:complete].split(b"\n") if _ERASURE_MARK in line]
    entries = []
    for line in lines:
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        entries.extend(coerce_entries([raw], report=ReadReport())[0])
    known = {e.id: e for e in found}
    for edit in erasures_from(entries):
        known.setdefault(edit.id, edit)
    result = tuple(known.values())
    _FILE_SCANS[path] = (stat.st_ino, scanned + complete, result)
    return result


def _name_key(value: str) -> str:
    """How the SQLAlchemy plugin keys tape and anchor names (SHA-256 hex)."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _sql_erasures(store: Any, sidecar: str) -> list[Edit]:
    from bub_tapestore_sqlalchemy.models import TapeEntryRecord, TapeRecord
    from sqlalchemy import select

    statement = (
        select(TapeEntryRecord.entry_id, TapeEntryRecord.kind, TapeEntryRecord.payload)
        .join(TapeRecord, TapeRecord.id == TapeEntryRecord.tape_id)
        .where(TapeRecord.name_key == _name_key(sidecar), TapeRecord.name == sidecar)
        .where(TapeEntryRecord.anchor_name_key == _name_key(ERASURE_ANCHOR))
        .order_by(TapeEntryRecord.entry_id)
    )
    with store._session_factory() as session:
        rows = session.execute(statement).all()
    return erasures_from(Entry(int(i), str(k), p if isinstance(p, dict) else {}) for i, k, p in rows)


async def _redis_erasures(store: Any, sidecar: str) -> list[Edit]:
    client, keys = store._client, store._keys
    # the plugin's anchor index: members "<urlsafe base64 of the anchor name>:<id>", scored by id
    prefix = base64.urlsafe_b64encode(ERASURE_ANCHOR.encode()).decode("ascii") + ":"
    members = await client.zrange(keys.anchors(sidecar), 0, -1, withscores=True)
    entries: list[Entry] = []
    for member, score in members:
        text = member.decode("utf-8") if isinstance(member, bytes | bytearray) else str(member)
        if not text.startswith(prefix):
            continue
        entry_id = int(score)
        window = await client.lrange(
            keys.entries(sidecar), max(0, entry_id - 1 - _REDIS_REORDER_SLACK), entry_id - 1
        )
        items = []
        for value in window:
            try:
                items.append(json.loads(value))
            except ValueError:
                continue
        entries += [e for e in coerce_entries(items, report=ReadReport())[0] if e.id == entry_id]
    return erasures_from(entries)


# -- the write lock --------------------------------------------------------------------------------


def _process_lock(name: str) -> asyncio.Lock:
    """One lock per sidecar in this process and event loop: a second writer here waits on it,
    not on the cross-process lock in a worker thread."""
    locks = _PROCESS_LOCKS.setdefault(asyncio.get_running_loop(), {})
    return locks.setdefault(name, asyncio.Lock())


@contextlib.asynccontextmanager
async def sidecar_lock(
    store: TapeStore | AsyncTapeStore, directory: Path | None, sidecar: str
) -> AsyncIterator[None]:
    """Hold the write lock of ``sidecar`` in ``store`` (see the module docstring), in this process and
    across processes. Not for bub's file store (``directory`` set): its writers take the sidecar
    file's ``fcntl`` lock (:func:`~bub_semantic_memory.stores._store.file_lock`) in the thread that
    writes, as a second lock of the same file in one process would wait for ever.

    Raises:
        StoreError: the lock cannot be taken.
    """
    if directory is not None:
        raise ValueError("bub's file store: take the sidecar file's lock in the thread that writes it")
    kind = store_kind(store)
    async with _process_lock(f"{kind}:{id(store) if kind == 'other' else ''}:{sidecar}"):
        if kind == "sqlite":
            database = store._engine.url.database  # type: ignore[union-attr]
            if database and database != ":memory:":
                async with _fcntl_lock(Path(f"{database}.semantic-memory.lock")):
                    yield
            else:
                yield
        elif kind == "postgresql":
            async with _advisory_lock(store, sidecar):
                yield
        elif kind == "redis":
            async with _redis_lock(store, sidecar):
                yield
        else:
            yield


@contextlib.asynccontextmanager
async def _fcntl_lock(path: Path) -> AsyncIterator[None]:
    def take() -> int:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, _LOCK_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            raise
        return fd

    try:
        fd = await asyncio.to_thread(take)
    except OSError as exc:
        raise StoreError(f"cannot lock {path}: {exc.strerror or exc}") from exc
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _advisory_key(sidecar: str) -> int:
    """A signed 64-bit key for ``pg_advisory_lock``, from the sidecar's name."""
    return int.from_bytes(
        hashlib.sha256(f"bub-semantic-memory:{sidecar}".encode()).digest()[:8], "big", signed=True
    )


@contextlib.asynccontextmanager
async def _advisory_lock(store: Any, sidecar: str) -> AsyncIterator[None]:
    from sqlalchemy import text

    key = _advisory_key(sidecar)

    def take() -> Any:
        connection = store._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
        except Exception:
            connection.close()
            raise
        return connection

    def release(connection: Any) -> None:
        try:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
        finally:
            connection.close()

    try:
        connection = await asyncio.to_thread(take)
    except Exception as exc:
        raise StoreError(f"cannot lock memory sidecar {sidecar}: {exc}") from exc
    try:
        yield
    finally:
        await asyncio.to_thread(release, connection)


@contextlib.asynccontextmanager
async def _redis_lock(store: Any, sidecar: str) -> AsyncIterator[None]:
    lock = store._client.lock(
        f"{store._keys.entries(sidecar)}:write-lock",
        timeout=_REDIS_LOCK_TTL_S,
        blocking_timeout=_REDIS_LOCK_TTL_S,
    )
    try:
        taken = await lock.acquire()
    except Exception as exc:
        if "unknown command" in str(exc).lower():  # a Redis-compatible server without scripting
            logger.warning(
                "memory sidecar %s: no Redis lock on this server (%s); writes are not serialised",
                sidecar,
                exc,
            )
            yield
            return
        raise StoreError(f"cannot lock memory sidecar {sidecar}: {exc}") from exc
    if not taken:
        raise StoreError(f"cannot lock memory sidecar {sidecar}: another writer held it too long")
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # expired meanwhile: nothing left to release
            await lock.release()
