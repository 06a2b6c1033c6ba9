"""The memory-QA report as data: per question and condition what was scored, and aggregates.

Aggregates are per condition, over all questions and per category (the project's, and the one a
question's own dataset gives it, as LoCoMo numbers its): context recall (the share of answerable
questions whose context holds the answer, strictly; and the mean share of the answer's content
words it holds), answer accuracy (when a model answered: the fixed rule, and LoCoMo's token F1),
tokens per question. Differences between two conditions come with a paired bootstrap 95%
interval over questions (the same questions, resampled with replacement).
Rendering the report for people lives in :mod:`bub_semantic_memory.evals.reports`.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime

from pydantic import BaseModel, Field

__all__ = [
    "LONG",
    "LONG_TAPE_TURNS",
    "METRICS",
    "NO_ENTITY",
    "Mean",
    "QAItem",
    "QAOutcome",
    "QAReport",
    "Rate",
]

METRICS = ("recall", "word_recall", "accuracy", "f1")
"""What a condition is scored by: strict and word-level context recall, the fixed rule and token F1."""

_RESAMPLES = 2000
_SEED = 20261203
_Z95 = 1.959964  # the normal quantile of a two-sided 95% interval


class QAOutcome(BaseModel):
    """One condition's context for one question, and how it scored."""

    condition: str
    tokens: int
    fits: bool | None = True
    """The context fits the answering model's (None: no model said how much it reads)."""
    contains: bool | None = Field(description="The context holds the answer (None: unanswerable question).")
    word_recall: float | None = None
    """The share of the answer's content words the context holds (None: unanswerable question)."""
    answer: str | None = None
    correct: bool | None = None
    f1: float | None = None
    """LoCoMo's token F1 of the answer (None: not answered)."""
    cached: bool = False

    def score(self, metric: str) -> float | None:
        """The outcome's score by one of :data:`METRICS` (None: not scored by it)."""
        value = {
            "recall": self.contains,
            "word_recall": self.word_recall,
            "accuracy": self.correct,
            "f1": self.f1,
        }[metric]
        return None if value is None else float(value)


class QAItem(BaseModel):
    """One question, with every condition's outcome."""

    fixture: str
    question: str
    answers: list[str]
    category: str
    source_category: str | None = None
    """The category the question's own dataset gives it (LoCoMo's ``2 temporal``), if any."""
    names_entity: bool | None = True
    """The question names one of the fixture's gold entities (None: the fixture has none)."""
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


class Mean(BaseModel):
    """A mean of per-question scores in [0, 1], with the scores (``value`` None when there are none)."""

    values: list[float]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def value(self) -> float | None:
        return sum(self.values) / len(self.values) if self.values else None

    def interval(self) -> tuple[float, float] | None:
        """The mean's bootstrap 95% interval (percentiles of resampled means; None without scores)."""
        if not self.values:
            return None
        rng = random.Random(_SEED)
        count = len(self.values)
        means = sorted(
            sum(self.values[rng.randrange(count)] for _ in range(count)) / count for _ in range(_RESAMPLES)
        )
        return means[int(0.025 * _RESAMPLES)], means[int(0.975 * _RESAMPLES) - 1]


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

    def source_categories(self) -> list[str]:
        """The categories the questions' own dataset gives them (LoCoMo's, in its order)."""
        return sorted({item.source_category for item in self.items if item.source_category})

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

    def mean(self, condition: str, metric: str, category: str | None = None) -> Mean:
        """The mean of a :data:`METRICS` score over the questions (of ``category``) it scores."""
        scored = [v for o in self._outcomes(condition, category) if (v := o.score(metric)) is not None]
        return Mean(values=scored)

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

    def fits(self, condition: str) -> Rate | None:
        """How many contexts fit the answering model (None: no model said how much it reads)."""
        outcomes = [o for o in self._outcomes(condition, None) if o.fits is not None]
        return Rate(hits=sum(bool(o.fits) for o in outcomes), n=len(outcomes)) if outcomes else None

    def delta(
        self, candidate: str, baseline: str, *, metric: str = "recall", category: str | None = None
    ) -> tuple[float, tuple[float, float]] | None:
        """``candidate`` minus ``baseline`` by a :data:`METRICS` score, with its paired bootstrap 95%
        interval."""
        pairs: list[tuple[float, float]] = []
        for item in self.items:
            if not _in(item, category):
                continue
            a, b = item.outcome(candidate), item.outcome(baseline)
            if a is None or b is None:
                continue
            x, y = a.score(metric), b.score(metric)
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
        return item.names_entity is False
    if category == LONG:
        return item.long_tape
    return category in (item.category, item.source_category)
