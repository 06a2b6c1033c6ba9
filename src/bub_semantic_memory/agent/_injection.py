"""Memory notes in an agent's context that never disturb its prompt prefix.

A provider's prefix cache serves the part of a prompt that repeats the start of the
previous one. An agent's context is append-only, so almost all of it is normally served
from the cache, unless something near its start changes. A memory block that follows the
question (and the memory, which grows) would be such a change in the system message.

So memory goes into the context as *notes*, user-role messages placed between turns:

* On a turn's first model call, a note goes after the conversation so far, right before
  the turn's new message. It holds what the memory knows that is relevant to the question
  and that no earlier note still in the context has shown (see ``shown`` in
  :func:`~bub_semantic_memory.memory._render.render_memory`); nothing new, no note.
* On every later call (tool rounds, later turns), each note is put back exactly where it
  was, so the context up to the newest note is byte-identical to the previous call's.

A note's place is the number of context entries before it, checked on every call against
a fingerprint (kind and date) of the entry right before it: entry ids cannot say it, since
a turn's own entries are numbered by bub's in-memory fork until they are merged back, and a
reset store numbers from 1 again. A context is known by the fingerprint of its first entry;
when that changes (a handoff, a reset) the notes are dropped and what they showed may be
shown again. A note whose place no longer matches is left out of that call, and no note is
ever put between a tool call and its result. Notes live in this process; after a restart
the first call renders a full note again (the cache misses once).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MemoryNote", "NoteBook", "fingerprint", "note_message", "shown_lines", "split_at_notes"]


type Fingerprint = tuple[str, str]


def fingerprint(entry: Any) -> Fingerprint:
    """What identifies a tape entry across bub's fork and merge (which renumber ids): kind and date."""
    return (str(getattr(entry, "kind", "")), str(getattr(entry, "date", "")))


@dataclass(frozen=True)
class MemoryNote:
    """A note placed after the first ``position`` entries of the context.

    Attributes:
        after: the fingerprint of the entry right before the note (None at position 0).
        graph_version: the memory graph's version when the note was rendered.
    """

    position: int
    after: Fingerprint | None
    text: str
    lines: frozenset[str]
    graph_version: int = 0


@dataclass
class NoteBook:
    """The notes of one session's context, oldest first.

    Attributes:
        context: the fingerprint of the context's first entry when the notes were placed.
    """

    notes: list[MemoryNote] = field(default_factory=list)
    context: Fingerprint | None = None

    def in_context(self, entries: Sequence[Any]) -> list[MemoryNote]:
        """The notes that belong where they were in this call's ``entries``.

        A context whose first entry is another one starts a new book (a handoff, a reset).
        """
        first = fingerprint(entries[0]) if entries else None
        if first != self.context:
            self.notes, self.context = [], first
        return [note for note in self.notes if _still_fits(note, entries)]

    def add(self, entries: Sequence[Any], text: str, graph_version: int) -> MemoryNote | None:
        """Place a note after ``entries``; None where it cannot go (right after a tool call)."""
        if entries and getattr(entries[-1], "kind", "") == "tool_call":
            return None
        # facts ("- ", "  - ") and quoted transcript lines ("  > "): each is shown once while in context
        lines = frozenset(line for line in text.splitlines() if line.lstrip().startswith(("- ", "> ")))
        after = fingerprint(entries[-1]) if entries else None
        note = MemoryNote(len(entries), after, text, lines, graph_version)
        self.notes.append(note)
        return note


def shown_lines(notes: Iterable[MemoryNote]) -> set[str]:
    """Every memory line the given notes carry."""
    return {line for note in notes for line in note.lines}


def _still_fits(note: MemoryNote, entries: Sequence[Any]) -> bool:
    if note.position > len(entries):
        return False
    if note.position == 0:
        return note.after is None
    if fingerprint(entries[note.position - 1]) != note.after:
        return False
    following = entries[note.position] if note.position < len(entries) else None
    return getattr(following, "kind", "") != "tool_result"


def note_message(note: MemoryNote) -> dict[str, str]:
    """A note as a chat message: user role, which every provider accepts between turns."""
    return {"role": "user", "content": note.text}


type Select = Callable[[Iterable[Any], Any], Sequence[dict[str, Any]] | Awaitable[Sequence[dict[str, Any]]]]


async def split_at_notes(
    select: Select, entries: Sequence[Any], context: Any, notes: Sequence[MemoryNote]
) -> list[dict[str, Any]]:
    """``select``'s messages for ``entries`` with each note put back at its place.

    ``select`` runs once per stretch of entries between notes; notes sit at turn
    boundaries, where no tool call waits for its result, so the stretches build the same
    messages as one call would.
    """
    if not notes:
        return await _selected(select, entries, context)
    messages: list[dict[str, Any]] = []
    start = 0
    for note in sorted(notes, key=lambda n: n.position):
        messages.extend(await _selected(select, entries[start : note.position], context))
        messages.append(note_message(note))
        start = note.position
    messages.extend(await _selected(select, entries[start:], context))
    return messages


async def _selected(select: Select, entries: Sequence[Any], context: Any) -> list[dict[str, Any]]:
    if not entries:
        return []
    result = select(iter(entries), context)
    if inspect.isawaitable(result):
        result = await result
    return list(result)
