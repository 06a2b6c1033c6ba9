"""A separate writer process for store tests: appends snapshots to a tape's memory sidecar.

Usage: python -m tests.helpers.snapshot_writer TAPES_DIR TAPE COUNT START PAYLOAD_BYTES [--no-fsync]

Prints "appended <n>" after each append, so a parent can kill it at a known point.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bub.store import FileTapeStore

from bub_semantic_memory._models import Entity, PromptRef, Snapshot
from bub_semantic_memory.stores._store import SnapshotStore


def snapshot(tape: str, index: int, payload_bytes: int) -> Snapshot:
    filler = "x" * payload_bytes
    return Snapshot(
        tape=tape,
        first_entry_id=index,
        last_entry_id=index,
        prompt=PromptRef(name="extract", version=1, sha256="0" * 64),
        model="writer",
        mode="tools",
        entities=(Entity.create(f"Person {index}", "person", attributes={"note": filler}, evidence=[index]),),
    )


async def main(directory: Path, tape: str, count: int, start: int, payload_bytes: int, fsync: bool) -> None:
    store = SnapshotStore(FileTapeStore(directory), fsync=fsync)
    for index in range(start, start + count):
        await store.append(snapshot(tape, index, payload_bytes))
        print(f"appended {index}", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(
        main(Path(args[0]), args[1], int(args[2]), int(args[3]), int(args[4]), fsync="--no-fsync" not in args)
    )
