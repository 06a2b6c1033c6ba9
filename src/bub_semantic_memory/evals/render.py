"""Rendering eval reports for people: terminal tables, ``report.md`` and ``report.html``.

This module owns how a :class:`~bub_semantic_memory.evals.extraction._report.Report` is shown; the
report's data and its JSON shape live in :mod:`.report`. Everything here is a pure
function of the report (no clock, no environment), so the same ``report.json`` always
renders to the same bytes.

* :func:`summary_table`, :func:`comparison_table`, :func:`fixture_table`: ``rich`` tables
  for the terminal;

Every summary (terminal, Markdown, HTML) carries the relation diagnostics beside the strict
scores: lenient P/R/F1, the recall given endpoints and the missed relations by reason.
* :func:`to_markdown`: a complete ``report.md``;
* :func:`to_html`: a self-contained ``report.html`` rendered from the Jinja2 template
  ``templates/report.html.j2`` (inline CSS and SVG charts from :mod:`.charts`, no
  scripts, no external resources; per-fixture diffs in ``<details>`` elements);
* :func:`write_report_files`: ``report.json``, ``report.md`` and ``report.html`` in a folder.

Every piece of report text (fixture ids, entity names, error messages, prompt names) is
treated as untrusted: it is escaped for Markdown and HTML, and passed to ``rich`` as
plain :class:`~rich.text.Text` so it is never read as markup.

Summary deltas are ``run - first run``. Scores (P/R/F1) have 3 decimals; rates are
percentages with deltas in percentage points. The two F1 deltas also carry the 95%
paired-bootstrap interval of the matching :class:`~bub_semantic_memory.evals.extraction._report.Comparison`.
A comparison is "better" when its interval lies above 0, "worse" when below 0.

An undefined score (``None``: nothing predicted, or no gold; see
:mod:`~bub_semantic_memory.evals.extraction._scoring`) is shown as "–", never coloured, and
has no delta. Latency is measured only on fixtures extracted in this run: a fully cached run
shows "from cache" instead, and token counts that come from the cache say so.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import jinja2
from rich.table import Table
from rich.text import Text

from bub_semantic_memory.evals.charts import (
    MISSING,
    BarRow,
    Chart,
    Interval,
    IntervalRow,
    Series,
    bar_panels,
    interval_panels,
    series_for,
)
from bub_semantic_memory.evals.extraction._report import Comparison, FixtureResult, Metrics, PromptRun, Report
from bub_semantic_memory.evals.extraction._scoring import PRF

__all__ = [
    "comparison_table",
    "fixture_table",
    "summary_table",
    "to_html",
    "to_markdown",
    "write_report_files",
]

Tone = Literal["", "good", "bad"]
_RICH_STYLES: dict[Tone, str] = {"": "", "good": "green", "bad": "red"}
_NO_DIFFERENCE = "no significant difference"


# --------------------------------------------------------------------------- formatting


UNDEFINED = "–"
"""How an undefined score (or a delta involving one) is shown."""


def _score(value: float | None) -> str:
    return UNDEFINED if value is None else f"{value:.3f}"


def _signed(value: float, digits: int = 3) -> str:
    rounded = round(value, digits)
    if rounded == 0:
        rounded = 0.0  # never print "-0.000"
    return f"{rounded:+.{digits}f}"


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def _signed_points(value: float) -> str:
    return f"{_signed(value * 100, 1)} pp"


def _two_decimals(value: float) -> str:
    return f"{value:.2f}"


def _signed_two_decimals(value: float) -> str:
    return _signed(value, 2)


def _count(value: float) -> str:
    return f"{int(value):,}"


def _run_label(run: PromptRun) -> str:
    """How :func:`~bub_semantic_memory.evals.extraction._report.compare_runs` names a run."""
    return run.label


def _with_ci(delta: float | None, ci: tuple[float, float] | None) -> str:
    if delta is None or ci is None:
        return UNDEFINED
    return f"{_signed(delta)} [{_signed(ci[0])}, {_signed(ci[1])}]"


def _verdict(ci: tuple[float, float] | None) -> tuple[str, Tone]:
    if ci is None:
        return "undefined", ""
    low, high = ci
    if low > 0:
        return "better", "good"
    if high < 0:
        return "worse", "bad"
    return _NO_DIFFERENCE, ""


def _status(result: FixtureResult) -> str:
    if result.ok:
        return "ok"
    return f"failed ({result.error_type})" if result.error_type else "failed"


def _error_text(result: FixtureResult) -> str:
    parts = [p for p in (result.error_type, result.error) if p]
    return ": ".join(parts) if parts else "unknown error"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- table models


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
class _Grid:
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
        _SummaryRow(f"{label} P", lambda m: prf(m).precision, _score, _signed),
        _SummaryRow(f"{label} R", lambda m: prf(m).recall, _score, _signed),
        _SummaryRow(f"{label} F1", lambda m: prf(m).f1, _score, _signed, ci=ci),
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
        _SummaryRow("Relation P (lenient)", lenient("precision"), _score, _signed),
        _SummaryRow("Relation R (lenient)", lenient("recall"), _score, _signed),
        _SummaryRow("Relation F1 (lenient)", lenient("f1"), _score, _signed),
        _SummaryRow(
            "Relation R given endpoints",
            lambda m: None if m.relations_given_endpoints is None else m.relations_given_endpoints.recall,
            _score,
            _signed,
        ),
        _SummaryRow("Missed relations: no endpoint", lambda m: _miss(m, "no_endpoint"), _count),
        _SummaryRow("Missed relations: unrelated", lambda m: _miss(m, "unrelated"), _count),
        _SummaryRow("Missed relations: mislabelled", lambda m: _miss(m, "mislabelled"), _count),
    ]


_SUMMARY_ROWS: tuple[_SummaryRow, ...] = (
    *_scores("Entity", lambda m: m.entities, "entity"),
    _SummaryRow("Entity F1 (untyped)", lambda m: m.entities_untyped.f1, _score, _signed),
    *_scores("Relation", lambda m: m.relations, "relation"),
    _SummaryRow("Fact P", lambda m: m.facts.precision if m.facts else None, _score, _signed, facts=True),
    _SummaryRow("Fact R", lambda m: m.facts.recall if m.facts else None, _score, _signed, facts=True),
    _SummaryRow("Fact F1", lambda m: m.facts.f1 if m.facts else None, _score, _signed, facts=True),
    _SummaryRow(
        "Fact dates right (R)",
        lambda m: m.fact_dates.recall if m.fact_dates else None,
        _score,
        _signed,
        facts=True,
    ),
    *_diagnostic_rows(),
    _SummaryRow("Windows without a re-ask", lambda m: m.schema_valid_first_try, _percent, _signed_points),
    _SummaryRow("Success rate", lambda m: m.success_rate, _percent, _signed_points),
    _SummaryRow(
        "Re-asks per window",
        lambda m: m.mean_reasks,
        _two_decimals,
        _signed_two_decimals,
        higher_is_better=False,
    ),
    _SummaryRow(
        "Answers per window",
        lambda m: m.mean_attempts,
        _two_decimals,
        _signed_two_decimals,
        higher_is_better=False,
    ),
    _SummaryRow("Prompt tokens", lambda m: m.prompt_tokens, _count, cache_note="tokens"),
    _SummaryRow("Cached prompt tokens", lambda m: m.cached_tokens, _count, cache_note="tokens"),
    _SummaryRow("Completion tokens", lambda m: m.completion_tokens, _count, cache_note="tokens"),
    _SummaryRow("Requests made", lambda m: m.requests_made, _count),
    _SummaryRow("Cached fixtures", lambda m: m.cached_fixtures, _count),
    _SummaryRow("Latency p50 (s)", lambda m: m.latency_p50_s, _two_decimals, cache_note="latency"),
    _SummaryRow("Latency p95 (s)", lambda m: m.latency_p95_s, _two_decimals, cache_note="latency"),
    _SummaryRow("Failed fixtures", lambda m: m.failed_fixtures, _count),
    _SummaryRow("Dropped items", lambda m: m.dropped_items, _count),
    _SummaryRow(
        "Injections obeyed (fixtures)",
        lambda m: m.forbidden_fixtures if m.forbidden_checked else None,  # "–": nothing to obey
        _count,
        higher_is_better=False,
    ),
)


def _comparison_for(report: Report, run: PromptRun) -> Comparison | None:
    """The comparison whose candidate is ``run``, preferring one against the first run."""
    label = _run_label(run)
    candidates = [c for c in report.comparisons if c.candidate == label] or [
        c for c in report.comparisons if c.candidate == run.prompt
    ]
    if not candidates:
        return None
    first = _run_label(report.runs[0])
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
            text = f"{text} [{_signed(ci[0])}, {_signed(ci[1])}]"
            tone = _verdict(ci)[1]
    return _Cell(text, tone)


def _summary_grid(report: Report) -> _Grid:
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
    return _Grid(tuple(columns), tuple(rows), notes)


def _comparison_grid(comparisons: Sequence[Comparison]) -> _Grid:
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
        entity_verdict, entity_tone = _verdict(c.entity_f1_ci95)
        relation_verdict, relation_tone = _verdict(c.relation_f1_ci95)
        cells = (
            _Cell(c.candidate),
            _Cell(str(c.fixtures_compared)),
            _Cell(_with_ci(c.entity_f1_delta, c.entity_f1_ci95), entity_tone),
            _Cell(entity_verdict, entity_tone),
            _Cell(_with_ci(c.relation_f1_delta, c.relation_f1_ci95), relation_tone),
            _Cell(relation_verdict, relation_tone),
        )
        rows.append(_Row(c.baseline, cells))
    return _Grid(columns, tuple(rows))


def _fixture_grid(run: PromptRun, limit: int | None) -> _Grid:
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
            *(_Cell(_score(v)) for prf in (result.entities, result.relations) for v in _prf_values(prf)),
            _Cell("yes" if result.cached else "no"),
        )
        rows.append(_Row(result.fixture, cells))
    return _Grid(columns, tuple(rows))


def _prf_values(prf: PRF) -> tuple[float | None, float | None, float | None]:
    return prf.precision, prf.recall, prf.f1


def _type_grid(runs: Sequence[PromptRun], per_type: Callable[[Metrics], dict[str, PRF]]) -> _Grid:
    columns = [_Column("Type", numeric=False)]
    for run in runs:
        columns.extend(_Column(f"{_run_label(run)} {name}") for name in ("P", "R", "F1", "gold"))
    types = sorted({name for run in runs for name in per_type(run.metrics)})
    rows: list[_Row] = []
    for name in types:
        cells: list[_Cell] = []
        for run in runs:
            prf = per_type(run.metrics).get(name)
            if prf is None:
                cells.extend(_Cell("–") for _ in range(4))
            else:
                cells.extend(_Cell(_score(v)) for v in _prf_values(prf))
                cells.append(_Cell(str(prf.gold)))
        rows.append(_Row(name, tuple(cells)))
    return _Grid(tuple(columns), tuple(rows))


# --------------------------------------------------------------------------- rich


def _rich_table(grid: _Grid, *, title: str | None = None, caption: str | None = None) -> Table:
    table = Table(title=title, caption=" ".join(filter(None, (caption, *grid.notes))) or None)
    for column in grid.columns:
        header = f"{column.title}\n{column.subtitle}" if column.subtitle else column.title
        table.add_column(Text(header), justify="right" if column.numeric else "left")
    for row in grid.rows:
        table.add_row(
            Text(row.label), *(Text(cell.text, style=_RICH_STYLES[cell.tone]) for cell in row.cells)
        )
    return table


def summary_table(report: Report) -> Table:
    """The runs side by side: one column per run (prompt, model below), one row per metric.

    Every run after the first also gets a "Δ vs <first prompt>" column for the score and
    rate rows; the Entity F1 and Relation F1 deltas include the 95% interval of the
    comparison whose candidate is that run (green/red when the interval excludes 0).
    """
    return _rich_table(_summary_grid(report), title="Summary")


def comparison_table(comparisons: list[Comparison]) -> Table:
    """One row per comparison: F1 deltas with their 95% intervals and a verdict for each.

    A verdict is "better" when the interval's lower bound is above 0, "worse" when its
    upper bound is below 0, and "no significant difference" otherwise.
    """
    return _rich_table(_comparison_grid(comparisons), title="Comparisons (paired bootstrap, 95% CI)")


def fixture_table(run: PromptRun, *, limit: int | None = None) -> Table:
    """One row per fixture of ``run`` (in run order): status, entity and relation P/R/F1, cached.

    With ``limit``, only the first ``limit`` fixtures are shown and the caption says how
    many were left out.
    """
    grid = _fixture_grid(run, limit)
    hidden = len(run.fixtures) - len(grid.rows)
    caption = f"{hidden} more fixture(s) not shown" if hidden > 0 else None
    return _rich_table(grid, title=f"{run.prompt} ({run.model})", caption=caption)


# --------------------------------------------------------------------------- Markdown

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def _md(text: str) -> str:
    """Inline Markdown text: one line, with characters that Markdown or tables would read escaped."""
    return _MD_SPECIAL.sub(r"\\\1", _one_line(text))


def _md_code(text: str) -> str:
    """A code span holding ``text`` literally (fenced with more backticks than it contains)."""
    text = _one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_table(grid: _Grid) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    headers = [_md(f"{c.title} ({c.subtitle})" if c.subtitle else c.title) for c in grid.columns]
    align = ["---:" if column.numeric else "---" for column in grid.columns]
    lines = [line(headers), line(align)]
    lines.extend(line([_md(row.label), *(_md(cell.text) for cell in row.cells)]) for row in grid.rows)
    if grid.notes:
        lines += ["", *(_md(note) for note in grid.notes)]
    return lines


def _md_prf(prf: PRF) -> str:
    text = f"P {_score(prf.precision)} · R {_score(prf.recall)} · F1 {_score(prf.f1)}"
    return f"{text} ({_undefined_why(prf)})" if prf.f1 is None else text


def _undefined_why(prf: PRF) -> str:
    """Why F1 is "–": nothing to divide by."""
    if prf.gold == 0 and prf.predicted == 0:
        return "no gold items and nothing extracted: nothing to score"
    if prf.gold == 0:
        return f"no gold items; {prf.predicted} extracted, all spurious"
    return f"nothing extracted of {prf.gold} gold item(s)"


def _has_diff(result: FixtureResult) -> bool:
    return bool(
        result.missed_entities
        or result.spurious_entities
        or result.missed_relations
        or result.spurious_relations
        or result.missed_facts
        or result.spurious_facts
        or result.dropped
    )


def _diff_lists(result: FixtureResult) -> Iterator[tuple[str, str, list[str]]]:
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


def _md_run_fixtures(run: PromptRun) -> list[str]:
    """Every fixture of ``run``: one line for a clean one, the missed and spurious items otherwise."""
    lines = [f"### {_md(_run_label(run))}", ""]
    failed = [r for r in run.fixtures if not r.ok]
    if failed:
        lines += ["Failed fixtures:", ""]
        lines += [f"- {_md_code(r.fixture)}: {_md(_error_text(r))}" for r in failed]
        lines.append("")
    clean = [r for r in run.fixtures if r.ok and not _has_diff(r)]
    if clean:
        lines += ["Fixtures with nothing missed and nothing spurious:", ""]
        lines += [f"- {_md_code(r.fixture)}: {_md_scores(r)}{_md_cached(r)}" for r in clean]
        lines.append("")
    for result in run.fixtures:
        if result.ok and not _has_diff(result):
            continue
        marker = " (failed)" if not result.ok else ""
        lines += [
            f"#### {_md_code(result.fixture)}{marker}",
            "",
            f"Entities {_md_prf(result.entities)}; relations {_md_prf(result.relations)}"
            f"{_md_facts(result)}{_md_cached(result)}",
            "",
        ]
        if diagnosis := _relation_diagnosis(result):
            lines += [diagnosis, ""]
        for title, _, items in _diff_lists(result):
            lines.append(f"- {title}:")
            lines.extend(f"  - {_md_code(item)}" for item in items)
        lines.append("")
    return lines


def _relation_diagnosis(result: FixtureResult) -> str:
    """One line on the fixture's missed relations: lenient F1, recall given endpoints, misses by reason
    ("" when nothing was missed or the report predates these figures)."""
    misses, lenient = result.relation_misses, result.relations_lenient
    given = result.relations_given_endpoints
    if misses is None or lenient is None or given is None or not result.missed_relations:
        return ""
    return (
        f"Relations lenient F1 {_score(lenient.f1)}, recall given endpoints {_score(given.recall)} "
        f"({given.tp} of {given.gold}); missed: {misses.no_endpoint} no endpoint, "
        f"{misses.unrelated} unrelated, {misses.mislabelled} mislabelled"
    )


def _md_scores(result: FixtureResult) -> str:
    facts = f", fact F1 {_md_f1(result.facts)}" if result.facts is not None else ""
    return f"entity F1 {_md_f1(result.entities)}, relation F1 {_md_f1(result.relations)}{facts}"


def _md_facts(result: FixtureResult) -> str:
    """The fact score of a fixture that has gold facts (nothing for one that has none)."""
    if result.facts is None:
        return ""
    dates = result.fact_dates
    dated = f", {dates.tp}/{dates.gold} dated right" if dates is not None and dates.gold else ""
    return f"; facts {_md_prf(result.facts)}{dated}"


def _md_f1(prf: PRF) -> str:
    return _score(prf.f1) if prf.f1 is not None else f"{_score(prf.f1)} ({_undefined_why(prf)})"


def _md_cached(result: FixtureResult) -> str:
    return " (from cache)" if result.cached else ""


_RESCORED = "the same predictions, on the gold of the dataset below"
_CADENCES = {
    "plugin": "the plugin's: the tape replayed turn by turn, extracted as the plugin's service extracts it"
}


def to_markdown(report: Report) -> str:
    """A complete ``report.md``: header facts, summary, comparisons, per-type and per-fixture sections.

    The output depends only on the report (deterministic): the summary table has the
    same rows and columns as :func:`summary_table`; comparisons carry their 95%
    intervals and verdicts; per-type tables give P/R/F1 and the gold count per run; the
    per-fixture section lists, for each run, every fixture: the failed ones with their
    errors, the clean ones on one line each, and the missed and spurious entities and
    relations (and facts, where the fixture has gold facts) of every other fixture. The fact
    rows of the summary appear only when a run scored facts.
    """
    lines = [
        "# Eval report",
        "",
        f"- Created: {report.created_at.isoformat()}",
        *([f"- Re-scored: {report.rescored_at.isoformat()} ({_RESCORED})"] if report.rescored_at else []),
        f"- Fixtures dir: {_md_code(report.fixtures_dir)}",
        f"- Dataset sha256: {_md_code(report.dataset_sha256[:12])}",
        f"- Fixtures: {len(report.fixture_ids)}",
        f"- Runs: {len(report.runs)}",
        *(f"- Model {_md_code(model)}: {note}" for model, note in report.model_notes().items()),
        *(
            f"- Model class of {_md_code(model)}: {model_class} (the promotion a bare prompt name means)"
            for model, model_class in report.model_classes().items()
        ),
        *(
            f"- Cadence of {_md_code(run.label)}: {_CADENCES.get(run.cadence, run.cadence)}"
            for run in report.runs
            if run.cadence != "tape"
        ),
        "",
        "## Summary",
        "",
    ]
    lines += _md_table(_summary_grid(report)) if report.runs else ["No runs."]
    lines += ["", "## Comparisons", ""]
    if report.comparisons:
        lines += [
            "Paired bootstrap over fixtures; Δ is candidate − baseline, with its 95% interval.",
            "",
            *_md_table(_comparison_grid(report.comparisons)),
        ]
    else:
        lines.append("No comparisons.")
    for title, per_type in (
        ("Entity types", _entity_types),
        ("Relation types", _relation_types),
    ):
        grid = _type_grid(report.runs, per_type)
        lines += ["", f"## {title}", ""]
        lines += _md_table(grid) if grid.rows else ["None."]
    lines += ["", "## Per fixture", ""]
    for run in report.runs:
        lines += _md_run_fixtures(run)
    return "\n".join(lines).rstrip("\n") + "\n"


def _entity_types(metrics: Metrics) -> dict[str, PRF]:
    return metrics.per_entity_type


def _relation_types(metrics: Metrics) -> dict[str, PRF]:
    return metrics.per_relation_type


# --------------------------------------------------------------------------- HTML

_SECTIONS = (
    ("how-to-read", "How to read this report"),
    ("summary", "Summary"),
    ("per-fixture", "F1 per fixture"),
    ("comparisons", "Comparisons"),
    ("entity-types", "Entity types"),
    ("relation-types", "Relation types"),
    ("cost", "Tokens and latency"),
    ("fixtures", "Per fixture"),
)
_VERDICT_COLORS: dict[Tone, str] = {"good": "#146c2e", "bad": "#b42318", "": "#7f7f7f"}
_FAILED = "✗"


@functools.cache
def template_environment() -> jinja2.Environment:
    """The Jinja2 environment of ``templates/`` (loaded from the installed package, wheel included)."""
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("bub_semantic_memory.evals", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    environment.filters["score"] = _maybe_score
    environment.filters["n"] = _coordinate
    environment.globals["zip"] = zip
    return environment


def _maybe_score(value: float | None) -> str:
    return MISSING if value is None else _score(value)


def _coordinate(value: float) -> str:
    """An SVG coordinate: one decimal at most, no trailing zeros, never ``-0``."""
    text = f"{value:.1f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _series(report: Report) -> tuple[Series, ...]:
    prompts = [run.prompt for run in report.runs]
    unique = len(set(prompts)) == len(prompts)
    return series_for([run.prompt if unique else _run_label(run) for run in report.runs])


def _fixture_group(fixture_id: str) -> str:
    """The fixture id's prefix (``coref`` of ``coref-new-coworkers``): fixtures are named by kind."""
    return fixture_id.split("-", 1)[0] if "-" in fixture_id else ""


def _fixture_chart(report: Report) -> Chart | None:
    ids = _fixture_ids(report)
    if not ids or not report.runs:
        return None
    by_run = [{r.fixture: r for r in run.fixtures} for run in report.runs]
    rows = []
    for fixture in sorted(ids, key=_fixture_group):  # stable: report order within a group
        results = [results_of.get(fixture) for results_of in by_run]
        values = tuple(
            tuple(None if r is None else getattr(r, kind).f1 for r in results)
            for kind in ("entities", "relations")
        )
        notes = tuple("not run" if r is None else ("" if r.ok else _FAILED) for r in results)
        rows.append(BarRow(fixture, values, notes, _fixture_group(fixture)))
    return bar_panels(
        chart_id="chart-fixture-f1",
        title="F1 per fixture",
        description="Entity F1 and relation F1 of each fixture, one bar per run.",
        series=_series(report),
        panels=("Entity F1", "Relation F1"),
        rows=rows,
        fmt=_score,
    )


def _interval(delta: float | None, ci: tuple[float, float] | None) -> Interval | None:
    """A chart interval, or ``None`` (nothing drawn, "–") when the difference is undefined."""
    if delta is None or ci is None:
        return None
    return Interval(delta, ci[0], ci[1], _VERDICT_COLORS[_verdict(ci)[1]])


def _number(value: float | None) -> float | None:
    return None if value is None else float(value)


def _comparison_chart(comparisons: Sequence[Comparison]) -> Chart:
    rows = []
    for c in comparisons:
        pairs = ((c.entity_f1_delta, c.entity_f1_ci95), (c.relation_f1_delta, c.relation_f1_ci95))
        cells = tuple(_interval(delta, ci) for delta, ci in pairs)
        rows.append(IntervalRow(f"{c.candidate} vs {c.baseline}", cells))
    return interval_panels(
        chart_id="chart-comparisons",
        title="F1 differences with 95% intervals",
        description="For each comparison, the entity and relation F1 difference and its bootstrap interval.",
        panels=("Entity F1 Δ", "Relation F1 Δ"),
        rows=rows,
        fmt=_signed,
    )


def _type_chart(
    report: Report, per_type: Callable[[Metrics], dict[str, PRF]], chart_id: str, title: str
) -> Chart | None:
    types = sorted({name for run in report.runs for name in per_type(run.metrics)})
    if not types:
        return None
    rows = []
    for name in types:
        found = [per_type(run.metrics).get(name) for run in report.runs]
        gold = next((prf.gold for prf in found if prf is not None), 0)
        values = tuple(
            tuple(None if prf is None else getattr(prf, metric) for prf in found)
            for metric in ("precision", "recall", "f1")
        )
        rows.append(BarRow(f"{name} ({gold})", values))
    return bar_panels(
        chart_id=chart_id,
        title=title,
        description=f"{title}: precision, recall and F1 of each type, one bar per run.",
        series=_series(report),
        panels=("Precision", "Recall", "F1"),
        rows=rows,
        fmt=_score,
        panel_width=160.0,
    )


def _cost_chart(report: Report) -> Chart | None:
    if not report.runs:
        return None
    metrics = [run.metrics for run in report.runs]
    row = BarRow(
        "",
        (
            tuple(_number(m.prompt_tokens) for m in metrics),
            tuple(_number(m.completion_tokens) for m in metrics),
            tuple(_number(m.latency_p50_s) for m in metrics),
            tuple(_number(m.latency_p95_s) for m in metrics),
        ),
    )
    return bar_panels(
        chart_id="chart-cost",
        title="Tokens and latency per run",
        description="Prompt and completion tokens of each run, its median and 95th-percentile call latency.",
        series=_series(report),
        panels=("Prompt tokens", "Completion tokens", "Latency p50 (s)", "Latency p95 (s)"),
        rows=[row],
        fmt=(_count, _count, _two_decimals, _two_decimals),
        fixed_max=None,
        panel_width=150.0,
    )


@dataclass(frozen=True)
class _RunView:
    prompt: str
    model: str
    result: FixtureResult | None
    status: str
    lists: tuple[tuple[str, str, list[str]], ...]
    diagnosis: str = ""


@dataclass(frozen=True)
class _FixtureView:
    id: str
    scores: tuple[str, ...]
    failed_runs: int
    has_diff: bool
    runs: tuple[_RunView, ...]


def _fixture_view(fixture: str, report: Report, names: Sequence[str]) -> _FixtureView:
    results = [{r.fixture: r for r in run.fixtures}.get(fixture) for run in report.runs]
    scores = tuple(
        f"{name}: not run"
        if result is None
        else f"{name}: entity F1 {_maybe_score(result.entities.f1)}, "
        f"relation F1 {_maybe_score(result.relations.f1)}"
        + (f", fact F1 {_maybe_score(result.facts.f1)}" if result.facts is not None else "")
        for name, result in zip(names, results, strict=True)
    )
    runs = []
    for run, result in zip(report.runs, results, strict=True):
        status = diagnosis = ""
        lists: tuple[tuple[str, str, list[str]], ...] = ()
        if result is not None:
            cached = " · cached" if result.cached else ""
            status = f"ok{cached}" if result.ok else f"failed: {_error_text(result)}{cached}"
            lists = tuple(_diff_lists(result))
            diagnosis = _relation_diagnosis(result)
        runs.append(_RunView(run.prompt, run.model, result, status, lists, diagnosis))
    return _FixtureView(
        fixture,
        scores,
        sum(1 for r in results if r is not None and not r.ok),
        any(r is not None and _has_diff(r) for r in results),
        tuple(runs),
    )


def to_html(report: Report) -> str:
    """A self-contained ``report.html``, rendered from ``templates/report.html.j2``.

    One file that works offline: inline CSS and SVG charts, no script, no external
    resource. It holds a "how to read this" section explaining each metric and the
    interval, the summary table, charts of F1 per fixture (grouped by the fixture id's
    prefix), of each comparison's Δ with its 95% interval, of P/R/F1 per entity and
    relation type and of tokens and latency per run, the numbers behind them, and one
    ``<details>`` element per fixture showing every run side by side (P/R/F1, matched
    counts, status, missed and spurious items). Undefined scores show as "–" and draw
    no bar. All report text is escaped. Deterministic, like :func:`to_markdown`.
    """
    names = [s.label for s in _series(report)]
    type_sections = [
        (anchor, title, _type_chart(report, types, f"chart-{anchor}", title), _type_grid(report.runs, types))
        for (anchor, title), types in zip(_SECTIONS[4:6], (_entity_types, _relation_types), strict=True)
    ]
    return (
        template_environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            sections=_SECTIONS,
            summary=_summary_grid(report) if report.runs else None,
            comparisons=_comparison_grid(report.comparisons),
            comparison_chart=_comparison_chart(report.comparisons) if report.comparisons else None,
            fixture_chart=_fixture_chart(report),
            type_sections=type_sections,
            cost_chart=_cost_chart(report),
            fixtures=[_fixture_view(fixture, report, names) for fixture in _fixture_ids(report)],
        )
    )


def _fixture_ids(report: Report) -> list[str]:
    """The report's fixture ids, then any fixture a run holds that the list lacks."""
    ids = dict.fromkeys(report.fixture_ids)
    for run in report.runs:
        ids.update(dict.fromkeys(r.fixture for r in run.fixtures))
    return list(ids)


# --------------------------------------------------------------------------- files


def write_report_files(report: Report, out: Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``out`` (created if missing).

    Returns:
        The written paths keyed ``json``, ``md`` and ``html``.
    """
    out.mkdir(parents=True, exist_ok=True)
    contents = {
        "json": ("report.json", report.model_dump_json(indent=2) + "\n"),
        "md": ("report.md", to_markdown(report)),
        "html": ("report.html", to_html(report)),
    }
    paths: dict[str, Path] = {}
    for key, (name, text) in contents.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        paths[key] = path
    return paths
