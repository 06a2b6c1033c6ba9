"""Erasure: a forget's names and values taken out of everything a tape's memory stored before it.

A forget is an edit: the fold stops showing what it forgot, and the history stays as it was.
For a person's right to erasure that is not enough, so ``forget --purge`` also rewrites the
memory sidecar of the tape, in whatever store holds it, and the sidecar's archives. First, under
the sidecar's write lock, it records the forget (reduced to digests) as an erasure
(:mod:`._erasure`): from then on no write stores what it recognises. Then, still under the lock:

* every snapshot loses the items the forget recognises, the entities whose name names the
  forgotten one and the dropped-item reasons naming it (:meth:`EditBook.erase
  <bub_semantic_memory.memory._edit_rules.EditBook.erase>`); its id stays, so nothing is extracted
  again;
* every checkpoint is replaced by a stub (:func:`purged_checkpoint`): loads pass over it, and
  the caller stores a new one, folded from the rewritten sidecar;
* the forget itself, and every other edit naming it or about it (a ``set`` of its attribute, a
  ``merge``, the ``end`` of a forgotten relation...), keep only their digests
  (:meth:`Edit.redacted`), which go on recognising the forgotten names when old entries are
  extracted again;
* an unreadable line of a file (a torn write) that names it is blanked, and so are the cut
  bytes a repair kept in ``<sidecar>.jsonl.torn``.

Then the store drops the old versions of what it rewrote:

* bub's file store: each line is rewritten in place, padded to its old length, so another
  process's ``FileTapeStore`` (which caches its read offset) stays in step;
* SQLite: the rows are rewritten in one ``BEGIN IMMEDIATE`` transaction (the write lock), the
  database is vacuumed, a write-ahead log is checkpointed and truncated
  (``wal_checkpoint(TRUNCATE)``), and the bytes of the database file, its log and journal are
  searched for the forgotten names: what is found beyond the other tapes' own rows (the
  conversation names her, and is not rewritten) is reported. Another connection holding a read
  transaction keeps the old pages; the report says so instead of "compacted";
* PostgreSQL: the rows are rewritten in one transaction, then ``VACUUM FULL tape_entries``
  rewrites the table and its TOAST table into new files, so the heap no longer holds the old row
  versions (it locks the table while it runs);
* Redis: list items are replaced one by one, each only if it is still the item that was read (a
  compare-and-set script), then the append-only file is rewritten (``BGREWRITEAOF``, waited for).

A purge can be run again: it finds what is left (0 when the first one was complete).

The conversation itself (the tape) is bub's record and is not rewritten; nor are copies this
module cannot reach: export files, backups, PostgreSQL's write-ahead log, a Redis snapshot, free
blocks of the file system. :attr:`PurgeReport.not_touched` names them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bub.tape import TapeEntry
from pydantic import ValidationError

from bub_semantic_memory._edits import Edit, relation_digest
from bub_semantic_memory._errors import StoreError
from bub_semantic_memory._models import Snapshot
from bub_semantic_memory.memory import EditBook, MemoryGraph, key_digest
from bub_semantic_memory.stores._checkpoint import CHECKPOINT_ANCHOR, is_purged_checkpoint, purged_checkpoint
from bub_semantic_memory.stores._erasure import (
    ERASURE_ANCHOR,
    erasure_state,
    file_erasures,
    read_erasures,
    sidecar_lock,
    store_kind,
)
from bub_semantic_memory.stores._readers import EDIT_EVENT, SNAPSHOT_EVENT
from bub_semantic_memory.stores._store import (
    SnapshotStore,
    edit_payload,
    file_lock,
    memory_tape_name,
    snapshot_payload,
)

__all__ = ["PurgeReport", "Scrubber", "count_traces", "purge"]

logger = logging.getLogger(__name__)

_CAS_SCRIPT = """
if redis.call('LINDEX', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('LSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
"""
_CAS_ROUNDS = 5
_SQLITE_BUSY_MS = 5000
"""How long the SQLite checkpoint waits for another connection's read transaction to end."""
_AOF_WAIT_S = 60.0
_AOF_POLL_S = 0.1


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
        compacted: what the database did to drop the old versions of the rows (or why it could not).
        residue: SQLite: traces of the forgotten names found in the database file and its log after
            the compaction, beyond the other tapes' own rows (None: not searched).
        left: entries of another kind still naming it (0: none; they are not ours to rewrite).
        eval_cache: eval cache files removed (filled in by the caller that purges the cache).
        again: this forget had been purged before: the counts are what that purge had left.
        not_touched: copies this purge cannot reach (the conversation tape, exports, backups...).
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
    residue: int | None = None
    left: int = 0
    eval_cache: int = 0
    again: bool = False
    notes: list[str] = field(default_factory=list)
    not_touched: list[str] = field(default_factory=list)

    @property
    def found(self) -> int:
        """Everything this purge took out or found left (0: nothing named it any more)."""
        return (
            self.items
            + self.checkpoints
            + self.edits
            + self.blanked
            + self.torn
            + self.archives
            + self.eval_cache
            + self.left
            + (self.residue or 0)
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return dict(self.__dict__) | {"found": self.found}


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
            if is_purged_checkpoint(state) or self._folded_after(state):
                return None  # any other may hold what was forgotten, under a key or a digest
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
        scrubbed = self.book.erase(
            snapshot, lambda r: self.graph.relation_key(r.source, r.type, r.target), self.graph.resolve
        )
        if scrubbed == snapshot:
            return None
        report.snapshots += 1
        report.items += sum(
            len(getattr(snapshot, part)) - len(getattr(scrubbed, part))
            for part in ("entities", "relations", "facts")
        )
        return snapshot_payload(scrubbed)

    def _folded_after(self, state: object) -> bool:
        """Whether a checkpoint was folded under this forget already purged (by an earlier run of the
        purge): it never held what the forget erased."""
        text = state.get("graph") if isinstance(state, dict) else None
        if not isinstance(text, str) or self.forget.id not in text:
            return False
        try:
            edits = json.loads(text).get("edits", ())
        except (ValueError, AttributeError):
            return False
        return any(
            isinstance(e, dict) and e.get("id") == self.forget.id and e.get("purged") is True for e in edits
        )

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
    store: SnapshotStore,
    forget: Edit,
    graph: MemoryGraph,
    *,
    archive_dir: Path | None,
    terms: Iterable[str] = (),
) -> PurgeReport:
    """Erase what ``forget`` forgot from ``forget.tape``'s memory sidecar in ``store``, and from the
    sidecar's archived copies in ``archive_dir`` (bub writes them beside its tapes).

    The forget is recorded as an erasure first (see the module docstring); a forget purged before
    is purged again (:attr:`PurgeReport.again`). ``terms``: the forgotten names and forms, folded,
    which SQLite's file is searched for afterwards (a purge keeps only digests of them).

    Raises:
        StoreError: the store cannot be rewritten (a store of unknown layout, a refused write);
            the erasure is recorded where it could be, and applies to every later write.
    """
    scrubber = Scrubber(forget, graph)
    sidecar = memory_tape_name(forget.tape)
    erasure = TapeEntry.anchor(ERASURE_ANCHOR, erasure_state(forget.redacted()))
    words = tuple(dict.fromkeys(t for t in terms if t.strip()))
    if store.directory is not None:
        report = await asyncio.to_thread(_purge_file, store, sidecar, scrubber, erasure)
    else:
        backend: Any = store.store
        kind = store_kind(backend)
        async with sidecar_lock(store.store, None, sidecar):
            known = {e.id for e in await read_erasures(store.store, None, sidecar)}
            if forget.id not in known:
                await store.write_locked(sidecar, erasure)
            if kind in ("sqlite", "postgresql"):
                report = await asyncio.to_thread(_purge_sql, store.store, sidecar, scrubber)
            elif kind == "redis":
                report = await _purge_redis(store.store, sidecar, scrubber)
            else:
                raise StoreError(
                    f"cannot purge from a {type(store.store).__name__}: erasure knows bub's file store and "
                    "its SQL and Redis store plugins; the forget is stored, recorded as an erasure, and "
                    "applies"
                )
            report.again = forget.id in known
        if kind == "sqlite":
            report.compacted, report.residue = await asyncio.to_thread(
                _compact_sqlite, store.store, sidecar, words
            )
        elif kind == "postgresql":
            report.compacted = await asyncio.to_thread(_vacuum_full, backend._engine)
        else:
            report.compacted = await _rewrite_aof(backend._client)
    if archive_dir is not None:
        report.archives = await asyncio.to_thread(_purge_archives, archive_dir, sidecar, scrubber, report)
    return report


def _purge_file(store: SnapshotStore, sidecar: str, scrubber: Scrubber, erasure: TapeEntry) -> PurgeReport:
    assert store.directory is not None
    report = PurgeReport(store="file")
    path = store.directory / f"{sidecar}.jsonl"
    try:
        with file_lock(path.with_name(path.name + ".lock")):
            report.again = scrubber.forget.id in {e.id for e in file_erasures(path)}
            if not report.again:
                store.append_file_locked(path, erasure)
            _rewrite_in_place(path, scrubber, report)
            torn = path.with_name(path.name + ".torn")
            if torn.exists():
                report.torn = _drop_naming_chunks(torn, scrubber)
    except OSError as exc:
        raise StoreError(f"cannot purge {path}: {exc.strerror or exc}") from exc
    report.compacted = "rewritten in place, padded"
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
    engine = backend._engine
    report = PurgeReport(store=engine.url.get_backend_name())
    try:
        if report.store == "sqlite":
            _rewrite_sqlite(engine, sidecar, scrubber, report)
        else:
            _rewrite_sql(backend, sidecar, scrubber, report)
    except Exception as exc:
        raise StoreError(f"cannot purge memory sidecar {sidecar}: {exc}") from exc
    return report


def _rewrite_sql(backend: Any, sidecar: str, scrubber: Scrubber, report: PurgeReport) -> None:
    from bub_tapestore_sqlalchemy.models import TapeEntryRecord, TapeRecord
    from sqlalchemy import select, update

    statement = (
        select(
            TapeEntryRecord.tape_id, TapeEntryRecord.entry_id, TapeEntryRecord.kind, TapeEntryRecord.payload
        )
        .join(TapeRecord, TapeRecord.id == TapeEntryRecord.tape_id)
        .where(TapeRecord.name == sidecar)
        .order_by(TapeEntryRecord.entry_id)
    )
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


def _rewrite_sqlite(engine: Any, sidecar: str, scrubber: Scrubber, report: PurgeReport) -> None:
    """The rows rewritten in a ``BEGIN IMMEDIATE`` transaction: SQLite's write lock is taken before
    anything is read, so no writer of another process slips in between. The plugin stores a JSON
    column as ``json.dumps`` text, as written here."""
    raw = engine.raw_connection()
    try:
        connection = raw.driver_connection
        connection.isolation_level = None  # explicit transactions
        cursor = connection.cursor()
        cursor.execute("BEGIN IMMEDIATE")
        try:
            rows = cursor.execute(
                "SELECT e.tape_id, e.entry_id, e.kind, e.payload FROM tape_entries e "
                "JOIN tapes t ON t.id = e.tape_id WHERE t.name = ? ORDER BY e.entry_id",
                (sidecar,),
            ).fetchall()
            for tape_id, entry_id, kind, payload in rows:
                report.entries += 1
                data = json.loads(payload) if isinstance(payload, str | bytes) else payload
                rewritten = scrubber.entry({"id": entry_id, "kind": kind, "payload": data}, report)
                if rewritten is not None:
                    cursor.execute(
                        "UPDATE tape_entries SET payload = ? WHERE tape_id = ? AND entry_id = ?",
                        (json.dumps(rewritten["payload"]), tape_id, entry_id),
                    )
            cursor.execute("COMMIT")
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
    finally:
        raw.close()


def _compact_sqlite(backend: Any, sidecar: str, terms: tuple[str, ...]) -> tuple[str, int | None]:
    """VACUUM, checkpoint and truncate the write-ahead log, then search the files: what was done
    (or why not), and the traces of ``terms`` beyond the other tapes' rows (None: not searched)."""
    engine = backend._engine
    raw = engine.raw_connection()
    done: list[str] = []
    blocked = ""
    try:
        connection = raw.driver_connection
        connection.isolation_level = None
        cursor = connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {_SQLITE_BUSY_MS}")
        wal = str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
        try:
            cursor.execute("VACUUM")
            done.append("VACUUM")
        except Exception as exc:
            blocked = f"VACUUM failed ({exc}): another connection holds the database"
        if wal:
            busy, log, moved = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy or (log > 0 and moved < log):
                blocked = blocked or (
                    "the write-ahead log could not be checkpointed: another connection holds a read "
                    "transaction, and the database file keeps the pages from before the purge"
                )
            else:
                done.append("WAL checkpointed and truncated")
        others = [
            f"{payload} {meta}"
            for payload, meta in cursor.execute(
                "SELECT e.payload, e.meta FROM tape_entries e JOIN tapes t ON t.id = e.tape_id "
                "WHERE t.name != ?",
                (sidecar,),
            ).fetchall()
        ]
    finally:
        raw.close()
    residue = None
    database = engine.url.database
    if terms and database and database != ":memory:":
        held = sum(count_traces(Path(f"{database}{suffix}"), terms) for suffix in ("", "-wal", "-journal"))
        residue = max(0, held - sum(count_traces(text, terms) for text in others))
    if blocked:
        status = f"not compacted: {blocked}; stop the processes using {database} and run the purge again"
    else:
        status = ", ".join(done)
    if residue:
        status += f"; {residue} trace(s) of the names are still in the database files"
    elif residue == 0:
        status += "; the database files hold no trace of the names outside the other tapes' rows"
    return status, residue


def count_traces(source: Path | str, terms: Iterable[str]) -> int:
    """How many times ``terms`` (folded names: ``alice chen``) occur as whole words in a file's bytes
    or a text, in any case, across spaces, punctuation and JSON escapes (``Alice\\nChen``).

    A missing file holds none.
    """
    if isinstance(source, Path):
        try:
            data = source.read_bytes()
        except FileNotFoundError:
            return 0
    else:
        data = source.encode("utf-8")
    lowered = data.lower()
    return sum(len(_term_pattern(term).findall(lowered)) for term in terms)


_WORD = rb"[a-z0-9\x80-\xff]"
_GAP = rb"(?:[^a-z0-9\x80-\xff\\]|\\[nrt]|\\u[0-9a-f]{4}|\\)+"


def _term_pattern(term: str) -> re.Pattern[bytes]:
    """A folded term as a bytes pattern: its words (UTF-8, or JSON ``\\u`` escapes) with any gap of
    non-letters between them, not inside a longer word."""
    words = []
    for word in term.split():
        raw = re.escape(word.encode("utf-8"))
        escaped = re.escape(json.dumps(word)[1:-1].lower().encode("ascii"))
        words.append(raw if raw == escaped else b"(?:" + raw + b"|" + escaped + b")")
    start = rb"(?:(?<!" + _WORD + rb")|(?<=\\[nrt]))"  # after a non-letter, or a JSON line break
    return re.compile(start + _GAP.join(words) + rb"(?!" + _WORD + rb")")


def _vacuum_full(engine: Any) -> str:
    """Rewrite ``tape_entries`` and its TOAST table into new files (best effort: a failure is reported)."""
    statement = "VACUUM FULL tape_entries"
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql(statement)
    except Exception as exc:
        logger.warning("purge: %s failed: %s", statement, exc)
        return f"not compacted: {statement} failed ({exc}); run the purge again"
    return f"{statement} (the table's files rewritten: the old row versions are gone from them)"


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
    """Have Redis rewrite its append-only file, which still holds the old values, and wait for it.

    A rewrite already running when the purge asks began before the purge's writes: its new file
    would hold the old values. It is let finish, and a rewrite is asked for again.
    """
    for _ in range(2):
        try:
            await client.bgrewriteaof()
        except Exception as exc:
            if "already in progress" not in str(exc).lower():
                logger.warning("purge: BGREWRITEAOF failed: %s", exc)
                return f"not compacted: BGREWRITEAOF failed ({exc}); run the purge again"
            failed = await _aof_rewrite_finished(client)
            if failed is not None:
                return failed
            continue
        failed = await _aof_rewrite_finished(client)
        return failed or "BGREWRITEAOF (the append-only file rewritten from the data as it is now)"
    return "not compacted: another append-only file rewrite was running; run the purge again"


async def _aof_rewrite_finished(client: Any) -> str | None:
    """Wait for the running (or scheduled) rewrite to end: None when it succeeded, else why not."""
    deadline = time.monotonic() + _AOF_WAIT_S
    while time.monotonic() < deadline:
        info = await client.info("persistence")
        if not int(info.get("aof_rewrite_in_progress", 0)) and not int(info.get("aof_rewrite_scheduled", 0)):
            if str(info.get("aof_last_bgrewrite_status", "ok")) != "ok":
                return "not compacted: the append-only file rewrite failed; run the purge again"
            return None
        await asyncio.sleep(_AOF_POLL_S)
    return "BGREWRITEAOF requested; still running after 60 s: run the purge again to check"
