"""The memory-QA report as data: per question and condition what was scored, and aggregates.

Aggregates are per condition, over all questions and per category: context recall (the share
of answerable questions whose context holds the answer), answer accuracy (when a model
answered), tokens per question. Differences between two conditions come with a paired
bootstrap 95% interval over questions (the same questions, resampled with replacement).
Rendering the report for people lives in :mod:`bub_semantic_memory.evals.reports`.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime

from pydantic import BaseModel, Field

__all__ = ["LONG", "LONG_TAPE_TURNS", "NO_ENTITY", "QAItem", "QAOutcome", "QAReport", "Rate"]

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
