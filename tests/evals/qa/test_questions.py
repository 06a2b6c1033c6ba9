"""The memory-QA questions of the committed fixtures: enough of them, categorised, and grounded in the tape.

The memory-QA eval checks whether a context contains a question's answer, so every answer must be
written in the tape's own words in the entries its evidence names, and an unanswerable question's
answer ("unknown") must not occur in the tape at all (any context would contain it).
"""

from __future__ import annotations

import typing
from collections import Counter
from datetime import datetime

import pytest

from bub_semantic_memory.evals import UNKNOWN, Fixture, QuestionCategory, load_fixtures
from bub_semantic_memory.tape._transcript import Entry, render_transcript
from tests.conftest import REPO

FIXTURES = load_fixtures(REPO / "evals" / "fixtures")
FOREIGN = {"open-domain"}
"""Categories only imported datasets use: the project's own questions need nothing from outside the tape."""
CATEGORIES: tuple[str, ...] = tuple(
    c for c in typing.get_args(QuestionCategory.__value__) if c not in FOREIGN
)
LONG_TURNS = 200


def fold(text: str) -> str:
    """Case and runs of whitespace do not matter to the containment check."""
    return " ".join(text.casefold().split())


def message_turns(entries: list[Entry]) -> int:
    return sum(1 for e in entries if e.kind == "message" and e.payload.get("role") in ("user", "assistant"))


def session_days(entries: list[Entry]) -> set[str]:
    """The days on which user messages were sent."""
    return {
        datetime.fromisoformat(e.date).date().isoformat()
        for e in entries
        if e.kind == "message" and e.payload.get("role") == "user"
    }


def long_fixtures() -> list[tuple[Fixture, list[Entry]]]:
    pairs = [(f, f.entries()) for f in FIXTURES]
    return [(f, entries) for f, entries in pairs if message_turns(entries) >= LONG_TURNS]


def test_the_fixtures_hold_at_least_300_questions_of_every_category() -> None:
    questions = [q for f in FIXTURES for q in f.gold.questions]
    assert len(questions) >= 300
    counts: Counter[str | None] = Counter(q.category for q in questions)
    assert None not in counts, [q.question for q in questions if q.category is None]
    assert set(counts) == set(CATEGORIES)
    assert all(counts[c] >= 10 for c in CATEGORIES), counts
    assert counts["unanswerable"] >= 30


@pytest.mark.parametrize("fixture", [f for f in FIXTURES if f.gold.questions], ids=lambda f: f.id)
def test_every_answer_is_stated_in_the_words_of_its_evidence(fixture: Fixture) -> None:
    lines = {line.entry_id: line.text for line in render_transcript(fixture.entries()).lines}
    tape = fold("\n".join(lines.values()))
    texts = [q.question for q in fixture.gold.questions]
    assert len(texts) == len(set(texts)), "a question is asked twice"
    for question in fixture.gold.questions:
        if question.category == "unanswerable":
            assert question.evidence == [], question.question
            assert fold(UNKNOWN) not in tape, f"{question.question}: the tape says {UNKNOWN!r}"
            continue
        assert question.evidence, f"{question.question}: no evidence"
        unknown_ids = [i for i in question.evidence if i not in lines]
        assert not unknown_ids, f"{question.question}: evidence {unknown_ids} names no rendered entry"
        stated = [i for i in question.evidence if any(fold(a) in fold(lines[i]) for a in question.answers)]
        assert stated, f"{question.question}: no evidence entry {question.evidence} states {question.answers}"


def test_at_least_five_long_fixtures_with_25_questions_each() -> None:
    long = long_fixtures()
    assert len(long) >= 6, [f.id for f, _ in long]  # the 238-turn tape and five more
    rich = [f.id for f, _ in long if len(f.gold.questions) >= 25]
    assert len(rich) >= 5, rich
    for fixture, _ in long:
        assert "long" in fixture.tags, fixture.id


def test_at_least_two_long_fixtures_are_conversations_over_dated_sessions() -> None:
    spread = [f.id for f, entries in long_fixtures() if len(session_days(entries)) >= 4]
    assert len(spread) >= 2, spread


def test_at_least_ten_short_fixtures_hold_tool_results_that_state_gold_facts() -> None:
    """An agent's tape is full of tool output, and the relations stated there are the ones it most needs:
    ten fixtures below 200 turns (besides the long ones) call tools whose results name gold entities."""
    stating = []
    for fixture in FIXTURES:
        entries = fixture.entries()
        if message_turns(entries) >= LONG_TURNS or "tool_call" not in {e.kind for e in entries}:
            continue
        results = fold(" ".join(str(e.payload) for e in entries if e.kind == "tool_result"))
        named = [e.name for e in fixture.gold.entities if fold(e.name) in results]
        if len(named) >= 2:
            stating.append(fixture.id)
    assert len(stating) >= 10, stating
