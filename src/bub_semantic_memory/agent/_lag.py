"""How far a tape's memory lags behind the tape, and how long catching up should take.

The estimate is this tape's own pace: the seconds its stored snapshots took per transcript token
they covered (``Snapshot.usage.latency_s`` over the tokens of their entry ranges). A model, a
machine and a prompt each change the pace by an order of magnitude, so a pace measured elsewhere
would mislead; a tape with no timed snapshot yet has no estimate (None), not a guess.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bub_semantic_memory._durations import format_duration
from bub_semantic_memory._models import Snapshot
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.tape import ReadReport, render_transcript

__all__ = ["ExtractionLag", "ExtractionPace", "entry_tokens", "extraction_lag", "transcript_tokens"]


@dataclass(frozen=True)
class ExtractionPace:
    """Seconds of extraction over the transcript tokens they covered (snapshots with a time only)."""

    seconds: float = 0.0
    tokens: int = 0

    @property
    def seconds_per_token(self) -> float | None:
        return self.seconds / self.tokens if self.tokens and self.seconds > 0 else None

    def __add__(self, other: ExtractionPace) -> ExtractionPace:
        return ExtractionPace(self.seconds + other.seconds, self.tokens + other.tokens)

    @classmethod
    def of(
        cls, snapshots: Iterable[Snapshot], entries: Sequence[Any], *, tokens: Mapping[int, int] | None = None
    ) -> ExtractionPace:
        """The pace of ``snapshots`` over ``entries`` (the tape they were extracted from).

        Imports (entries 0-0) and snapshots without a recorded time (replayed, or written
        before times were kept) say nothing about the pace and are left out. ``tokens``: each
        entry's transcript tokens, when the caller counted them already (:func:`entry_tokens`).
        """
        counted = tokens if tokens is not None else entry_tokens(entries)
        pace = cls()
        for snapshot in snapshots:
            if snapshot.last_entry_id <= 0 or snapshot.usage.latency_s <= 0:
                continue
            covered = sum(
                n
                for entry, n in counted.items()
                if snapshot.first_entry_id <= entry <= snapshot.last_entry_id
            )
            pace += cls(snapshot.usage.latency_s, covered)
        return pace


@dataclass(frozen=True)
class ExtractionLag:
    """The entries after the memory's watermark that the memory does not cover yet.

    Attributes:
        entries: tape entries after the watermark (messages, tool calls, anchors...).
        tokens: the transcript tokens they render to: what an extraction reads.
        due: whether the cadence extracts them at the next turn (False: they wait for more
            text, a handoff or shutdown).
        expected_s: seconds to extract them at this tape's pace; None without a timed snapshot.
    """

    entries: int
    tokens: int
    due: bool
    expected_s: float | None

    def describe(self) -> str:
        """One line for a log or a terminal: what waits and how long it should take."""
        if not self.entries:
            return "the memory covers every entry"
        waits = (
            f"1 entry ({self.tokens:,} tokens) waits for extraction"
            if self.entries == 1
            else f"{self.entries:,} entries ({self.tokens:,} tokens) wait for extraction"
        )
        when = "due at the next turn" if self.due else "until the cadence extracts them"
        if self.expected_s is None:
            return f"{waits}, {when}; no pace measured on this tape yet"
        return f"{waits}, {when}; about {format_duration(self.expected_s)} to catch up at this tape's pace"

    def as_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "tokens": self.tokens,
            "due": self.due,
            "expected_s": None if self.expected_s is None else round(self.expected_s, 1),
        }


def extraction_lag(
    entries: Sequence[Any], watermark: int, pace: ExtractionPace, *, due: bool
) -> ExtractionLag:
    """What of ``entries`` lies after ``watermark``, and the time it should take at ``pace``."""
    waiting = [e for e in entries if e.id > watermark]
    tokens = transcript_tokens(waiting)
    rate = pace.seconds_per_token
    return ExtractionLag(
        entries=len(waiting),
        tokens=tokens,
        due=due and bool(waiting),
        expected_s=None if rate is None or not waiting else tokens * rate,
    )


def entry_tokens(entries: Sequence[Any]) -> dict[int, int]:
    """Each entry's transcript tokens, rendered once (a tape's snapshots each cover a range)."""
    if not entries:
        return {}
    quiet = ReadReport(log_level=logging.DEBUG)
    lines = render_transcript(entries, report=quiet).lines
    counted: dict[int, int] = {}
    for line in lines:
        counted[line.entry_id] = counted.get(line.entry_id, 0) + estimate_tokens(line.text)
    return counted


def transcript_tokens(entries: Sequence[Any]) -> int:
    """The tokens an extraction reads; a line cut to its limit is counted cut, and not reported
    again (the extraction and the note report it)."""
    if not entries:
        return 0
    quiet = ReadReport(log_level=logging.DEBUG)
    return estimate_tokens(render_transcript(entries, report=quiet).text())
