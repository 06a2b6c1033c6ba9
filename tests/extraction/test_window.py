"""Window planning: ``plan_windows`` (budget, coverage, overlap context, edge cases) and ``Window.split``."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.extraction._window import Window, WindowPlan, plan_windows
from bub_semantic_memory.tape._transcript import Entry, Transcript, TranscriptLine, render_transcript

# "[n] user: " is 10 characters for a one-digit id: with a 6-letter text a line is 16 characters.
# Joined by newlines, two such lines are 33 characters (9 tokens), three are 50 (13 tokens).
WORD = "abcdef"


def message(entry_id: int, text: str = WORD, role: str = "user") -> Entry:
    return Entry(entry_id, "message", {"role": role, "content": text})


def event(entry_id: int) -> Entry:
    """An entry that renders to nothing (still covered by a window's entry range)."""
    return Entry(entry_id, "event", {"name": "run", "data": {}})


def messages(ids: Sequence[int], text: str = WORD) -> list[Entry]:
    return [message(i, text) for i in ids]


def line_costs(window: Window) -> list[int]:
    return [estimate_tokens(line.text) for line in window.lines.lines]


def new_line_ids(plan: WindowPlan) -> list[int]:
    return [i for window in plan.windows for i in window.lines.entry_ids]


def assert_ranges_are_contiguous(plan: WindowPlan, first: int, last: int) -> None:
    windows = plan.windows
    assert windows[0].first_entry_id == first
    assert windows[-1].last_entry_id == last
    for before, after in pairwise(windows):
        assert after.first_entry_id == before.last_entry_id + 1
    for window in windows:
        assert all(window.first_entry_id <= i <= window.last_entry_id for i in window.lines.entry_ids)


# --- nothing to do -----------------------------------------------------------------------------


@pytest.mark.parametrize("watermark", [5, 6, 100])
def test_no_windows_when_nothing_follows_the_watermark(watermark: int) -> None:
    plan = plan_windows(messages(range(1, 6)), watermark=watermark)
    assert plan.windows == ()


def test_no_windows_for_no_entries() -> None:
    assert plan_windows([], watermark=0).windows == ()


def test_entries_that_render_to_nothing_still_get_one_empty_window_covering_them() -> None:
    plan = plan_windows([*messages([1, 2]), event(3), event(4)], watermark=2)
    [window] = plan.windows
    assert (window.first_entry_id, window.last_entry_id) == (3, 4)
    assert not window.lines
    assert not window.context  # nothing is sent, so no context either


# --- coverage and budget ------------------------------------------------------------------------


def test_every_line_after_the_watermark_is_in_exactly_one_window_in_order() -> None:
    entries = [*messages(range(1, 4)), *messages(range(4, 30))]
    plan = plan_windows(entries, watermark=3, chunk_tokens=20)
    assert len(plan.windows) > 1
    assert new_line_ids(plan) == list(range(4, 30))
    assert_ranges_are_contiguous(plan, 4, 29)


def test_entries_are_planned_in_id_order_whatever_the_input_order() -> None:
    entries = messages([7, 3, 9, 1, 5, 2, 8, 4, 6])
    plan = plan_windows(entries, watermark=2, chunk_tokens=8)
    assert new_line_ids(plan) == [3, 4, 5, 6, 7, 8, 9]


def test_windows_stay_within_the_token_budget_and_are_packed_greedily() -> None:
    entries = messages(range(1, 10))
    plan = plan_windows(entries, watermark=0, chunk_tokens=13)
    assert [w.lines.entry_ids for w in plan.windows] == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert all(w.tokens <= 13 for w in plan.windows)


def test_the_budget_counts_the_text_as_sent_newlines_included() -> None:
    # Three lines cost 4 tokens each on their own, but 13 joined: 12 tokens hold only two.
    plan = plan_windows(messages(range(1, 7)), watermark=0, chunk_tokens=12)
    assert [w.lines.entry_ids for w in plan.windows] == [[1, 2], [3, 4], [5, 6]]
    assert all(sum(line_costs(w)) == 8 and w.tokens == 9 for w in plan.windows)


def test_a_window_is_closed_only_when_the_next_line_would_overflow_it() -> None:
    texts = ["a" * n for n in (5, 40, 3, 90, 12, 7, 60, 1, 30, 22, 8)]
    entries = [message(i, text) for i, text in enumerate(texts, start=1)]
    plan = plan_windows(entries, watermark=0, chunk_tokens=30)
    for window, following in pairwise(plan.windows):
        assert window.tokens <= 30 or len(window.lines.lines) == 1
        assert estimate_tokens(window.lines.text() + "\n" + following.lines.lines[0].text) > 30


def test_entries_that_render_to_nothing_are_covered_by_the_neighbouring_window() -> None:
    entries = [event(1), message(2), event(3), message(4), message(5), event(6), event(7)]
    plan = plan_windows(entries, watermark=0, chunk_tokens=9)  # two lines per window
    assert [(w.first_entry_id, w.last_entry_id) for w in plan.windows] == [(1, 4), (5, 7)]
    assert [w.lines.entry_ids for w in plan.windows] == [[2, 4], [5]]


def test_a_line_longer_than_the_budget_gets_a_window_of_its_own_uncut() -> None:
    long_text = "x" * 400  # about 103 tokens with its prefix
    entries = [message(1), message(2, long_text), message(3)]
    plan = plan_windows(entries, watermark=0, chunk_tokens=10)
    assert [w.lines.entry_ids for w in plan.windows] == [[1], [2], [3]]
    oversized = plan.windows[1]
    assert oversized.lines.lines[0].text == f"[2] user: {long_text}"
    assert oversized.tokens > 10


def test_long_lines_are_cut_by_the_line_limits_before_planning() -> None:
    plan = plan_windows([message(1, "y" * 5000)], watermark=0)
    [window] = plan.windows
    assert "characters truncated" in window.lines.lines[0].text
    assert plan.report.counts["truncated"] == 1


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    lengths=st.lists(st.integers(min_value=1, max_value=120), min_size=1, max_size=25),
    watermark=st.integers(min_value=0, max_value=26),
    chunk_tokens=st.integers(min_value=1, max_value=80),
)
def test_planning_properties_hold_for_any_tape(lengths: list[int], watermark: int, chunk_tokens: int) -> None:
    entries = [message(i, "w" * n) for i, n in enumerate(lengths, start=1)]
    plan = plan_windows(entries, watermark=watermark, chunk_tokens=chunk_tokens)
    expected = [e.id for e in entries if e.id > watermark]
    if not expected:
        assert plan.windows == ()
        return
    assert new_line_ids(plan) == expected
    assert_ranges_are_contiguous(plan, expected[0], expected[-1])
    for window in plan.windows:
        # only a lone oversized line may exceed the budget
        assert window.tokens <= chunk_tokens or len(window.lines.lines) == 1
        assert all(i < window.first_entry_id for i in window.context.entry_ids)


# --- overlap context ----------------------------------------------------------------------------


def test_the_first_window_of_a_tape_has_no_context() -> None:
    plan = plan_windows(messages(range(1, 5)), watermark=0)
    assert not plan.windows[0].context


def test_context_is_the_last_lines_before_the_watermark_capped_in_lines() -> None:
    plan = plan_windows(messages(range(1, 11)), watermark=7, overlap_lines=3)
    assert plan.windows[0].context.entry_ids == [5, 6, 7]
    assert plan.windows[0].lines.entry_ids == [8, 9, 10]


def test_later_windows_take_their_context_from_the_lines_before_them() -> None:
    plan = plan_windows(messages(range(1, 10)), watermark=0, chunk_tokens=13, overlap_lines=2)
    assert [w.context.entry_ids for w in plan.windows] == [[], [2, 3], [5, 6]]


def test_context_is_capped_in_tokens_keeping_the_most_recent_whole_lines() -> None:
    # Lines of 4 tokens each: a 9-token overlap budget fits two of them, not three.
    plan = plan_windows(messages(range(1, 8)), watermark=5, overlap_lines=4, overlap_tokens=9)
    context = plan.windows[0].context
    assert context.entry_ids == [4, 5]
    assert sum(estimate_tokens(line.text) for line in context.lines) <= 9


def test_a_context_line_longer_than_the_overlap_budget_is_cut_to_its_head() -> None:
    long_text = "z" * 200
    plan = plan_windows([message(1, long_text), message(2)], watermark=1, overlap_tokens=10)
    [line] = plan.windows[0].context.lines
    assert line.entry_id == 1
    assert line.text == f"[1] user: {long_text}"[:40] + " …"
    assert line.body is not None and f"[1] user: {line.body}" == line.text.removesuffix(" …")


def test_an_older_line_that_does_not_fit_the_overlap_budget_is_dropped_not_cut() -> None:
    plan = plan_windows([message(1, "z" * 200), message(2), message(3)], watermark=2, overlap_tokens=10)
    assert [line.text for line in plan.windows[0].context.lines] == [f"[2] user: {WORD}"]


def test_no_context_when_the_overlap_is_switched_off() -> None:
    plan = plan_windows(messages(range(1, 10)), watermark=4, chunk_tokens=8, overlap_lines=0)
    assert all(not w.context for w in plan.windows)


def test_context_skips_entries_that_render_to_nothing() -> None:
    entries = [message(1), event(2), message(3), event(4), message(5)]
    plan = plan_windows(entries, watermark=4, overlap_lines=2)
    assert plan.windows[0].context.entry_ids == [1, 3]


def test_all_lines_is_context_then_new_lines() -> None:
    [window] = plan_windows(messages(range(1, 6)), watermark=3, overlap_lines=2).windows
    assert [line.entry_id for line in window.all_lines()] == [2, 3, 4, 5]


# --- Window.split ------------------------------------------------------------------------------


def lines(*ids: int) -> Transcript:
    return render_transcript(messages(ids))


def make_window(first: int, last: int, new: Sequence[int], context: Sequence[int] = ()) -> Window:
    return Window(first, last, lines(*new), lines(*context))


@pytest.mark.parametrize("new", [(), (3,)])
def test_a_window_of_fewer_than_two_lines_cannot_be_split(new: tuple[int, ...]) -> None:
    assert make_window(3, 3, new).split() is None


def test_split_halves_the_lines_and_keeps_the_entry_range_contiguous() -> None:
    window = make_window(10, 30, [11, 14, 17, 20, 25], context=[8, 9])
    halves = window.split()
    assert halves is not None
    first, second = halves
    assert first.lines.entry_ids == [11, 14]
    assert second.lines.entry_ids == [17, 20, 25]
    assert (first.first_entry_id, first.last_entry_id) == (10, 16)
    assert (second.first_entry_id, second.last_entry_id) == (17, 30)


def test_split_keeps_the_context_for_the_first_half_and_gives_the_second_the_tail_of_the_first() -> None:
    window = make_window(5, 12, [5, 6, 7, 8, 9, 10, 11, 12], context=[3, 4])
    halves = window.split()
    assert halves is not None
    first, second = halves
    assert first.context == window.context
    assert second.context.entry_ids == [7, 8]  # as many lines as the original context had


def test_split_gives_the_second_half_all_of_a_short_first_half_as_context() -> None:
    halves = make_window(5, 7, [5, 6, 7], context=[1, 2, 3, 4]).split()
    assert halves is not None
    assert halves[1].context.entry_ids == [5]


def test_split_of_a_window_without_context_gives_the_second_half_none() -> None:
    halves = make_window(1, 4, [1, 2, 3, 4]).split()
    assert halves is not None
    assert not halves[0].context and not halves[1].context


def test_repeated_splits_of_a_planned_window_still_cover_its_lines_once() -> None:
    [window] = plan_windows(messages(range(1, 10)), watermark=2, overlap_lines=2).windows
    leaves = _leaves(window)
    assert [w.lines.entry_ids for w in leaves] == [[i] for i in range(3, 10)]
    assert [(w.first_entry_id, w.last_entry_id) for w in leaves] == [(i, i) for i in range(3, 10)]


def _leaves(window: Window) -> list[Window]:
    halves = window.split()
    if halves is None:
        return [window]
    return [*_leaves(halves[0]), *_leaves(halves[1])]


def test_window_tokens_counts_the_new_lines_only() -> None:
    window = Window(2, 2, Transcript((TranscriptLine(2, "a" * 40),)), lines(1))
    assert window.tokens == 10
