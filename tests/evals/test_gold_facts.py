"""The gold facts of the committed fixtures (``facts.json``) hold to their tapes.

Each fact is about gold entities, names entries of its tape as evidence, is stated by those entries the
way the extractor's validator holds a predicted fact (:func:`~bub_semantic_memory._statements.grounding_problem`),
and, when dated, gives the date its said words resolve to on the day the entry that says them was
written (:func:`~bub_semantic_memory.tape._dates.resolve_when`). A gold memory holds every fact apart.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory._models import FACT_KINDS, SUPERSEDING_KINDS, normalize_name
from bub_semantic_memory._statements import grounding_problem
from bub_semantic_memory.evals import Fixture, Gold, GoldEntity, GoldFact, load_fixtures
from bub_semantic_memory.evals.qa._contexts import snapshots_of
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory import MemoryGraph
from bub_semantic_memory.tape._dates import resolve_when
from bub_semantic_memory.tape._transcript import Entry, TranscriptLine, render_transcript
from tests.conftest import REPO

FIXTURES = REPO / "evals" / "fixtures"
LONG_PERSONAL = ("long-tape-family-year", "long-tape-friends-and-hobbies", "long-tape-job-change-and-move")


@functools.cache
def fixtures_with_facts() -> tuple[Fixture, ...]:
    return tuple(f for f in load_fixtures(FIXTURES) if f.facts is not None)


@dataclass(frozen=True)
class Tape:
    """A fixture's tape as the gold facts are checked against it.

    Attributes:
        lines: what the extractor sees, by entry id (secrets redacted, long texts cut).
        first_hand: user messages, tool calls and tool results: what someone said or a tool gave.
    """

    lines: dict[int, TranscriptLine]
    first_hand: frozenset[int]

    @classmethod
    def of(cls, entries: Sequence[Entry]) -> Tape:
        lines = render_transcript(entries, redact=ExtractorConfig(model="none").redactor()).lines
        first_hand = {
            e.id
            for e in entries
            if e.kind in ("tool_call", "tool_result")
            or (e.kind == "message" and e.payload.get("role") == "user")
        }
        return cls({line.entry_id: line for line in lines}, frozenset(first_hand))


def entity_named(name: str, gold: Gold) -> GoldEntity | None:
    folded = normalize_name(name)
    for entity in gold.entities:
        if folded in {normalize_name(n) for n in (entity.name, *entity.aliases)}:
            return entity
    return None


def fact_problems(gold: Gold, facts: Sequence[GoldFact], tape: Tape) -> list[str]:
    """What is wrong with a fixture's gold facts, one line each (nothing: they hold).

    Evidence is held to the validator's rule, and to one more, as question evidence is: it cites a
    first-hand entry, not only an assistant's echo of one (an assistant's tally may join a first-hand one).
    """
    problems: list[str] = []
    seen: set[str] = set()
    for fact in facts:
        label = f"{gold.id}: {fact.statement!r}"
        key = f"{fact.kind}:{normalize_name(fact.statement)}"
        if key in seen:
            problems.append(f"{label} is listed twice")
        seen.add(key)
        about = [entity_named(name, gold) for name in fact.about]
        if None in about:
            problems.append(f"{label} is about {fact.about}, not all of them gold entities")
            continue
        if fact.kind in SUPERSEDING_KINDS and not 1 <= len(fact.topic.split()) <= 2:
            problems.append(f"{label}: a {fact.kind} needs a topic of one or two words, not {fact.topic!r}")
        if fact.topic != normalize_name(fact.topic):
            problems.append(f"{label}: topic {fact.topic!r} is not lower-case words")
        evidence = [tape.lines.get(entry_id) for entry_id in fact.evidence]
        if not evidence or None in evidence:
            problems.append(f"{label}: evidence {fact.evidence} are not all entries of the transcript")
            continue
        if tape.first_hand.isdisjoint(fact.evidence):
            problems.append(f"{label}: evidence {fact.evidence} holds only the assistant's words")
        said = [line for line in evidence if line is not None]
        names = [name for entity in about if entity is not None for name in (entity.name, *entity.aliases)]
        # The validator's own rule (extraction/_validation.py holds a predicted fact to it).
        if (
            problem := grounding_problem(fact.statement, names, " ".join(line.speech for line in said))
        ) is not None:
            problems.append(f"{label}: {problem}")
        problems.extend(_date_problems(label, fact, said))
    return problems


def _date_problems(label: str, fact: GoldFact, said: list[TranscriptLine]) -> list[str]:
    """A dated fact records the words its evidence says the time in, and they resolve to its date on the
    day of the entry that says them (a plan's point ahead, as the validator resolves them)."""
    if fact.when is None and fact.said_when is None:
        return []
    if fact.when is None or fact.said_when is None:
        return [f"{label}: a dated fact gives both when and said_when ({fact.when!r}, {fact.said_when!r})"]
    saying = next((line for line in said if is_mentioned(fact.said_when, fold_text(line.speech))), None)
    if saying is None:
        return [f"{label}: no evidence entry says {fact.said_when!r}"]
    resolved = resolve_when(fact.said_when, saying.date, prefer="future" if fact.kind == "plan" else "past")
    if resolved is None or resolved.value != fact.when:
        got = resolved.value if resolved else None
        return [f"{label}: {fact.said_when!r} said on {saying.date} is {got}, not {fact.when}"]
    return []


@pytest.mark.parametrize("fixture", fixtures_with_facts(), ids=lambda f: f.id)
def test_every_gold_fact_is_stated_by_its_evidence_about_gold_entities_and_dated_as_said(
    fixture: Fixture,
) -> None:
    assert fixture.facts, f"{fixture.id}: facts.json holds no fact"
    assert fact_problems(fixture.gold, fixture.facts, Tape.of(fixture.entries())) == []


def test_evidence_moved_one_entry_either_way_is_caught_unless_a_tool_entry_restates_the_fact() -> None:
    shifts = caught = 0
    for fixture in fixtures_with_facts():
        assert fixture.facts is not None
        entries = fixture.entries()
        tape = Tape.of(entries)
        tools = {e.id for e in entries if e.kind in ("tool_call", "tool_result")}
        for fact in fixture.facts:
            for shift in (-1, 1):
                moved = fact.model_copy(update={"evidence": [e + shift for e in fact.evidence]})
                shifts += 1
                if fact_problems(fixture.gold, [moved], tape):
                    caught += 1
                else:  # a tool call that carries out the user's words states them again
                    assert tools & set(moved.evidence), f"{fixture.id}: {fact.statement!r} shifted by {shift}"
    assert caught >= 0.95 * shifts, (caught, shifts)


def test_a_wrong_date_a_stranger_or_other_words_are_caught() -> None:
    fixture = next(f for f in fixtures_with_facts() if f.id == "long-tape-family-year")
    assert fixture.facts is not None
    tape = Tape.of(fixture.entries())
    dated = next(f for f in fixture.facts if f.said_when == "today")
    assert fact_problems(fixture.gold, [dated.model_copy(update={"when": "2026-02-09"})], tape) == [
        f"{fixture.id}: {dated.statement!r}: 'today' said on {tape.lines[dated.evidence[0]].date} is "
        f"{dated.when}, not 2026-02-09"
    ]
    unsaid = dated.model_copy(update={"said_when": "yesterday"})
    assert fact_problems(fixture.gold, [unsaid], tape) == [
        f"{fixture.id}: {dated.statement!r}: no evidence entry says 'yesterday'"
    ]
    stranger = dated.model_copy(update={"about": ["Pilar Ocampo", "Dr. Nobody"]})
    assert fact_problems(fixture.gold, [stranger], tape) == [
        f"{fixture.id}: {dated.statement!r} is about ['Pilar Ocampo', 'Dr. Nobody'], not all of them gold entities"
    ]
    other_words = dated.model_copy(update={"statement": "Maren climbed Galdhøpiggen with Pilar"})
    assert fact_problems(fixture.gold, [other_words], tape) == [
        f"{fixture.id}: 'Maren climbed Galdhøpiggen with Pilar': it is not what its evidence lines say"
    ]
    echo = dated.model_copy(update={"evidence": [dated.evidence[0] + 1]})  # the assistant's reply
    assert (
        f"{fixture.id}: {dated.statement!r}: evidence {echo.evidence} holds only the assistant's words"
        in (fact_problems(fixture.gold, [echo], tape))
    )


@pytest.mark.parametrize("fixture", fixtures_with_facts(), ids=lambda f: f.id)
def test_the_gold_memory_holds_every_fact_apart(fixture: Fixture) -> None:
    assert fixture.facts is not None
    ontology = PromptLibrary().load("extract").ontology
    last = max(e.id for e in fixture.entries())
    snapshots, dropped = snapshots_of(
        fixture.id, fixture.gold, ontology, last_entry_id=last, source="gold", stated=fixture.facts
    )
    assert [reason for reason in dropped if reason.startswith("fact ")] == []
    folded = MemoryGraph.fold(snapshots, ontology, tape=fixture.id).facts()
    # None folded into another as the same thing said twice (one kind, one subject, most words shared).
    assert sorted(f.statement for f in folded) == sorted(f.statement for f in fixture.facts)


def test_at_least_twenty_fixtures_have_facts_of_every_kind_dated_and_changing() -> None:
    with_facts = {f.id: f.facts or () for f in fixtures_with_facts()}
    assert len(with_facts) >= 20
    assert set(LONG_PERSONAL) <= set(with_facts)
    facts = [fact for found in with_facts.values() for fact in found]
    assert {fact.kind for fact in facts} == set(FACT_KINDS)
    for fixture_id in LONG_PERSONAL:
        found = with_facts[fixture_id]
        topics = [(f.about[0], f.topic) for f in found if f.kind in SUPERSEDING_KINDS]
        assert len(topics) > len(set(topics)), f"{fixture_id}: no fact that changes"
        assert any(f.said_when and not f.said_when[:1].isdigit() for f in found), (
            f"{fixture_id}: no relative date"
        )
