"""Planning what to send: the entries after the watermark, chunked under a token budget.

Each entry after the watermark is sent to the model once. A window also carries a
little earlier context (the overlap, already extracted) so pronouns in its first
turns can be resolved; the overlap is capped in lines and tokens, so it is a fixed
per-call cost. Entries that render to nothing (events, system prompts) are still
covered by a window's entry range, so the watermark moves past them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bub_semantic_memory._tokens import TextSize, estimate_tokens
from bub_semantic_memory.tape import (
    Entry,
    LineLimits,
    ReadReport,
    Transcript,
    TranscriptLine,
    render_transcript,
)

__all__ = ["Window", "WindowPlan", "plan_windows"]


@dataclass(frozen=True)
class Window:
    """One extraction call's input.

    Attributes:
        first_entry_id / last_entry_id: the entry range this window covers (what the
            snapshot records; the watermark moves to ``last_entry_id``).
        lines: the rendered new entries.
        context: rendered earlier entries, for reference only.
    """

    first_entry_id: int
    last_entry_id: int
    lines: Transcript
    context: Transcript

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.lines.text())

    def all_lines(self) -> tuple[TranscriptLine, ...]:
        """Context then new lines: everything the model is shown of the transcript."""
        return (*self.context.lines, *self.lines.lines)

    def split(self) -> tuple[Window, Window] | None:
        """Halve the window (for output that hit the token limit); None if it has one line."""
        if len(self.lines.lines) < 2:
            return None
        middle = len(self.lines.lines) // 2
        head, tail = self.lines.lines[:middle], self.lines.lines[middle:]
        boundary = tail[0].entry_id
        first = Window(self.first_entry_id, boundary - 1, Transcript(head), self.context)
        second = Window(
            boundary, self.last_entry_id, Transcript(tail), _tail_context(head, len(self.context.lines))
        )
        return first, second


def _tail_context(lines: Sequence[TranscriptLine], count: int) -> Transcript:
    return Transcript(tuple(lines[-count:]) if count else ())


@dataclass(frozen=True)
class WindowPlan:
    """The windows to extract, in order, and what rendering reported."""

    windows: tuple[Window, ...]
    report: ReadReport


def _overlap(lines: Sequence[TranscriptLine], max_lines: int, max_tokens: int) -> Transcript:
    picked: list[TranscriptLine] = []
    budget = max_tokens
    for line in reversed(lines):
        if len(picked) >= max_lines:
            break
        cost = estimate_tokens(line.text)
        if cost > budget:
            if not picked:
                # One long line: keep its head so the overlap stays a fixed cost.
                picked.append(line.shortened(max(0, budget) * 4))
            break
        picked.append(line)
        budget -= cost
    return Transcript(tuple(reversed(picked)))


def _pack(lines: Sequence[TranscriptLine], chunk_tokens: int) -> list[list[TranscriptLine]]:
    """Greedy: each window takes lines while its text as sent (lines joined by newlines)
    stays within ``chunk_tokens``; a line longer than that gets a window of its own."""
    newline = TextSize.of("\n")
    groups: list[list[TranscriptLine]] = []
    size = TextSize()
    for line in lines:
        line_size = TextSize.of(line.text)
        grown = size + newline + line_size
        if groups and grown.tokens <= chunk_tokens:
            groups[-1].append(line)
            size = grown
        else:
            groups.append([line])
            size = line_size
    return groups


def plan_windows(
    entries: Sequence[Entry],
    *,
    watermark: int,
    chunk_tokens: int = 3000,
    overlap_lines: int = 4,
    overlap_tokens: int = 250,
    limits: LineLimits | None = None,
    redact: Callable[[str], str] | None = None,
) -> WindowPlan:
    """Split the entries after ``watermark`` into windows of about ``chunk_tokens`` each.

    Returns no windows when there is nothing after the watermark.
    """
    report = ReadReport(source="window")
    ordered = sorted(entries, key=lambda e: e.id)
    new = [e for e in ordered if e.id > watermark]
    if not new:
        return WindowPlan((), report)
    earlier = [e for e in ordered if e.id <= watermark][-(overlap_lines * 4 + 8) :]
    before = render_transcript(earlier, limits=limits, redact=redact, report=report).lines
    rendered = render_transcript(new, limits=limits, redact=redact, report=report).lines
    last_id = new[-1].id
    if not rendered:
        empty = Window(new[0].id, last_id, Transcript(()), Transcript(()))
        return WindowPlan((empty,), report)

    groups = _pack(rendered, chunk_tokens)
    windows: list[Window] = []
    history = list(before)
    start = new[0].id
    for index, group in enumerate(groups):
        end = last_id if index == len(groups) - 1 else groups[index + 1][0].entry_id - 1
        windows.append(
            Window(start, end, Transcript(tuple(group)), _overlap(history, overlap_lines, overlap_tokens))
        )
        history.extend(group)
        start = end + 1
    return WindowPlan(tuple(windows), report)
