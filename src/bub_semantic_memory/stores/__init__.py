"""Snapshots kept beside a tape, in whatever tape store bub uses.

The tape's ``semantic_memory`` sidecar (append snapshots and edits, load from the newest
checkpoint), the readers of its tail per store, checkpoints of the folded graph, and the
purge that erases a forget's names from what the sidecar stored. Importing this
package imports bub.
"""

from __future__ import annotations

from bub_semantic_memory.stores._erasure import store_kind
from bub_semantic_memory.stores._purge import PurgeReport, purge
from bub_semantic_memory.stores._store import (
    MemoryLoad,
    MemorySidecar,
    SnapshotStore,
    append_entries,
    fetch_tape,
    memory_tape_name,
    open_bub_tape_store,
    session_tape_name,
    tapes_with_memory,
    validate_tape_name,
)

__all__ = [
    "MemoryLoad",
    "MemorySidecar",
    "PurgeReport",
    "SnapshotStore",
    "append_entries",
    "fetch_tape",
    "memory_tape_name",
    "open_bub_tape_store",
    "purge",
    "session_tape_name",
    "store_kind",
    "tapes_with_memory",
    "validate_tape_name",
]
