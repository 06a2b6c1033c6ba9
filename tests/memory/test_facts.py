"""Facts: statements about entities, grounded in their evidence, dated from the tape's own dates."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bub_semantic_memory._models import Entity, Fact, Snapshot
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.tape._dates import resolve_when
from bub_semantic_memory.tape._transcript import Entry, render_transcript
from bub_semantic_memory.testing import FakeOpenAIServer, tool_call_reply
from tests.conftest import FAST, make_snapshot

MONDAY = "2023-05-08T14:02:00+00:00"


def said(entry_id: int, text: str, date: str = MONDAY, sender: str = "Caroline") -> Entry:
    content = f"sender_id={sender}|channel=$cli|chat_id=t\n---Date: {date}---\n{text}"
    return Entry(entry_id, "message", {"role": "user", "content": content}, date=date)


ENTRIES = [
    said(1, "I went to an LGBTQ support group last Friday. It was so powerful."),
    said(2, "My friend Melanie is reading Charlotte's Web to her kids.", sender="Caroline"),
]
ENTITIES = {
    "entities": [
        {"name": "Caroline", "type": "person", "evidence": [1]},
        {"name": "Melanie", "type": "person", "evidence": [2]},
    ]
}


def fact(statement: str, about: list[str], evidence: list[int], **extra: Any) -> dict[str, Any]:
    return {
        "statement": statement,
        "about": about,
        "kind": "event",
        "topic": "",
        "evidence": evidence,
        **extra,
    }


def answering(relations: Any) -> Any:
    """A model for the sweep strategy: the entities, no other name, then ``relations()``'s answer."""

    def respond(request: Any) -> Any:
        name = request.tool_schema_name() or ""
        if name == "Classification":
            properties = (request.tool_parameters() or {}).get("properties", {})
            return tool_call_reply(name, dict.fromkeys(properties, "none"))
        return tool_call_reply(name, relations() if name == "Relations" else ENTITIES)

    return respond


def extractor(server: FakeOpenAIServer, prompt: str = "extract@13") -> Extractor:
    config = ExtractorConfig(
        model="fake-model", base_url=server.base_url, api_key="test", retry=FAST, prompt=prompt
    )
    return Extractor(config)


@pytest.mark.parametrize(
    ("said_as", "resolved"),
    [
        ("last Friday", "2023-05-05"),
        ("yesterday", "2023-05-07"),
        ("in May", "2023-05"),
        ("last week", "2023-W18"),
        ("last year", "2022"),
        ("2023-04-30", "2023-04-30"),
    ],
)
def test_a_time_as_said_resolves_against_the_date_of_the_entry_that_said_it(
    said_as: str, resolved: str
) -> None:
    found = resolve_when(said_as, MONDAY)
    assert found is not None and found.value == resolved


def test_a_plan_points_ahead_and_a_habit_is_no_date() -> None:
    assert resolve_when("Friday", MONDAY, prefer="future").value == "2023-05-12"  # type: ignore[union-attr]
    assert resolve_when("Friday", MONDAY).value == "2023-05-05"  # type: ignore[union-attr]
    assert resolve_when("every Thursday", MONDAY) is None
    assert resolve_when("on Tuesdays", MONDAY) is None
    assert resolve_when("", MONDAY) is None


def test_a_dated_transcript_shows_a_day_line_before_each_days_first_turn() -> None:
    entries = [*ENTRIES, said(3, "Back from the trip.", date="2023-05-10T09:00:00+00:00")]
    transcript = render_transcript(entries)
    lines = transcript.text(dated=True).splitlines()
    assert lines[0] == "--- Monday, 2023-05-08 ---" and lines[3] == "--- Wednesday, 2023-05-10 ---"
    assert "---" not in transcript.text()  # older prompt versions see the transcript as measured


async def test_facts_ride_with_the_relations_call_and_carry_resolved_dates(
    fake_openai: FakeOpenAIServer,
) -> None:
    relations = {
        "relations": [],
        "facts": [
            fact(
                "Caroline went to an LGBTQ support group",
                ["Caroline"],
                [1],
                when="last Friday",
                topic="support group",
            ),
            fact(
                "Melanie is reading Charlotte's Web to her kids",
                ["Melanie"],
                [2],
                kind="state",
                topic="reading",
            ),
        ],
    }
    fake_openai.responder = answering(lambda: relations)
    async with extractor(fake_openai) as ex:
        [snapshot] = await ex.extract(ENTRIES, tape="t")
    first = fake_openai.requests[0].transcript() or ""
    assert first.startswith("--- Monday, 2023-05-08 ---")
    assert "Relations" in [r.tool_schema_name() for r in fake_openai.requests]
    by_statement = {f.statement: f for f in snapshot.facts}
    support = by_statement["Caroline went to an LGBTQ support group"]
    assert support.about == ("person:caroline",) and support.when == "2023-05-05"
    assert support.said_when == "last Friday" and support.evidence == (1,) and support.valid_from == 1
    reading = by_statement["Melanie is reading Charlotte's Web to her kids"]
    assert reading.kind == "state" and reading.when is None and reading.topic == "reading"


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (
            fact("Caroline adopted three cats in Oslo", ["Caroline"], [1]),
            "is not what its evidence lines say",
        ),
        (fact("Melanie went to an LGBTQ support group", ["Melanie"], [1]), "name none of the entities"),
        (fact("Caroline went to an LGBTQ support group", ["Caroline"], []), "gives no evidence"),
        (
            fact("Caroline went to an LGBTQ support group", ["Dave"], [1]),
            "Input should be 'Caroline' or 'Melanie'",
        ),
    ],
)
async def test_a_fact_its_evidence_does_not_support_is_reasked(
    fake_openai: FakeOpenAIServer, bad: dict[str, Any], problem: str
) -> None:
    answers = iter([{"relations": [], "facts": [bad]}, {"relations": [], "facts": []}])
    fake_openai.responder = answering(lambda: next(answers))
    async with extractor(fake_openai) as ex:
        [snapshot] = await ex.extract(ENTRIES, tape="t")
    reask = [r for r in fake_openai.requests if r.messages[-1].get("role") == "tool"]
    assert len(reask) == 1 and problem in str(reask[0].messages[-1]["content"])
    assert snapshot.facts == ()


async def test_the_single_call_states_facts_too(fake_openai: FakeOpenAIServer) -> None:
    answer = {
        **ENTITIES,
        "relations": [{"source": "Caroline", "type": "knows", "target": "Melanie", "evidence": [2]}],
        "facts": [fact("Caroline went to an LGBTQ support group", ["Caroline"], [1], when="last Friday")],
    }
    fake_openai.enqueue(tool_call_reply("Extraction", answer))
    async with extractor(fake_openai, prompt="extract@14") as ex:
        [snapshot] = await ex.extract(ENTRIES, tape="t")
    schema = fake_openai.requests[0].tool_parameters() or {}
    assert "facts" in schema["properties"]
    assert [f.when for f in snapshot.facts] == ["2023-05-05"] and len(snapshot.relations) == 1


def test_old_prompt_versions_ask_for_no_facts() -> None:
    library = PromptLibrary(None)
    assert not library.load("extract@9").facts and not library.load("extract@9").dates
    assert library.load("extract@13").facts and library.load("extract@14").dates


def test_a_snapshot_without_facts_is_stored_as_before_and_one_with_facts_round_trips() -> None:
    plain = make_snapshot([Entity.create("Caroline", "person", evidence=[1])])
    assert "facts" not in plain.model_dump(mode="json", exclude_defaults=True)
    stated = plain.model_copy(
        update={"facts": (Fact(statement="Caroline went hiking", kind="event", about=("person:caroline",)),)}
    )
    again = Snapshot.model_validate_json(stated.model_dump_json())
    assert again.facts == stated.facts


def stated(
    statement: str, evidence: int, *, kind: str = "state", topic: str = "", about: str = "person:ivy"
) -> Fact:
    return Fact(statement=statement, kind=kind, about=(about,), topic=topic, evidence=(evidence,))  # type: ignore[arg-type]


def folded(*facts: Fact, order: list[int] | None = None) -> MemoryGraph:
    ivy = Entity.create("Ivy", "person", evidence=[1])
    snapshots = [
        make_snapshot([ivy], first=fact.evidence[0], last=fact.evidence[0]).model_copy(
            update={"facts": (fact,)}
        )
        for fact in facts
    ]
    snapshots = [Snapshot.model_validate(s.model_dump() | {"id": ""}) for s in snapshots]  # ids from content
    return MemoryGraph.fold([snapshots[i] for i in (order or range(len(snapshots)))])


def test_the_same_statement_said_twice_is_one_fact_with_both_entries() -> None:
    graph = folded(
        stated("Ivy's piano lessons are on Tuesdays", 10, topic="piano lessons"),
        stated("Ivy's piano lessons are on Tuesdays.", 40, topic="piano lessons"),
        stated("Ivy's piano lesson is on Tuesdays", 60, topic="piano lessons"),
    )
    [fact] = graph.facts()
    assert fact.evidence == (10, 40, 60) and fact.valid_from == 10 and fact.is_current


def test_a_newer_state_on_a_topic_closes_the_older_in_any_fold_order() -> None:
    facts = (
        stated("Ivy's piano lessons are on Tuesdays", 10, topic="piano lessons"),
        stated("Ivy's piano lessons are on Thursdays now", 30, topic="piano lessons"),
        stated("Ivy went to a birthday party", 20, kind="event", topic="piano lessons"),
    )
    for order in ([0, 1, 2], [1, 2, 0], [2, 1, 0]):
        by_statement = {f.statement: f for f in folded(*facts, order=order).facts()}
        assert by_statement["Ivy's piano lessons are on Tuesdays"].valid_until == 30, order
        assert by_statement["Ivy's piano lessons are on Thursdays now"].is_current
        assert by_statement["Ivy went to a birthday party"].is_current  # events accumulate


def test_facts_survive_a_checkpoint_and_an_old_checkpoint_loads_without_them() -> None:
    graph = folded(
        stated("Ivy's piano lessons are on Tuesdays", 10, topic="piano lessons"),
        stated("Ivy's piano lessons are on Thursdays now", 30, topic="piano lessons"),
    )
    state = json.loads(json.dumps(graph.to_state()))
    again = MemoryGraph.from_state(state)
    assert again.facts() == graph.facts()
    again.add(
        make_snapshot([], first=50, last=50).model_copy(
            update={"facts": (stated("Ivy's piano lessons are on Mondays", 50, topic="piano lessons"),)}
        )
    )
    assert [f.statement for f in again.facts(current_only=True)] == ["Ivy's piano lessons are on Mondays"]
    del state["facts"]
    assert MemoryGraph.from_state(state).facts() == []


def test_a_question_finds_the_stated_fact_it_is_about_and_the_note_shows_its_date() -> None:
    from bub_semantic_memory.memory._index import MemoryIndex
    from bub_semantic_memory.memory._render import render_memory

    melanie = Entity.create("Melanie", "person", evidence=[2])
    caroline = Entity.create("Caroline", "person", evidence=[1])
    facts = (
        Fact(
            statement="Caroline went to an LGBTQ support group",
            kind="event",
            about=(caroline.key,),
            when="2023-05-05",
            said_when="last Friday",
            evidence=(1,),
            valid_from=1,
        ),
        Fact(
            statement="Melanie is reading Charlotte's Web", kind="state", about=(melanie.key,), evidence=(2,)
        ),
    )
    snapshot = make_snapshot([caroline, melanie], first=1, last=2).model_copy(update={"facts": facts})
    graph = MemoryGraph.fold([snapshot])
    index = MemoryIndex(graph)
    index.refresh({1: "[1] Caroline: I went to a LGBTQ support group last Friday."}, {1: MONDAY})
    ranking = index.rank("When did she go to the support group?")
    best = ranking.facts[0]
    assert best.sentence == "Caroline went to an LGBTQ support group (2023-05-05)"
    assert (best.kind, best.when, best.stated, best.entities) == (
        "event",
        "2023-05-05",
        (MONDAY,),
        (caroline.key,),
    )
    block = render_memory(graph, query="When did she go to the support group?", ranking=ranking).text
    assert "  - Caroline went to an LGBTQ support group (2023-05-05)" in block
    assert "    > [1] Caroline: I went to a LGBTQ support group last Friday." in block
    assert "Melanie is reading Charlotte's Web" in block


async def test_memory_search_returns_stated_facts_with_their_kind_and_date() -> None:
    from bub.store import InMemoryTapeStore

    from bub_semantic_memory.agent._search import search_memory
    from bub_semantic_memory.agent._service import MemoryService
    from bub_semantic_memory.agent._setup import MemorySetup
    from bub_semantic_memory.stores._store import SnapshotStore

    caroline = Entity.create("Caroline", "person", evidence=[1])
    fact = Fact(
        statement="Caroline went to an LGBTQ support group",
        kind="event",
        about=(caroline.key,),
        when="2023-05-05",
        evidence=(1,),
    )
    store = InMemoryTapeStore()
    snapshot = make_snapshot([caroline], tape="t", first=1, last=1).model_copy(update={"facts": (fact,)})
    await SnapshotStore(store).append(snapshot)
    ontology = PromptLibrary(None).load("extract@13").ontology
    service = MemoryService.from_setup(MemorySetup(folds_with=ontology), extractor=lambda: None)
    await service.load("t", store)
    found = search_memory(service, "t", "support group", start="2023-05-01", end="2023-05-31")
    [data] = found["facts"]
    assert (data["kind"], data["when"], data["entities"]) == ("event", "2023-05-05", [caroline.key])
    assert search_memory(service, "t", "support group", start="2023-06-01")["facts"] == []


def test_the_facts_about_an_entity_include_those_stated_under_a_key_merged_into_it() -> None:
    ivy = Entity.create("Ivy", "person", evidence=[1])
    bo = Entity.create("Bo", "person", evidence=[1])
    ivy_chen = Entity.create("Ivy Chen", "person", aliases=["Ivy"], evidence=[5])
    first = make_snapshot([ivy, bo], first=1, last=1).model_copy(
        update={
            "facts": (
                stated("Ivy plays the piano", 1, about=ivy.key),
                stated("Bo likes tea", 1, about=bo.key),
            )
        }
    )
    second = make_snapshot([ivy_chen], first=5, last=5).model_copy(
        update={"facts": (stated("Ivy Chen moved to Oslo", 5, about=ivy_chen.key),)}
    )
    graph = MemoryGraph.fold([first])
    assert [f.statement for f in graph.facts_about(ivy.key)] == ["Ivy plays the piano"]
    graph.add(second)  # "Ivy Chen" is merged into "Ivy" by name, after a look-up was answered
    assert graph.resolve(ivy_chen.key) == ivy.key
    restored = MemoryGraph.from_state(json.loads(json.dumps(graph.to_state())))
    for memory in (graph, restored):
        for key in (ivy.key, ivy_chen.key):
            assert [f.statement for f in memory.facts_about(key)] == [
                "Ivy plays the piano",
                "Ivy Chen moved to Oslo",
            ]
        assert [f.statement for f in memory.facts_about(bo.key)] == ["Bo likes tea"]
