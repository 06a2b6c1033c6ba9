"""The memory-QA eval: does the context an agent receives hold the answer, and does the agent answer?

For each fixture question and each condition of :mod:`._contexts`, the context is built at the
same token budget and scored without a model:

* **context recall**: the gold answer, or one of its accepted forms, occurs in the context
  (both :func:`~._contexts.normalize`-d: case, accents and punctuation folded, as whole words).
  Unanswerable questions have no recall; they are scored by the answer alone.

With an answering model (``answer_model``), each context is also put to the model with the
question, and the answer is judged by a fixed rule (:func:`judge`): correct when it contains
the gold answer or an accepted form as whole words and does not say "unknown"; for an
unanswerable question, correct when it says "unknown" and nothing the tape could be read as
answering. No model judges another; the rule is the judge, and the report records it.

Answers are cached (a JSON file per model, prompt, context and question): a re-run, or a
fresh clone with the committed cache, makes no request. Memory comes from snapshots: an eval
report's predictions (``memory_report``), so the memory of a committed extraction run can be
scored without the model that extracted it.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bub_semantic_memory._errors import EvalError
from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory._models import Snapshot
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.backends import CallLedger, ChatBackend, RetryPolicy, send_with_retries
from bub_semantic_memory.evals._dataset import UNKNOWN, Fixture, Question
from bub_semantic_memory.evals.qa._contexts import (
    ALL_CONDITIONS,
    CONDITIONS,
    MEMORY_WITHOUT_FACTS,
    MEMORY_WITHOUT_LINES,
    Context,
    LoadedMemory,
    SearchableTape,
    bm25_context,
    full_context,
    load_memory,
    rendered,
    snapshots_of,
    tape_search_context,
)
from bub_semantic_memory.evals.qa._distractors import make_memory
from bub_semantic_memory.evals.qa._report import LONG_TAPE_TURNS, QAItem, QAOutcome, QAReport
from bub_semantic_memory.evals.qa._scores import answer_word_recall, contains_answer, judge, token_f1
from bub_semantic_memory.tape import Entry, Transcript

__all__ = ["ANSWER_PROMPT", "QAOptions", "message_turns", "run_qa"]

logger = logging.getLogger(__name__)

ANSWER_PROMPT = (
    "Answer the question from the context below only. Answer with the answer alone, in a few words "
    f"(a name, a place, a date, a number). If the context does not say, answer exactly: {UNKNOWN}"
)
"""The answering model's system message (its hash is part of every cached answer's key)."""


@dataclass(frozen=True)
class QAOptions:
    """How to run the memory-QA eval.

    Attributes:
        budget: tokens of every context (default: the plugin's memory budget).
        conditions: which of :data:`~._contexts.CONDITIONS` to build.
        ontology: the ontology memory is folded with.
        memory: snapshots per fixture id for the ``memory`` condition (a fixture missing here gets
            an empty memory, counted in the report).
        memory_source: what the memory is (a report and its run), for the report.
        answer_model: answers each context when given (a chat backend), with ``answer_model_name``.
        answer_context_tokens: the answering model's context, for ``full`` (None: unlimited).
        cache_dir: where answers are cached (None: no cache).
        replay: answer from the cache only, opening no model: ``answer_model_name`` names whose
            cached answers to read, and a context without a cached answer stays unanswered (counted
            in the report as missing).
        concurrency: questions answered at once.
        passage_share: the share of the budget a memory block keeps for transcript lines (None:
            the plugin's default; ``memory-no-lines`` always uses 0).
        distractors: made-up entities planted in every memory beside the fixture's own
            (:func:`~._distractors.make_memory`, more recent than the fixture's facts): a memory
            that lived for months, where the budget has to choose.
        progress: called after each question with the questions done and their total (a
            LoCoMo split is 800 questions and minutes of work even without a model).
        answer_prompt: the answering model's system message (part of each cached answer's key,
            so answers to another prompt are kept apart).
    """

    ontology: Ontology
    budget: int = 800
    conditions: tuple[str, ...] = CONDITIONS
    memory: Mapping[str, Sequence[Snapshot]] = field(default_factory=dict)
    memory_source: str = ""
    answer_model: ChatBackend | None = None
    answer_model_name: str = ""
    answer_context_tokens: int | None = None
    cache_dir: Path | None = None
    replay: bool = False
    concurrency: int = 1
    distractors: int = 0
    passage_share: float | None = None
    progress: Callable[[int, int], None] | None = None
    answer_prompt: str = ANSWER_PROMPT


class _FixtureParts:
    """What every question about one fixture shares, built once per run: its entries, its
    transcript, the tape ``tape.search`` searches and each memory condition's loaded memory.

    A memory is loaded for its first question and reused by the others: loading renders,
    redacts and indexes the whole tape, which for a conversation of hundreds of turns costs
    more than all its questions' blocks."""

    def __init__(self, fixture: Fixture, options: QAOptions) -> None:
        self.fixture = fixture
        self.options = options
        self.entries = fixture.entries()
        self._transcript: Transcript | None = None
        self._searchable: SearchableTape | None = None
        self._memories: dict[str, asyncio.Task[LoadedMemory]] = {}

    @property
    def transcript(self) -> Transcript:
        if self._transcript is None:
            self._transcript = rendered(self.entries)
        return self._transcript

    @property
    def searchable(self) -> SearchableTape:
        if self._searchable is None:
            self._searchable = SearchableTape(self.entries)
        return self._searchable

    async def memory(self, condition: str) -> LoadedMemory:
        """The memory of ``condition`` (one of the memory conditions), loaded once."""
        if condition not in self._memories:  # a task: questions asked at once share one load
            self._memories[condition] = asyncio.ensure_future(self._load(condition))
        # shielded: a question cancelled while it waits must not cancel the load the others share
        return await asyncio.shield(self._memories[condition])

    async def _load(self, condition: str) -> LoadedMemory:
        fixture, options = self.fixture, self.options
        snapshots: Sequence[Snapshot] = options.memory.get(fixture.id, ())
        if condition == MEMORY_WITHOUT_FACTS:
            snapshots = [s.model_copy(update={"facts": ()}) for s in snapshots]
        elif condition == "gold-memory":
            snapshots, _ = snapshots_of(
                fixture.id,
                fixture.gold,
                options.ontology,
                last_entry_id=max((e.id for e in self.entries), default=1),
                source="gold",
                stated=fixture.facts or (),
            )
        last = max((e.id for e in self.entries), default=0)
        planted, said = _distractors(options.distractors, last)
        lines = condition != MEMORY_WITHOUT_LINES
        return await load_memory(
            condition,
            fixture.id,
            [*planted, *snapshots],
            options.ontology,
            budget=options.budget,
            entries=[*self.entries, *said],
            passage_share=options.passage_share if lines else 0.0,
        )


_MEMORY_CONDITIONS = frozenset({"memory", MEMORY_WITHOUT_FACTS, MEMORY_WITHOUT_LINES, "gold-memory"})


async def _contexts(parts: _FixtureParts, question: Question, options: QAOptions) -> list[Context]:
    built: list[Context] = []
    for condition in options.conditions:
        if condition == "none":
            built.append(Context("none", "", 0))
        elif condition in _MEMORY_CONDITIONS:
            built.append((await parts.memory(condition)).context(question.question))
        elif condition == "tape-search":
            built.append(
                await tape_search_context(
                    parts.entries, question.question, budget=options.budget, tape=parts.searchable
                )
            )
        elif condition == "bm25":
            built.append(bm25_context(parts.transcript, question.question, budget=options.budget))
        elif condition == "full":
            built.append(full_context(parts.transcript, context_tokens=options.answer_context_tokens))
        else:
            raise EvalError(f"unknown condition {condition!r}; choose from: {', '.join(ALL_CONDITIONS)}")
    return built


@functools.cache
def _distractors(count: int, after: int) -> tuple[tuple[Snapshot, ...], tuple[Entry, ...]]:
    """A made-up memory told after entry ``after``: its snapshots and the tape entries saying it
    (numbered on from ``after``)."""
    if not count:
        return (), ()
    memory = make_memory(count, offset=after)
    return tuple(memory.snapshots), tuple(memory.told(after))


def message_turns(entries: Sequence[Entry]) -> int:
    """How many messages (user, assistant, named speakers) a tape holds."""
    return sum(1 for entry in entries if entry.kind == "message")


def _names_an_entity(question: Question, fixture: Fixture) -> bool:
    """Whether the question names one of the fixture's gold entities (by name or alias)."""
    text = fold_text(question.question)
    return any(
        is_mentioned(name, text)
        for entity in fixture.gold.entities
        for name in (entity.name, *entity.aliases)
    )


class _AnswerCache:
    """One JSON file per answered (model, prompt, context, question)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def key(self, model: str, prompt: str, context: str, question: str) -> str:
        material = json.dumps([model, prompt, context, question], ensure_ascii=False)
        return hashlib.sha256(material.encode("utf-8")).hexdigest()

    def get(self, key: str) -> str | None:
        if self.directory is None:
            return None
        path = self.directory / key[:2] / f"{key}.json"
        try:
            return str(json.loads(path.read_text(encoding="utf-8"))["answer"])
        except (OSError, ValueError, KeyError):
            return None

    def put(self, key: str, answer: str, record: Mapping[str, Any]) -> None:
        if self.directory is None:
            return
        path = self.directory / key[:2] / f"{key}.json"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(
                json.dumps({"answer": answer, **record}, ensure_ascii=False, indent=1), encoding="utf-8"
            )
            tmp.replace(path)
        except OSError as exc:
            logger.warning("qa cache: cannot store %s, the run goes on without it: %s", path, exc)


async def _answer(
    options: QAOptions, cache: _AnswerCache, context: Context, question: Question
) -> tuple[str | None, bool]:
    """The model's answer (None without a model, or not cached in a replay) and whether it came
    from the cache."""
    if options.answer_model is None and not options.replay:
        return None, False
    key = cache.key(options.answer_model_name, options.answer_prompt, context.text, question.question)
    cached = cache.get(key)
    if cached is not None:
        return cached, True
    if options.answer_model is None:
        return None, False
    user = f"Context:\n{context.text or '(none)'}\n\nQuestion: {question.question}"
    messages = [{"role": "system", "content": options.answer_prompt}, {"role": "user", "content": user}]
    ledger = CallLedger(RetryPolicy(deadline_s=900.0, request_timeout_s=600.0))
    backend = options.answer_model
    response = await send_with_retries(
        ledger,
        lambda: backend.create(
            model=options.answer_model_name, messages=messages, temperature=0.0, max_tokens=48, timeout=600.0
        ),
    )
    answer = (response.choices[0].message.content or "").strip()
    cache.put(key, answer, {"model": options.answer_model_name, "question": question.question})
    return answer, False


async def run_qa(fixtures: Sequence[Fixture], options: QAOptions) -> QAReport:
    """Build every condition's context for every question, score it, and answer it when a model is given."""
    cache = _AnswerCache(options.cache_dir)
    semaphore = asyncio.Semaphore(max(1, options.concurrency))
    questions = [(fixture, question) for fixture in fixtures for question in fixture.gold.questions]
    parts = {fixture.id: _FixtureParts(fixture, options) for fixture in fixtures if fixture.gold.questions}

    async def one(fixture: Fixture, question: Question) -> QAItem:
        shared = parts[fixture.id]
        long_tape = message_turns(shared.entries) >= LONG_TAPE_TURNS
        async with semaphore:
            outcomes = []
            for context in await _contexts(shared, question, options):
                answer, cached = await _answer(options, cache, context, question)
                answerable = question.category != "unanswerable"
                outcomes.append(
                    QAOutcome(
                        condition=context.condition,
                        tokens=context.tokens,
                        fits=context.fits,
                        contains=contains_answer(context.text, question) if answerable else None,
                        word_recall=answer_word_recall(context.text, question),
                        answer=answer,
                        correct=judge(answer, question) if answer is not None else None,
                        f1=token_f1(answer, question) if answer is not None else None,
                        cached=cached,
                    )
                )
        return QAItem(
            fixture=fixture.id,
            question=question.question,
            answers=question.answers,
            category=question.category or "uncategorised",
            source_category=question.source_category,
            names_entity=_names_an_entity(question, fixture) if fixture.gold.entities else None,
            long_tape=long_tape,
            has_memory=fixture.id in options.memory,
            outcomes=outcomes,
        )

    done = 0

    async def counted(fixture: Fixture, question: Question) -> QAItem:
        nonlocal done
        item = await one(fixture, question)
        done += 1
        if options.progress is not None:
            options.progress(done, len(questions))
        return item

    items = list(await asyncio.gather(*(counted(f, q) for f, q in questions)))
    return QAReport(
        budget=options.budget,
        distractors=options.distractors,
        conditions=list(options.conditions),
        memory_source=options.memory_source,
        answer_model=options.answer_model_name or None,
        answer_prompt=options.answer_prompt if options.answer_model is not None or options.replay else None,
        replayed=options.replay,
        judge=(
            "correct when the answer holds the gold or an accepted form as whole words (case, accents and "
            f"punctuation folded) and does not say {UNKNOWN!r}; an unanswerable question is correct when the "
            f"answer is {UNKNOWN!r} in at most three words"
        ),
        items=items,
    )


def memory_from_report(
    report_path: Path, run: str | None, fixtures: Sequence[Fixture], ontology: Ontology
) -> tuple[dict[str, list[Snapshot]], str]:
    """The memory of an eval run, and what it is: the snapshots it stored, or (a report made
    before reports kept them) its predictions as one snapshot per fixture, without evidence.

    Raises:
        EvalError: the report cannot be read, or holds no such run.
    """
    from bub_semantic_memory.evals.extraction._report import Report

    try:
        report = Report.model_validate_json(report_path.read_bytes())
    except (OSError, ValueError) as exc:
        raise EvalError(f"cannot read eval report {report_path}: {exc}") from exc
    runs = [r for r in report.runs if run is None or r.prompt == run]
    if not runs:
        listed = ", ".join(r.prompt for r in report.runs)
        raise EvalError(f"{report_path} holds no run {run!r} (it holds: {listed})")
    chosen = runs[-1]
    last_ids = {f.id: max((e.id for e in f.entries()), default=1) for f in fixtures}
    memory: dict[str, list[Snapshot]] = {}
    for result in chosen.fixtures:
        if result.fixture not in last_ids:
            continue
        if result.snapshots:  # what the extraction stored, evidence included
            memory[result.fixture] = list(result.snapshots)
            continue
        memory[result.fixture], _ = snapshots_of(
            result.fixture,
            result.prediction,
            ontology,
            last_entry_id=last_ids[result.fixture],
            source=chosen.prompt,
        )
    return memory, f"{chosen.prompt} on {chosen.model} ({report_path})"
