"""A finished tape replayed turn by turn through the plugin's memory service.

The plugin extracts while the agent works: at its cadence (every few user turns, a handoff,
enough new text), each call sees a short window and the memory extracted so far. A finished
tape sent in windows of ``chunk_tokens`` is something else on a long tape: a few long windows.
Replaying the tape through :class:`~bub_semantic_memory.agent._service.MemoryService`, the
code the plugin runs, measures the windows the plugin would send; the cost model (benchmarks
section 8) and ``eval run --cadence plugin`` both replay this way.

A long conversation replayed on a local model takes an hour or more, so a replay can hand out
where it stands at the end of each turn (:class:`ReplayCheckpoint`) and start again from one:
the service's state is the tape and the snapshots it stored (its cadence is read off them), so
a replay resumed from a checkpoint sends the same windows as one that never stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bub_semantic_memory._models import Snapshot
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.agent import MemoryPolicy, MemoryService, MemorySetup
from bub_semantic_memory.extraction import Extractor
from bub_semantic_memory.stores import SnapshotStore, append_entries
from bub_semantic_memory.tape import Entry

__all__ = ["ReplayCheckpoint", "Replayed", "replay_as_plugin", "turn_ends"]


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


@dataclass(frozen=True)
class ReplayCheckpoint:
    """Where a replay stands at the end of a turn whose extraction stored snapshots and failed nothing.

    Attributes:
        snapshots: every snapshot stored so far, in tape order.
        replayed_entries: how many of the tape's entries were appended (whole turns).
        failures: extractions failed so far (each tried again and since succeeded).
    """

    snapshots: list[Snapshot]
    replayed_entries: int
    failures: int = 0


async def _stored_snapshots(store: Any, tape: str) -> list[Snapshot]:
    snapshots, _ = await SnapshotStore(store).load(tape)
    return sorted(snapshots, key=lambda s: s.first_entry_id)


async def _restore(store: Any, tape: str, entries: Sequence[Entry], checkpoint: ReplayCheckpoint) -> None:
    """Put the tape and the snapshots of ``checkpoint`` back in ``store``, as the service left them."""
    if not 0 <= checkpoint.replayed_entries <= len(entries):
        raise ValueError(
            f"a checkpoint of {checkpoint.replayed_entries} entries does not fit a tape of {len(entries)}"
        )
    append_entries(store, tape, entries[: checkpoint.replayed_entries])
    snapshots = SnapshotStore(store)
    for snapshot in checkpoint.snapshots:
        await snapshots.append(snapshot)


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
    resume: ReplayCheckpoint | None = None,
    on_checkpoint: Callable[[ReplayCheckpoint], None] | None = None,
    on_turn: Callable[[int, int, int], None] | None = None,
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
        resume: where an earlier replay of the same tape, extractor and policy stood: its
            turns are not replayed again.
        on_checkpoint: called with where the replay stands after each turn whose extraction
            stored snapshots and failed nothing (a failure waiting to be retried is state
            that a checkpoint could not carry).
        on_turn: called with (turns replayed, turns in all, extractions failed so far) after each
            turn.
    """
    from bub.store import InMemoryTapeStore

    cadence = replace(policy or MemoryPolicy(), retry_cooldown=0.0, checkpoint_every=0, max_concurrent=1)
    service = MemoryService.from_setup(
        MemorySetup(policy=cadence, folds_with=ontology), extractor=lambda: extractor
    )
    store: Any = InMemoryTapeStore()
    appended = 0
    if resume is not None:
        await _restore(store, tape, entries, resume)
        appended = resume.replayed_entries
        service.stats["extraction_failures"] += resume.failures
    ends = turn_ends(entries)
    for turn, end in enumerate(ends, start=1):
        if end <= appended:
            continue
        append_entries(store, tape, entries[appended:end])
        appended = end
        failures, stored = service.stats["extraction_failures"], service.stats["snapshots"]
        service.schedule(tape, store)
        await asyncio.gather(*service.running())
        if on_turn is not None:
            on_turn(turn, len(ends), service.stats["extraction_failures"])
        clean = service.stats["snapshots"] > stored and service.stats["extraction_failures"] == failures
        if on_checkpoint is not None and clean:
            on_checkpoint(
                ReplayCheckpoint(
                    await _stored_snapshots(store, tape), appended, service.stats["extraction_failures"]
                )
            )
    await _flush_until_done(service, store, tape, runs_without_progress=max(1, cadence.failed_window_tries))
    snapshots = await _stored_snapshots(store, tape)
    watermark = (await service.load(tape, store)).watermark
    last = max((e.id for e in entries), default=0)
    return Replayed(
        snapshots=snapshots,
        failures=service.stats["extraction_failures"],
        uncovered_after=watermark if watermark < last else None,
    )
