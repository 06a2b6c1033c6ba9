from __future__ import annotations

import asyncio
import errno
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bub.store import AsyncTapeStoreAdapter, FileTapeStore, InMemoryTapeStore
from bub.tape import Tape, TapeContext, TapeEntry

from bub_semantic_memory._errors import StoreError, TapeNameError
from bub_semantic_memory._models import Entity
from bub_semantic_memory.stores._store import (
    SnapshotStore,
    memory_tape_name,
    repair_torn_tail,
    session_tape_name,
    tapes_with_memory,
    validate_tape_name,
)
from tests.conftest import REPO, make_snapshot

TAPE = "0123456789abcdef__fedcba9876543210"


def sidecar_file(directory: Path, tape: str = TAPE) -> Path:
    return directory / f"{memory_tape_name(tape)}.jsonl"


async def test_snapshots_round_trip_through_bubs_file_store(tmp_path: Path) -> None:
    store = SnapshotStore(FileTapeStore(tmp_path))
    first = make_snapshot([Entity.create("Alice", "person")], tape=TAPE, first=1, last=4)
    second = make_snapshot([Entity.create("Bob", "person")], tape=TAPE, first=5, last=9)
    await store.append(first)
    await store.append(second)
    loaded, report = await store.load(TAPE)
    assert loaded == [first, second] and report.issues == []
    assert sidecar_file(tmp_path).name == f"{TAPE}__sidecar__semantic_memory.jsonl"


async def test_the_sidecar_is_readable_by_bub_itself(tmp_path: Path) -> None:
    await SnapshotStore(FileTapeStore(tmp_path)).append(make_snapshot([], tape=TAPE))
    entries = FileTapeStore(tmp_path).read(memory_tape_name(TAPE))
    assert entries is not None and entries[0].kind == "event"
    assert entries[0].payload["name"] == "memory.snapshot"
    assert TAPE not in FileTapeStore(tmp_path).list_tapes()  # a sidecar is not listed as a tape


@pytest.mark.parametrize("kind", ["file", "file (async adapter)", "memory", "memory (async adapter)"])
async def test_tapes_with_memory_are_the_owners_of_memory_sidecars_in_any_store(
    kind: str, tmp_path: Path
) -> None:
    """bub's file store lists no sidecar (and no name without one ``__``); the others list them all."""
    plain: object = FileTapeStore(tmp_path) if kind.startswith("file") else InMemoryTapeStore()
    store: Any = AsyncTapeStoreAdapter(plain) if "async" in kind else plain  # type: ignore[arg-type]
    assert await tapes_with_memory(store) == []
    for tape in ("demo", TAPE):
        await SnapshotStore(store).append(make_snapshot([], tape=tape))
    plain.append("9999999999999999__0000000000000000", TapeEntry.event("run", {}))  # type: ignore[attr-defined]
    plain.append(f"{TAPE}__sidecar__other", TapeEntry.event("run", {}))  # type: ignore[attr-defined]
    assert await tapes_with_memory(store) == sorted(["demo", TAPE])


@pytest.mark.parametrize("store", [InMemoryTapeStore(), AsyncTapeStoreAdapter(InMemoryTapeStore())])
async def test_any_bub_tape_store_holds_snapshots(store: object) -> None:
    snapshots = SnapshotStore(store)  # type: ignore[arg-type]
    one = make_snapshot([Entity.create("Alice", "person")], tape=TAPE)
    await snapshots.append(one)
    assert (await snapshots.load(TAPE))[0] == [one]


async def test_memory_files_are_created_user_only(tmp_path: Path) -> None:
    await SnapshotStore(FileTapeStore(tmp_path)).append(make_snapshot([], tape=TAPE))
    mode = stat.S_IMODE(sidecar_file(tmp_path).stat().st_mode)
    assert mode == 0o600


@pytest.mark.parametrize(
    "name",
    ["", "..", "../etc/passwd", "a/b", "/abs/path", "a\x00b", "x" * 201, ".hidden", "a\\b", "tape name"],
)
def test_unsafe_tape_names_are_refused(name: str) -> None:
    with pytest.raises(TapeNameError):
        validate_tape_name(name)


def test_bub_tape_names_are_accepted_and_match_bubs_naming(tmp_path: Path) -> None:
    expected = Tape(tmp_path, None, TapeContext()).session_tape("temp/sub-1", tmp_path).name  # type: ignore[arg-type]
    assert session_tape_name("temp/sub-1", tmp_path) == expected
    assert validate_tape_name(expected) == expected
    assert session_tape_name("s", tmp_path / "a") != session_tape_name("s", tmp_path / "b")


async def test_a_torn_tail_is_cut_reported_and_the_next_append_survives(tmp_path: Path) -> None:
    store = SnapshotStore(FileTapeStore(tmp_path))
    kept = make_snapshot([Entity.create("Alice", "person")], tape=TAPE, first=1, last=2)
    await store.append(kept)
    path = sidecar_file(tmp_path)
    with path.open("ab") as handle:
        handle.write(b'{"id": 2, "kind": "event", "payload": {"name": "memory.snap')  # writer died here
    loaded, report = await store.load(TAPE)
    assert loaded == [kept] and report.counts["malformed_json"] == 1
    after = make_snapshot([Entity.create("Bob", "person")], tape=TAPE, first=3, last=4)
    await store.append(after)
    loaded, report = await store.load(TAPE)
    assert loaded == [kept, after] and report.issues == []
    assert b"memory.snap" in (tmp_path / f"{path.name}.torn").read_bytes()


def test_repair_leaves_complete_files_alone(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    assert repair_torn_tail(path) == 0 and path.read_bytes() == b'{"a": 1}\n'
    path.write_bytes(b"garbage-without-newline")
    assert repair_torn_tail(path) == len(b"garbage-without-newline") and path.read_bytes() == b""


def _writer(directory: Path, count: int, start: int, payload: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.helpers.snapshot_writer",
            str(directory),
            TAPE,
            str(count),
            str(start),
            str(payload),
            *extra,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
async def test_kill_minus_9_mid_append_loses_no_complete_snapshot(tmp_path: Path) -> None:
    store = SnapshotStore(FileTapeStore(tmp_path))
    for round_number in range(5):
        writer = _writer(tmp_path, 1000, 1 + round_number * 1000, 400_000, "--no-fsync")
        assert writer.stdout is not None
        acknowledged = 0
        while acknowledged < 2:
            line = writer.stdout.readline()
            acknowledged += line.startswith("appended")
        await asyncio.sleep(0.003 * (round_number + 1))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        loaded, _ = await store.load(TAPE)
        assert len(loaded) >= acknowledged * (round_number + 1) - 2 * round_number
        survivor = make_snapshot(
            [Entity.create(f"Survivor {round_number}", "person")],
            tape=TAPE,
            first=10**6 + round_number,
            last=10**6 + round_number,
        )
        await store.append(survivor)
        loaded_after, _ = await store.load(TAPE)
        assert loaded_after[-1] == survivor
        assert len(loaded_after) == len(loaded) + 1


@pytest.mark.slow
async def test_two_writer_processes_lose_nothing(tmp_path: Path) -> None:
    writers = [_writer(tmp_path, 1000, 1, 50), _writer(tmp_path, 1000, 10_001, 50)]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    loaded, report = await SnapshotStore(FileTapeStore(tmp_path)).load(TAPE)
    assert report.issues == []
    assert sorted(s.first_entry_id for s in loaded) == [*range(1, 1001), *range(10_001, 11_001)]


@pytest.mark.parametrize(
    ("code", "message"), [(errno.ENOSPC, "no space left"), (errno.EROFS, "not writable")]
)
async def test_a_failed_write_is_a_clear_error_and_harms_nothing_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, message: str
) -> None:
    store = SnapshotStore(FileTapeStore(tmp_path))
    kept = make_snapshot([Entity.create("Alice", "person")], tape=TAPE)
    await store.append(kept)

    def refuse(self: object, entry: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr("bub.store.TapeFile.append", refuse)
    with pytest.raises(StoreError, match=message):
        await store.append(make_snapshot([], tape=TAPE, first=20, last=21))
    monkeypatch.undo()
    assert (await store.load(TAPE))[0] == [kept]


async def test_concurrent_appends_in_one_process_are_serialised(tmp_path: Path) -> None:
    store = SnapshotStore(FileTapeStore(tmp_path), fsync=False)
    await asyncio.gather(*(store.append(make_snapshot([], tape=TAPE, first=i, last=i)) for i in range(1, 41)))
    loaded, report = await store.load(TAPE)
    assert report.issues == [] and len(loaded) == 40
