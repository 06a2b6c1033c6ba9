"""Facts: statements about entities, grounded in their evidence, dated from the tape's own dates."""

from __future__ import annotations

from typing import Any

import pytest

from bub_semantic_memory._models import Entity, Fact, Snapshot
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.tape._dates import resolve_when
from bub_semantic_memory.tape._transcript import Entry, render_transcript
from bub_semantic_memory.testing import FakeOpenAIServer, tool_call_reply
from tests.conftest import FAST

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
    from tests.conftest import make_snapshot

    plain = make_snapshot([Entity.create("Caroline", "person", evidence=[1])])
    assert "facts" not in plain.model_dump(mode="json", exclude_defaults=True)
    stated = plain.model_copy(
        update={"facts": (Fact(statement="Caroline went hiking", kind="event", about=("person:caroline",)),)}
    )
    again = Snapshot.model_validate_json(stated.model_dump_json())
    assert again.facts == stated.facts
