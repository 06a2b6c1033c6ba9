"""Memory notes in an agent's context that never disturb its prompt prefix.

A provider's prefix cache serves the part of a prompt that repeats the start of the
previous one. An agent's context is append-only, so almost all of it is normally served
from the cache, unless something near its start changes. A memory block that follows the
question (and the memory, which grows) would be such a change in the system message.

So memory goes into the context as *notes*, user-role messages placed between turns:

* On a turn's first model call, a note goes after the conversation so far, right before
  the turn's new message. It holds what the memory knows that is relevant to the question
  and that no earlier note still in the context has shown (see ``shown`` in
  :func:`~bub_semantic_memory.render.render_memory`); nothing new, no note.
* On every later call (tool rounds, later turns), each note is put back exactly where it
  was, so the context up to the newest note is byte-identical to the previous call's.

A note's place is the number of context entries before it: entry ids cannot say it,
since a turn's own entries are numbered by bub's in-memory fork until they are merged
back. When the context starts at another entry (a handoff) or holds fewer entries than a
note's place (the tape was reset), the notes are dropped, and what they showed may be
shown again. Notes live in this process; after a restart the first call renders a full
note again (the cache misses once).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MemoryNote", "NoteBook", "note_message", "split_at_notes"]


@dataclass(frozen=True)
class MemoryNote:
    """A note placed after the first ``position`` entries of the context."""

    position: int
    text: str
    lines: frozenset[str]


@dataclass
class NoteBook:
    """The notes of one session's context, oldest first.

    Attributes:
        first_entry: the id of the context's first entry when the notes were placed.
    """

    notes: list[MemoryNote] = field(default_factory=list)
    first_entry: int | None = None

    def in_context(self, first_entry: int | None, entries: int) -> list[MemoryNote]:
        """The notes that still belong to a context of ``entries`` entries starting at ``first_entry``."""
        if first_entry != self.first_entry:
            self.notes, self.first_entry = [], first_entry  # a new context (a handoff, a reset)
        self.notes = [n for n in self.notes if n.position <= entries]
        return self.notes

    def shown(self) -> set[str]:
        """Every memory line the notes in context carry."""
        return {line for note in self.notes for line in note.lines}

    def add(self, position: int, text: str) -> MemoryNote:
        lines = frozenset(line for line in text.splitlines() if line.lstrip().startswith("- "))
        note = MemoryNote(position, text, lines)
        self.notes.append(note)
        return note


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
