"""Erasure: a forget's names and values taken out of everything a tape's memory stored before it.

A forget is an edit: the fold stops showing what it forgot, and the history stays as it was.
For a person's right to erasure that is not enough, so ``forget --purge`` also rewrites the
memory sidecar of the tape, in whatever store holds it, and the sidecar's archives:

* every snapshot loses the items the forget recognises (:meth:`EditBook.scrub
  <bub_semantic_memory.memory._edits.EditBook.scrub>`), every entity whose name names the
  forgotten one, and the dropped-item reasons naming it; its id stays, so nothing is extracted
  again;
* every checkpoint is replaced by a stub (:func:`purged_checkpoint`): loads pass over it, and
  the caller stores a new one, folded from the rewritten sidecar;
* the forget itself, and every other edit naming it or about it (a ``set`` of its attribute, a
  ``merge``, the ``end`` of a forgotten relation...), keep only their digests
  (:meth:`Edit.redacted`), which go on recognising the forgotten names when old entries are
  extracted again;
* an unreadable line of a file (a torn write) that names it is blanked, and so are the cut
  bytes a repair kept in ``<sidecar>.jsonl.torn``.

The conversation itself (the tape) is bub's record and is not rewritten.

Per store: bub's file store is rewritten in place under the sidecar's lock, each line padded
to its old length, so another process's ``FileTapeStore`` (which caches its read offset) stays
in step; SQL rows are updated in one transaction (then ``VACUUM``: SQLite rewrites its file,
PostgreSQL drops the dead row versions); Redis list items are replaced one by one, each only if
it is still the item that was read (a compare-and-set script), then an append-only file
rewrite is requested. What a database keeps outside its tables (PostgreSQL's write-ahead log,
a Redis snapshot file, free blocks of the file system) is beyond this module's reach.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bub_semantic_memory._edits import Edit, relation_digest
from bub_semantic_memory._errors import StoreError
from bub_semantic_memory._models import Snapshot
from bub_semantic_memory.memory._edits import EditBook, key_digest
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores._checkpoint import CHECKPOINT_ANCHOR, is_purged_checkpoint, purged_checkpoint
from bub_semantic_memory.stores._readers import EDIT_EVENT, SNAPSHOT_EVENT
from bub_semantic_memory.stores._store import (
    SnapshotStore,
    edit_payload,
    file_lock,
    memory_tape_name,
    snapshot_payload,
)

__all__ = ["PurgeReport", "Scrubber", "purge"]

logger = logging.getLogger(__name__)

_CAS_SCRIPT = """
if redis.call('LINDEX', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('LSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
"""
_CAS_ROUNDS = 5


@dataclass
class PurgeReport:
    """What a purge changed in one store.

    Attributes:
        store: ``file``, ``sqlite``, ``postgresql`` or ``redis``.
        entries: sidecar entries read.
        snapshots: snapshots rewritten without the forgotten items.
        items: entity mentions, relations and facts taken out of them.
        checkpoints: checkpoints replaced by a stub (all that were stored before).
        edits: edits reduced to their digests (the forget itself included).
        blanked: unreadable lines (torn writes) naming it, blanked.
        torn: cut bytes kept by a torn-tail repair, naming it, removed from ``.torn``.
        archives: archived copies of the sidecar rewritten.
        compacted: what the database did to drop the old versions of the rows.
        left: entries of another kind still naming it (0: none; they are not ours to rewrite).
        eval_cache: eval cache files removed (filled in by the caller that purges the cache).
    """

    store: str
    entries: int = 0
    snapshots: int = 0
    items: int = 0
    checkpoints: int = 0
    edits: int = 0
    blanked: int = 0
    torn: int = 0
    archives: int = 0
    compacted: str = ""
    left: int = 0
    eval_cache: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return dict(self.__dict__)


class Scrubber:
    """Rewrites stored sidecar entries without what one forget erases.

    Args:
        forget: the forget, with its names (before :meth:`Edit.redacted`).
        graph: the memory as folded before the forget: resolves the keys old snapshots used.
    """

    def __init__(self, forget: Edit, graph: MemoryGraph) -> None:
        if forget.op != "forget":
            raise ValueError(f"only a forget can be purged, not {forget.op}")
        self.forget = forget
        self.book = EditBook([forget])
        self.graph = graph
        self.names_it = forget.named_in

    def entry(self, raw: dict[str, Any], report: PurgeReport) -> dict[str, Any] | None:
        """``raw`` (a stored entry) rewritten, or None when it keeps nothing to erase."""
        kind, payload = raw.get("kind"), raw.get("payload")
        if not isinstance(payload, dict):
            return None
        name = payload.get("name")
        if kind == "event" and name == SNAPSHOT_EVENT:
            data = self._snapshot(payload.get("data"), report)
        elif kind == "event" and name == EDIT_EVENT:
            data = self._edit(payload.get("data"), report)
        elif kind == "anchor" and name == CHECKPOINT_ANCHOR:
            state = payload.get("state")
            if is_purged_checkpoint(state):  # any other may hold what was forgotten, under a key or a digest
                return None
            report.checkpoints += 1
            return raw | {"payload": payload | {"state": purged_checkpoint(state)}}
        else:
            report.left += self.names_it(json.dumps(payload, ensure_ascii=False))
            return None
        return None if data is None else raw | {"payload": payload | {"data": data}}

    def _snapshot(self, data: object, report: PurgeReport) -> dict[str, Any] | None:
        try:
            snapshot = Snapshot.model_validate(data)
        except ValidationError:
            report.left += self.names_it(json.dumps(data, ensure_ascii=False))
            return None
        scrubbed = self.book.scrub(
            snapshot, lambda r: self.graph.relation_key(r.source, r.type, r.target), self.graph.resolve
        )
        if self.forget.names:  # an entity named after the forgotten one ("Alice Chen's team") goes too
            named = {e.key for e in scrubbed.entities if any(self.names_it(n) for n in e.names())}
            scrubbed = scrubbed.model_copy(
                update={
                    "entities": tuple(e for e in scrubbed.entities if e.key not in named),
                    "relations": tuple(
                        r for r in scrubbed.relations if r.source not in named and r.target not in named
                    ),
                    "facts": tuple(f for f in scrubbed.facts if named.isdisjoint(f.about)),
                }
            )
        scrubbed = scrubbed.model_copy(
            update={"dropped": tuple(d for d in scrubbed.dropped if not self.names_it(d))}
        )
        if scrubbed == snapshot:
            return None
        report.snapshots += 1
        report.items += sum(
            len(getattr(snapshot, part)) - len(getattr(scrubbed, part))
            for part in ("entities", "relations", "facts")
        )
        return snapshot_payload(scrubbed)

    def _edit(self, data: object, report: PurgeReport) -> dict[str, Any] | None:
        try:
            edit = Edit.model_validate(data)
        except ValidationError:
            report.left += self.names_it(json.dumps(data, ensure_ascii=False))
            return None
        if edit.purged:
            return None
        plain = edit.model_dump_json(exclude={"match", "words", "id"})
        if edit.id != self.forget.id and not self.names_it(plain) and not self._about_forgotten(edit):
            return None
        report.edits += 1
        return edit_payload(edit.redacted())

    def _about_forgotten(self, edit: Edit) -> bool:
        """Whether ``edit`` is about a key the forget recognises (a key's slug may not read as a name)."""
        keys = [k for k in (edit.entity, edit.other, *edit.other_keys, *(edit.relation or ())) if k]
        if edit.relation is not None and relation_digest(edit.relation) in self.forget.match:
            return True
        return any(key_digest(k) in self.forget.match for k in keys)

    def lines(self, data: bytes, report: PurgeReport) -> list[tuple[int, int, bytes]]:
        """The lines of a JSONL file to rewrite: (offset, old length, new bytes of at most that length
        when it fits; longer otherwise)."""
        changes: list[tuple[int, int, bytes]] = []
        offset = 0
        for line in data.split(b"\n"):
            length = len(line)
            stripped = line.strip()
            if stripped:
                report.entries += 1
                new = self._line(stripped, report)
                if new is not None:
                    changes.append((offset, length, new))
            offset += length + 1
        return changes

    def _line(self, line: bytes, report: PurgeReport) -> bytes | None:
        try:
            raw = json.loads(line)
        except ValueError:
            raw = None
        if not isinstance(raw, dict):
            if self.names_it(line.decode("utf-8", errors="replace")):
                report.blanked += 1
                return b""
            return None
        rewritten = self.entry(raw, report)
        if rewritten is None:
            return None
        return json.dumps(rewritten, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# -- per store -----------------------------------------------------------------------------------


async def purge(
    store: SnapshotStore, forget: Edit, graph: MemoryGraph, *, archive_dir: Path | None
) -> PurgeReport:
    """Erase what ``forget`` forgot from ``forget.tape``'s memory sidecar in ``store``, and from the
    sidecar's archived copies in ``archive_dir`` (bub writes them beside its tapes).

    Raises:
        StoreError: the store cannot be rewritten (a store of unknown layout, a refused write).
    """
    scrubber = Scrubber(forget, graph)
    sidecar = memory_tape_name(forget.tape)
    backend = store.store
    kind = f"{type(backend).__module__}.{type(backend).__qualname__}"
    if store.directory is not None:
        report = await asyncio.to_thread(_purge_file, store.directory, sidecar, scrubber)
    elif kind == "bub_tapestore_sqlalchemy.store.SQLAlchemyTapeStore":
        report = await asyncio.to_thread(_purge_sql, backend, sidecar, scrubber)
    elif kind == "bub_tapestore_redis.store.RedisTapeStore":
        report = await _purge_redis(backend, sidecar, scrubber)
    else:
        raise StoreError(
            f"cannot purge from a {type(backend).__name__}: erasure knows bub's file store and its SQL and "
            "Redis store plugins; the forget itself is stored and applies"
        )
    if archive_dir is not None:
        report.archives = await asyncio.to_thread(_purge_archives, archive_dir, sidecar, scrubber, report)
    return report


def _purge_file(directory: Path, sidecar: str, scrubber: Scrubber) -> PurgeReport:
    report = PurgeReport(store="file")
    path = directory / f"{sidecar}.jsonl"
    try:
        with file_lock(path.with_name(path.name + ".lock")):
            if path.exists():
                _rewrite_in_place(path, scrubber, report)
            torn = path.with_name(path.name + ".torn")
            if torn.exists():
                report.torn = _drop_naming_chunks(torn, scrubber)
    except OSError as exc:
        raise StoreError(f"cannot purge {path}: {exc.strerror or exc}") from exc
    return report


def _rewrite_in_place(path: Path, scrubber: Scrubber, report: PurgeReport) -> None:
    """Each changed line overwritten at its offset and padded with spaces to its old length; a file
    where a line would grow is replaced whole instead (atomically, by rename)."""
    data = path.read_bytes()
    changes = scrubber.lines(data, report)
    if not changes:
        return
    if any(len(new) > length for _, length, new in changes):
        logger.warning("%s: a purged line would grow; the file is replaced whole", path)
        _replace_whole(path, data, changes)
        return
    fd = os.open(path, os.O_RDWR)
    try:
        for offset, length, new in changes:
            os.pwrite(fd, new + b" " * (length - len(new)), offset)
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_whole(path: Path, data: bytes, changes: list[tuple[int, int, bytes]]) -> None:
    pieces, position = [], 0
    for offset, length, new in changes:
        pieces += [data[position:offset], new]
        position = offset + length
    pieces.append(data[position:])
    _write_atomically(path, b"".join(pieces))


def _write_atomically(path: Path, content: bytes) -> None:
    tmp = path.with_name(path.name + ".purge")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)


def _drop_naming_chunks(path: Path, scrubber: Scrubber) -> int:
    """Remove the chunks (lines) of a ``.torn`` file that name what was forgotten; how many."""
    chunks = path.read_bytes().split(b"\n")
    kept = [c for c in chunks if not scrubber.names_it(c.decode("utf-8", errors="replace"))]
    if len(kept) != len(chunks):
        _write_atomically(path, b"\n".join(kept))
    return len(chunks) - len(kept)


def _purge_archives(directory: Path, sidecar: str, scrubber: Scrubber, report: PurgeReport) -> int:
    """Rewrite the archived copies of the sidecar; how many (their entries are not counted in ``report``,
    which tells what the live sidecar held, except for what is left naming it)."""
    rewritten = 0
    for path in sorted(directory.glob(f"{sidecar}.jsonl.*.bak")):
        data = path.read_bytes()
        counted = PurgeReport(store=report.store)
        changes = scrubber.lines(data, counted)
        report.left += counted.left
        if changes:
            _replace_whole(path, data, changes)
            rewritten += 1
    return rewritten


def _purge_sql(backend: Any, sidecar: str, scrubber: Scrubber) -> PurgeReport:
    from bub_tapestore_sqlalchemy.models import TapeEntryRecord, TapeRecord
    from sqlalchemy import select, update

    engine = backend._engine
    report = PurgeReport(store=engine.url.get_backend_name())
    statement = (
        select(
            TapeEntryRecord.tape_id, TapeEntryRecord.entry_id, TapeEntryRecord.kind, TapeEntryRecord.payload
        )
        .join(TapeRecord, TapeRecord.id == TapeEntryRecord.tape_id)
        .where(TapeRecord.name == sidecar)
        .order_by(TapeEntryRecord.entry_id)
    )
    try:
        with backend._write_lock, backend._session_factory.begin() as session:
            for tape_id, entry_id, kind, payload in session.execute(statement).all():
                report.entries += 1
                rewritten = scrubber.entry({"id": entry_id, "kind": kind, "payload": payload}, report)
                if rewritten is not None:
                    session.execute(
                        update(TapeEntryRecord)
                        .where(TapeEntryRecord.tape_id == tape_id, TapeEntryRecord.entry_id == entry_id)
                        .values(payload=rewritten["payload"])
                    )
    except Exception as exc:
        raise StoreError(f"cannot purge memory sidecar {sidecar}: {exc}") from exc
    report.compacted = _vacuum(engine)
    return report


def _vacuum(engine: Any) -> str:
    """Drop the old versions of rewritten rows (best effort: a failure is reported, not raised)."""
    statement = "VACUUM" if engine.url.get_backend_name() == "sqlite" else "VACUUM tape_entries"
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql(statement)
    except Exception as exc:
        logger.warning("purge: %s failed: %s", statement, exc)
        return f"{statement} failed: {exc}"
    return statement


async def _purge_redis(backend: Any, sidecar: str, scrubber: Scrubber) -> PurgeReport:
    client, key = backend._client, backend._keys.entries(sidecar)
    for _ in range(_CAS_ROUNDS):
        report = PurgeReport(store="redis")
        try:
            items = await client.lrange(key, 0, -1)
            conflicts = 0
            for index, value in enumerate(items):
                report.entries += 1
                raw = _redis_entry(value)
                rewritten = scrubber.entry(raw, report) if raw is not None else None
                if raw is None and scrubber.names_it(_text(value)):
                    rewritten, report.blanked = {}, report.blanked + 1
                if rewritten is None:
                    continue
                encoded = json.dumps(rewritten, sort_keys=True) if rewritten else ""
                conflicts += not await client.eval(_CAS_SCRIPT, 1, key, index, value, encoded)
        except Exception as exc:
            raise StoreError(f"cannot purge memory sidecar {sidecar}: {exc}") from exc
        if not conflicts:
            report.compacted = await _rewrite_aof(client)
            return report
    raise StoreError(f"cannot purge memory sidecar {sidecar}: its entries kept changing under the purge")


def _text(value: Any) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes | bytearray) else str(value)


def _redis_entry(value: Any) -> dict[str, Any] | None:
    try:
        raw = json.loads(_text(value))
    except ValueError:
        return None
    return raw if isinstance(raw, dict) else None


async def _rewrite_aof(client: Any) -> str:
    """Ask Redis to rewrite its append-only file, which still holds the old values (best effort)."""
    try:
        await client.bgrewriteaof()
    except Exception as exc:
        if "already in progress" not in str(exc).lower():
            logger.warning("purge: BGREWRITEAOF failed: %s", exc)
            return f"BGREWRITEAOF failed: {exc}"
    return "BGREWRITEAOF"
