"""The memory-QA report: per question and condition what was scored, aggregates, and their rendering.

Aggregates are per condition, over all questions and per category: context recall (the share
of answerable questions whose context holds the answer), answer accuracy (when a model
answered), tokens per question. Differences between two conditions come with a paired
bootstrap 95% interval over questions (the same questions, resampled with replacement).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from bub_semantic_memory.evals.charts import BarRow, Chart, bar_panels, series_for

__all__ = ["NO_ENTITY", "QAItem", "QAOutcome", "QAReport", "Rate", "write_qa_report"]

_RESAMPLES = 2000
_SEED = 20261203
_Z95 = 1.959964  # the normal quantile of a two-sided 95% interval


class QAOutcome(BaseModel):
    """One condition's context for one question, and how it scored."""

    condition: str
    tokens: int
    fits: bool = True
    contains: bool | None = Field(description="The context holds the answer (None: unanswerable question).")
    answer: str | None = None
    correct: bool | None = None
    cached: bool = False


class QAItem(BaseModel):
    """One question, with every condition's outcome."""

    fixture: str
    question: str
    answers: list[str]
    category: str
    names_entity: bool = True
    """The question names one of the fixture's gold entities (by name or alias)."""
    long_tape: bool = False
    """The fixture's tape holds :data:`LONG_TAPE_TURNS` messages or more."""
    has_memory: bool = True
    outcomes: list[QAOutcome]

    def outcome(self, condition: str) -> QAOutcome | None:
        return next((o for o in self.outcomes if o.condition == condition), None)


class Rate(BaseModel):
    """A share with its count: ``hits`` of ``n`` (``value`` None when ``n`` is 0)."""

    hits: int
    n: int

    @property
    def value(self) -> float | None:
        return self.hits / self.n if self.n else None

    def interval(self) -> tuple[float, float] | None:
        """The share's 95% Wilson score interval (None when ``n`` is 0).

        Wilson's rather than the normal approximation because it stays inside [0, 1] and keeps
        its coverage at the small counts of a category; written out, as it is one formula.
        """
        if not self.n:
            return None
        z2 = _Z95 * _Z95
        share = self.hits / self.n
        centre = (share + z2 / (2 * self.n)) / (1 + z2 / self.n)
        half = _Z95 * math.sqrt(share * (1 - share) / self.n + z2 / (4 * self.n**2)) / (1 + z2 / self.n)
        return max(0.0, centre - half), min(1.0, centre + half)


class QAReport(BaseModel):
    """A memory-QA run."""

    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    budget: int
    distractors: int = 0
    conditions: list[str]
    memory_source: str = ""
    answer_model: str | None = None
    answer_prompt: str | None = None
    replayed: bool = False
    """Answers were read from the cache only (no model opened); see :meth:`unanswered`."""
    judge: str = ""
    items: list[QAItem]

    def categories(self) -> list[str]:
        return sorted({item.category for item in self.items})

    def _outcomes(self, condition: str, category: str | None) -> list[QAOutcome]:
        return [
            outcome
            for item in self.items
            if _in(item, category)
            if (outcome := item.outcome(condition)) is not None
        ]

    def recall(self, condition: str, category: str | None = None) -> Rate:
        """Context recall over the answerable questions (of ``category``)."""
        scored = [o.contains for o in self._outcomes(condition, category) if o.contains is not None]
        return Rate(hits=sum(scored), n=len(scored))

    def accuracy(self, condition: str, category: str | None = None) -> Rate:
        """Answer accuracy over the answered questions (of ``category``)."""
        scored = [o.correct for o in self._outcomes(condition, category) if o.correct is not None]
        return Rate(hits=sum(scored), n=len(scored))

    def unanswered(self, condition: str | None = None) -> int:
        """Contexts (of ``condition``) a replay found no cached answer for (0 when a model answered)."""
        if not self.replayed:
            return 0
        return sum(
            1
            for item in self.items
            for o in item.outcomes
            if o.answer is None and (condition is None or o.condition == condition)
        )

    def tokens(self, condition: str) -> float:
        outcomes = self._outcomes(condition, None)
        return sum(o.tokens for o in outcomes) / len(outcomes) if outcomes else 0.0

    def fits(self, condition: str) -> Rate:
        outcomes = self._outcomes(condition, None)
        return Rate(hits=sum(o.fits for o in outcomes), n=len(outcomes))

    def delta(
        self, candidate: str, baseline: str, *, metric: str = "recall", category: str | None = None
    ) -> tuple[float, tuple[float, float]] | None:
        """``candidate`` minus ``baseline`` (recall or accuracy) and its paired bootstrap 95% interval."""
        pairs: list[tuple[bool, bool]] = []
        for item in self.items:
            if not _in(item, category):
                continue
            a, b = item.outcome(candidate), item.outcome(baseline)
            if a is None or b is None:
                continue
            x, y = (a.contains, b.contains) if metric == "recall" else (a.correct, b.correct)
            if x is not None and y is not None:
                pairs.append((x, y))
        if not pairs:
            return None
        point = sum(x - y for x, y in pairs) / len(pairs)
        rng = random.Random(_SEED)
        samples = sorted(
            sum(x - y for x, y in (pairs[rng.randrange(len(pairs))] for _ in pairs)) / len(pairs)
            for _ in range(_RESAMPLES)
        )
        return point, (samples[int(0.025 * _RESAMPLES)], samples[int(0.975 * _RESAMPLES) - 1])


NO_ENTITY = "names no entity"
"""A pseudo-category: the questions that name none of their fixture's gold entities."""

LONG = "200+ turns"
"""A pseudo-category: the questions about tapes of :data:`LONG_TAPE_TURNS` messages or more."""

LONG_TAPE_TURNS = 200


def _in(item: QAItem, category: str | None) -> bool:
    if category is None:
        return True
    if category == NO_ENTITY:
        return not item.names_entity
    if category == LONG:
        return item.long_tape
    return item.category == category


def _pct(rate: Rate) -> str:
    value = rate.value
    return "–" if value is None else f"{value:.3f} ({rate.hits}/{rate.n})"


def _pct_with_interval(rate: Rate) -> str:
    """A share, its count and its 95% interval: ``0.375 (39/104) [0.288, 0.471]``."""
    interval = rate.interval()
    return _pct(rate) + ("" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]")


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
    header = ["condition", "context recall", *(f"recall: {c}" for c in kinds), "tokens / question"]
    if report.answer_model:
        header += ["answer accuracy [95% interval]", "unanswerable: answered unknown"]
    table = []
    for condition in report.conditions:
        row = [condition, _pct(report.recall(condition))]
        row += [_pct(report.recall(condition, c)) for c in kinds]
        tokens = f"{report.tokens(condition):,.0f}"
        if condition == "full":
            fits = report.fits(condition)
            tokens += f" (fits the model: {fits.hits} of {fits.n})"
        row.append(tokens)
        if report.answer_model:
            row += [
                _pct_with_interval(report.accuracy(condition)),
                _pct(report.accuracy(condition, "unanswerable")),
            ]
        table.append(row)
    return header, table


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
    from bub_semantic_memory.evals.render import template_environment

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


def rows(report: QAReport) -> Sequence[tuple[str, Callable[[str], str]]]:
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
