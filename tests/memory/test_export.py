"""Exports of a memory: JSON read back into the same memory, GraphML and JSON-LD read by other parsers."""

from __future__ import annotations

import json
from xml.etree import ElementTree

import pytest

from bub_semantic_memory._errors import EditError
from bub_semantic_memory._models import Entity, PromptRef, Relation, Snapshot
from bub_semantic_memory.memory._export import GRAPHML_NS, MemoryExport, export_memory, read_export
from bub_semantic_memory.memory._graph import MemoryGraph
from tests.conftest import make_snapshot
from tests.memory.test_edits import ONTOLOGY, TAPE, early

MOVED = make_snapshot(
    [Entity.create("Alice Chen", "person", evidence=[9]), Entity.create("Porto", "location", evidence=[9])],
    [Relation(source="person:alice-chen", type="lives_in", target="location:porto", evidence=(9,))],
    tape=TAPE,
    first=5,
    last=10,
)


def graph() -> MemoryGraph:
    return MemoryGraph.fold([early(), MOVED], ONTOLOGY, tape=TAPE)


@pytest.mark.parametrize("history", [False, True])
def test_a_json_export_folds_back_into_the_same_memory(history: bool) -> None:
    text = export_memory(graph(), history=history)
    export = read_export(text)
    snapshot = Snapshot(
        tape=TAPE,
        first_entry_id=0,
        last_entry_id=0,
        prompt=PromptRef(name="import", version=1, sha256=export.sha256()),
        model="import",
        mode="import",
        entities=tuple(export.entities),
        relations=tuple(export.relations),
        facts=tuple(export.facts),
    )
    again = MemoryGraph.fold([snapshot], ONTOLOGY, tape=TAPE)
    assert export_memory(again, history=history) == text


def test_history_adds_the_superseded_relations() -> None:
    current = json.loads(export_memory(graph()))
    past = json.loads(export_memory(graph(), history=True))
    assert [r["target"] for r in current["relations"] if r["source"] == "person:alice-chen"] == [
        "location:porto"
    ]
    lisbon = [
        r
        for r in past["relations"]
        if r["target"] == "location:lisbon" and r["source"] == "person:alice-chen"
    ]
    assert [r["valid_until"] for r in lisbon] == [9]


def test_graphml_holds_every_entity_and_relation_and_the_facts_with_what_they_are_about() -> None:
    root = ElementTree.fromstring(export_memory(graph(), format="graphml", history=True))
    ns = {"g": GRAPHML_NS}
    keys = {k.get("id"): k.get("attr.name") for k in root.findall("g:key", ns)}
    nodes = {
        n.get("id"): {keys[d.get("key")]: d.text for d in n.findall("g:data", ns)}
        for n in root.findall("g:graph/g:node", ns)
    }
    edges = [
        (e.get("source"), e.get("target"), {keys[d.get("key")]: d.text for d in e.findall("g:data", ns)})
        for e in root.findall("g:graph/g:edge", ns)
    ]
    memory = graph()
    assert {k for k, v in nodes.items() if v["kind"] == "entity"} == {e.key for e in memory.entities()}
    assert {(s, d["type"], t) for s, t, d in edges if d["kind"] == "relation"} == {
        r.key for r in memory.relations()
    }
    about = {(s, t) for s, t, d in edges if d["kind"] == "about"}
    facts = {k: str(v["statement"]) for k, v in nodes.items() if v["kind"] == "fact"}
    assert sorted(facts.values()) == sorted(f.statement for f in memory.facts())
    assert all(source in facts and target in nodes for source, target in about)


def test_json_ld_types_entities_with_schema_org_and_links_every_relation() -> None:
    document = json.loads(export_memory(graph(), format="jsonld"))
    nodes = {n["@id"]: n for n in document["@graph"]}
    people = [n for n in nodes.values() if n["@type"] == "Person"]
    assert sorted(p["name"] for p in people) == ["Alice Chen", "Bob Stone"]
    assert document["@context"]["@vocab"] == "https://schema.org/"
    for node in nodes.values():
        for ref in [node.get("source"), node.get("target"), *node.get("about", [])]:
            assert ref is None or ref in nodes


def test_an_export_that_names_a_missing_entity_is_refused() -> None:
    export = MemoryExport.of(graph())
    broken = export.model_copy(update={"entities": export.entities[1:]})
    with pytest.raises(EditError, match="which the export does not hold"):
        read_export(broken.model_dump_json())
    with pytest.raises(EditError, match="not a memory export"):
        read_export('{"format": "bub-semantic-memory/export", "version": 2, "tape": "t", "entities": []}')
