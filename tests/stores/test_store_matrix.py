"""Memory on every store of the matrix, through bub's own store clients: round trip, restart, reset, archive."""

from __future__ import annotations

from pathlib import Path

import pytest
from bub.store import AsyncTapeStore, AsyncTapeStoreAdapter, TapeStore, is_async_tape_store
from bub.tape import Tape, TapeContext, TapeEntry

from bub_semantic_memory._models import Entity, Relation, Snapshot
from bub_semantic_memory.stores._store import MemorySidecar, SnapshotStore, memory_tape_name
from bub_semantic_memory.tape._transcript import read_tape_file
from tests.conftest import make_snapshot
from tests.stores.conftest import Backend
from tests.stores.servers import Server, ServerUnavailable

TAPE = "0123456789abcdef__fedcba9876543210"


def facts() -> list[Snapshot]:
    alice = Entity.create(
        "Alice Chen", "person", aliases=["Ali"], attributes={"role": "designer"}, evidence=[2]
    )
    lisbon = Entity.create("Lisbon", "location", evidence=[2])  # no aliases: an empty list in JSON
    return [
        make_snapshot(
            [alice, lisbon],
            [Relation(source=alice.key, type="lives_in", target=lisbon.key, evidence=(2,))],
            tape=TAPE,
            first=1,
            last=4,
        ),
        make_snapshot([], tape=TAPE, first=5, last=6),  # nothing to remember in these entries
        make_snapshot([Entity.create("Bob", "person")], tape=TAPE, first=7, last=9),
    ]


async def test_snapshots_round_trip_on_every_store(backend: Backend) -> None:
    stored = facts()
    async with backend.open() as store:
        writer = SnapshotStore(store)
        for snapshot in stored:
            await writer.append(snapshot)
    async with backend.open() as store:  # another client, as another process would read it
        loaded, report = await SnapshotStore(store).load(TAPE)
    assert loaded == stored and report.issues == []


async def test_memory_survives_a_restart_of_the_store(backend: Backend) -> None:
    stored = facts()
    async with backend.open() as store:
        for snapshot in stored:
            await SnapshotStore(store).append(snapshot)
    backend.restart()
    async with backend.open() as store:
        graph, report = await SnapshotStore(store).graph(TAPE)
        await SnapshotStore(store).append(
            make_snapshot([Entity.create("Carol", "person")], tape=TAPE, first=10, last=11)
        )
        after, _ = await SnapshotStore(store).load(TAPE)
    assert report.issues == [] and graph.snapshot_count == 3 and graph.watermark == 9
    assert graph.entity("person:alice-chen") is not None and len(after) == 4


def _tape(store: TapeStore | AsyncTapeStore, archive: Path) -> Tape:
    async_store = store if is_async_tape_store(store) else AsyncTapeStoreAdapter(store)
    return Tape(archive, async_store, TapeContext(), sidecars=(MemorySidecar(),)).scoped(TAPE)


async def _seed(store: TapeStore | AsyncTapeStore) -> None:
    tape = _tape(store, Path("unused"))
    await tape.store.append(
        TAPE, TapeEntry.message({"role": "user", "content": "I'm Alice Chen, I live in Lisbon."})
    )
    for snapshot in facts():
        await SnapshotStore(store).append(snapshot)


@pytest.mark.parametrize("archive", [False, True])
async def test_tape_reset_drops_the_memory_with_the_tape(
    backend: Backend, tmp_path: Path, archive: bool
) -> None:
    async with backend.open() as store:
        await _seed(store)
        await _tape(store, tmp_path / "archive").reset(archive=archive)
    async with backend.open() as store:
        loaded, _ = await SnapshotStore(store).load(TAPE)
    assert loaded == []
    archived = sorted((tmp_path / "archive").glob(f"{memory_tape_name(TAPE)}.jsonl.*.bak"))
    if not archive:
        assert archived == []
        return
    assert len(archived) == 1  # the memory went to the archive beside the tape's own
    entries, report = read_tape_file(archived[0])
    assert report.issues == [] and [e.payload["data"]["id"] for e in entries] == [s.id for s in facts()]
    assert list((tmp_path / "archive").glob(f"{TAPE}.jsonl.*.bak"))


async def test_archiving_the_memory_sidecar_keeps_it_in_the_store(backend: Backend, tmp_path: Path) -> None:
    async with backend.open() as store:
        await _seed(store)
        message = await _tape(store, tmp_path / "archive").archive_sidecar(MemorySidecar().name)
        loaded, _ = await SnapshotStore(store).load(TAPE)
    assert message.startswith("Archived semantic_memory") and [s.id for s in loaded] == [
        s.id for s in facts()
    ]
    (archived,) = (tmp_path / "archive").glob(f"{memory_tape_name(TAPE)}.jsonl.*.bak")
    assert len(read_tape_file(archived)[0]) == 3


@pytest.mark.parametrize(("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)])
def test_a_server_that_cannot_start_fails_the_suite_under_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch, ci: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setenv("CI", ci)

    def broken() -> object:
        raise ServerUnavailable("initdb failed: no space")

    server = Server(broken, "PostgreSQL")
    with pytest.raises(outcome, match="PostgreSQL is unavailable: initdb failed"):
        server.get()
    with pytest.raises(outcome):  # remembered: not retried for every test
        server.get()
