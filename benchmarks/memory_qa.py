"""Section 9: Memory QA, what the agent receives for a question, side by side with plain search.

The memory-QA eval (``semantic-memory eval qa``) over the questions of the fixtures a committed
extraction run covered, at the plugin's budget: the note the plugin injects (rendered from that
run's snapshots by the plugin's own code path), the gold memory, bub's ``tape.search`` as an
agent calls it, BM25 over the transcript lines, nothing and the whole transcript. Context recall
needs no model; answer accuracy is the embedded local model's, replayed from the committed
answer cache (``evals/qa-cache``), so this section opens no model.

A second run plants 1,000 made-up entities in every memory (the way section 3 plants
distractors): the memory an agent has after months, where the budget has to choose.

A third run is the local class end to end, sized for the answer accuracy's interval: memory
from the version promoted for local models (its committed all-fixture run), answers from the
same embedded model, on the test fixtures that run covered, in id order, until at least
:data:`ACCURACY_QUESTIONS` questions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, BenchConfig, Section, Table, answer_main, repo_relative
from bub_semantic_memory.agent import MemoryPolicy
from bub_semantic_memory.evals import Fixture, load_fixtures
from bub_semantic_memory.evals.qa import (
    CONDITIONS,
    LONG,
    MEMORY_WITHOUT_FACTS,
    NO_ENTITY,
    QAOptions,
    QAReport,
    Rate,
    memory_from_report,
    run_qa,
)
from bub_semantic_memory.extraction import PromptLibrary

MEMORY_REPORT = REPO / "evals" / "reports" / "hosted-test-extract2-vs-16" / "report.json"
"""The committed extraction run whose snapshots are the memory: the hosted gate's, on the test split."""
MEMORY_RUN = "extract@16"
"""The version the gate promoted for hosted models there."""
LOCAL_MEMORY_REPORT = REPO / "evals" / "reports" / "qwen-all45-extract4-vs-9" / "report.json"
"""The committed run of the local class's promoted version on every fixture below 200 turns."""
LOCAL_MEMORY_RUN = "extract@9"
ACCURACY_QUESTIONS = 100
"""Enough questions for a 95% interval of an accuracy narrower than ±0.1 (Wilson's: ±0.096 at 0.5)."""
ACCURACY_CONDITIONS = ("none", "memory", "tape-search", "bm25")
ANSWER_MODEL = "local"
"""The answering model whose cached answers are replayed (``eval qa --model local``)."""
DISTRACTORS = 1000
GOAL_OVER_SEARCH = 0.10
GOAL_NO_ENTITY = 0.9

CONDITION_ORDER = ("memory", MEMORY_WITHOUT_FACTS, "gold-memory", "tape-search", "bm25", "none", "full")


def _share(rate: Rate) -> str:
    return "–" if rate.value is None else f"{rate.value:.3f} ({rate.hits}/{rate.n})"


def _delta(report: QAReport, other: str, category: str | None = None) -> tuple[float | None, str]:
    """Memory's recall minus ``other``'s with its 95% interval (None: no question to compare on)."""
    found = report.delta("memory", other, category=category)
    if found is None:
        return None, "– (no question)"
    point, (low, high) = found
    return point, f"{point:+.3f} [{low:+.3f}, {high:+.3f}]"


def _over_search_row(section: Section, metric: str, report: QAReport, detail: str = "") -> None:
    """The goal row: memory's recall over tape-search's, at least ``GOAL_OVER_SEARCH`` points."""
    point, text = _delta(report, "tape-search")
    recalls = f"memory {_share(report.recall('memory'))}, tape-search {_share(report.recall('tape-search'))}"
    met = None if point is None else point >= GOAL_OVER_SEARCH
    section.row(metric, text, f"≥ +{GOAL_OVER_SEARCH:.2f}", met, recalls + detail, kind="share")


def _replayed_row(section: Section, reports: dict[str, QAReport]) -> None:
    """The row CI holds: every answer the section reports was replayed from the committed cache.

    An answer is cached under its context's text, so a change to what a note shows leaves the
    committed answers behind until the answering model runs again; the accuracy rows would then
    stand on a few questions."""
    missing = {name: report.unanswered() for name, report in reports.items()}
    asked = sum(len(report.items) for report in reports.values())
    section.row(
        "committed answers: contexts with no cached answer",
        f"{sum(missing.values())}",
        "0",
        sum(missing.values()) == 0,
        "; ".join(f"{name}: {count}" for name, count in missing.items())
        + f" ({asked} questions); answer them: `python -m benchmarks.memory_qa --answer`",
        kind="count",
        check=True,
    )


def conditions_table(report: QAReport, title: str) -> Table:
    """Rows that start with the condition: recall overall and per category, tokens, accuracy."""
    kinds = [*report.categories(), NO_ENTITY, LONG]
    kinds = [k for k in kinds if k != "unanswerable"]
    table = Table(
        title,
        [
            "condition",
            "context recall",
            *(f"recall: {k}" for k in kinds),
            "tokens / question",
            f"answer accuracy ({ANSWER_MODEL})",
            "unanswerable: says unknown",
        ],
    )
    for condition in [c for c in CONDITION_ORDER if c in report.conditions]:
        table.rows.append(
            [
                f"`{condition}`",
                _share(report.recall(condition)),
                *(_share(report.recall(condition, k)) for k in kinds),
                f"{report.tokens(condition):,.0f}",
                _share(report.accuracy(condition)),
                _share(report.accuracy(condition, "unanswerable")),
            ]
        )
    return table


def _enough_for_accuracy(fixtures: list[Fixture]) -> list[Fixture]:
    """The test fixtures, in id order, until they hold :data:`ACCURACY_QUESTIONS` questions."""
    picked: list[Fixture] = []
    for fixture in sorted((f for f in fixtures if "test" in f.tags), key=lambda f: f.id):
        if sum(len(f.gold.questions) for f in picked) >= ACCURACY_QUESTIONS:
            break
        picked.append(fixture)
    return picked


async def _run(
    distractors: int,
    quick: bool,
    *,
    report: Path = MEMORY_REPORT,
    run: str = MEMORY_RUN,
    conditions: Sequence[str] = CONDITIONS,
    for_accuracy: bool = False,
    answer_model: Any = None,
) -> QAReport:
    """One of the section's runs; answers replayed from the committed cache, or, given
    ``answer_model`` (the embedded model), asked of it where the cache has none and cached."""
    fixtures = [f for f in load_fixtures(REPO / "evals" / "fixtures") if f.gold.questions]
    ontology = PromptLibrary().load(run).ontology  # the one the memory was extracted with
    memory, source = memory_from_report(report, run, fixtures, ontology)
    fixtures = [f for f in fixtures if f.id in memory]  # the fixtures the extraction run covered
    if for_accuracy:
        fixtures = _enough_for_accuracy(fixtures)
    if quick:
        fixtures = fixtures[:4]
    options = QAOptions(
        ontology=ontology,
        budget=MemoryPolicy().budget,
        conditions=tuple(conditions),
        memory=memory,
        memory_source=repo_relative(source),
        answer_model=answer_model,
        answer_model_name=ANSWER_MODEL,
        answer_context_tokens=8192,
        cache_dir=REPO / "evals" / "qa-cache",
        replay=answer_model is None,
        distractors=distractors,
    )
    return await run_qa(fixtures, options)


async def run(config: BenchConfig) -> Section:
    section = Section(
        9,
        "Memory QA",
        method=(
            "`semantic-memory eval qa` over every fixture question at the plugin's budget "
            f"({MemoryPolicy().budget} tokens): memory is the note the plugin's own service renders from the "
            f"snapshots of {MEMORY_RUN} on the hosted path (the embedded model served over HTTP; the version "
            f"the gate promoted for hosted models) in `{MEMORY_REPORT.relative_to(REPO)}`. "
            "Context recall: the answer or an accepted form in the context as whole words (no model). "
            f"Answer accuracy: the embedded model's answers (`--model {ANSWER_MODEL}`), replayed from "
            "`evals/qa-cache`, judged by a fixed rule. Only the fixtures the extraction run covered are "
            "asked."
        ),
    )
    plain = await _run(0, config.quick)
    noisy = await _run(200 if config.quick else DISTRACTORS, config.quick)
    answerable = [i for i in plain.items if i.category != "unanswerable"]
    _over_search_row(
        section,
        "memory − tape-search, context recall (answerable questions)",
        plain,
        f"; {len(answerable)} answerable questions of {len({i.fixture for i in plain.items})} fixtures",
    )
    for category, label in ((LONG, "tapes of 200+ turns"), ("temporal", "temporal questions")):
        point, text = _delta(plain, "bm25", category)
        section.row(
            f"memory − bm25, context recall, {label}",
            text,
            "≥ 0",
            None if point is None else point >= 0,
            f"memory {_share(plain.recall('memory', category))}, "
            f"bm25 {_share(plain.recall('bm25', category))}",
            kind="share",
        )
    no_entity = noisy.recall("memory", NO_ENTITY)
    section.row(
        f"memory, questions that name no entity, {DISTRACTORS:,} distractors: context recall",
        _share(no_entity),
        f"≥ {GOAL_NO_ENTITY}",
        None if no_entity.value is None else no_entity.value >= GOAL_NO_ENTITY,
        f"gold-memory, name no entity, same distractors: {_share(noisy.recall('gold-memory', NO_ENTITY))}; "
        f"tape-search: {_share(noisy.recall('tape-search', NO_ENTITY))}",
        kind="share",
    )
    unanswerable = plain.accuracy("memory", "unanswerable")
    section.row(
        "unanswerable questions answered 'unknown' from memory",
        _share(unanswerable),
        "",
        None,
        f"bm25: {_share(plain.accuracy('bm25', 'unanswerable'))}; "
        f"tape-search: {_share(plain.accuracy('tape-search', 'unanswerable'))}",
        kind="share",
    )
    for condition in ("memory", "tape-search", "bm25"):
        section.row(
            f"answer accuracy with the embedded model, {condition}",
            _share(plain.accuracy(condition)),
            "",
            None,
            f"replayed from evals/qa-cache; {plain.unanswered(condition)} of {len(plain.items)} "
            "questions have no cached answer (not scored)",
            kind="share",
        )
    local = await _run(
        0,
        config.quick,
        report=LOCAL_MEMORY_REPORT,
        run=LOCAL_MEMORY_RUN,
        conditions=ACCURACY_CONDITIONS,
        for_accuracy=True,
    )
    for condition in ("memory", "tape-search", "bm25"):
        accuracy = local.accuracy(condition)
        interval = accuracy.interval()
        section.row(
            f"local class end to end ({LOCAL_MEMORY_RUN} memory, local answers): accuracy, {condition}",
            _share(accuracy),
            "95% interval within ±0.1",
            None if interval is None else (interval[1] - interval[0]) / 2 < 0.1,
            ("–" if interval is None else f"95% interval [{interval[0]:.3f}, {interval[1]:.3f}]; ")
            + f"{len({i.fixture for i in local.items})} test fixtures; "
            f"{local.unanswered(condition)} of {len(local.items)} questions have no cached answer",
            kind="share",
        )
    _over_search_row(section, "local class end to end: memory − tape-search, context recall", local)
    _replayed_row(section, {"the fixtures' questions": plain, "the local class end to end": local})
    section.tables += [
        conditions_table(plain, f"Conditions at {plain.budget} tokens ({len(plain.items)} questions)"),
        conditions_table(noisy, f"The same with {noisy.distractors:,} distractor entities in every memory"),
        conditions_table(
            local,
            f"The local class end to end: memory from {LOCAL_MEMORY_RUN}, {len(local.items)} questions "
            f"of {len({i.fixture for i in local.items})} test fixtures",
        ),
    ]
    section.notes += [plain.memory_source, local.memory_source]
    return section


async def answer_again(backend: Any) -> None:
    """Ask ``backend`` what the committed cache has no answer for, in the section's own runs."""
    await _run(0, False, answer_model=backend)
    await _run(
        0,
        False,
        report=LOCAL_MEMORY_REPORT,
        run=LOCAL_MEMORY_RUN,
        conditions=ACCURACY_CONDITIONS,
        for_accuracy=True,
        answer_model=backend,
    )


if __name__ == "__main__":
    answer_main(__doc__.splitlines()[0], answer_again)
