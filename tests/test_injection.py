"""Memory notes: put back where they were, dropped with the context they belonged to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bub_semantic_memory.injection import NoteBook, split_at_notes


@dataclass(frozen=True)
class Item:
    id: int
    text: str


def select(entries: Any, _context: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": e.text} for e in entries]


async def async_select(entries: Any, context: Any) -> list[dict[str, Any]]:
    return select(entries, context)


async def test_notes_are_put_back_at_their_place_whatever_the_entry_ids() -> None:
    # bub numbers a turn's own entries in its fork: ids repeat, positions do not.
    entries = [Item(2, "a"), Item(3, "b"), Item(1, "c"), Item(2, "d")]
    book = NoteBook()
    book.in_context(2, 2)
    book.add(0, "<memory>\n- first\n</memory>")
    book.add(2, "<memory>\n- second\n</memory>")
    notes = book.in_context(2, len(entries))
    for chooser in (select, async_select):
        messages = await split_at_notes(chooser, entries, None, notes)
        assert [m["content"][:8] for m in messages] == ["<memory>", "a", "b", "<memory>", "c", "d"]
    assert book.shown() == {"- first", "- second"}


def test_a_new_context_or_a_shorter_one_drops_the_notes() -> None:
    book = NoteBook()
    book.in_context(5, 3)
    book.add(3, "<memory>\n- one\n</memory>")
    book.add(6, "<memory>\n- two\n</memory>")
    assert [n.position for n in book.in_context(5, 4)] == [3]  # fewer entries: a reset
    assert book.in_context(9, 10) == [] and book.shown() == set()  # another first entry: a handoff
