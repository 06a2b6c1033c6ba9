from __future__ import annotations

import itertools

from bub_semantic_memory._models import Entity, Relation
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.memory._graph import MemoryGraph
from tests.conftest import make_snapshot

ALICE = Entity.create("Alice Chen", "person", aliases=["Alice"], evidence=[2])
APOLLO = Entity.create("Project Apollo", "project", evidence=[2])
BERLIN = Entity.create("Berlin", "location", evidence=[3])
LISBON = Entity.create("Lisbon", "location", evidence=[8])


def rel(source: Entity, type: str, target: Entity, *evidence: int) -> Relation:
    return Relation(source=source.key, type=type, target=target.key, evidence=evidence)


def test_the_same_fact_extracted_twice_folds_into_one_entity_and_one_relation(ontology: Ontology) -> None:
    first = make_snapshot([ALICE, APOLLO], [rel(ALICE, "works_on", APOLLO, 2)], first=1, last=4)
    second = make_snapshot(
        [Entity.create("alice chen", "person", evidence=[6]), APOLLO],
        [rel(ALICE, "works_on", APOLLO, 6)],
        first=5,
        last=8,
    )
    graph = MemoryGraph.fold([first, second], ontology)
    assert [e.key for e in graph.entities()] == ["person:alice-chen", "project:project-apollo"]
    assert len(graph.relations()) == 1
    assert graph.relations()[0].evidence == (2, 6)
    assert graph.entity("person:alice-chen").evidence == (2, 6)  # type: ignore[union-attr]


def test_an_alias_match_merges_entities_and_redirects_relations(ontology: Ontology) -> None:
    bob = Entity.create("Bob", "person", evidence=[1])
    robert = Entity.create("Robert Smith", "person", aliases=["Bob"], evidence=[5])
    graph = MemoryGraph.fold(
        [
            make_snapshot([bob], first=1, last=2),
            make_snapshot([robert, APOLLO], [rel(robert, "works_on", APOLLO, 5)], first=3, last=6),
        ],
        ontology,
    )
    assert [e.key for e in graph.entities() if e.type == "person"] == ["person:bob"]
    assert graph.entity("person:robert-smith").aliases == ("Robert Smith",)  # type: ignore[union-attr]
    assert graph.relations()[0].source == "person:bob"


def test_entities_of_different_types_with_one_name_stay_apart(ontology: Ontology) -> None:
    graph = MemoryGraph.fold(
        [make_snapshot([Entity.create("Apollo", "project"), Entity.create("Apollo", "event")])], ontology
    )
    assert len(graph) == 2


def test_symmetric_relations_dedupe_in_either_direction(ontology: Ontology) -> None:
    bob = Entity.create("Bob", "person")
    graph = MemoryGraph.fold(
        [
            make_snapshot([ALICE, bob], [rel(ALICE, "knows", bob, 2)]),
            make_snapshot([ALICE, bob], [rel(bob, "knows", ALICE, 3)], first=11, last=12),
        ],
        ontology,
    )
    assert len(graph.relations()) == 1


TICKET = Entity.create("T-12", "task", evidence=[2])
OWEN = Entity.create("Owen Park", "person", evidence=[6])


def test_inverse_relations_fold_into_one_edge_in_the_canonical_direction(ontology: Ontology) -> None:
    graph = MemoryGraph.fold(
        [
            make_snapshot([ALICE, TICKET], [rel(ALICE, "works_on", TICKET, 2)], first=1, last=4),
            make_snapshot([ALICE, TICKET], [rel(TICKET, "assigned_to", ALICE, 5)], first=5, last=6),
        ],
        ontology,
    )
    [edge] = graph.relations()
    assert (edge.source, edge.type, edge.target) == (TICKET.key, "assigned_to", ALICE.key)
    assert edge.evidence == (2, 5)
    assert graph.neighbours(ALICE.key) == [TICKET.key]


def test_an_inverse_stated_relation_obeys_the_canonical_types_single_value(ontology: Ontology) -> None:
    graph = MemoryGraph.fold(
        [
            make_snapshot([ALICE, TICKET], [rel(TICKET, "assigned_to", ALICE, 2)], first=1, last=4),
            make_snapshot([OWEN, TICKET], [rel(OWEN, "works_on", TICKET, 6)], first=5, last=7),
        ],
        ontology,
    )
    assert [(r.source, r.type, r.target) for r in graph.relations(current_only=True)] == [
        (TICKET.key, "assigned_to", OWEN.key)
    ]
    closed = next(r for r in graph.relations() if r.target == ALICE.key)
    assert closed.valid_until == 6


def test_an_inverse_whose_ends_do_not_fit_the_canonical_type_is_kept_as_stated(ontology: Ontology) -> None:
    graph = MemoryGraph.fold([make_snapshot([ALICE, APOLLO], [rel(ALICE, "works_on", APOLLO, 2)])], ontology)
    assert [(r.source, r.type, r.target) for r in graph.relations()] == [(ALICE.key, "works_on", APOLLO.key)]


def test_a_newer_single_valued_fact_closes_the_older_one(ontology: Ontology) -> None:
    graph = MemoryGraph.fold(
        [
            make_snapshot([ALICE, BERLIN], [rel(ALICE, "lives_in", BERLIN, 3)], first=1, last=4),
            make_snapshot([ALICE, LISBON], [rel(ALICE, "lives_in", LISBON, 8)], first=5, last=9),
        ],
        ontology,
    )
    by_target = {r.target: r for r in graph.relations()}
    assert by_target[LISBON.key].is_current
    assert by_target[BERLIN.key].valid_until == 8
    assert [r.target for r in graph.relations(current_only=True)] == [LISBON.key]


def test_multi_valued_relations_are_never_superseded(ontology: Ontology) -> None:
    other = Entity.create("Zeus", "project")
    graph = MemoryGraph.fold(
        [
            make_snapshot(
                [ALICE, APOLLO, other], [rel(ALICE, "works_on", APOLLO, 2), rel(ALICE, "works_on", other, 5)]
            )
        ],
        ontology,
    )
    assert all(r.is_current for r in graph.relations())


def test_folding_in_any_order_converges_to_the_same_graph(ontology: Ontology) -> None:
    snapshots = [
        make_snapshot([ALICE, BERLIN], [rel(ALICE, "lives_in", BERLIN, 3)], first=1, last=4),
        make_snapshot([ALICE, APOLLO], [rel(ALICE, "works_on", APOLLO, 5)], first=5, last=6),
        make_snapshot([ALICE, LISBON], [rel(ALICE, "lives_in", LISBON, 8)], first=7, last=9),
    ]
    results = {
        repr((g.entities(), g.relations()))
        for g in (MemoryGraph.fold(order, ontology) for order in itertools.permutations(snapshots))
    }
    assert len(results) == 1


def test_adding_a_snapshot_twice_changes_nothing(ontology: Ontology) -> None:
    graph = MemoryGraph(ontology)
    snapshot = make_snapshot([ALICE])
    assert graph.add(snapshot) is True
    version = graph.version
    assert graph.add(snapshot) is False
    assert graph.version == version and graph.snapshot_count == 1


def test_watermark_is_the_end_of_the_contiguous_extracted_range(ontology: Ontology) -> None:
    graph = MemoryGraph(ontology)
    assert graph.watermark == 0
    graph.add(make_snapshot([], first=1, last=5))
    graph.add(make_snapshot([], first=11, last=15))
    assert graph.watermark == 5  # entries 6-10 are missing: extract them again
    graph.add(make_snapshot([], first=6, last=10))
    assert graph.watermark == 15


def test_ranked_keys_put_recent_and_connected_entities_first(ontology: Ontology) -> None:
    old = Entity.create("Old Friend", "person", evidence=[1])
    graph = MemoryGraph.fold(
        [make_snapshot([old, ALICE, APOLLO], [rel(ALICE, "works_on", APOLLO, 9)])], ontology
    )
    ranked = graph.ranked_keys()
    assert ranked[-1] == old.key
    assert set(ranked[:2]) == {ALICE.key, APOLLO.key}
