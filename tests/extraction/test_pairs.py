"""The pairs step: co-mentioned pairs, the relations the ontology allows between them, and the call."""

from __future__ import annotations

from typing import Any

from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.extraction._pairs import Endpoint, Pair, co_mentioned_pairs, pair_choices
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.tape._transcript import Entry
from bub_semantic_memory.testing import (
    FakeOpenAIServer,
    OracleResponder,
    RecordedRequest,
    Reply,
    tool_call_reply,
)
from tests.conftest import FAST, rendered_lines

ANA, BEN = Endpoint("Ana Ruiz", "person", ("Ana",)), Endpoint("Ben Ode", "person", ("Ben",))
TICKET, LISBON = Endpoint("T-12", "task"), Endpoint("Lisbon", "location")


def test_pair_choices_offer_each_fact_once_in_its_stored_form(ontology: Ontology) -> None:
    ticket = pair_choices(ontology, Pair(ANA, TICKET, (5,)))
    assert ticket == {"T-12 assigned to Ana Ruiz": ("T-12", "assigned_to", "Ana Ruiz")}  # not "works on" too
    people = pair_choices(ontology, Pair(ANA, BEN, (5,)))
    assert "Ana Ruiz knows Ben Ode" in people and "Ben Ode knows Ana Ruiz" not in people  # symmetric: once
    assert {"Ana Ruiz reports to Ben Ode", "Ben Ode reports to Ana Ruiz"} <= set(people)
    assert not any(" manages " in sentence for sentence in people)  # stored as reports_to
    assert pair_choices(ontology, Pair(TICKET, LISBON, (5,))) == {}  # no type joins a task and a place


def test_co_mentioned_pairs_come_from_one_line_in_order_without_the_related_ones(ontology: Ontology) -> None:
    lines = rendered_lines(
        (5, "user", "Ana picked up T-12 and Ben is reviewing it."),
        (6, "assistant", "Noted: T-12 is with Ana."),
        (7, "Ben", "I moved to Lisbon last year."),
    )
    endpoints = [ANA, BEN, TICKET, LISBON]
    pairs, more = co_mentioned_pairs(ontology, lines, endpoints, [("Ben Ode", "Ana Ruiz")], limit=10)
    assert [(p.key, p.evidence) for p in pairs] == [
        ("Ana Ruiz / T-12", (5, 6)),
        ("Ben Ode / T-12", (5,)),
        ("Ben Ode / Lisbon", (7,)),  # the sender of a line is named in it
    ]
    assert more == 0
    first, more = co_mentioned_pairs(ontology, lines, endpoints, limit=2)
    assert [p.key for p in first] == ["Ana Ruiz / Ben Ode", "Ana Ruiz / T-12"] and more == 2


TEAM = [
    Entry(2, "message", {"role": "user", "content": "Ana Ruiz picked up ticket T-12. Ben Ode reviews it."}),
    Entry(3, "message", {"role": "user", "content": "Ana Ruiz lives in Lisbon."}),
]
FACTS = {
    "entities": [
        {"name": "Ana Ruiz", "type": "person"},
        {"name": "Ben Ode", "type": "person"},
        {"name": "T-12", "type": "task"},
        {"name": "Lisbon", "type": "location"},
    ],
    "relations": [
        {"source": "T-12", "type": "assigned_to", "target": "Ana Ruiz"},
        {"source": "Ana Ruiz", "type": "lives_in", "target": "Lisbon"},
    ],
}


class UnderRelating:
    """The oracle, except that the relations call states only where Ana lives (a small model
    that relates a few entities and stops)."""

    def __init__(self) -> None:
        self.oracle = OracleResponder.from_golds([FACTS])

    def __call__(self, request: RecordedRequest) -> Reply:
        if request.tool_schema_name() == "Relations":
            lives = {"source": "Ana Ruiz", "type": "lives_in", "target": "Lisbon", "evidence": [3]}
            return tool_call_reply("Relations", {"relations": [lives]})
        return self.oracle(request)


def extractor(server: FakeOpenAIServer, prompt: str) -> Extractor:
    config = ExtractorConfig(
        model="fake-model", base_url=server.base_url, api_key="test", prompt=prompt, retry=FAST
    )
    return Extractor(config)


async def test_the_pairs_call_relates_what_the_relations_call_left_out(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.responder = UnderRelating()
    async with extractor(fake_openai, "extract@15") as ex:
        [snapshot] = await ex.extract(TEAM, tape="t")
    names = [r.tool_schema_name() for r in fake_openai.requests]
    assert names == ["Entities", "Relations", "Pairs"]  # the oracle lists every name: nothing to sweep
    pairs = fake_openai.requests[-1]
    parameters: dict[str, Any] = pairs.tool_parameters() or {}
    # Ana and Lisbon are related already; Ana, Ben and T-12 share a line
    assert list(parameters["properties"]) == ["Ana Ruiz / Ben Ode", "Ana Ruiz / T-12", "Ben Ode / T-12"]
    assert parameters["properties"]["Ana Ruiz / T-12"]["enum"] == ["T-12 assigned to Ana Ruiz", "none"]
    assert "Pairs named together in one turn: Ana Ruiz / Ben Ode; Ana Ruiz / T-12; Ben Ode / T-12" in str(
        pairs.messages[-1]["content"]
    )
    assert sorted((r.source, r.type, r.target, r.evidence) for r in snapshot.relations) == [
        ("person:ana-ruiz", "lives_in", "location:lisbon", (3,)),
        ("task:t-12", "assigned_to", "person:ana-ruiz", (2,)),
    ]


async def test_a_window_whose_pairs_are_all_related_makes_no_pairs_call(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.responder = OracleResponder.from_golds(
        [{"entities": FACTS["entities"][:1] + FACTS["entities"][3:], "relations": FACTS["relations"][1:]}]
    )
    async with extractor(fake_openai, "extract@15") as ex:
        [snapshot] = await ex.extract(TEAM[1:], tape="t")
    assert [r.tool_schema_name() for r in fake_openai.requests] == ["Entities", "Relations"]
    assert [r.type for r in snapshot.relations] == ["lives_in"]


async def test_extract_15_sends_extract_9s_requests_before_its_pairs_call(
    fake_openai: FakeOpenAIServer,
) -> None:
    bodies: dict[str, list[Any]] = {}
    for prompt in ("extract@9", "extract@15"):
        fake_openai.responder = UnderRelating()
        before = len(fake_openai.requests)
        async with extractor(fake_openai, prompt) as ex:
            await ex.extract(TEAM, tape="t")
        bodies[prompt] = [r.body for r in fake_openai.requests[before:]]
    assert bodies["extract@15"][:-1] == bodies["extract@9"]
    assert bodies["extract@15"][-1]["tool_choice"]["function"]["name"] == "Pairs"


def test_extract_15_declares_the_inverse_pairs_the_released_versions_get_by_default() -> None:
    library = PromptLibrary()
    assert library.load("extract@15").ontology.inverses == library.load("extract@9").ontology.inverses
