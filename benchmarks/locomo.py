"""Section 10: LoCoMo, long conversations nobody here wrote, memory against search per category.

The memory-QA eval over LoCoMo's conversations (read from where the data set lies: it is not the
project's to copy), cut to their first :data:`SESSIONS` sessions, and whole where their committed
extraction covers them (:data:`WHOLE`: 45 to 72 minutes each on the embedded model), at the
plugin's budget: the note the plugin renders from the committed extraction of the embedded model's
promoted version (``evals/reports/locomo-<split>-s4-extract9``), the note without its quoted lines,
BM25 over the transcript, bub's ``tape.search``, nothing and the whole conversation. Scores by
LoCoMo's own categories: word-level and strict context recall (no model), and the embedded model's
answers (LoCoMo's token F1 and the fixed rule; on the test conversations read whole, a fixed sample
of their questions), replayed from the committed answer cache, so this section opens no model.
``test`` is the split that counts; ``tune`` is where the note was tuned, shown as such.

Skipped with a note when the LoCoMo file is not found (``$BUB_SEMANTIC_MEMORY_LOCOMO``, else
``../shared/datasets/locomo/locomo8.json`` beside the repository).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, BenchConfig, Section, Table, answer_main, repo_relative
from bub_semantic_memory._models import Snapshot
from bub_semantic_memory.agent import MemoryPolicy
from bub_semantic_memory.evals import Fixture, load_fixtures
from bub_semantic_memory.evals.importers import locomo_fixtures
from bub_semantic_memory.evals.qa import (
    MEMORY_WITHOUT_LINES,
    QAOptions,
    QAReport,
    Rate,
    memory_from_report,
    run_qa,
)
from bub_semantic_memory.evals.reports import ANSWER_SCORES, CONTEXT_SCORES, source_category_tables
from bub_semantic_memory.extraction import PromptLibrary

SESSIONS = 4
"""Each conversation's first sessions: what the embedded model extracted in the background."""
RUN = "extract@9"
"""The version promoted for the local class, whose memory the committed extraction holds."""
SPLITS = ("test", "tune")
CONDITIONS = ("none", "memory", MEMORY_WITHOUT_LINES, "bm25", "tape-search", "full")
ANSWER_MODEL = "local"


@dataclass(frozen=True)
class Cut:
    """The part of each conversation a table reads, and the committed extraction of it.

    Attributes:
        sessions: each conversation's first sessions (None: the whole conversation).
        splits: the splits it has an extraction of.
        answered: the conditions the embedded model answers, per split (``make replay`` fails
            when one of them has no committed answer).
        sample: the share of the questions the model answers (None: all of them), drawn by
            :func:`sample_position`, so a larger share keeps every answer a smaller one cached.
            Context recall is scored on every question whatever the sample.
    """

    sessions: int | None
    splits: tuple[str, ...]
    answered: Mapping[str, tuple[str, ...]]
    sample: float | None = None

    @property
    def name(self) -> str:
        return f"s{self.sessions}" if self.sessions else "whole"

    @property
    def described(self) -> str:
        return f"first {self.sessions} sessions" if self.sessions else "whole conversations"

    def reports_dir(self, split: str) -> Path:
        return REPO / "evals" / "reports" / f"locomo-{split}-{self.name}-extract9"

    def memory_reports(self, split: str) -> list[Path]:
        """The committed extraction reports: one for the first sessions of every conversation; one
        per conversation extracted whole (``<conversation>/report.json``), each run on its own."""
        folder = self.reports_dir(split)
        return [folder / "report.json"] if self.sessions else sorted(folder.glob("*/report.json"))

    def label(self, split: str) -> str:
        """How a row names the split and the cut ("test", "tune (tuned on)", "test, whole conversations")."""
        label = split if split == "test" else f"{split} (tuned on)"
        return label if self.sessions == SESSIONS else f"{label}, {self.described}"

    def asks(self, conversation: str, question: str) -> bool:
        """Whether the model is asked ``question`` of ``conversation``: every question without a
        :attr:`sample`, else those whose :func:`sample_position` falls in its first share."""
        return self.sample is None or sample_position(conversation, question) < self.sample

    def answered_part(self, report: QAReport) -> QAReport:
        """The questions of ``report`` the model answers (the report itself without a sample)."""
        if self.sample is None:
            return report
        items = [item for item in report.items if self.asks(item.fixture, item.question)]
        return report.model_copy(update={"items": items})

    def answered_fixtures(self, fixtures: list[Fixture]) -> list[Fixture]:
        """``fixtures`` holding only the questions the model answers."""
        if self.sample is None:
            return fixtures
        return [
            dataclasses.replace(f, gold=f.gold.model_copy(update={"questions": questions}))
            for f in fixtures
            if (questions := [q for q in f.gold.questions if self.asks(f.id, q.question)])
        ]


def sample_position(conversation: str, question: str) -> float:
    """A question's place in [0, 1) in the order answer samples are drawn in: a hash of its
    conversation and text, so whether a question is drawn depends on nothing else (neither its
    category, nor the questions beside it, nor how many are read)."""
    digest = hashlib.sha256(f"{conversation}\n{question}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


FIRST_SESSIONS = Cut(SESSIONS, SPLITS, dict.fromkeys(SPLITS, CONDITIONS))
"""Every condition answered on both splits: about 9 s per context of the plugin's budget on 2
cores. The whole of the four sessions (about 3,700 tokens a question) takes seconds a question
after the first, not a minute: questions about one conversation, asked in a row, reuse its
evaluated prefix (the context comes before the question)."""
WHOLE = Cut(None, SPLITS, {"test": ("none", "memory", "bm25", "tape-search"), "tune": ()}, sample=0.16)
"""The conversations extracted whole (the committed reports say which), every question scored
without a model; on test, the model answers a sample of the questions under none, memory, bm25
and tape-search (about 35 s a question for the four: all 791 would take nearly eight hours here).
``memory-no-lines`` is answered on the first sessions only; ``full`` (about 25,000 tokens a
question) does not fit the embedded model's 8,192."""
CUTS = (FIRST_SESSIONS, WHOLE)
TEST_CONVERSATIONS = 4
GOALS = (  # memory − bm25, word-level context recall (issue 49's goals on the test conversations)
    (None, "categories 1-4", 0.10),
    ("2 temporal", "temporal", 0.40),
    ("1 multi-hop", "multi-hop", 0.10),
)
GOAL_F1 = 0.05


def locomo_file() -> Path:
    """Where the LoCoMo conversations lie: ``$BUB_SEMANTIC_MEMORY_LOCOMO``, else beside the repository."""
    named = os.environ.get("BUB_SEMANTIC_MEMORY_LOCOMO")
    return Path(named) if named else REPO.parent / "shared" / "datasets" / "locomo" / "locomo8.json"


async def qa_report(
    split: str, path: Path, cut: Cut = FIRST_SESSIONS, *, quick: bool = False, answer_model: Any = None
) -> QAReport:
    """The split's questions under every condition, answers replayed from the committed cache (on the
    answered splits); given ``answer_model``, the answered conditions only, asked of it where the
    cache has no answer."""
    folder, ids = locomo_fixtures(path, REPO / ".cache" / "locomo", split=split, sessions=cut.sessions)
    fixtures = [f for f in load_fixtures(folder, ids=ids) if f.gold.questions]
    if quick:
        fixtures = fixtures[:1]
    ontology = PromptLibrary().load(RUN).ontology
    memory: dict[str, list[Snapshot]] = {}
    sources = []
    for committed in cut.memory_reports(split):
        found, source = memory_from_report(committed, RUN, fixtures, ontology)
        memory |= found
        sources.append(repo_relative(source))
    fixtures = [f for f in fixtures if f.id in memory]  # the conversations the extraction covered
    answered = cut.answered.get(split, ())
    if answer_model is not None:
        fixtures = cut.answered_fixtures(fixtures)
    options = QAOptions(
        ontology=ontology,
        budget=MemoryPolicy().budget,
        conditions=CONDITIONS if answer_model is None else answered,
        memory=memory,
        memory_source="; ".join(sources),
        answer_model=answer_model,
        answer_model_name=ANSWER_MODEL if answered else "",
        answer_context_tokens=8192,
        cache_dir=REPO / "evals" / "qa-cache" if answered else None,
        replay=bool(answered) and answer_model is None,
    )
    return await run_qa(fixtures, options)


def _delta(report: QAReport, other: str, metric: str, category: str | None) -> tuple[float | None, str]:
    found = report.delta("memory", other, metric=metric, category=category)
    if found is None:
        return None, "– (no question)"
    point, (low, high) = found
    return point, f"{point:+.3f} [{low:+.3f}, {high:+.3f}]"


def _mean(report: QAReport, condition: str, metric: str, category: str | None = None) -> str:
    mean = report.mean(condition, metric, category)
    return "–" if mean.value is None else f"{mean.value:.3f} (n={mean.n})"


def _rows(section: Section, split: str, report: QAReport, cut: Cut = FIRST_SESSIONS) -> None:
    """The goal rows of one split and cut, held to their targets on ``test`` once every test
    conversation is in (the answer rows only where the embedded model answers)."""
    counts = _counts(report)
    label = cut.label(split)
    held = split == "test" and len({item.fixture for item in report.items}) == TEST_CONVERSATIONS
    for category, name, goal in GOALS:
        point, text = _delta(report, "bm25", "word_recall", category)
        section.row(
            f"LoCoMo {label}: memory − bm25, word-level context recall, {name}",
            text,
            f"≥ +{goal:.2f}" if split == "test" else "",
            None if not held or point is None else point >= goal,
            f"memory {_mean(report, 'memory', 'word_recall', category)}, "
            f"bm25 {_mean(report, 'bm25', 'word_recall', category)}, "
            f"tape-search {_mean(report, 'tape-search', 'word_recall', category)}; {counts}",
            kind="share",
        )
    point, text = _delta(report, "tape-search", "word_recall", None)
    section.row(
        f"LoCoMo {label}: memory − tape-search, word-level context recall, categories 1-4",
        text,
        "",
        None,
        f"memory {_mean(report, 'memory', 'word_recall')}, tape-search "
        f"{_mean(report, 'tape-search', 'word_recall')}",
        kind="share",
    )
    answered = cut.answered.get(split, ())
    if answered:
        _answer_rows(section, label, cut.answered_part(report), answered, held=held)


def _answer_rows(
    section: Section, label: str, report: QAReport, answered: tuple[str, ...], *, held: bool
) -> None:
    point, text = _delta(report, "bm25", "f1", None)
    section.row(
        f"LoCoMo {label}: answer token F1 with the embedded model, memory − bm25",
        text,
        f"≥ +{GOAL_F1:.2f}" if held else "",
        None if not held or point is None else point >= GOAL_F1,
        f"memory {_mean(report, 'memory', 'f1')}, bm25 {_mean(report, 'bm25', 'f1')}, "
        f"tape-search {_mean(report, 'tape-search', 'f1')}, none {_mean(report, 'none', 'f1')}",
        kind="share",
    )
    unknown = {c: report.accuracy(c, "unanswerable") for c in ("memory", "bm25", "tape-search")}
    memory, bm25 = unknown["memory"].value, unknown["bm25"].value
    section.row(
        f"LoCoMo {label}: adversarial questions answered 'unknown', memory vs bm25",
        f"{_rate(unknown['memory'])} vs {_rate(unknown['bm25'])}",
        "memory ≥ bm25" if held else "",
        None if not held or memory is None or bm25 is None else memory >= bm25,
        f"tape-search {_rate(unknown['tape-search'])}; LoCoMo's category 5: the question's premise "
        "is false; the fixed rule accepts 'unknown'",
        kind="share",
    )
    missing = sum(report.unanswered(condition) for condition in answered)
    section.row(
        f"LoCoMo {label}: committed answers, contexts with no cached answer",
        f"{missing}",
        "0",
        missing == 0,
        f"of {len(report.items) * len(answered):,} contexts ({', '.join(answered)}); "
        "answer them: `python -m benchmarks.locomo --answer`",
        kind="count",
        check=True,
    )


def _rate(rate: Rate) -> str:
    return "–" if rate.value is None else f"{rate.value:.3f} ({rate.hits}/{rate.n})"


def _counts(report: QAReport) -> str:
    conversations = len({item.fixture for item in report.items})
    return f"{len(report.items)} questions of {conversations} conversation{'s' if conversations != 1 else ''}"


def _accuracy(report: QAReport, condition: str) -> str:
    accuracy = report.accuracy(condition)
    interval = accuracy.interval()
    if accuracy.value is None or interval is None:
        return "–"
    return f"{accuracy.value:.3f} ({accuracy.hits}/{accuracy.n}) [{interval[0]:.3f}, {interval[1]:.3f}]"


def _tables(split: str, report: QAReport, cut: Cut = FIRST_SESSIONS) -> list[Table]:
    label = "test" if split == "test" else "tune, tuned on"
    label = label if cut.sessions == SESSIONS else f"{label}, {cut.described}"
    answered = cut.answered.get(split, ())
    # a split the model does not answer has no answer columns, so no sample to speak of
    sampled = cut.answered_part(report) if answered else report
    tokens = Table(
        f"LoCoMo {label}: tokens per question and answers ({_counts(report)}, {cut.described}"
        f"{_answers_on(sampled, report)})",
        ["condition", "tokens / question", "answer accuracy (fixed rule)", "answer token F1"],
    )
    for condition in report.conditions:
        tokens.rows.append(
            [
                f"`{condition}`",
                f"{report.tokens(condition):,.0f}",
                _accuracy(sampled, condition) if condition in answered else "–",
                _mean(sampled, condition, "f1") if condition in answered else "–",
            ]
        )
    tables = [tokens]
    for title, header, rows in source_category_tables(report, CONTEXT_SCORES):
        tables.append(Table(f"LoCoMo {label}: {title.lower()}, by LoCoMo's category", header, list(rows)))
    for title, header, rows in source_category_tables(sampled, ANSWER_SCORES):
        # the answered conditions only (a stray cached answer is no score)
        rows = [row for row in rows if row[0].removeprefix("memory − ") in answered]
        if rows:
            tables.append(Table(f"LoCoMo {label}: {title.lower()}, by LoCoMo's category", header, list(rows)))
    return tables


def _answers_on(sampled: QAReport, report: QAReport) -> str:
    """Which questions the answer columns score, when the model answered a sample of them."""
    if len(sampled.items) == len(report.items):
        return ""
    return f"; answers on a fixed sample of {len(sampled.items)} of the {len(report.items)} questions"


async def run(config: BenchConfig) -> Section:
    path = locomo_file()
    section = Section(
        10,
        "LoCoMo",
        method=(
            f"`semantic-memory eval qa --locomo` over the {' and '.join(SPLITS)} conversations, first "
            f"{SESSIONS} sessions each, and the conversations whole as far as they are extracted "
            "(`evals/reports/locomo-<split>-whole-extract9/<conversation>`; the embedded model answers "
            "a fixed sample of the test questions), "
            f"at the plugin's budget ({MemoryPolicy().budget} tokens): memory is "
            f"the note the plugin's service renders from the committed extraction of {RUN} on the embedded "
            "model at the plugin's cadence (`evals/reports/locomo-<split>-s4-extract9`); answers are the "
            "embedded model's, replayed from `evals/qa-cache`. Word-level recall: the share of the "
            "answer's content words in the context; strict: the whole answer. Intervals: bootstrap 95%, "
            "differences paired by question."
        ),
    )
    if not PromptLibrary().load(RUN).facts:
        section.notes.append(
            f"`memory-no-facts` is not shown: {RUN} states no facts, so it would repeat `memory`; "
            "`gold-memory` neither: LoCoMo gives questions, not a gold memory"
        )
    section.notes.append(
        f"Read whole, the embedded model answers a fixed {WHOLE.sample:.0%} of the test questions (drawn "
        f"by a hash of each question) under {', '.join(WHOLE.answered['test'])}: about 35 s a question "
        "for the four on 2 cores, so all 791 would take nearly eight hours; `memory-no-lines` is "
        "answered on the first sessions only, and `full` (about 25,000 tokens a question) does not fit "
        "the model's 8,192"
    )
    if not path.is_file():
        section.skipped = f"no LoCoMo file at {path} (set BUB_SEMANTIC_MEMORY_LOCOMO)"
        return section
    for cut in CUTS:
        for split in cut.splits:
            await _split(section, cut, split, path, quick=config.quick)
    return section


async def _split(section: Section, cut: Cut, split: str, path: Path, *, quick: bool) -> None:
    """One split of one cut: its rows, tables and where its memory came from."""
    committed = [path for path in cut.memory_reports(split) if path.is_file()]
    if not committed:
        where = cut.reports_dir(split).relative_to(REPO)
        section.notes.append(f"{split}, {cut.described}: no committed extraction in {where}")
        return
    report = await qa_report(split, path, cut, quick=quick)
    _rows(section, split, report, cut)
    section.tables += _tables(split, report, cut)
    section.notes.append(report.memory_source)


async def answer_again(backend: Any) -> None:
    """Ask ``backend`` what the committed cache has no answer for, on the answered cuts and splits."""
    for cut in CUTS:
        for split in (split for split, conditions in cut.answered.items() if conditions):
            await qa_report(split, locomo_file(), cut, answer_model=backend)


if __name__ == "__main__":
    answer_main(__doc__.splitlines()[0], answer_again)
