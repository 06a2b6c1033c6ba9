"""The memory-QA report: per question and condition what was scored, aggregates, and their rendering.

Aggregates are per condition, over all questions and per category: context recall (the share
of answerable questions whose context holds the answer), answer accuracy (when a model
answered), tokens per question. Differences between two conditions come with a paired
bootstrap 95% interval over questions (the same questions, resampled with replacement).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

__all__ = ["NO_ENTITY", "QAItem", "QAOutcome", "QAReport", "Rate", "write_qa_report"]

_RESAMPLES = 2000
_SEED = 20261203


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


class QAReport(BaseModel):
    """A memory-QA run."""

    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    budget: int
    distractors: int = 0
    conditions: list[str]
    memory_source: str = ""
    answer_model: str | None = None
    answer_prompt: str | None = None
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


def _in(item: QAItem, category: str | None) -> bool:
    if category is None:
        return True
    if category == NO_ENTITY:
        return not item.names_entity
    return item.category == category


def _pct(rate: Rate) -> str:
    value = rate.value
    return "–" if value is None else f"{value:.3f} ({rate.hits}/{rate.n})"


def _delta_text(delta: tuple[float, tuple[float, float]] | None) -> str:
    if delta is None:
        return "–"
    point, (low, high) = delta
    return f"{point:+.3f} [{low:+.3f}, {high:+.3f}]"


def to_markdown(report: QAReport) -> str:
    """The report as Markdown: the conditions table, per-category recall, deltas, the rule that judged."""
    categories = report.categories()
    answerable = sum(1 for i in report.items if i.category != "unanswerable")
    lines = [
        "# Memory QA report",
        "",
        f"- Created: {report.created_at.isoformat()}",
        f"- Questions: {len(report.items)} ({answerable} answerable)",
        f"- Budget: {report.budget} tokens per context"
        + (
            f"; {report.distractors:,} made-up entities planted in every memory" if report.distractors else ""
        ),
        f"- Memory: {report.memory_source or 'none given'}"
        + (
            f"; {sum(1 for i in report.items if not i.has_memory)} question(s) of fixtures without memory"
            if any(not i.has_memory for i in report.items)
            else ""
        ),
        f"- Answering model: {report.answer_model or 'none (context recall only)'}",
    ]
    if report.answer_model:
        lines += [
            f"- Answer prompt: {report.answer_prompt}",
            f"- Judge (a fixed rule, no model): {report.judge}",
        ]
    categories = [*categories, NO_ENTITY]
    header = ["condition", "context recall", *(f"recall: {c}" for c in categories), "tokens / question"]
    if report.answer_model:
        header += ["answer accuracy", "unanswerable: answered unknown"]
    lines += ["", "## Conditions", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for condition in report.conditions:
        row = [f"`{condition}`", _pct(report.recall(condition))]
        row += [_pct(report.recall(condition, c)) for c in categories]
        tokens = f"{report.tokens(condition):,.0f}"
        if condition == "full":
            fits = report.fits(condition)
            tokens += f" (fits the model: {fits.hits} of {fits.n})"
        row.append(tokens)
        if report.answer_model:
            row += [_pct(report.accuracy(condition)), _pct(report.accuracy(condition, "unanswerable"))]
        lines.append("| " + " | ".join(row) + " |")
    if "memory" in report.conditions:
        lines += [
            "",
            "## memory against the others",
            "",
            "Paired bootstrap over questions, 95% interval.",
            "",
        ]
        lines += ["| compared with | Δ context recall | Δ answer accuracy |", "|---|---|---|"]
        for other in report.conditions:
            if other == "memory":
                continue
            recall = _delta_text(report.delta("memory", other))
            recall += f"; names no entity: {_delta_text(report.delta('memory', other, category=NO_ENTITY))}"
            accuracy = (
                _delta_text(report.delta("memory", other, metric="accuracy")) if report.answer_model else "–"
            )
            lines.append(f"| `{other}` | {recall} | {accuracy} |")
    return "\n".join(lines) + "\n"


def write_qa_report(report: QAReport, out: Path) -> dict[str, Path]:
    """Write ``qa.json`` and ``qa.md`` under ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "qa.json", "md": out / "qa.md"}
    paths["json"].write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    paths["md"].write_text(to_markdown(report), encoding="utf-8")
    return paths


def rows(report: QAReport) -> Sequence[tuple[str, Callable[[str], str]]]:
    """The summary columns the terminal table shows, each with how a condition's cell reads."""
    columns: list[tuple[str, Callable[[str], str]]] = [
        ("context recall", lambda c: _pct(report.recall(c))),
        ("recall, names no entity", lambda c: _pct(report.recall(c, NO_ENTITY))),
        ("tokens / question", lambda c: f"{report.tokens(c):,.0f}"),
    ]
    if report.answer_model:
        columns.append(("answer accuracy", lambda c: _pct(report.accuracy(c))))
    return columns
