"""How a report's values read in every format: scores, deltas, verdicts, a fixture's diff.

Scores (P/R/F1) have 3 decimals; rates are percentages with deltas in percentage points. A
comparison is "better" when its 95% interval lies above 0, "worse" when below 0. An undefined
score (``None``: nothing predicted, or no gold; see
:mod:`~bub_semantic_memory.evals.extraction._scoring`) is shown as "–", never coloured, and
has no delta.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from bub_semantic_memory.evals.extraction._report import FixtureResult, PromptRun

__all__ = [
    "UNDEFINED",
    "Tone",
    "diff_lists",
    "error_text",
    "format_count",
    "format_percent",
    "format_score",
    "format_signed",
    "format_signed_points",
    "format_signed_two_decimals",
    "format_two_decimals",
    "format_with_ci",
    "has_diff",
    "relation_diagnosis",
    "run_label",
    "verdict",
]

Tone = Literal["", "good", "bad"]

_NO_DIFFERENCE = "no significant difference"

UNDEFINED = "–"
"""How an undefined score (or a delta involving one) is shown."""


def format_score(value: float | None) -> str:
    return UNDEFINED if value is None else f"{value:.3f}"


def format_signed(value: float, digits: int = 3) -> str:
    rounded = round(value, digits)
    if rounded == 0:
        rounded = 0.0  # never print "-0.000"
    return f"{rounded:+.{digits}f}"


def format_percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def format_signed_points(value: float) -> str:
    return f"{format_signed(value * 100, 1)} pp"


def format_two_decimals(value: float) -> str:
    return f"{value:.2f}"


def format_signed_two_decimals(value: float) -> str:
    return format_signed(value, 2)


def format_count(value: float) -> str:
    return f"{int(value):,}"


def run_label(run: PromptRun) -> str:
    """How :func:`~bub_semantic_memory.evals.extraction.compare_runs` names a run."""
    return run.label


def format_with_ci(delta: float | None, ci: tuple[float, float] | None) -> str:
    if delta is None or ci is None:
        return UNDEFINED
    return f"{format_signed(delta)} [{format_signed(ci[0])}, {format_signed(ci[1])}]"


def verdict(ci: tuple[float, float] | None) -> tuple[str, Tone]:
    if ci is None:
        return "undefined", ""
    low, high = ci
    if low > 0:
        return "better", "good"
    if high < 0:
        return "worse", "bad"
    return _NO_DIFFERENCE, ""


def error_text(result: FixtureResult) -> str:
    parts = [p for p in (result.error_type, result.error) if p]
    return ": ".join(parts) if parts else "unknown error"


def has_diff(result: FixtureResult) -> bool:
    return bool(
        result.missed_entities
        or result.spurious_entities
        or result.missed_relations
        or result.spurious_relations
        or result.missed_facts
        or result.spurious_facts
        or result.dropped
    )


def diff_lists(result: FixtureResult) -> Iterator[tuple[str, str, list[str]]]:
    """(title, css class, items) for each non-empty missed/spurious list."""
    for title, kind, items in (
        ("Missed entities", "missed", result.missed_entities),
        ("Spurious entities", "spurious", result.spurious_entities),
        ("Missed relations", "missed", result.missed_relations),
        ("Spurious relations", "spurious", result.spurious_relations),
        ("Missed facts", "missed", result.missed_facts),
        ("Spurious facts", "spurious", result.spurious_facts),
        ("Dropped items (broke a rule after the re-asks)", "spurious", result.dropped),
        ("Forbidden names extracted (an injection obeyed)", "spurious", result.forbidden_extracted),
    ):
        if items:
            yield title, kind, items


def relation_diagnosis(result: FixtureResult) -> str:
    """One line on the fixture's missed relations: lenient F1, recall given endpoints, misses by reason
    ("" when nothing was missed or the report predates these figures)."""
    misses, lenient = result.relation_misses, result.relations_lenient
    given = result.relations_given_endpoints
    if misses is None or lenient is None or given is None or not result.missed_relations:
        return ""
    return (
        f"Relations lenient F1 {format_score(lenient.f1)}, "
        f"recall given endpoints {format_score(given.recall)} "
        f"({given.tp} of {given.gold}); missed: {misses.no_endpoint} no endpoint, "
        f"{misses.unrelated} unrelated, {misses.mislabelled} mislabelled"
    )
