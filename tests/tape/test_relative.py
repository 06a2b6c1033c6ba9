"""Relative times in a quoted line, anchored on the day the entry said them."""

from __future__ import annotations

from datetime import date

import pytest

from bub_semantic_memory.tape import anchor_relative, anchored_line

MONDAY = date(2023, 5, 8)


@pytest.mark.parametrize(
    ("said", "quoted"),
    [
        ("I went to the support group yesterday.", "yesterday (Sunday 7 May 2023)."),
        ("last Friday I painted", "last Friday (Friday 5 May 2023) I painted"),
        ("Three days ago it rained", "Three days ago (Friday 5 May 2023) it rained"),
        ("we camped last week", "last week (the week before 8 May 2023)"),
        ("two weekends ago we hiked", "two weekends ago (two weekends before 8 May 2023)"),
        ("the week before last was hard", "the week before last (two weeks before 8 May 2023) was"),
        ("a few weeks ago", "a few weeks ago (a few weeks before 8 May 2023)"),
        ("I start next month", "next month (June 2023)"),
        ("Last year I went to Paris", "Last year (2022) I went"),
        ("We'll go next Friday", "next Friday (Friday 12 May 2023)"),
        ("last month", "last month (April 2023)"),
    ],
)
def test_each_relative_time_is_followed_by_what_it_meant_that_day(said: str, quoted: str) -> None:
    assert quoted in anchor_relative(said, MONDAY)


@pytest.mark.parametrize(
    ("said", "quoted"),
    [
        ("I've had them for 3 years! Their names", "I've had them for 3 years (since 2020)! Their"),
        ("we've been together for three years. We", "together for three years (since 2020). We"),
        ("Been playing it for a month now - it", "Been playing it for a month now (since April 2023) - it"),
        ("She has lived there for the past two years", "for the past two years (since 2021)"),
    ],
)
def test_a_duration_up_to_the_day_said_is_followed_by_its_start(said: str, quoted: str) -> None:
    assert quoted in anchor_relative(said, MONDAY)


@pytest.mark.parametrize(
    "text",
    [
        "I have to wait for two years",  # ahead of the day said
        "He was part of our family for 10 years",  # over before the day said: its start is unknown
        "we have been friends for a few years",  # a vague count
        "I've been here for years",
    ],
)
def test_a_duration_that_does_not_end_on_the_day_said_is_left_as_it_is(text: str) -> None:
    assert anchor_relative(text, MONDAY) == text


def test_a_month_back_crosses_the_year() -> None:
    assert anchor_relative("two months ago", date(2023, 1, 15)) == "two months ago (November 2022)"


def test_a_longer_expression_claims_its_words_before_a_shorter_one() -> None:
    assert anchor_relative("the week before last", MONDAY).count("(") == 1


def test_text_without_a_relative_time_or_with_a_recurring_one_is_unchanged() -> None:
    for text in ("I swim every Sunday", "We met in Lisbon", "Weekends are for hiking"):
        assert anchor_relative(text, MONDAY) == text


def test_a_quoted_line_is_anchored_on_its_entrys_day_and_names_it() -> None:
    line = "[4] user: I went to the support group yesterday."
    assert anchored_line(line, "2023-05-08T13:56:00+00:00") == (
        "[4] user: I went to the support group yesterday (Sunday 7 May 2023).",
        "Monday 8 May 2023",
    )
    assert anchored_line(line, "") == (line, "")  # an entry without a date: as it was


@pytest.mark.parametrize(
    "text",
    [
        "the last week of June was hot",  # an order, not a time said
        "my last year of college",
        "I'll rest over the weekend",  # before or after the day said: left as said
        "last Friday of the month",
        "at last we met",
        "1000000 days ago",  # out of the calendar's range: left as said, never an error
        "99999 months ago",
    ],
)
def test_what_is_not_a_time_said_or_cannot_be_a_date_is_left_as_it_is(text: str) -> None:
    assert anchor_relative(text, MONDAY) == text


def test_a_span_back_and_a_vague_count_are_anchored_not_made_exact() -> None:
    assert anchor_relative("over the past year", MONDAY) == "over the past year (the year before 8 May 2023)"
    assert anchor_relative("a few days ago", MONDAY) == "a few days ago (a few days before 8 May 2023)"


def test_an_entry_date_the_tape_wrote_wrong_dates_nothing() -> None:
    assert anchored_line("[1] user: yesterday", "2023-02-30T10:00:00") == ("[1] user: yesterday", "")
