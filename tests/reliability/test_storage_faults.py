"""Storage faults: kill -9 mid-append, concurrent writer processes, disk full, a read-only directory.

Writers are forked from the test process (``os.fork``: no interpreter start, no
re-import), so these tests are synchronous: no event loop may be running at a fork.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import json
import logging
import os
import random
import select
import signal
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bub.store import FileTapeStore, TapeFile

from bub_semantic_memory._errors import StoreError
from bub_semantic_memory._models import entity_key
from bub_semantic_memory.stores._store import SnapshotStore, memory_tape_name
from tests.helpers.snapshot_writer import snapshot
from tests.reliability._bub import BubRig
from tests.reliability._report import Outcomes, Table
from tests.reliability._support import fact_tape, person, recording_oracle

TAPE = "0123456789abcdef__fedcba9876543210"
KILL_ROUNDS = 60
MIN_TORN = 5
MAX_ROUNDS = 200  # rounds go on (killing while the file grows) until MIN_TORN torn tails were seen
ROUNDS_PER_FILE = 10
PAYLOAD = 2_000_000
pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")


def sidecar(directory: Path, tape: str = TAPE) -> Path:
    return directory / f"{memory_tape_name(tape)}.jsonl"


# -- forked writers ------------------------------------------------------------------------------


@dataclass
class Writer:
    """The parent's handle on a forked writer: its pid and the read end of its report pipe."""

    pid: int
    fd: int
    buffer: bytes = b""

    def _line(self, timeout_s: float) -> str | None:
        """The next line the child wrote; None once it closed the pipe (it exited or was killed)."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                self.kill()
                raise AssertionError(f"writer {self.pid} said nothing for {timeout_s} s (hung?)")
            chunk = os.read(self.fd, 4096)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def expect(self, word: str, timeout_s: float = 30) -> int:
        line = self._line(timeout_s)
        if line is None:
            raise AssertionError(f"writer {self.pid} died before saying {word!r}")
        said, index = line.split()
        assert said == word, line
        return int(index)

    def rest(self) -> list[str]:
        """What the child said before it died (call after :meth:`kill`)."""
        lines = []
        while (line := self._line(5)) is not None:
            lines.append(line)
        os.close(self.fd)
        return lines

    def finish(self, timeout_s: float = 120) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.01)
        self.kill()
        raise AssertionError(f"writer {self.pid} did not finish")

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def fork_writer(
    directory: Path, tape: str, indices: range, payload: Callable[[int], int], *, fsync: bool
) -> Writer:
    """A child process appending one snapshot per index; it says ``begin i`` and ``done i`` on a pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read_end)
            store = SnapshotStore(FileTapeStore(directory), fsync=fsync)

            async def append_all() -> None:
                for index in indices:
                    one = snapshot(tape, index, payload(index))
                    os.write(write_end, f"begin {index}\n".encode())
                    await store.append(one)
                    os.write(write_end, f"done {index}\n".encode())

            asyncio.run(append_all())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    return Writer(pid, read_end)


def wait_for_growth(path: Path, size: int, writer: Writer, timeout_s: float = 10) -> None:
    """Busy-wait until ``path`` grows past ``size`` (the writer is in its write call).

    A tight loop on ``os.stat`` (a few microseconds a turn): the kill must land while the
    kernel is still copying the line.
    """
    name = os.fspath(path)
    deadline = time.monotonic() + timeout_s
    while True:
        for _ in range(2000):
            try:
                if os.stat(name).st_size > size:  # noqa: PTH116 - pathlib is several times slower here
                    return
            except FileNotFoundError:
                pass
        if time.monotonic() > deadline:
            writer.kill()
            raise AssertionError(f"writer {writer.pid} never wrote")


@pytest.mark.slow
def test_kill_minus_9_mid_append_keeps_every_complete_snapshot(
    tmp_path: Path, outcomes: Outcomes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bub_semantic_memory.stores._store")
    rng = random.Random(9)
    torn_by_mode = {"while the file grows": 0, "at a random moment": 0}
    rounds_by_mode = dict.fromkeys(torn_by_mode, 0)
    cut_bytes = lost = survivals = reported = acked_total = 0
    survived: list[str] = []
    # How long one big append takes here, to spread the "random moment" kills over it.
    calibration = fork_writer(tmp_path, "calibration", range(3), lambda _: PAYLOAD, fsync=False)
    durations = []
    for _ in range(3):
        started = time.monotonic()
        calibration.expect("begin")
        calibration.expect("done")
        durations.append(time.monotonic() - started)
    assert calibration.finish() == 0
    big_append_s = sorted(durations)[1]
    round_number = -1
    while round_number + 1 < KILL_ROUNDS or (
        sum(torn_by_mode.values()) < MIN_TORN and round_number + 1 < MAX_ROUNDS
    ):
        round_number += 1
        tape = f"{TAPE[:-2]}{round_number // ROUNDS_PER_FILE:02d}"  # a fresh file every few rounds
        path = sidecar(tmp_path, tape)
        before = survived if round_number % ROUNDS_PER_FILE else []
        first, complete_appends = 1000 * round_number, 1 + round_number % 3 // 2
        # Small snapshots first (they complete), then big ones (a kill lands in the middle of one).
        small_until = first + complete_appends

        def payload(index: int, small_until: int = small_until) -> int:
            return 200 if index < small_until else PAYLOAD

        writer = fork_writer(tmp_path, tape, range(first, first + 50), payload, fsync=False)
        acked = []
        for _ in range(complete_appends):
            writer.expect("begin")
            acked.append(writer.expect("done"))
        writer.expect("begin")
        mode = (
            "while the file grows"
            if round_number % 2 or round_number >= KILL_ROUNDS
            else "at a random moment"
        )
        rounds_by_mode[mode] += 1
        if mode == "while the file grows":
            wait_for_growth(path, path.stat().st_size, writer)
        else:
            time.sleep(rng.uniform(0, 1.2) * big_append_s)
        writer.kill()
        acked.extend(int(line.split()[1]) for line in writer.rest() if line.startswith("done"))
        acked_total += len(acked)

        raw = path.read_bytes()
        complete = raw[: raw.rfind(b"\n") + 1]
        torn = raw[len(complete) :]
        store = SnapshotStore(FileTapeStore(tmp_path))
        loaded, report = asyncio.run(store.load(tape))
        # Every complete line, every acknowledged append, and everything from earlier rounds survived.
        written = [s.first_entry_id for s in loaded]
        assert len(written) == complete.count(b"\n")
        assert [s.id for s in loaded[: len(before)]] == before
        lost += len(set(acked) - set(written))
        assert report.counts["malformed_json"] == (1 if torn else 0)  # a torn tail is reported on read
        if torn:
            torn_by_mode[mode] += 1
        quarantine = path.with_name(path.name + ".torn")
        quarantined = quarantine.read_bytes() if quarantine.exists() else b""
        caplog.clear()
        survivor = snapshot(tape, 10**6 + round_number, 10)
        asyncio.run(store.append(survivor))
        after, after_report = asyncio.run(store.load(tape))
        survived = [s.id for s in after]
        assert survived == [*(s.id for s in loaded), survivor.id] and after_report.issues == []
        survivals += 1
        if torn:  # cut off, kept aside byte for byte, and logged
            assert quarantine.read_bytes() == quarantined + torn + b"\n"
            assert stat.S_IMODE(quarantine.stat().st_mode) == 0o600
            assert any(f"torn last line of {len(torn)} bytes" in r.getMessage() for r in caplog.records)
            cut_bytes += len(torn)
            reported += 1
    rounds = round_number + 1
    assert lost == 0 and survivals == rounds
    assert sum(torn_by_mode.values()) >= MIN_TORN, torn_by_mode  # the kills did land inside writes

    table = outcomes.table("storage", "kill -9 of a writer process in the middle of appends", ["", "value"])
    table.add(
        f"kill rounds (forked writer; small snapshots, then {PAYLOAD / 1e6:g} MB ones; no fsync)", rounds
    )
    for mode, mode_rounds in rounds_by_mode.items():
        table.add(f"torn tails seen, kill {mode}", f"{torn_by_mode[mode]} of {mode_rounds} rounds")
    table.add("torn tails cut, reported in the log and kept in `.torn`", f"{reported} ({cut_bytes:,} bytes)")
    table.add("appends acknowledged before the kill", acked_total)
    table.add("complete snapshots lost", lost)
    table.add("next append survived (parent appends after each kill)", f"{survivals}/{rounds}")
    table.notes.append(
        '"While the file grows": the test polls the sidecar\'s size and kills the writer as soon as it '
        'grows, i.e. inside the kernel\'s write of the line. "At a random moment": after a random delay '
        f"of up to 1.2x the time of one {PAYLOAD / 1e6:g} MB append ({big_append_s * 1000:.0f} ms here). "
        f"Rounds alternate the two modes; after {KILL_ROUNDS} rounds, more rounds kill while the file grows "
        f"until {MIN_TORN} torn tails were seen. A fresh sidecar every {ROUNDS_PER_FILE} rounds; "
        "earlier rounds' snapshots in the same file are checked to survive each later kill and repair."
    )


def test_concurrent_writer_processes_lose_nothing(tmp_path: Path, outcomes: Outcomes) -> None:
    writers, each = 3, 150
    started = time.monotonic()
    children = [
        fork_writer(tmp_path, TAPE, range(10_000 * w, 10_000 * w + each), lambda _: 200, fsync=True)
        for w in range(writers)
    ]
    codes = [child.finish() for child in children]
    elapsed = time.monotonic() - started
    assert codes == [0] * writers
    loaded, report = asyncio.run(SnapshotStore(FileTapeStore(tmp_path)).load(TAPE))
    expected = sorted(10_000 * w + i for w in range(writers) for i in range(each))
    got = sorted(s.first_entry_id for s in loaded)
    assert report.issues == [] and got == expected
    ids = [json.loads(line)["id"] for line in sidecar(tmp_path).read_bytes().splitlines()]
    assert ids == list(range(1, writers * each + 1))  # bub's entry ids: unique and in order
    interleaved = sum(
        1 for a, b in itertools.pairwise(s.first_entry_id // 10_000 for s in loaded) if a != b
    )  # the writers really ran at the same time

    table = outcomes.table("storage", "Concurrent writer processes on one sidecar", ["", "value"])
    table.add("writer processes (forked, fsync on)", writers)
    table.add("appends per writer", each)
    table.add("snapshots read back", f"{len(loaded)}/{writers * each}")
    table.add(
        "lost / duplicated / unreadable",
        f"{len(set(expected) - set(got))} / {len(got) - len(set(got))} / {len(report.issues)}",
    )
    table.add("switches between writers in the file (interleaving)", interleaved)
    table.add("bub entry ids unique and in order", "yes")
    table.add("wall time", f"{elapsed:.1f} s")


# -- disk full and read-only (simulated) ---------------------------------------------------------

MARK = "__sidecar__semantic_memory"


def disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sidecar writes stop half-way through the line with ENOSPC (what a full disk does)."""
    original = TapeFile.append

    def append(self: TapeFile, entry: Any) -> None:
        if MARK not in self.path.name:
            original(self, entry)
            return
        line = json.dumps({"id": 0, "kind": entry.kind, "payload": entry.payload}, ensure_ascii=False)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line[: len(line) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(TapeFile, "append", append)


def read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening sidecar files for writing fails with EROFS (a read-only mount; root ignores mode bits)."""
    original = os.open
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND

    def guarded(path: Any, flags: int, mode: int = 0o777, *args: Any, **kwargs: Any) -> int:
        if MARK in os.fspath(path) and flags & writing:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))
        return original(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded)


FAILURES: dict[str, tuple[Callable[[pytest.MonkeyPatch], None], str]] = {
    "disk full (ENOSPC mid-line)": (disk_full, "no space left on device"),
    "read-only directory (EROFS)": (read_only, "not writable"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failed_append_is_a_clear_error_and_harms_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outcomes: Outcomes, failure: str
) -> None:
    store = SnapshotStore(FileTapeStore(tmp_path))
    kept = [snapshot(TAPE, i, 10) for i in (1, 2)]
    for one in kept:
        asyncio.run(store.append(one))
    before = sidecar(tmp_path).read_bytes()
    make_it_fail, message = FAILURES[failure]
    with monkeypatch.context() as patch:
        make_it_fail(patch)
        with pytest.raises(StoreError, match=message) as caught:
            asyncio.run(store.append(snapshot(TAPE, 3, 10)))
    after = sidecar(tmp_path).read_bytes()
    assert after.startswith(before)  # nothing already stored was touched
    loaded, report = asyncio.run(store.load(TAPE))
    assert [s.id for s in loaded] == [s.id for s in kept]
    assert report.counts["malformed_json"] == (1 if after != before else 0)
    recovered = snapshot(TAPE, 4, 10)
    asyncio.run(store.append(recovered))
    loaded, report = asyncio.run(store.load(TAPE))
    assert [s.id for s in loaded] == [*(s.id for s in kept), recovered.id] and report.issues == []
    _failure_table(outcomes).add(
        failure,
        "SnapshotStore.append",
        f"StoreError: {caught.value}".replace(str(tmp_path), "<tapes>"),
        f"{len(kept)}/{len(kept)}",
        "torn half-line cut" if after != before else "file untouched",
        "yes",
    )


def _failure_table(outcomes: Outcomes) -> Table:
    return outcomes.table(
        "storage",
        "Disk full and read-only directory (simulated)",
        [
            "failure",
            "through",
            "what the caller sees",
            "snapshots kept",
            "partial write",
            "next append / turn ok",
        ],
    )


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_the_turn_completes_when_memory_cannot_be_written(
    bub_rig: BubRig, monkeypatch: pytest.MonkeyPatch, outcomes: Outcomes, failure: str
) -> None:
    facts = [fact_tape(i)[1] for i in range(3)]
    answered: list[list[int]] = []
    bub_rig.server.responder = recording_oracle(facts, answered)
    rig, plugin = bub_rig, bub_rig.plugin
    tape = rig.tape()
    make_it_fail, _ = FAILURES[failure]
    texts = [f"{fact_tape(i)[0][0].payload['content']}" for i in range(3)]
    async with rig.framework.running():
        rig.watch_the_loop()
        first = await rig.turn(texts[0])
        await rig.idle()
        stored_before = sidecar(rig.tapes_dir, tape).read_bytes()
        with monkeypatch.context() as patch:
            make_it_fail(patch)
            second = await rig.turn(texts[1])
            await rig.idle()
        graph = plugin.graph(tape)
        assert graph is not None
        held = (graph.watermark, len(graph))
        assert sidecar(rig.tapes_dir, tape).read_bytes().startswith(stored_before)
        third = await rig.turn(texts[2])
        await rig.idle()
    assert [r.model_output for r in (first, second, third)] == ["ok"] * 3
    assert rig.observer.errors == [] and rig.unhandled == []
    assert plugin.stats["extraction_failures"] == 1 and plugin.stats["extractions"] == 2
    stored, report = await rig.reader().load(tape)
    assert report.issues == [] and len(stored) == 2
    assert held == (stored[0].last_entry_id, 2)  # nothing past what the store kept; the first fact intact
    assert {e.key for e in graph.entities() if e.type == "person"} == {
        entity_key("person", person(i)) for i in range(3)
    }
    # The failed turn's entries were sent again with the next turn's, and stored once.
    assert len(answered) == 3 and set(answered[1]) <= set(answered[2])
    assert stored[1].first_entry_id == stored[0].last_entry_id + 1
    _failure_table(outcomes).add(
        failure,
        "bub turn with the plugin",
        "the turn completes; the extraction fails and is retried on the next turn",
        "1/1",
        "torn half-line cut" if failure.startswith("disk") else "file untouched",
        "yes (backlog extracted once)",
    )
