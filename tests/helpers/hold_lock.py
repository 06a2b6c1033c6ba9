"""Hold a tape's memory sidecar write lock in a process of its own, for the erasure lock test.

Usage::

    python -m tests.helpers.hold_lock TAPE [TAPES_DIR]

Opens the store the environment names (``open_bub_tape_store``; ``TAPES_DIR``: bub's file store
there), takes the write lock every memory write and every purge takes, prints ``held``, and
releases it when a line arrives on stdin.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bub_semantic_memory.stores._erasure import sidecar_lock
from bub_semantic_memory.stores._store import file_lock, memory_tape_name, open_bub_tape_store


async def hold(tape: str, tapes_dir: Path | None) -> None:
    sidecar = memory_tape_name(tape)
    if tapes_dir is not None:
        with file_lock(tapes_dir / f"{sidecar}.jsonl.lock"):
            print("held", flush=True)
            await asyncio.to_thread(sys.stdin.readline)
        return
    async with open_bub_tape_store() as store, sidecar_lock(store, None, sidecar):
        print("held", flush=True)
        await asyncio.to_thread(sys.stdin.readline)


if __name__ == "__main__":
    asyncio.run(hold(sys.argv[1], Path(sys.argv[2]) if len(sys.argv) > 2 else None))
