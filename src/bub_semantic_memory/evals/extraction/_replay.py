"""A finished tape replayed turn by turn through the plugin's memory service.

The plugin extracts while the agent works: at its cadence (every few user turns, a handoff,
enough new text), each call sees a short window and the memory extracted so far. A finished
tape sent in windows of ``chunk_tokens`` is something else on a long tape: a few long windows.
Replaying the tape through :class:`~bub_semantic_memory.agent._service.MemoryService`, the
code the plugin runs, measures the windows the plugin would send; the cost model (benchmarks
section 8) and ``eval run --cadence plugin`` both replay this way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from bub_semantic_memory._models import Snapshot
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.agent import MemoryPolicy, MemoryService, MemorySetup
from bub_semantic_memory.extraction import Extractor
from bub_semantic_memory.stores import SnapshotStore, append_entries
from bub_semantic_memory.tape import Entry

__all__ = ["Replayed", "replay_as_plugin", "turn_ends"]


def turn_ends(entries: Sequence[Entry]) -> list[int]:
    """How many entries the tape holds when each turn is over (a turn ends before the next user message)."""
    starts = [i for i, e in enumerate(entries) if e.kind == "message" and e.payload.get("role") == "user"]
    return [*starts[1:], len(entries)] if starts else [len(entries)]


@dataclass(frozen=True)
class Replayed:
    """What the plugin's service stored for a replayed tape.

    Attributes:
        snapshots: the snapshots stored, in tape order.
        failures: extractions that failed (each was tried again on a later turn).
        uncovered_after: the last entry id the stored snapshots cover without a gap, when
            entries after it were never extracted (None: the whole tape was).
    """

    snapshots: list[Snapshot]
    failures: int
    uncovered_after: int | None


async def _flush_until_done(
    service: MemoryService, store: Any, tape: str, *, runs_without_progress: int
) -> None:
    """Extract what is left as at shutdown and, while that fails, again as the plugin's later runs
    would, until a run fails without moving the watermark ``runs_without_progress`` times in a row."""
    stalled = 0
    while stalled < runs_without_progress:
        failures, before = service.stats["extraction_failures"], (await service.load(tape, store)).watermark
        service.schedule(tape, store, force=True)
        await asyncio.gather(*service.running())
        if service.stats["extraction_failures"] == failures:
            return
        stalled = 0 if (await service.load(tape, store)).watermark > before else stalled + 1


async def replay_as_plugin(
    entries: Sequence[Entry],
    extractor: Extractor,
    ontology: Ontology,
    *,
    tape: str,
    policy: MemoryPolicy | None = None,
) -> Replayed:
    """Append ``entries`` a turn at a time and let the plugin's service extract at its cadence.

    Each extraction finishes before the next turn is appended (in the plugin it runs beside
    the agent and may take in a turn more). A failed extraction is tried again at the next
    turn, not after the plugin's cooldown in seconds, and what is left at the end is extracted
    as at shutdown; when that fails, again as by the plugin's later runs, while they make progress
    (a window that keeps failing is given up after ``failed_window_tries`` runs). ``extractor``
    is not closed: its backend may serve other tapes.

    Args:
        policy: the cadence to replay (default: the plugin's); its cooldown is set to 0 and
            checkpoints are off.
    """
    from bub.store import InMemoryTapeStore

    cadence = replace(policy or MemoryPolicy(), retry_cooldown=0.0, checkpoint_every=0, max_concurrent=1)
    service = MemoryService.from_setup(
        MemorySetup(policy=cadence, folds_with=ontology), extractor=lambda: extractor
    )
    store: Any = InMemoryTapeStore()
    appended = 0
    for end in turn_ends(entries):
        append_entries(store, tape, entries[appended:end])
        appended = end
        service.schedule(tape, store)
        await asyncio.gather(*service.running())
    await _flush_until_done(service, store, tape, runs_without_progress=max(1, cadence.failed_window_tries))
    snapshots, _ = await SnapshotStore(store).load(tape)
    watermark = (await service.load(tape, store)).watermark
    last = max((e.id for e in entries), default=0)
    return Replayed(
        snapshots=sorted(snapshots, key=lambda s: s.first_entry_id),
        failures=service.stats["extraction_failures"],
        uncovered_after=watermark if watermark < last else None,
    )
