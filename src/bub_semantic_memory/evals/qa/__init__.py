"""The memory-QA eval: does the context an agent receives hold the answer, and does a model answer?

This package owns the product of ``eval qa``: the contexts an agent would receive for a fixture's
question under each condition compared (the plugin's memory, the same memory from gold, bub's
tape search, BM25 over the transcript, the whole tape, nothing), all at one token budget; the
made-up memories planted beside a fixture's to measure a large memory; :func:`run_qa`, which
scores each context's recall of the answer and, with a model, judges its answer by a fixed rule;
and the results as data (:class:`QAReport`, the shape of ``qa.json``).

Rendering a QA report for people lives in :mod:`bub_semantic_memory.evals.reports`.
"""

from __future__ import annotations

from bub_semantic_memory.evals.qa._contexts import (
    ALL_CONDITIONS,
    CONDITIONS,
    MEMORY_WITHOUT_FACTS,
    MEMORY_WITHOUT_LINES,
    Context,
)
from bub_semantic_memory.evals.qa._distractors import MemoryFixture, make_memory
from bub_semantic_memory.evals.qa._progress import QuestionProgress
from bub_semantic_memory.evals.qa._report import (
    LONG,
    LONG_TAPE_TURNS,
    NO_ENTITY,
    QAItem,
    QAOutcome,
    QAReport,
    Rate,
)
from bub_semantic_memory.evals.qa._run import QAOptions, memory_from_report, run_qa
from bub_semantic_memory.evals.qa._scores import (
    answer_word_recall,
    contains_answer,
    judge,
    normalize,
    token_f1,
)

__all__ = [
    "ALL_CONDITIONS",
    "CONDITIONS",
    "LONG",
    "LONG_TAPE_TURNS",
    "MEMORY_WITHOUT_FACTS",
    "MEMORY_WITHOUT_LINES",
    "NO_ENTITY",
    "Context",
    "MemoryFixture",
    "QAItem",
    "QAOptions",
    "QAOutcome",
    "QAReport",
    "QuestionProgress",
    "Rate",
    "answer_word_recall",
    "contains_answer",
    "judge",
    "make_memory",
    "memory_from_report",
    "normalize",
    "run_qa",
    "token_f1",
]
