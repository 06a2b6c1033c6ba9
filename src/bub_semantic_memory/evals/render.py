"""Rendering eval reports for people: terminal tables, ``report.md`` and ``report.html``.

This module owns how a :class:`~bub_semantic_memory.evals.report.Report` is shown; the
report's data and its JSON shape live in :mod:`.report`. Everything here is a pure
function of the report (no clock, no environment), so the same ``report.json`` always
renders to the same bytes.

* :func:`summary_table`, :func:`comparison_table`, :func:`fixture_table`: ``rich`` tables
  for the terminal;
* :func:`to_markdown`: a complete ``report.md``;
* :func:`to_html`: a self-contained ``report.html`` (inline CSS, no scripts, no external
  resources; per-fixture diffs in ``<details>`` elements, so it works without JS);
* :func:`write_report_files`: ``report.json``, ``report.md`` and ``report.html`` in a folder.

Every piece of report text (fixture ids, entity names, error messages, prompt names) is
treated as untrusted: it is escaped for Markdown and HTML, and passed to ``rich`` as
plain :class:`~rich.text.Text` so it is never read as markup.

Summary deltas are ``run - first run``. Scores (P/R/F1) have 3 decimals; rates are
percentages with deltas in percentage points. The two F1 deltas also carry the 95%
paired-bootstrap interval of the matching :class:`~bub_semantic_memory.evals.report.Comparison`.
A comparison is "better" when its interval lies above 0, "worse" when below 0.

An undefined score (``None``: nothing predicted, or no gold; see :mod:`.scoring`) is shown
as "–", never coloured, and has no delta. Latency is measured only on fixtures extracted
in this run: a fully cached run shows "from cache" instead, and token counts that come
from the cache say so.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rich.table import Table
from rich.text import Text

from bub_semantic_memory.evals.report import Comparison, FixtureResult, Metrics, PromptRun, Report
from bub_semantic_memory.evals.scoring import PRF

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
    """How :func:`~bub_semantic_memory.evals.report.compare_runs` names a run."""
    return f"{run.prompt} ({run.model})"


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


@dataclass(frozen=True)
class _SummaryRow:
    label: str
    value: Callable[[Metrics], float | None]
    fmt: Callable[[float], str]
    delta_fmt: Callable[[float], str] | None = None  # None: no delta cell
    higher_is_better: bool = True
    ci: Literal["entity", "relation"] | None = None
    cache_note: Literal["", "tokens", "latency"] = ""  # say what comes from the cache, not this run

    def cell(self, metrics: Metrics) -> str:
        value = self.value(metrics)
        cached, total = metrics.cached_fixtures, metrics.fixtures
        if value is None:
            return "from cache" if self.cache_note and cached and cached == total else UNDEFINED
        text = self.fmt(value)
        if not self.cache_note or not cached:
            return text
        if self.cache_note == "latency":  # cached fixtures are left out of latencies
            return f"{text} ({cached} cached excluded)"
        return f"{text} (from cache)" if cached == total else f"{text} ({cached}/{total} from cache)"


def _scores(
    label: str, prf: Callable[[Metrics], PRF], ci: Literal["entity", "relation"]
) -> list[_SummaryRow]:
    return [
        _SummaryRow(f"{label} P", lambda m: prf(m).precision, _score, _signed),
        _SummaryRow(f"{label} R", lambda m: prf(m).recall, _score, _signed),
        _SummaryRow(f"{label} F1", lambda m: prf(m).f1, _score, _signed, ci=ci),
    ]


_SUMMARY_ROWS: tuple[_SummaryRow, ...] = (
    *_scores("Entity", lambda m: m.entities, "entity"),
    _SummaryRow("Entity F1 (untyped)", lambda m: m.entities_untyped.f1, _score, _signed),
    *_scores("Relation", lambda m: m.relations, "relation"),
    _SummaryRow("First-try valid", lambda m: m.schema_valid_first_try, _percent, _signed_points),
    _SummaryRow("Success rate", lambda m: m.success_rate, _percent, _signed_points),
    _SummaryRow(
        "Mean attempts",
        lambda m: m.mean_attempts,
        _two_decimals,
        _signed_two_decimals,
        higher_is_better=False,
    ),
    _SummaryRow("Prompt tokens", lambda m: m.prompt_tokens, _count, cache_note="tokens"),
    _SummaryRow("Completion tokens", lambda m: m.completion_tokens, _count, cache_note="tokens"),
    _SummaryRow("Requests made", lambda m: m.requests_made, _count),
    _SummaryRow("Cached fixtures", lambda m: m.cached_fixtures, _count),
    _SummaryRow("Latency p50 (s)", lambda m: m.latency_p50_s, _two_decimals, cache_note="latency"),
    _SummaryRow("Latency p95 (s)", lambda m: m.latency_p95_s, _two_decimals, cache_note="latency"),
    _SummaryRow("Failed fixtures", lambda m: m.failed_fixtures, _count),
    _SummaryRow("Dropped items", lambda m: m.dropped_items, _count),
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
    for spec in _SUMMARY_ROWS:
        cells: list[_Cell] = []
        first = spec.value(runs[0].metrics)
        for index, run in enumerate(runs):
            value = spec.value(run.metrics)
            cells.append(_Cell(spec.cell(run.metrics)))
            if index:
                delta = None if value is None or first is None else value - first
                cells.append(_delta_cell(spec, delta, comparisons[index]))
        rows.append(_Row(spec.label, tuple(cells)))
    return _Grid(tuple(columns), tuple(rows))


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
    table = Table(title=title, caption=caption)
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
    return lines


def _md_prf(prf: PRF) -> str:
    return f"P {_score(prf.precision)} · R {_score(prf.recall)} · F1 {_score(prf.f1)}"


def _has_diff(result: FixtureResult) -> bool:
    return bool(
        result.missed_entities
        or result.spurious_entities
        or result.missed_relations
        or result.spurious_relations
        or result.dropped
    )


def _diff_lists(result: FixtureResult) -> Iterator[tuple[str, str, list[str]]]:
    """(title, css class, items) for each non-empty missed/spurious list."""
    for title, kind, items in (
        ("Missed entities", "missed", result.missed_entities),
        ("Spurious entities", "spurious", result.spurious_entities),
        ("Missed relations", "missed", result.missed_relations),
        ("Spurious relations", "spurious", result.spurious_relations),
        ("Dropped items (broke a rule after the re-asks)", "spurious", result.dropped),
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
            f"Entities {_md_prf(result.entities)}; relations {_md_prf(result.relations)}{_md_cached(result)}",
            "",
        ]
        for title, _, items in _diff_lists(result):
            lines.append(f"- {title}:")
            lines.extend(f"  - {_md_code(item)}" for item in items)
        lines.append("")
    return lines


def _md_scores(result: FixtureResult) -> str:
    return f"entity F1 {_score(result.entities.f1)}, relation F1 {_score(result.relations.f1)}"


def _md_cached(result: FixtureResult) -> str:
    return " (from cache)" if result.cached else ""


def to_markdown(report: Report) -> str:
    """A complete ``report.md``: header facts, summary, comparisons, per-type and per-fixture sections.

    The output depends only on the report (deterministic): the summary table has the
    same rows and columns as :func:`summary_table`; comparisons carry their 95%
    intervals and verdicts; per-type tables give P/R/F1 and the gold count per run; the
    per-fixture section lists, for each run, every fixture: the failed ones with their
    errors, the clean ones on one line each, and the missed and spurious entities and
    relations of every other fixture.
    """
    lines = [
        "# Eval report",
        "",
        f"- Created: {report.created_at.isoformat()}",
        f"- Fixtures dir: {_md_code(report.fixtures_dir)}",
        f"- Dataset sha256: {_md_code(report.dataset_sha256[:12])}",
        f"- Fixtures: {len(report.fixture_ids)}",
        f"- Runs: {len(report.runs)}",
        *(f"- Model {_md_code(model)}: {note}" for model, note in report.model_notes().items()),
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

_CSS = """
:root { color-scheme: light; --missed: #b42318; --missed-bg: #fdecea; --spurious: #8a5300;
  --spurious-bg: #fff4d6; --good: #146c2e; --bad: #b42318; --line: #d0d5dd; --muted: #5f6b7a; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto;
  max-width: 80rem; padding: 0 1rem; color: #1d2433; line-height: 1.45; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
th, td { border: 1px solid var(--line); padding: 0.25rem 0.6rem; vertical-align: top; }
th { background: #f2f4f7; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th small, h4 small { color: var(--muted); font-weight: normal; }
.good { color: var(--good); font-weight: 600; }
.bad { color: var(--bad); font-weight: 600; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 0.2rem 1rem; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; }
nav.toc { border: 1px solid var(--line); border-radius: 6px; padding: 0.5rem 1rem; display: inline-block; }
nav.toc ol { margin: 0.3rem 0; padding-left: 1.2rem; }
details { border: 1px solid var(--line); border-radius: 6px; margin: 0.4rem 0; padding: 0.3rem 0.8rem; }
details[open] { padding-bottom: 0.8rem; }
summary { cursor: pointer; }
summary .scores { color: var(--muted); margin-left: 0.6rem; }
.badge { border-radius: 4px; font-size: 0.8em; padding: 0.05rem 0.4rem; margin-left: 0.4rem; }
.badge.failed { background: var(--missed-bg); color: var(--missed); }
.badge.diff { background: var(--spurious-bg); color: var(--spurious); }
.runs { display: grid; grid-template-columns: repeat(auto-fit, minmax(22rem, 1fr)); gap: 1rem;
  margin-top: 0.6rem; }
.run { border-top: 3px solid var(--line); padding-top: 0.3rem; }
.run h4 { margin: 0.2rem 0; }
.run h5 { margin: 0.6rem 0 0.2rem; }
.status.failed { color: var(--bad); }
.key { border-radius: 4px; padding: 0 0.3rem; }
.key.missed { background: var(--missed-bg); color: var(--missed); }
.key.spurious { background: var(--spurious-bg); color: var(--spurious); }
ul.items { list-style: none; margin: 0; padding: 0; }
ul.items li { margin: 0.15rem 0; padding: 0.1rem 0.4rem; border-radius: 4px; }
ul.missed li { background: var(--missed-bg); color: var(--missed); }
ul.spurious li { background: var(--spurious-bg); color: var(--spurious); }
.muted { color: var(--muted); }
"""

_SECTIONS = (
    ("summary", "Summary"),
    ("comparisons", "Comparisons"),
    ("entity-types", "Entity types"),
    ("relation-types", "Relation types"),
    ("fixtures", "Per fixture"),
)


def _h(text: object) -> str:
    return html.escape(str(text), quote=True)


def _html_table(grid: _Grid) -> str:
    head = []
    for column in grid.columns:
        sub = f"<br><small>{_h(column.subtitle)}</small>" if column.subtitle else ""
        head.append(f"<th>{_h(column.title)}{sub}</th>")
    body = []
    for row in grid.rows:
        cells = [f"<th>{_h(row.label)}</th>"]
        for column, cell in zip(grid.columns[1:], row.cells, strict=True):
            classes = [c for c in ("num" if column.numeric else "", cell.tone) if c]
            attr = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{attr}>{_h(cell.text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f"<table>\n<thead><tr>{''.join(head)}</tr></thead>\n<tbody>\n"
        + "\n".join(body)
        + "\n</tbody>\n</table>"
    )


def _html_prf_table(result: FixtureResult) -> str:
    rows = []
    for label, prf in (("Entities", result.entities), ("Relations", result.relations)):
        numbers = (*(_score(v) for v in _prf_values(prf)), str(prf.tp), str(prf.gold), str(prf.predicted))
        rows.append(f"<tr><th>{label}</th>" + "".join(f'<td class="num">{n}</td>' for n in numbers) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("", "P", "R", "F1", "Matched", "Gold", "Predicted"))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _html_run_diff(run: PromptRun, result: FixtureResult | None) -> str:
    parts = [f'<div class="run"><h4>{_h(run.prompt)} <small>{_h(run.model)}</small></h4>']
    if result is None:
        parts.append('<p class="muted">Not in this run.</p></div>')
        return "\n".join(parts)
    flags = " · cached" if result.cached else ""
    if result.ok:
        parts.append(f'<p class="status">ok{flags}</p>')
    else:
        parts.append(f'<p class="status failed">failed: {_h(_error_text(result))}{flags}</p>')
    parts.append(_html_prf_table(result))
    lists = list(_diff_lists(result))
    if not lists:
        parts.append('<p class="muted">No missed or spurious items.</p>')
    for title, kind, items in lists:
        note = "gold, not found" if kind == "missed" else "predicted, not in gold"
        parts.append(f'<h5>{_h(title)} ({len(items)}) <small class="muted">{note}</small></h5>')
        parts.append(
            f'<ul class="items {kind}">' + "".join(f"<li><code>{_h(i)}</code></li>" for i in items) + "</ul>"
        )
    parts.append("</div>")
    return "\n".join(parts)


def _fixture_ids(report: Report) -> list[str]:
    """The report's fixture ids, then any fixture a run holds that the list lacks."""
    ids = dict.fromkeys(report.fixture_ids)
    for run in report.runs:
        ids.update(dict.fromkeys(r.fixture for r in run.fixtures))
    return list(ids)


def _html_fixture(index: int, fixture: str, report: Report) -> str:
    results = [{r.fixture: r for r in run.fixtures}.get(fixture) for run in report.runs]
    prompts = [run.prompt for run in report.runs]
    unique = len(set(prompts)) == len(prompts)
    scores = []
    for run, result in zip(report.runs, results, strict=True):
        shown = (
            "not run"
            if result is None
            else f"entity F1 {_score(result.entities.f1)}, relation F1 {_score(result.relations.f1)}"
        )
        scores.append(f"{_h(run.prompt if unique else _run_label(run))}: {shown}")
    badges = ""
    failed = sum(1 for r in results if r is not None and not r.ok)
    if failed:
        badges += f'<span class="badge failed">failed in {failed} run(s)</span>'
    if any(r is not None and _has_diff(r) for r in results):
        badges += '<span class="badge diff">misses or spurious items</span>'
    runs = "\n".join(_html_run_diff(run, r) for run, r in zip(report.runs, results, strict=True))
    return (
        f'<details id="fixture-{index}">\n<summary><code>{_h(fixture)}</code>'
        f'<span class="scores">{" · ".join(scores)}</span>{badges}</summary>\n'
        f'<div class="runs">\n{runs}\n</div>\n</details>'
    )


def to_html(report: Report) -> str:
    """A self-contained ``report.html``: inline CSS, no scripts, no external resources.

    Holds a table of contents, the summary, comparison and per-type tables, then one
    ``<details>`` element per fixture showing every run side by side: its P/R/F1,
    matched counts, status (failed fixtures with their error), and missed (gold not
    found, red) and spurious (predicted but not gold, amber) entities and relations.
    All report text is HTML-escaped. Deterministic, like :func:`to_markdown`.
    """
    toc = "".join(f'<li><a href="#{anchor}">{title}</a></li>' for anchor, title in _SECTIONS)
    meta = [
        ("Created", _h(report.created_at.isoformat())),
        ("Fixtures dir", f"<code>{_h(report.fixtures_dir)}</code>"),
        ("Dataset sha256", f"<code>{_h(report.dataset_sha256[:12])}</code>"),
        ("Fixtures", str(len(report.fixture_ids))),
        ("Runs", str(len(report.runs))),
        *((f"Model <code>{_h(model)}</code>", _h(note)) for model, note in report.model_notes().items()),
    ]
    body = [
        "<h1>Eval report</h1>",
        '<dl class="meta">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in meta) + "</dl>",
        f'<nav class="toc"><strong>Contents</strong><ol>{toc}</ol></nav>',
        '<section id="summary">\n<h2>Summary</h2>',
        _html_table(_summary_grid(report)) if report.runs else "<p>No runs.</p>",
        "</section>",
        '<section id="comparisons">\n<h2>Comparisons</h2>',
    ]
    if report.comparisons:
        body += [
            "<p>Paired bootstrap over fixtures; Δ is candidate − baseline, with its 95% interval.</p>",
            _html_table(_comparison_grid(report.comparisons)),
        ]
    else:
        body.append("<p>No comparisons.</p>")
    body.append("</section>")
    for (anchor, title), per_type in zip(_SECTIONS[2:4], (_entity_types, _relation_types), strict=True):
        grid = _type_grid(report.runs, per_type)
        body += [
            f'<section id="{anchor}">\n<h2>{title}</h2>',
            _html_table(grid) if grid.rows else "<p>None.</p>",
            "</section>",
        ]
    body.append('<section id="fixtures">\n<h2>Per fixture</h2>')
    body.append(
        '<p class="muted">One entry per fixture, every run side by side. '
        '<span class="key missed">Missed</span>: gold, not found. '
        '<span class="key spurious">Spurious</span>: predicted, not in gold. '
        "Matched: true positives.</p>"
    )
    body += [_html_fixture(index, fixture, report) for index, fixture in enumerate(_fixture_ids(report), 1)]
    body.append("</section>")
    head = (
        '<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>Eval report</title>\n"
        f"<style>{_CSS}</style>"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n{head}\n</head>\n<body>\n'
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


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
