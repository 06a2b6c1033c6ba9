"""The report as one self-contained ``report.html``, rendered from ``templates/report.html.j2``.

One file that works offline: inline CSS and SVG charts (their geometry from :mod:`._charts`),
no scripts, no external resources, per-fixture diffs in ``<details>`` elements. Autoescaping
is on, so every piece of report text is escaped. :func:`template_environment` is the Jinja2
environment of ``templates/``, which the memory-QA page uses too. Deterministic, like the
Markdown: the same ``report.json`` always renders to the same bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jinja2

from bub_semantic_memory.evals.extraction._report import Comparison, FixtureResult, Metrics, Report
from bub_semantic_memory.evals.extraction._scoring import PRF
from bub_semantic_memory.evals.reports._charts import (
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
from bub_semantic_memory.evals.reports._format import (
    Tone,
    diff_lists,
    error_text,
    format_count,
    format_score,
    format_signed,
    format_two_decimals,
    has_diff,
    relation_diagnosis,
    run_label,
    verdict,
)
from bub_semantic_memory.evals.reports._grids import (
    comparison_grid,
    entity_types,
    relation_types,
    summary_grid,
    type_grid,
)

__all__ = ["template_environment", "to_html"]

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
        loader=jinja2.PackageLoader("bub_semantic_memory.evals.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    environment.filters["score"] = _maybe_score
    environment.filters["n"] = _coordinate
    environment.globals["zip"] = zip
    return environment


def _maybe_score(value: float | None) -> str:
    return MISSING if value is None else format_score(value)


def _coordinate(value: float) -> str:
    """An SVG coordinate: one decimal at most, no trailing zeros, never ``-0``."""
    text = f"{value:.1f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _series(report: Report) -> tuple[Series, ...]:
    prompts = [run.prompt for run in report.runs]
    unique = len(set(prompts)) == len(prompts)
    return series_for([run.prompt if unique else run_label(run) for run in report.runs])


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
        fmt=format_score,
    )


def _interval(delta: float | None, ci: tuple[float, float] | None) -> Interval | None:
    """A chart interval, or ``None`` (nothing drawn, "–") when the difference is undefined."""
    if delta is None or ci is None:
        return None
    return Interval(delta, ci[0], ci[1], _VERDICT_COLORS[verdict(ci)[1]])


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
        fmt=format_signed,
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
        fmt=format_score,
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
        fmt=(format_count, format_count, format_two_decimals, format_two_decimals),
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
            status = f"ok{cached}" if result.ok else f"failed: {error_text(result)}{cached}"
            lists = tuple(diff_lists(result))
            diagnosis = relation_diagnosis(result)
        runs.append(_RunView(run.prompt, run.model, result, status, lists, diagnosis))
    return _FixtureView(
        fixture,
        scores,
        sum(1 for r in results if r is not None and not r.ok),
        any(r is not None and has_diff(r) for r in results),
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
    no bar. All report text is escaped. Deterministic, like :func:`~._markdown.to_markdown`.
    """
    names = [s.label for s in _series(report)]
    type_sections = [
        (anchor, title, _type_chart(report, types, f"chart-{anchor}", title), type_grid(report.runs, types))
        for (anchor, title), types in zip(_SECTIONS[4:6], (entity_types, relation_types), strict=True)
    ]
    return (
        template_environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            sections=_SECTIONS,
            summary=summary_grid(report) if report.runs else None,
            comparisons=comparison_grid(report.comparisons),
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
