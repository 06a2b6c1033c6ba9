"""The LoCoMo section's answer sample (``benchmarks/locomo.py``): which questions the embedded
model answers when it answers a sample, and that the answer columns score those alone."""

from __future__ import annotations

from pathlib import Path

from benchmarks.common import Section
from benchmarks.locomo import Cut, _rows, _tables

from bub_semantic_memory.evals import Fixture
from bub_semantic_memory.evals._dataset import Gold, Question
from bub_semantic_memory.evals.qa import QAItem, QAOutcome, QAReport

PAIRS = [(f"conv-{n % 3}", f"What did speaker {n} do?") for n in range(300)]
PINNED_AT_016 = 41


def cut(sample: float | None) -> Cut:
    return Cut(None, ("test",), {"test": ("memory", "bm25")}, sample=sample)


def drawn(sample: float | None, pairs: list[tuple[str, str]] = PAIRS) -> set[tuple[str, str]]:
    return {pair for pair in pairs if cut(sample).asks(*pair)}


def item(conversation: str, question: str, *, answered: bool) -> QAItem:
    """A question whose memory context holds the answer and bm25's does not; answered by the
    model (memory right, bm25 wrong) or not."""
    return QAItem(
        fixture=conversation,
        question=question,
        answers=["pottery"],
        category="multi-hop",
        source_category="1 multi-hop",
        names_entity=None,
        outcomes=[
            QAOutcome(
                condition=condition,
                tokens=700,
                contains=condition == "memory",
                word_recall=1.0 if condition == "memory" else 0.0,
                answer=("pottery" if condition == "memory" else "camping") if answered else None,
                correct=(condition == "memory") if answered else None,
                f1=(1.0 if condition == "memory" else 0.0) if answered else None,
            )
            for condition in ("memory", "bm25")
        ],
    )


def test_a_larger_share_keeps_every_question_of_a_smaller_one_and_none_means_all() -> None:
    small, large = drawn(0.1), drawn(0.3)

    assert 15 <= len(small) <= 45 and 60 <= len(large) <= 120  # about 30 and 90 of the 300
    assert small < large
    assert drawn(None) == set(PAIRS)


def test_whether_a_question_is_drawn_depends_on_it_and_its_conversation_alone() -> None:
    assert drawn(0.3, PAIRS[:50]) == drawn(0.3) & set(PAIRS[:50])  # a quick run of one part
    same_text = [(f"conv-{n}", "What did Mel paint?") for n in range(40)]
    assert 0 < len(drawn(0.5, same_text)) < 40  # the conversation is part of the draw


def test_the_draw_is_pinned_as_the_committed_answers_were_cached() -> None:
    """The committed sample is this draw: a change to the hash would leave its answers unread."""
    assert len(drawn(0.16)) == PINNED_AT_016


def test_the_model_is_asked_only_the_sampled_questions(tmp_path: Path) -> None:
    fixtures = [
        Fixture(
            id=conversation,
            path=tmp_path,
            gold=Gold(questions=[Question(question=q, answer="x") for c, q in PAIRS if c == conversation]),
        )
        for conversation in ("conv-0", "conv-1", "conv-2")
    ]
    undrawn = "What did nobody 0 do?"  # the one question of conv-9, not drawn at 0.1
    fixtures.append(
        Fixture(id="conv-9", path=tmp_path, gold=Gold(questions=[Question(question=undrawn, answer="x")]))
    )

    kept = cut(0.1).answered_fixtures(fixtures)

    asked = {(f.id, q.question) for f in kept for q in f.gold.questions}
    assert asked == drawn(0.1)
    assert "conv-9" not in {f.id for f in kept}  # a conversation with no sampled question is not opened
    assert cut(None).answered_fixtures(fixtures) is fixtures


def test_recall_is_scored_on_every_question_and_answers_on_the_sample_alone() -> None:
    chosen = drawn(0.1)
    # a stray cached answer outside the sample (a context another cut shares) must not count
    report = QAReport(
        budget=800,
        conditions=["memory", "bm25"],
        replayed=True,
        items=[item(c, q, answered=(c, q) in chosen or n == 0) for n, (c, q) in enumerate(PAIRS)],
    )
    stray = next(n for n, pair in enumerate(PAIRS) if pair not in chosen)
    report.items[stray] = item(*PAIRS[stray], answered=True)

    tables = {table.title.split(": ", 1)[1]: table for table in _tables("test", report, cut(0.1))}

    recall = tables["word-level context recall, by LoCoMo's category"]
    n = len(chosen)
    assert recall.rows[0][1].endswith("(n=300) [1.000, 1.000]")
    f1 = tables["answer token f1 (locomo's), by LoCoMo's category"]
    assert f1.rows[0][1].startswith(f"1.000 (n={n})")
    tokens = next(table for title, table in tables.items() if title.startswith("tokens per question"))
    assert f"answers on a fixed sample of {n} of the 300 questions" in tokens.title
    assert tokens.rows[0][2].startswith(f"1.000 ({n}/{n})")


def missing_answers(report: QAReport) -> str:
    """What the section's replay check says of ``report`` under a 10% sample."""
    section = Section(10, "LoCoMo")
    _rows(section, "test", report, cut(0.1))
    return next(row for row in section.rows if "no cached answer" in row.metric).value


def test_the_replay_check_counts_missing_answers_in_the_sample_alone() -> None:
    chosen = drawn(0.1)
    items = [item(c, q, answered=(c, q) in chosen) for c, q in PAIRS]
    report = QAReport(budget=800, conditions=["memory", "bm25"], replayed=True, items=items)

    assert missing_answers(report) == "0"

    first = next(n for n, pair in enumerate(PAIRS) if pair in chosen)
    report.items[first] = item(*PAIRS[first], answered=False)
    assert missing_answers(report) == "2"


def test_a_split_the_model_does_not_answer_says_nothing_of_a_sample() -> None:
    report = QAReport(
        budget=800, conditions=["memory", "bm25"], items=[item(c, q, answered=False) for c, q in PAIRS]
    )
    unanswered = Cut(None, ("tune",), {"tune": ()}, sample=0.1)

    tokens = _tables("tune", report, unanswered)[0]

    assert "sample" not in tokens.title
    assert tokens.rows[0][2] == "–"
