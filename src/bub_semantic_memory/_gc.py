"""Pausing the cyclic garbage collector around bulk loads (reading and folding snapshots)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects at once.

    Loading 10,000 snapshots allocates hundreds of thousands of objects, none of them
    cyclic garbage; the collector's repeated passes over them cost three times the
    parsing itself. Reference counting still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
