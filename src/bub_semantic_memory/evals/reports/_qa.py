"""The memory-QA report for people: ``qa.md``, ``qa.html``, the terminal's columns, and the files.

The conditions table gives, per condition, the context recall over all questions and per
category and pseudo-category (questions that name no entity, questions about 200+ turn tapes),
the tokens per question and, when a model answered, the answer accuracy with its 95% Wilson
interval; then memory against every other condition, each difference with its paired-bootstrap
95% interval. A report whose questions carry their dataset's own categories (LoCoMo's) adds a
table per score by those categories, with intervals, and memory against search in each. The HTML
page, rendered from ``templates/qa.html.j2``, adds a chart per condition and kind. What a report
holds no scores for (word-level recall, token F1, categories of a source) it does not show, so a
report made before they existed reads as it did.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from bub_semantic_memory.evals.qa._report import LONG, NO_ENTITY, Mean, QAReport, Rate
from bub_semantic_memory.evals.reports._charts import BarRow, Chart, bar_panels, series_for
from bub_semantic_memory.evals.reports._html import template_environment

__all__ = [
    "ANSWER_SCORES",
    "CONTEXT_SCORES",
    "conditions_table",
    "qa_columns",
    "source_category_tables",
    "to_html",
    "to_markdown",
    "write_qa_report",
]


def _pct(rate: Rate) -> str:
    value = rate.value
    return "–" if value is None else f"{value:.3f} ({rate.hits}/{rate.n})"


def _pct_with_interval(rate: Rate) -> str:
    """A share, its count and its 95% interval: ``0.375 (39/104) [0.288, 0.471]``."""
    interval = rate.interval()
    return _pct(rate) + ("" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]")


def _mean(mean: Mean, *, interval: bool = False) -> str:
    """A mean score and its count, with its 95% interval when asked: ``0.412 (n=120) [0.35, 0.47]``."""
    value = mean.value
    if value is None:
        return "–"
    text = f"{value:.3f} (n={mean.n})"
    bounds = mean.interval() if interval else None
    return text + ("" if bounds is None else f" [{bounds[0]:.3f}, {bounds[1]:.3f}]")


def _has(report: QAReport, metric: str) -> bool:
    """Whether any outcome of the report is scored by ``metric`` (older reports hold no word recall)."""
    return any(outcome.score(metric) is not None for item in report.items for outcome in item.outcomes)


def _delta_text(delta: tuple[float, tuple[float, float]] | None) -> str:
    if delta is None:
        return "–"
    point, (low, high) = delta
    return f"{point:+.3f} [{low:+.3f}, {high:+.3f}]"


def _meta(report: QAReport) -> list[tuple[str, str]]:
    """What the run was: when, how many questions, the budget, the memory and the answering model."""
    answerable = sum(1 for i in report.items if i.category != "unanswerable")
    without = sum(1 for i in report.items if not i.has_memory)
    meta = [
        ("Created", report.created_at.isoformat()),
        ("Questions", f"{len(report.items)} ({answerable} answerable)"),
        (
            "Budget",
            f"{report.budget} tokens per context"
            + (
                f"; {report.distractors:,} made-up entities planted in every memory"
                if report.distractors
                else ""
            ),
        ),
        (
            "Memory",
            (report.memory_source or "none given")
            + (f"; {without} question(s) of fixtures without memory" if without else ""),
        ),
        ("Answering model", report.answer_model or "none (context recall only)"),
    ]
    if report.replayed:
        missing = report.unanswered()
        meta.append(
            (
                "Answers",
                "replayed from the answer cache, no model opened"
                + (f"; {missing} context(s) had no cached answer and are not scored" if missing else ""),
            )
        )
    if report.answer_model:
        meta += [
            ("Answer prompt", report.answer_prompt or ""),
            ("Judge (a fixed rule, no model)", report.judge),
        ]
    return meta


def _row_kinds(report: QAReport) -> list[str]:
    """The categories of the report's questions, then the pseudo-categories."""
    return [*report.categories(), NO_ENTITY, LONG]


def conditions_table(report: QAReport) -> tuple[list[str], list[list[str]]]:
    """The conditions table: a header and one row per condition (recall overall and per kind,
    tokens, and answer accuracy with a model)."""
    kinds = _row_kinds(report)
    words, f1 = _has(report, "word_recall"), _has(report, "f1")
    header = ["condition", "context recall", *(["word-level recall"] if words else [])]
    header += [*(f"recall: {c}" for c in kinds), "tokens / question"]
    if report.answer_model:
        header += [
            "answer accuracy [95% interval]",
            *(["token F1"] if f1 else []),
            "unanswerable: answered unknown",
        ]
    table = []
    for condition in report.conditions:
        row = [condition, _pct(report.recall(condition))]
        if words:
            row.append(_mean(report.mean(condition, "word_recall")))
        row += [_pct(report.recall(condition, c)) for c in kinds]
        tokens = f"{report.tokens(condition):,.0f}"
        fits = report.fits(condition) if condition == "full" else None
        if fits is not None:
            tokens += f" (fits the model: {fits.hits} of {fits.n})"
        row.append(tokens)
        if report.answer_model:
            row.append(_pct_with_interval(report.accuracy(condition)))
            if f1:
                row.append(_mean(report.mean(condition, "f1")))
            row.append(_pct(report.accuracy(condition, "unanswerable")))
        table.append(row)
    return header, table


_SOURCE_SCORES = (
    ("word_recall", "Word-level context recall"),
    ("recall", "Context recall (the whole answer, strictly)"),
    ("accuracy", "Answer accuracy (the fixed rule)"),
    ("f1", "Answer token F1 (LoCoMo's)"),
)
CONTEXT_SCORES = ("word_recall", "recall")
"""The scores of what a context holds (every question has them, no model needed)."""
ANSWER_SCORES = ("accuracy", "f1")
"""The scores of a model's answers."""
_SEARCH_BASELINES = ("bm25", "tape-search")


def source_category_tables(
    report: QAReport, scores: Collection[str] = (*CONTEXT_SCORES, *ANSWER_SCORES)
) -> list[tuple[str, list[str], list[list[str]]]]:
    """Per score (of ``scores``), a table by the dataset's own categories (empty without them): a
    row per condition, a column per category with the mean and its 95% interval; then memory minus
    each search baseline, paired. Categories answered by nothing (an adversarial question's recall)
    read "–"."""
    sources = report.source_categories()
    if not sources:
        return []
    tables = []
    for metric, title in _SOURCE_SCORES:
        if metric not in scores or not _has(report, metric):
            continue
        header = ["condition", "all" if metric in ANSWER_SCORES else "all (1-4)", *sources]
        rows = [
            [condition, _mean(report.mean(condition, metric), interval=True)]
            + [_mean(report.mean(condition, metric, source), interval=True) for source in sources]
            for condition in report.conditions
        ]
        if "memory" in report.conditions:
            rows += [
                [f"memory − {other}", _delta_text(report.delta("memory", other, metric=metric))]
                + [_delta_text(report.delta("memory", other, metric=metric, category=s)) for s in sources]
                for other in _SEARCH_BASELINES
                if other in report.conditions
            ]
        tables.append((title, header, rows))
    return tables


def _deltas(report: QAReport) -> list[list[str]]:
    """Memory against every other condition: Δ recall (all, names no entity, 200+ turns), Δ accuracy."""
    if "memory" not in report.conditions:
        return []
    rows = []
    for other in report.conditions:
        if other == "memory":
            continue
        rows.append(
            [
                other,
                _delta_text(report.delta("memory", other)),
                _delta_text(report.delta("memory", other, category=NO_ENTITY)),
                _delta_text(report.delta("memory", other, category=LONG)),
                _delta_text(report.delta("memory", other, metric="accuracy")) if report.answer_model else "–",
            ]
        )
    return rows


def to_markdown(report: QAReport) -> str:
    """The report as Markdown: the conditions table, per-category recall, deltas, the rule that judged."""
    lines = ["# Memory QA report", ""]
    lines += [f"- {term}: {value}" for term, value in _meta(report)]
    header, table = conditions_table(report)
    lines += ["", "## Conditions", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join([f"`{row[0]}`", *row[1:]]) + " |" for row in table]
    deltas = _deltas(report)
    if deltas:
        lines += [
            "",
            "## memory against the others",
            "",
            "Paired bootstrap over questions, 95% interval.",
            "",
            "| compared with | Δ context recall | Δ recall, names no entity | Δ recall, 200+ turns "
            "| Δ answer accuracy |",
            "|---|---|---|---|---|",
        ]
        lines += ["| " + " | ".join([f"`{row[0]}`", *row[1:]]) + " |" for row in deltas]
    for title, header, rows in source_category_tables(report):
        lines += [
            "",
            f"## {title}, by the dataset's own category",
            "",
            "Means with their bootstrap 95% interval; the differences are paired over questions.",
            "",
        ]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join([f"`{row[0]}`", *row[1:]]) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _chart(report: QAReport) -> Chart:
    """Bars per condition: context recall (and answer accuracy) for all questions and each kind."""
    panels = ["context recall", *(["answer accuracy"] if report.answer_model else [])]
    kinds: list[str | None] = [None, *_row_kinds(report)]

    def values(kind: str | None) -> tuple[tuple[float | None, ...], ...]:
        recall = tuple(report.recall(c, kind).value for c in report.conditions)
        accuracy = tuple(report.accuracy(c, kind).value for c in report.conditions)
        return (recall, accuracy)[: len(panels)]

    return bar_panels(
        chart_id="chart-conditions",
        title="Context recall per condition and question kind",
        description="One bar per condition in each row; rows are all questions, each category and "
        "pseudo-category.",
        series=series_for(report.conditions),
        panels=panels,
        rows=[BarRow(label=kind or "all questions", values=values(kind)) for kind in kinds],
        fmt=lambda v: f"{v:.2f}",
    )


def to_html(report: QAReport) -> str:
    """A self-contained ``qa.html``: the guide, a chart per condition and kind, the tables."""
    header, table = conditions_table(report)
    return (
        template_environment()
        .get_template("qa.html.j2")
        .render(
            meta=_meta(report),
            chart=_chart(report),
            table={"header": header, "rows": table},
            deltas=_deltas(report),
        )
    )


def write_qa_report(report: QAReport, out: Path) -> dict[str, Path]:
    """Write ``qa.json``, ``qa.md`` and ``qa.html`` under ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "qa.json", "md": out / "qa.md", "html": out / "qa.html"}
    paths["json"].write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    paths["md"].write_text(to_markdown(report), encoding="utf-8")
    paths["html"].write_text(to_html(report), encoding="utf-8")
    return paths


def qa_columns(report: QAReport) -> Sequence[tuple[str, Callable[[str], str]]]:
    """The summary columns the terminal table shows, each with how a condition's cell reads."""
    columns: list[tuple[str, Callable[[str], str]]] = [
        ("context recall", lambda c: _pct(report.recall(c))),
        ("recall, names no entity", lambda c: _pct(report.recall(c, NO_ENTITY))),
        ("recall, 200+ turns", lambda c: _pct(report.recall(c, LONG))),
        ("tokens / question", lambda c: f"{report.tokens(c):,.0f}"),
    ]
    if report.answer_model:
        columns.append(("answer accuracy", lambda c: _pct(report.accuracy(c))))
    return columns
