"""Snapshots kept beside a tape, in whatever tape store bub uses.

The tape's ``semantic_memory`` sidecar (append, load from the newest checkpoint), the
readers of its tail per store, and checkpoints of the folded graph. Importing this
package imports bub.
"""

from __future__ import annotations

from bub_semantic_memory.stores._store import (
    MemoryLoad,
    MemorySidecar,
    SnapshotStore,
    open_bub_tape_store,
    session_tape_name,
    validate_tape_name,
)

__all__ = [
    "MemoryLoad",
    "MemorySidecar",
    "SnapshotStore",
    "open_bub_tape_store",
    "session_tape_name",
    "validate_tape_name",
]
