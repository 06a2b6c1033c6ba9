"""Memory notes: put back where they were, dropped with the context they belonged to."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from bub_semantic_memory.agent._injection import NoteBook, shown_lines, split_at_notes

NOTE = "<memory>\n- {}\n</memory>"


@dataclass(frozen=True)
class Item:
    id: int
    text: str
    kind: str = "message"
    date: str = ""

    def __post_init__(self) -> None:
        if not self.date:
            object.__setattr__(self, "date", f"2026-12-01T10:00:{self.id:02d}")


def select(entries: Any, _context: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": e.text} for e in entries]


async def async_select(entries: Any, context: Any) -> list[dict[str, Any]]:
    return select(entries, context)


async def test_notes_are_put_back_at_their_place_whatever_the_entry_ids() -> None:
    turn_one = [Item(2, "a"), Item(3, "b")]
    book = NoteBook()
    book.in_context([])
    book.add([], NOTE.format("first"), 1)
    book.in_context(turn_one)
    book.add(turn_one, NOTE.format("second"), 1)
    # The next turn's own entries, numbered by bub's fork: ids repeat, kinds and dates do not.
    entries = [*turn_one, Item(1, "c", date="2026-12-01T10:01:00"), Item(2, "d", date="2026-12-01T10:01:01")]
    book.in_context(entries)  # a context that starts with no entries, then one that does: same book
    notes = book.in_context(entries)
    for chooser in (select, async_select):
        messages = await split_at_notes(chooser, entries, None, notes)
        assert [m["content"][:8] for m in messages] == ["a", "b", "<memory>", "c", "d"]
    assert shown_lines(notes) == {"- second"}


def test_a_new_first_entry_starts_a_new_book() -> None:
    book = NoteBook()
    entries = [Item(2, "a"), Item(3, "b")]
    book.in_context(entries)
    book.add(entries, NOTE.format("one"), 1)
    assert len(book.in_context(entries)) == 1
    # A reset store numbers from 1 again: same ids, new dates.
    reset = [replace(e, date=e.date.replace("10:00", "11:00")) for e in entries]
    assert book.in_context(reset) == [] and book.notes == []


def test_a_note_whose_place_changed_is_left_out_of_that_call_only() -> None:
    book = NoteBook()
    entries = [Item(2, "a"), Item(3, "b"), Item(4, "c")]
    book.in_context(entries[:2])
    book.add(entries[:2], NOTE.format("one"), 1)
    other = [entries[0], Item(9, "x", date="2026-12-01T12:00:00"), entries[2]]
    assert book.in_context(other) == []  # the entry before the note is not the one it followed
    assert len(book.in_context(entries)) == 1  # and the note is still there for a call where it fits
    assert book.in_context(entries[:1]) == []  # fewer entries than its place


def test_no_note_goes_between_a_tool_call_and_its_result() -> None:
    book = NoteBook()
    call = [Item(2, "q"), Item(3, "call", kind="tool_call")]
    assert book.add(call, NOTE.format("x"), 1) is None
    before_call = [Item(2, "q")]
    book.in_context(before_call)
    book.add(before_call, NOTE.format("y"), 1)
    # A later context where a tool result follows the note's place: the note stays out.
    later = [Item(2, "q"), Item(5, "result", kind="tool_result")]
    assert book.in_context(later) == []


def test_a_quoted_line_counts_as_shown_so_the_next_note_does_not_repeat_it() -> None:
    from bub_semantic_memory._models import Entity
    from bub_semantic_memory.extraction._prompts import PromptLibrary
    from bub_semantic_memory.memory._graph import MemoryGraph
    from bub_semantic_memory.memory._render import render_memory
    from tests.conftest import make_snapshot

    graph = MemoryGraph.fold(
        [make_snapshot([Entity.create("Maya Lin", "person", evidence=[2])], [])],
        PromptLibrary().load("extract@9").ontology,
    )
    said = "[5] user: The plumber comes on Thursday at 9."
    first = render_memory(graph, query="plumber", budget=400, passages=[said], passage_budget=100)
    book = NoteBook()
    entries = [Item(1, "a")]
    book.in_context(entries)
    book.add(entries, first.text, 1)
    later = [*entries, Item(2, "when is the plumber coming?")]
    shown = shown_lines(book.in_context(later))
    assert f"  > {said}" in shown and "- Maya Lin (person)" in shown
    again = render_memory(
        graph, query="plumber", budget=400, passages=[said], passage_budget=100, shown=shown
    )
    assert said not in again.text
