"""The report's tables as grids that every format renders: terminal, Markdown and HTML.

A :class:`Grid` is a renderer-agnostic table (columns, rows of cells with a tone, notes below).
:func:`summary_grid` puts the runs side by side: one column per run, a "Δ vs <first run>"
column for every run after the first (``run - first run``), one row per metric, with the
relation diagnostics beside the strict scores (lenient P/R/F1, the recall given endpoints, the
missed relations by reason) and the fact rows only when a run scored facts. The two F1 deltas
also carry the 95% paired-bootstrap interval of the matching
:class:`~bub_semantic_memory.evals.extraction.Comparison`. Latency is measured only on fixtures
extracted in this run: a fully cached run shows "from cache" instead, and token counts that come
from the cache say so. :func:`comparison_grid`, :func:`fixture_grid` and :func:`type_grid` hold
the comparisons, one run's fixtures and the scores per type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from bub_semantic_memory.evals.extraction._report import Comparison, FixtureResult, Metrics, PromptRun, Report
from bub_semantic_memory.evals.extraction._scoring import PRF
from bub_semantic_memory.evals.reports._format import (
    UNDEFINED,
    Tone,
    format_count,
    format_percent,
    format_score,
    format_signed,
    format_signed_points,
    format_signed_two_decimals,
    format_two_decimals,
    format_with_ci,
    run_label,
    verdict,
)

__all__ = [
    "Grid",
    "comparison_grid",
    "entity_types",
    "fixture_grid",
    "relation_types",
    "summary_grid",
    "type_grid",
]


def _status(result: FixtureResult) -> str:
    if result.ok:
        return "ok"
    return f"failed ({result.error_type})" if result.error_type else "failed"


@dataclass(frozen=True)
class _Cell:
    text: str
    tone: Tone = ""


@dataclass(frozen=True)
class _Column:
    title: str
    subtitle: str = ""  # a second header line (the model, under a run's prompt)
    numeric: bool = True  # right-aligned


@dataclass(frozen=True)
class _Row:
    label: str
    cells: tuple[_Cell, ...]


@dataclass(frozen=True)
class Grid:
    """A renderer-agnostic table: the same content becomes rich, Markdown or HTML."""

    columns: tuple[_Column, ...]  # the first one heads the row labels
    rows: tuple[_Row, ...]
    notes: tuple[str, ...] = ()  # what a reader needs to read a cell, shown below the table


@dataclass(frozen=True)
class _SummaryRow:
    label: str
    value: Callable[[Metrics], float | None]
    fmt: Callable[[float], str]
    delta_fmt: Callable[[float], str] | None = None  # None: no delta cell
    higher_is_better: bool = True
    ci: Literal["entity", "relation"] | None = None
    cache_note: Literal["", "tokens", "latency"] = ""  # say what comes from the cache, not this run
    facts: bool = False  # a fact score: shown only when a run scored facts (its fixtures have gold facts)

    def cell(self, metrics: Metrics, value: float | None) -> str:
        cached, total = metrics.cached_fixtures, metrics.fixtures
        if value is None:
            return "from cache" if self.cache_note and cached and cached == total else UNDEFINED
        text = self.fmt(value)
        if not self.cache_note or not cached:
            return text
        if cached == total:
            return f"{text} (from cache: the filling run's)"
        return f"{text} ({cached}/{total} from cache)"


def _scores(
    label: str, prf: Callable[[Metrics], PRF], ci: Literal["entity", "relation"]
) -> list[_SummaryRow]:
    return [
        _SummaryRow(f"{label} P", lambda m: prf(m).precision, format_score, format_signed),
        _SummaryRow(f"{label} R", lambda m: prf(m).recall, format_score, format_signed),
        _SummaryRow(f"{label} F1", lambda m: prf(m).f1, format_score, format_signed, ci=ci),
    ]


def _lenient(metrics: Metrics) -> PRF | None:
    return metrics.relations_lenient


def _miss(metrics: Metrics, reason: Literal["no_endpoint", "unrelated", "mislabelled"]) -> float | None:
    misses = metrics.relation_misses
    return None if misses is None else getattr(misses, reason)


def _diagnostic_rows() -> list[_SummaryRow]:
    """Why relations are missed: on entities, on pairing or on labels.

    See :mod:`~bub_semantic_memory.evals.extraction._scoring`. A report made before these existed
    shows "–" for them.
    """

    def lenient(metric: Literal["precision", "recall", "f1"]) -> Callable[[Metrics], float | None]:
        return lambda m: None if (prf := _lenient(m)) is None else getattr(prf, metric)

    return [
        _SummaryRow("Relation P (lenient)", lenient("precision"), format_score, format_signed),
        _SummaryRow("Relation R (lenient)", lenient("recall"), format_score, format_signed),
        _SummaryRow("Relation F1 (lenient)", lenient("f1"), format_score, format_signed),
        _SummaryRow(
            "Relation R given endpoints",
            lambda m: None if m.relations_given_endpoints is None else m.relations_given_endpoints.recall,
            format_score,
            format_signed,
        ),
        _SummaryRow("Missed relations: no endpoint", lambda m: _miss(m, "no_endpoint"), format_count),
        _SummaryRow("Missed relations: unrelated", lambda m: _miss(m, "unrelated"), format_count),
        _SummaryRow("Missed relations: mislabelled", lambda m: _miss(m, "mislabelled"), format_count),
    ]


_SUMMARY_ROWS: tuple[_SummaryRow, ...] = (
    *_scores("Entity", lambda m: m.entities, "entity"),
    _SummaryRow("Entity F1 (untyped)", lambda m: m.entities_untyped.f1, format_score, format_signed),
    *_scores("Relation", lambda m: m.relations, "relation"),
    _SummaryRow(
        "Fact P", lambda m: m.facts.precision if m.facts else None, format_score, format_signed, facts=True
    ),
    _SummaryRow(
        "Fact R", lambda m: m.facts.recall if m.facts else None, format_score, format_signed, facts=True
    ),
    _SummaryRow(
        "Fact F1", lambda m: m.facts.f1 if m.facts else None, format_score, format_signed, facts=True
    ),
    _SummaryRow(
        "Fact dates right (R)",
        lambda m: m.fact_dates.recall if m.fact_dates else None,
        format_score,
        format_signed,
        facts=True,
    ),
    *_diagnostic_rows(),
    _SummaryRow(
        "Windows without a re-ask", lambda m: m.schema_valid_first_try, format_percent, format_signed_points
    ),
    _SummaryRow("Success rate", lambda m: m.success_rate, format_percent, format_signed_points),
    _SummaryRow(
        "Re-asks per window",
        lambda m: m.mean_reasks,
        format_two_decimals,
        format_signed_two_decimals,
        higher_is_better=False,
    ),
    _SummaryRow(
        "Answers per window",
        lambda m: m.mean_attempts,
        format_two_decimals,
        format_signed_two_decimals,
        higher_is_better=False,
    ),
    _SummaryRow("Prompt tokens", lambda m: m.prompt_tokens, format_count, cache_note="tokens"),
    _SummaryRow("Cached prompt tokens", lambda m: m.cached_tokens, format_count, cache_note="tokens"),
    _SummaryRow("Completion tokens", lambda m: m.completion_tokens, format_count, cache_note="tokens"),
    _SummaryRow("Requests made", lambda m: m.requests_made, format_count),
    _SummaryRow("Cached fixtures", lambda m: m.cached_fixtures, format_count),
    _SummaryRow("Latency p50 (s)", lambda m: m.latency_p50_s, format_two_decimals, cache_note="latency"),
    _SummaryRow("Latency p95 (s)", lambda m: m.latency_p95_s, format_two_decimals, cache_note="latency"),
    _SummaryRow("Failed fixtures", lambda m: m.failed_fixtures, format_count),
    _SummaryRow("Dropped items", lambda m: m.dropped_items, format_count),
    _SummaryRow(
        "Injections obeyed (fixtures)",
        lambda m: m.forbidden_fixtures if m.forbidden_checked else None,  # "–": nothing to obey
        format_count,
        higher_is_better=False,
    ),
)


def _comparison_for(report: Report, run: PromptRun) -> Comparison | None:
    """The comparison whose candidate is ``run``, preferring one against the first run."""
    label = run_label(run)
    candidates = [c for c in report.comparisons if c.candidate == label] or [
        c for c in report.comparisons if c.candidate == run.prompt
    ]
    if not candidates:
        return None
    first = run_label(report.runs[0])
    return next((c for c in candidates if c.baseline == first), candidates[0])


def _delta_cell(spec: _SummaryRow, delta: float | None, comparison: Comparison | None) -> _Cell:
    if spec.delta_fmt is None:
        return _Cell("")
    if delta is None:
        return _Cell(UNDEFINED)
    text = spec.delta_fmt(delta)
    tone: Tone = ""
    if round(delta, 6) != 0:
        tone = "good" if (delta > 0) == spec.higher_is_better else "bad"
    if spec.ci is not None and comparison is not None:
        ci = comparison.entity_f1_ci95 if spec.ci == "entity" else comparison.relation_f1_ci95
        if ci is not None:
            text = f"{text} [{format_signed(ci[0])}, {format_signed(ci[1])}]"
            tone = verdict(ci)[1]
    return _Cell(text, tone)


def summary_grid(report: Report) -> Grid:
    runs = report.runs
    columns = [_Column("Metric", numeric=False)]
    for index, run in enumerate(runs):
        columns.append(_Column(run.prompt, run.model))
        if index:
            columns.append(_Column(f"Δ vs {runs[0].prompt}"))
    comparisons = [_comparison_for(report, run) if index else None for index, run in enumerate(runs)]
    rows: list[_Row] = []
    scored_facts = any(run.metrics.facts is not None for run in runs)

    def value_of(spec: _SummaryRow, run: PromptRun) -> float | None:
        return None if spec.facts and run.states_facts is False else spec.value(run.metrics)

    for spec in _SUMMARY_ROWS:
        if spec.facts and not scored_facts:
            continue
        cells: list[_Cell] = []
        first = value_of(spec, runs[0])
        for index, run in enumerate(runs):
            value = value_of(spec, run)
            cells.append(_Cell(spec.cell(run.metrics, value)))
            if index:
                delta = None if value is None or first is None else value - first
                cells.append(_delta_cell(spec, delta, comparisons[index]))
        rows.append(_Row(spec.label, tuple(cells)))
    silent = [run.prompt for run in runs if run.states_facts is False and run.metrics.facts is not None]
    notes = (
        (f"Fact rows: – where the prompt version states no facts ({', '.join(dict.fromkeys(silent))}).",)
        if silent
        else ()
    )
    return Grid(tuple(columns), tuple(rows), notes)


def comparison_grid(comparisons: Sequence[Comparison]) -> Grid:
    columns = (
        _Column("Baseline", numeric=False),
        _Column("Candidate", numeric=False),
        _Column("Fixtures"),
        _Column("Entity F1 Δ [95% CI]"),
        _Column("Entity verdict", numeric=False),
        _Column("Relation F1 Δ [95% CI]"),
        _Column("Relation verdict", numeric=False),
    )
    rows: list[_Row] = []
    for c in comparisons:
        entity_verdict, entity_tone = verdict(c.entity_f1_ci95)
        relation_verdict, relation_tone = verdict(c.relation_f1_ci95)
        cells = (
            _Cell(c.candidate),
            _Cell(str(c.fixtures_compared)),
            _Cell(format_with_ci(c.entity_f1_delta, c.entity_f1_ci95), entity_tone),
            _Cell(entity_verdict, entity_tone),
            _Cell(format_with_ci(c.relation_f1_delta, c.relation_f1_ci95), relation_tone),
            _Cell(relation_verdict, relation_tone),
        )
        rows.append(_Row(c.baseline, cells))
    return Grid(columns, tuple(rows))


def fixture_grid(run: PromptRun, limit: int | None) -> Grid:
    columns = (
        _Column("Fixture", numeric=False),
        _Column("Status", numeric=False),
        *(_Column(f"{kind} {metric}") for kind in ("Ent", "Rel") for metric in ("P", "R", "F1")),
        _Column("Cached"),
    )
    shown = run.fixtures if limit is None else run.fixtures[: max(limit, 0)]
    rows: list[_Row] = []
    for result in shown:
        cells = (
            _Cell(_status(result), "" if result.ok else "bad"),
            *(
                _Cell(format_score(v))
                for prf in (result.entities, result.relations)
                for v in _prf_values(prf)
            ),
            _Cell("yes" if result.cached else "no"),
        )
        rows.append(_Row(result.fixture, cells))
    return Grid(columns, tuple(rows))


def _prf_values(prf: PRF) -> tuple[float | None, float | None, float | None]:
    return prf.precision, prf.recall, prf.f1


def type_grid(runs: Sequence[PromptRun], per_type: Callable[[Metrics], dict[str, PRF]]) -> Grid:
    columns = [_Column("Type", numeric=False)]
    for run in runs:
        columns.extend(_Column(f"{run_label(run)} {name}") for name in ("P", "R", "F1", "gold"))
    types = sorted({name for run in runs for name in per_type(run.metrics)})
    rows: list[_Row] = []
    for name in types:
        cells: list[_Cell] = []
        for run in runs:
            prf = per_type(run.metrics).get(name)
            if prf is None:
                cells.extend(_Cell("–") for _ in range(4))
            else:
                cells.extend(_Cell(format_score(v)) for v in _prf_values(prf))
                cells.append(_Cell(str(prf.gold)))
        rows.append(_Row(name, tuple(cells)))
    return Grid(tuple(columns), tuple(rows))


def entity_types(metrics: Metrics) -> dict[str, PRF]:
    return metrics.per_entity_type


def relation_types(metrics: Metrics) -> dict[str, PRF]:
    return metrics.per_relation_type
