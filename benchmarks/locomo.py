"""Section 10: LoCoMo, long conversations nobody here wrote, memory against search per category.

The memory-QA eval over LoCoMo's conversations (read from where the data set lies: it is not the
project's to copy), cut to their first :data:`SESSIONS` sessions, at the plugin's budget: the note
the plugin renders from the committed extraction of the embedded model's promoted version
(``evals/reports/locomo-<split>-s4-extract9``), the note without its quoted lines, BM25 over the
transcript, bub's ``tape.search``, nothing and the whole conversation. Scores by LoCoMo's own
categories: word-level and strict context recall (no model), and the embedded model's answers
(LoCoMo's token F1 and the fixed rule), replayed from the committed answer cache, so this section
opens no model. ``test`` is the split that counts; ``tune`` is where the note was tuned, shown
as such.

Skipped with a note when the LoCoMo file is not found (``$BUB_SEMANTIC_MEMORY_LOCOMO``, else
``../shared/datasets/locomo/locomo8.json`` beside the repository).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, BenchConfig, Section, Table, answer_main
from bub_semantic_memory.agent import MemoryPolicy
from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.evals.importers import locomo_fixtures
from bub_semantic_memory.evals.qa import (
    MEMORY_WITHOUT_LINES,
    QAOptions,
    QAReport,
    Rate,
    memory_from_report,
    run_qa,
)
from bub_semantic_memory.evals.reports import source_category_tables
from bub_semantic_memory.extraction import PromptLibrary

SESSIONS = 4
"""Each conversation's first sessions: what the embedded model extracted in the background."""
RUN = "extract@9"
"""The version promoted for the local class, whose memory the committed extraction holds."""
SPLITS = ("test", "tune")
CONDITIONS = ("none", "memory", MEMORY_WITHOUT_LINES, "bm25", "tape-search", "full")
ANSWER_MODEL = "local"
ANSWERED: dict[str, tuple[str, ...]] = dict.fromkeys(SPLITS, CONDITIONS)
"""The conditions the embedded model answers, per split (every one, on both): about 9 s per
context of the plugin's budget on 2 cores (``make replay`` fails when one of them has no committed
answer). The whole conversation (about 3,700 tokens a question) takes seconds a question after the
first, not a minute: questions about one conversation, asked in a row, reuse its evaluated prefix
(the context comes before the question)."""
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


def memory_report(split: str) -> Path:
    return REPO / "evals" / "reports" / f"locomo-{split}-s{SESSIONS}-extract9" / "report.json"


async def qa_report(split: str, path: Path, *, quick: bool = False, answer_model: Any = None) -> QAReport:
    """The split's questions under every condition, answers replayed from the committed cache (on the
    answered splits); given ``answer_model``, the answered conditions only, asked of it where the
    cache has no answer."""
    folder, ids = locomo_fixtures(path, REPO / ".cache" / "locomo", split=split, sessions=SESSIONS)
    fixtures = [f for f in load_fixtures(folder, ids=ids) if f.gold.questions]
    if quick:
        fixtures = fixtures[:1]
    ontology = PromptLibrary().load(RUN).ontology
    memory, source = memory_from_report(memory_report(split), RUN, fixtures, ontology)
    fixtures = [f for f in fixtures if f.id in memory]  # the conversations the extraction covered
    answered = bool(ANSWERED[split])
    options = QAOptions(
        ontology=ontology,
        budget=MemoryPolicy().budget,
        conditions=CONDITIONS if answer_model is None else ANSWERED[split],
        memory=memory,
        memory_source=source,
        answer_model=answer_model,
        answer_model_name=ANSWER_MODEL if answered else "",
        answer_context_tokens=8192,
        cache_dir=REPO / "evals" / "qa-cache" if answered else None,
        replay=answered and answer_model is None,
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


def _rows(section: Section, split: str, report: QAReport) -> None:
    """The goal rows of one split (held to their targets on ``test`` only)."""
    counts = _counts(report)
    label = split if split == "test" else f"{split} (tuned on)"
    for category, name, goal in GOALS:
        point, text = _delta(report, "bm25", "word_recall", category)
        section.row(
            f"LoCoMo {label}: memory − bm25, word-level context recall, {name}",
            text,
            f"≥ +{goal:.2f}" if split == "test" else "",
            None if split != "test" or point is None else point >= goal,
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
    point, text = _delta(report, "bm25", "f1", None)
    section.row(
        f"LoCoMo {label}: answer token F1 with the embedded model, memory − bm25",
        text,
        f"≥ +{GOAL_F1:.2f}" if split == "test" else "",
        None if split != "test" or point is None else point >= GOAL_F1,
        f"memory {_mean(report, 'memory', 'f1')}, bm25 {_mean(report, 'bm25', 'f1')}, "
        f"tape-search {_mean(report, 'tape-search', 'f1')}, none {_mean(report, 'none', 'f1')}",
        kind="share",
    )
    unknown = {c: report.accuracy(c, "unanswerable") for c in ("memory", "bm25", "tape-search")}
    memory, bm25 = unknown["memory"].value, unknown["bm25"].value
    section.row(
        f"LoCoMo {label}: adversarial questions answered 'unknown', memory vs bm25",
        f"{_rate(unknown['memory'])} vs {_rate(unknown['bm25'])}",
        "memory ≥ bm25" if split == "test" else "",
        None if split != "test" or memory is None or bm25 is None else memory >= bm25,
        f"tape-search {_rate(unknown['tape-search'])}; LoCoMo's category 5: the question's premise "
        "is false; the fixed rule accepts 'unknown'",
        kind="share",
    )
    answered = ANSWERED[split]
    if not answered:
        return
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
    return f"{len(report.items)} questions of {conversations} conversations"


def _accuracy(report: QAReport, condition: str) -> str:
    accuracy = report.accuracy(condition)
    interval = accuracy.interval()
    if accuracy.value is None or interval is None:
        return "–"
    return f"{accuracy.value:.3f} ({accuracy.hits}/{accuracy.n}) [{interval[0]:.3f}, {interval[1]:.3f}]"


def _tables(split: str, report: QAReport) -> list[Table]:
    label = "test" if split == "test" else "tune, tuned on"
    tokens = Table(
        f"LoCoMo {label}: tokens per question and answers ({_counts(report)}, first {SESSIONS} sessions)",
        ["condition", "tokens / question", "answer accuracy (fixed rule)", "answer token F1"],
    )
    for condition in report.conditions:
        tokens.rows.append(
            [
                f"`{condition}`",
                f"{report.tokens(condition):,.0f}",
                _accuracy(report, condition) if condition in ANSWERED[split] else "–",
                _mean(report, condition, "f1") if condition in ANSWERED[split] else "–",
            ]
        )
    tables = [tokens]
    for title, header, rows in source_category_tables(report):
        if title.startswith("Answer"):  # the answered conditions only (a stray cached answer is no score)
            rows = [row for row in rows if row[0].removeprefix("memory − ") in ANSWERED[split]]
        tables.append(Table(f"LoCoMo {label}: {title.lower()}, by LoCoMo's category", header, list(rows)))
    return tables


async def run(config: BenchConfig) -> Section:
    path = locomo_file()
    section = Section(
        10,
        "LoCoMo",
        method=(
            f"`semantic-memory eval qa --locomo` over the {' and '.join(SPLITS)} conversations, first "
            f"{SESSIONS} sessions each, at the plugin's budget ({MemoryPolicy().budget} tokens): memory is "
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
    if not path.is_file():
        section.skipped = f"no LoCoMo file at {path} (set BUB_SEMANTIC_MEMORY_LOCOMO)"
        return section
    for split in SPLITS:
        if not memory_report(split).is_file():
            section.notes.append(
                f"{split}: no committed extraction at {memory_report(split).relative_to(REPO)}"
            )
            continue
        report = await qa_report(split, path, quick=config.quick)
        _rows(section, split, report)
        section.tables += _tables(split, report)
        section.notes.append(report.memory_source)
    return section


async def answer_again(backend: Any) -> None:
    """Ask ``backend`` what the committed cache has no answer for, on the answered splits."""
    for split in (split for split, conditions in ANSWERED.items() if conditions):
        await qa_report(split, locomo_file(), answer_model=backend)


if __name__ == "__main__":
    answer_main(__doc__.splitlines()[0], answer_again)
