"""Relative times in a line, anchored on the date of the entry that said them.

"I went to the support group yesterday", said on Monday 8 May 2023, means Sunday 7 May 2023; a
note that quotes the line days later, or a model answering "when?", cannot know that unless the
line says it. :func:`anchored_line` puts the anchored meaning after each relative expression
it finds, and names the entry's day, which a note shows above the day's lines::

    Monday 8 May 2023:
      > [4] user: I went to the support group yesterday (Sunday 7 May 2023).
    Friday 9 June 2023:
      > [9] user: We camped last week (the week before 9 June 2023).

An expression that names a day is resolved to that day; one that names a week, a weekend or a
stretch of them is anchored on the day it was said ("the weekend before 8 May 2023"), which is
all it says; a month or a year is named ("April 2023", "2022"); a duration in the perfect ("I've
had them for 3 years") is followed by its start ("since 2020").

Written by hand, on purpose: finding the expressions is a closed list of English patterns (a
parser's free-text search, ``dateparser.search.search_dates``, also reports words like "We" and
"Do" as dates), and of the anchored forms ``dateparser`` resolves the days ("yesterday", "last
Friday", "3 days ago") but none of the weeks and weekends ("last weekend", "two weekends ago",
"the week before"); the day arithmetic here is the standard library's. The table of what each
library does with these expressions is in ``docs/dates.md``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import date, timedelta

from bub_semantic_memory.tape._dates import entry_day

__all__ = ["anchor_relative", "anchored_line", "long_day"]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
}
_EXACT_WORDS = r"an?|one|two|three|four|five|six|seven|eight|nine|ten"
_COUNT = rf"(?P<n>\d+|a couple of|a few|{_EXACT_WORDS})"
_EXACT_COUNT = rf"(?P<n>\d+|{_EXACT_WORDS})"
"""A count as said; the exact one leaves out "a few" and "a couple of"."""
_WEEKDAY = r"(?P<day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"


def long_day(day: date) -> str:
    """``Sunday 7 May 2023``: the weekday and the date as LoCoMo's answers write them."""
    return f"{_WEEKDAYS[day.weekday()].capitalize()} {day.day} {day:%B} {day.year}"


def _month(day: date) -> str:
    return f"{day:%B} {day.year}"


def _months_before(day: date, count: int) -> date:
    month = day.month - 1 - count
    return date(day.year + month // 12, month % 12 + 1, 1)


def _previous_weekday(said: date, weekday: int) -> date:
    back = (said.weekday() - weekday) % 7 or 7
    return said - timedelta(days=back)


def _next_weekday(said: date, weekday: int) -> date:
    ahead = (weekday - said.weekday()) % 7 or 7
    return said + timedelta(days=ahead)


def _count(match: re.Match[str]) -> int:
    text = match.group("n").lower()
    return int(text) if text.isdigit() else _NUMBERS[text]


type _Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], str]]


_NOT_A_TIME_BEFORE = r"(?<!\bthe )(?<!\bmy )(?<!\bour )(?<!\bhis )(?<!\bher )(?<!\btheir )(?<!\byour )"
""""my last year of college", "the last week of June": "last" that orders, not a time said."""
_NOT_A_TIME_AFTER = r"(?! of\b)"


def _rule(pattern: str, meaning: Callable[[re.Match[str], date], str]) -> _Rule:
    return re.compile(rf"{_NOT_A_TIME_BEFORE}\b(?:{pattern})\b{_NOT_A_TIME_AFTER}", re.IGNORECASE), meaning


_PERFECT = r"(?:['’]ve|have|has|been)(?! to\b)"
"""The perfect ("I've had", "has lived", "been playing"): a duration it holds runs up to the day
said, so its start is known; "I have to wait for two years" looks ahead and is left alone."""


def _since(match: re.Match[str], said_on: date) -> str:
    """The start of a duration that runs up to ``said_on``: a year, or a month and its year."""
    count = _count(match)
    if match.group("unit").lower() == "year":
        return f"since {said_on.year - count}"
    return f"since {_month(_months_before(said_on, count))}"


_RULES: tuple[_Rule, ...] = (
    # a duration up to the day said: its start
    _rule(
        rf"{_PERFECT}(?: [^.!?;,]{{0,40}}?)? for (?:the (?:past|last) )?"
        rf"{_EXACT_COUNT} (?P<unit>year|month)s?(?: now)?",
        _since,
    ),
    # a stretch of weeks or weekends: anchored on the day said
    _rule(r"the week before last", lambda m, d: f"two weeks before {_short(d)}"),
    _rule(rf"{_COUNT} weekends? ago", lambda m, d: f"{_plural(m, 'weekend')} before {_short(d)}"),
    _rule(rf"{_COUNT} weeks? ago", lambda m, d: f"{_plural(m, 'week')} before {_short(d)}"),
    _rule(rf"{_COUNT} months? ago", lambda m, d: _month(_months_before(d, _count(m)))),
    _rule(rf"{_COUNT} years? ago", lambda m, d: str(d.year - _count(m))),
    _rule(r"(?P<n>a few|a couple of) days ago", lambda m, d: f"{_plural(m, 'day')} before {_short(d)}"),
    _rule(rf"{_COUNT} days? ago", lambda m, d: long_day(d - timedelta(days=_count(m)))),
    _rule(r"last weekend|this past weekend", lambda m, d: f"the weekend before {_short(d)}"),
    _rule(r"next weekend|this coming weekend", lambda m, d: f"the weekend after {_short(d)}"),
    _rule(
        r"the past (?P<unit>week|month|year)",
        lambda m, d: f"the {m.group('unit').lower()} before {_short(d)}",
    ),
    _rule(r"last week", lambda m, d: f"the week before {_short(d)}"),
    _rule(r"next week", lambda m, d: f"the week after {_short(d)}"),
    _rule(r"this week", lambda m, d: f"the week of {_short(d)}"),
    _rule(r"last month", lambda m, d: _month(_months_before(d, 1))),
    _rule(r"next month", lambda m, d: _month(_months_before(d, -1))),
    _rule(r"this month", lambda m, d: _month(d)),
    _rule(r"last year", lambda m, d: str(d.year - 1)),
    _rule(r"next year", lambda m, d: str(d.year + 1)),
    _rule(r"this year", lambda m, d: str(d.year)),
    # a day
    _rule(rf"last {_WEEKDAY}", lambda m, d: long_day(_previous_weekday(d, _weekday(m)))),
    _rule(rf"(?:next|this coming) {_WEEKDAY}", lambda m, d: long_day(_next_weekday(d, _weekday(m)))),
    _rule(r"the day before yesterday", lambda m, d: long_day(d - timedelta(days=2))),
    _rule(r"yesterday|last night", lambda m, d: long_day(d - timedelta(days=1))),
    _rule(r"the day after tomorrow", lambda m, d: long_day(d + timedelta(days=2))),
    _rule(r"tomorrow", lambda m, d: long_day(d + timedelta(days=1))),
    _rule(r"today|tonight|this morning|this afternoon|this evening", lambda m, d: long_day(d)),
)
"""Longest first where two overlap ("the week before last" before "last week"); the first rule
that matches a stretch of the text claims it."""


def _short(day: date) -> str:
    return f"{day.day} {day:%B} {day.year}"


def _plural(match: re.Match[str], unit: str) -> str:
    """``two weeks``, ``one weekend``; a vague count as it was said (``a few weeks``)."""
    said = match.group("n").lower()
    if said in ("a few", "a couple of"):
        return f"{said} {unit}s"
    count = _count(match)
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    return f"{words.get(count, str(count))} {unit}{'s' if count != 1 else ''}"


def _weekday(match: re.Match[str]) -> int:
    return _WEEKDAYS.index(match.group("day").lower())


_CUE = re.compile(
    r"\b(ago|yesterday|tomorrow|today|tonight|last|next|this|past|over|weekend|for)\b", re.IGNORECASE
)
"""A word every rule's expression holds: a line without one is left alone without trying them."""


def anchor_relative(text: str, said_on: date) -> str:
    """``text`` with each relative time it holds followed by its meaning on ``said_on``, in
    parentheses; text without one comes back unchanged."""
    if _CUE.search(text) is None:
        return text
    claimed: list[tuple[int, int, str]] = []
    for pattern, meaning in _RULES:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < c_end and c_start < end for c_start, c_end, _ in claimed):
                continue
            try:
                meant = meaning(match, said_on)
            except (ValueError, OverflowError):  # "a million days ago": a date out of range, left as said
                continue
            claimed.append((start, end, meant))
    out, at = [], 0
    for _, end, meant in sorted(claimed):
        out.append(f"{text[at:end]} ({meant})")
        at = end
    out.append(text[at:])
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def anchored_line(line: str, entry_date: str) -> tuple[str, str]:
    """A transcript line as a note quotes it, and the heading of its day: relative times anchored
    on the day of the entry that said them (``("[4] user: ... yesterday (Sunday 7 May 2023).",
    "Monday 8 May 2023")``). A line of an entry without a date comes back as it is, with no day.
    Kept: a note quotes the same lines call after call."""
    day = entry_day(entry_date)
    try:
        said_on = date.fromisoformat(day) if day else None
    except ValueError:  # "2023-02-30": a date the tape wrote wrong dates nothing
        said_on = None
    if said_on is None:
        return line, ""
    return anchor_relative(line, said_on), long_day(said_on)
