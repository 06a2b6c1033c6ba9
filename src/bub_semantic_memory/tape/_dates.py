"""Dates as people say them, resolved against the date of the entry that said them.

"Last Friday", said in an entry dated 2023-05-08, is 2023-05-05. The extractor asks the model to
copy the time expression as it was said (a small model cannot do date arithmetic) and resolves it
here with ``dateparser``, a well-kept parser of relative and absolute dates in many languages,
relative to the entry's own date. The result keeps the precision of what was said: a day
(``2023-05-05``), an ISO week (``2023-W18``), a month (``2023-05``) or a year (``2023``).

A recurring time ("every Thursday", "on Tuesdays") is not a date and is never resolved to one.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["ResolvedDate", "entry_day", "resolve_when"]

type Period = Literal["day", "week", "month", "year"]

_LANGUAGES = ("en", "de", "es", "fr", "it", "pt", "nl", "zh")
"""The languages a time expression is read in (the fixtures' languages and their neighbours)."""
_RECURRING = re.compile(
    r"\b(every|each|daily|weekly|monthly|yearly|annually|always|usually|mondays|tuesdays|wednesdays|"
    r"thursdays|fridays|saturdays|sundays|weekends)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ResolvedDate:
    """A resolved time: ``value`` at the precision of ``period``."""

    value: str
    period: Period


def entry_day(date: str) -> str:
    """The ISO day of an entry's date (``2023-05-08T14:02:00+00:00`` -> ``2023-05-08``; "" if none)."""
    return date[:10] if re.match(r"^\d{4}-\d{2}-\d{2}", date) else ""


def resolve_when(
    said: str, said_on: str, *, prefer: Literal["past", "future"] = "past"
) -> ResolvedDate | None:
    """The date a time expression means, said on ``said_on`` (an entry's ISO date).

    Args:
        said: the time as the speaker said it ("last Friday", "in May", "2023-05-05").
        said_on: the ISO date-time of the entry that said it; without one only absolute dates resolve.
        prefer: which way an ambiguous expression ("on Friday") points: plans point ahead.

    Returns None for an empty or recurring expression, or one the parser cannot read.
    """
    text = " ".join(said.split())
    if not text or _RECURRING.search(text):
        return None
    base = _parse_base(said_on)
    data = _parser(prefer, base).get_date_data(text)
    found = data.date_obj
    if found is None:
        return None
    return _at_period(found, data.period or "day")


def _parse_base(said_on: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(said_on) if said_on else None
    except ValueError:
        return None
    if parsed is not None and parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


@functools.lru_cache(maxsize=256)
def _parser(prefer: str, base: datetime | None) -> Any:
    """One parser per base date (building one reads its language data: it is kept)."""
    from dateparser.date import DateDataParser

    settings: dict[str, Any] = {"PREFER_DATES_FROM": prefer, "RETURN_TIME_AS_PERIOD": False}
    if base is not None:
        settings["RELATIVE_BASE"] = base
    return DateDataParser(languages=list(_LANGUAGES), settings=settings)


def _at_period(found: datetime, period: str) -> ResolvedDate:
    if period == "year":
        return ResolvedDate(f"{found.year:04d}", "year")
    if period == "month":
        return ResolvedDate(f"{found.year:04d}-{found.month:02d}", "month")
    if period == "week":
        year, week, _ = found.isocalendar()
        return ResolvedDate(f"{year:04d}-W{week:02d}", "week")
    return ResolvedDate(found.date().isoformat(), "day")
