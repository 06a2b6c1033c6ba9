"""A person's edits folded with the snapshots: forget, set, unset, merge, end, undo, and their order."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from bub.store import InMemoryTapeStore
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bub_semantic_memory._edits import Edit
from bub_semantic_memory._errors import EditError
from bub_semantic_memory._models import Entity, Fact, PromptRef, Relation, Snapshot
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory import _edit_builder as build
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores._store import SnapshotStore
from tests.conftest import make_snapshot
from tests.stores.test_checkpoints import snapshot_sequences

ONTOLOGY = PromptLibrary().load("extract").ontology
TAPE = "0123456789abcdef__1111222233334444"
ALICE = Entity.create("Alice Chen", "person", aliases=["Ali"], attributes={"role": "designer"}, evidence=[2])
LISBON = Entity.create("Lisbon", "location", evidence=[2])
PORTO = Entity.create("Porto", "location", evidence=[9])
BOB = Entity.create("Bob Stone", "person", attributes={"manager": "Alice Chen"}, evidence=[3])
MOVED = Fact(
    statement="Alice Chen moved to Lisbon", kind="event", about=(ALICE.key, LISBON.key), evidence=(2,)
)
BOB_FACT = Fact(statement="Bob Stone plays the piano", kind="event", about=(BOB.key,), evidence=(3,))


def lives(who: Entity, where: Entity, *evidence: int) -> Relation:
    return Relation(source=who.key, type="lives_in", target=where.key, evidence=evidence)


def early(sha: str = "0" * 64) -> Snapshot:
    """Entries 1-4: Alice Chen lives in Lisbon, Bob's manager is Alice."""
    return make_snapshot(
        [ALICE, LISBON, BOB],
        [lives(ALICE, LISBON, 2), lives(BOB, LISBON, 3)],
        tape=TAPE,
        first=1,
        last=4,
        sha=sha,
    ).model_copy(update={"facts": (MOVED, BOB_FACT)})


def fold(*snapshots: Snapshot, edits: list[Edit] | tuple[Edit, ...] = ()) -> MemoryGraph:
    return MemoryGraph.fold(snapshots, ONTOLOGY, tape=TAPE, edits=edits)


def forget(graph: MemoryGraph, name: str, at: int) -> Edit:
    return build.forget_entity(graph, build.find_entity(graph, name), at=at, by="test")


def test_a_forgotten_entity_leaves_with_its_relations_attributes_and_facts() -> None:
    before = fold(early())
    edit = forget(before, "Ali", at=4)  # found by an alias
    after = fold(early(), edits=[edit])
    assert [e.key for e in after.entities()] == ["location:lisbon", "person:bob-stone"]
    assert [r.key for r in after.relations()] == [("person:bob-stone", "lives_in", "location:lisbon")]
    assert [f.statement for f in after.facts()] == ["Bob Stone plays the piano"]
    assert after.entity("person:bob-stone").attributes == {}  # type: ignore[union-attr]  # "manager: Alice Chen" named her
    assert after.lookup("Ali") == [] and after.lookup("Alice Chen") == []
    changed = build.changes(before, after)
    assert changed.entities_removed == ["person:alice-chen"]
    assert changed.facts_removed == ["Alice Chen moved to Lisbon"]
    assert changed.counts() == "1 entity removed, 1 relation removed, 1 fact removed, 1 attribute changed"


def test_extracting_old_entries_again_never_brings_a_forgotten_entity_back() -> None:
    edit = forget(fold(early()), "Alice Chen", at=6)
    again = early(sha="1" * 64)  # the same entries, another prompt: another snapshot id
    by_alias = make_snapshot([Entity.create("Ali", "person", evidence=[5])], tape=TAPE, first=5, last=6)
    graph = fold(early(), again, by_alias, edits=[edit])
    assert graph.lookup("Alice Chen") == [] and graph.lookup("Ali") == []
    assert graph.snapshot_count == 3 and graph.watermark == 6  # covered: nothing is extracted again


def test_a_later_mention_brings_the_entity_back_with_only_what_it_said() -> None:
    edit = forget(fold(early()), "Alice Chen", at=6)
    later = make_snapshot(
        [Entity.create("Alice Chen", "person", evidence=[5, 8]), PORTO],
        [lives(ALICE, PORTO, 8)],
        tape=TAPE,
        first=5,
        last=9,
    )
    graph = fold(early(), later, edits=[edit])
    alice = graph.entity("person:alice-chen")
    assert alice is not None and alice.evidence == (8,) and alice.attributes == {} and alice.aliases == ()
    assert [r.key for r in graph.relations() if r.source == alice.key] == [
        (alice.key, "lives_in", "location:porto")
    ]


def test_snapshots_folded_before_and_after_the_edit_meet_the_same_rules() -> None:
    edit = forget(fold(early()), "Alice Chen", at=6)
    later = make_snapshot([Entity.create("Alice Chen", "person", evidence=[8])], tape=TAPE, first=7, last=9)
    orders = [fold(early(), later, edits=[edit]), fold(later, early(), edits=[edit])]
    states = {json.dumps(g.entities(), default=str) + json.dumps(g.relations(), default=str) for g in orders}
    assert len(states) == 1


def test_a_set_attribute_wins_over_extraction_until_it_is_unset() -> None:
    graph = fold(early())
    pinned = build.set_attribute(graph, "person:alice-chen", "role", "lead", at=4, by="test")
    later = make_snapshot(
        [Entity.create("Alice Chen", "person", attributes={"role": "intern"}, evidence=[8])],
        tape=TAPE,
        first=5,
        last=9,
    )
    assert fold(early(), later, edits=[pinned]).entity(ALICE.key).attributes["role"] == "lead"  # type: ignore[union-attr]
    dropped = build.unset_attribute(fold(early(), edits=[pinned]), ALICE.key, "role", at=6, by="test")
    unset = fold(early(), edits=[pinned, dropped])
    assert "role" not in unset.entity(ALICE.key).attributes  # type: ignore[union-attr]  # neither pin nor the value of entry 2
    assert fold(early(), later, edits=[pinned, dropped]).entity(ALICE.key).attributes["role"] == "intern"  # type: ignore[union-attr]


def test_a_merge_makes_one_entity_and_a_split_makes_two_again() -> None:
    ally = Entity.create("Ally C", "person", evidence=[7])
    later = make_snapshot([ally, PORTO], [lives(ally, PORTO, 7)], tape=TAPE, first=5, last=8)
    before = fold(early(), later)
    merge = build.merge_entities(before, ALICE.key, ally.key, at=8, by="test")
    merged = fold(early(), later, edits=[merge])
    alice = merged.entity(ALICE.key)
    assert alice is not None and "Ally C" in alice.aliases and merged.lookup("Ally C") == [ALICE.key]
    assert (ALICE.key, "lives_in", "location:porto") in {r.key for r in merged.relations(current_only=True)}
    assert merged.entity(ally.key) == alice  # the old key resolves to the kept entity
    split = build.split_entities(merged, ALICE.key, "Ally C", at=9, by="test")
    assert split.undoes == merge.id
    apart = fold(early(), later, edits=[merge, split])
    assert {e.key for e in apart.entities()} == {e.key for e in before.entities()}


def test_an_ended_relation_is_closed_until_it_is_stated_again() -> None:
    graph = fold(early())
    ended = build.end_relation(graph, (ALICE.key, "lives_in", LISBON.key), until=5, at=6, by="test")
    closed = fold(early(), edits=[ended])
    relation = next(r for r in closed.relations() if r.source == ALICE.key)
    assert relation.valid_until == 5 and not relation.is_current
    again = make_snapshot([ALICE, LISBON], [lives(ALICE, LISBON, 9)], tape=TAPE, first=7, last=9)
    assert next(
        r for r in fold(early(), again, edits=[ended]).relations() if r.source == ALICE.key
    ).is_current


def test_undoing_a_forget_brings_everything_back() -> None:
    before = fold(early())
    edit = forget(before, "Alice Chen", at=4)
    undo = build.undo_edit(fold(early(), edits=[edit]), edit, at=5, by="test")
    restored = fold(early(), edits=[edit, undo])
    assert restored.entities() == before.entities() and restored.facts() == before.facts()
    with pytest.raises(EditError, match="undone already"):
        build.undo_edit(restored, edit, at=6, by="test")
    with pytest.raises(EditError, match="is an undo"):
        build.undo_edit(restored, undo, at=6, by="test")


def test_a_forget_voids_the_earlier_corrections_of_the_entity() -> None:
    graph = fold(early())
    pinned = build.set_attribute(graph, ALICE.key, "role", "lead", at=4, by="test")
    edit = forget(graph, "Alice Chen", at=5)
    later = make_snapshot([Entity.create("Alice Chen", "person", evidence=[8])], tape=TAPE, first=6, last=9)
    again = fold(early(), later, edits=[pinned, edit])
    assert again.entity(ALICE.key).attributes == {}  # type: ignore[union-attr]
    assert not again.edits.is_effective(pinned) and again.edits.is_effective(edit)


def test_forgetting_a_relation_or_a_fact_leaves_the_entities() -> None:
    graph = fold(early())
    relation = build.forget_relation(
        graph, build.find_relation(graph, "Alice Chen", "lives_in", "Lisbon"), at=4, by="t"
    )
    fact = build.forget_fact(graph, build.find_fact(graph, "alice chen moved to lisbon!"), at=4, by="t")
    reworded = make_snapshot([ALICE, LISBON], tape=TAPE, first=1, last=4, sha="2" * 64).model_copy(
        update={
            "facts": (
                Fact(
                    statement="Alice Chen moved to Lisbon.", kind="event", about=(ALICE.key,), evidence=(3,)
                ),
            )
        }
    )
    after = fold(early(), reworded, edits=[relation, fact])
    assert {e.key for e in after.entities()} == {e.key for e in graph.entities()}
    assert [r.source for r in after.relations()] == [BOB.key]
    assert [f.statement for f in after.facts()] == ["Bob Stone plays the piano"]


def test_a_purged_forget_recognises_what_it_forgot_by_digests_alone() -> None:
    edit = forget(fold(early()), "Alice Chen", at=6)
    purged = edit.redacted()
    text = purged.model_dump_json()
    assert purged.id == edit.id and purged.purged and "alice" not in text.lower()
    assert (
        purged.named_in("Alice Chen") and purged.named_in("ms. chen's notes") and edit.named_in("I met ali")
    )
    assert not purged.named_in("Bob Stone plays the piano")
    graph = fold(early(), early(sha="3" * 64), edits=[purged])
    assert graph.lookup("Alice Chen") == [] and [f.statement for f in graph.facts()] == [
        "Bob Stone plays the piano"
    ]


def test_builders_refuse_what_the_memory_does_not_hold() -> None:
    graph = fold(early())
    with pytest.raises(EditError, match="no entity named 'Carol'"):
        build.find_entity(graph, "Carol")
    with pytest.raises(EditError, match="no relation"):
        build.find_relation(graph, "Bob Stone", "works_for", "Lisbon")
    with pytest.raises(EditError, match="no fact like"):
        build.find_fact(graph, "Carol sings")
    with pytest.raises(EditError, match="already one entity"):
        build.merge_entities(graph, "person:alice-chen", "person:alice-chen", at=1, by="t")
    with pytest.raises(EditError, match="no attribute 'age'"):
        build.unset_attribute(graph, BOB.key, "age", at=1, by="t")
    twins = fold(
        make_snapshot([Entity.create("Apollo", "project"), Entity.create("Apollo", "event")], tape=TAPE)
    )
    with pytest.raises(EditError, match="names 2 entities"):
        build.find_entity(twins, "Apollo")
    assert build.find_entity(twins, "Apollo", entity_type="event") == "event:apollo"


def test_edits_apply_in_order_of_position_then_time() -> None:
    graph = fold(early())
    now = datetime.now(UTC)
    first = build.set_attribute(graph, ALICE.key, "role", "lead", at=4, by="t")
    second = Edit.model_validate(
        first.model_dump(exclude={"id"}) | {"value": "cto", "created_at": now + timedelta(1)}
    )
    unset = build.unset_attribute(graph, ALICE.key, "role", at=3, by="t")  # earlier position: applies first
    for edits in ([first, second, unset], [unset, second, first]):
        assert fold(early(), edits=edits).entity(ALICE.key).attributes["role"] == "cto"  # type: ignore[union-attr]


def test_a_checkpointed_graph_keeps_its_edits() -> None:
    edit = forget(fold(early()), "Alice Chen", at=6)
    graph = fold(early(), edits=[edit])
    restored = MemoryGraph.from_state(json.loads(json.dumps(graph.to_state())), ONTOLOGY, tape=TAPE)
    assert edit.id in restored.edits
    restored.add(early(sha="4" * 64))  # extracted again after the checkpoint
    assert restored.lookup("Alice Chen") == []


# -- out of order: any interleaving of snapshots, edits and checkpoints in a sidecar ------------------


def _edits_for(snapshots: list[Snapshot], data: st.DataObject) -> list[Edit]:
    draw = data.draw
    graph = MemoryGraph.fold(snapshots, ONTOLOGY, tape=snapshots[0].tape)
    keys = [e.key for e in graph.entities()]
    edits: list[Edit] = []
    for _ in range(draw(st.integers(1, 3))):
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        at = draw(st.integers(0, 70))
        kind = draw(st.sampled_from(["forget", "set", "forget-relation"]))
        if kind == "set":
            edits.append(build.set_attribute(graph, key, "role", "x", at=at, by="t"))
        elif kind == "forget-relation" and graph.relation_count:
            relation = draw(st.sampled_from(graph.relations()))
            edits.append(build.forget_relation(graph, relation.key, at=at, by="t"))
        else:
            edits.append(build.forget_entity(graph, key, at=at, by="t"))
    return edits


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(snapshot_sequences(), st.data())
async def test_any_interleaving_in_the_sidecar_loads_the_fold_under_every_edit(
    snapshots: list[Snapshot], data: st.DataObject
) -> None:
    tape = snapshots[0].tape
    edits = _edits_for(snapshots, data)
    expected = MemoryGraph.fold(snapshots, ONTOLOGY, tape=tape, edits=edits)
    store = SnapshotStore(InMemoryTapeStore())
    pending = list(edits)
    for snapshot in snapshots:
        while pending:
            if not data.draw(st.booleans()):
                break
            await store.append_edit(pending.pop(0))
        await store.append(snapshot)
        if data.draw(st.integers(0, 3)) == 0:
            await store.checkpoint(tape, ONTOLOGY)
    for edit in pending:
        await store.append_edit(edit)
    loaded = await store.load_graph(tape, ONTOLOGY)
    assert loaded.graph.entities() == expected.entities()
    assert loaded.graph.relations() == expected.relations()
    assert loaded.graph.facts() == expected.facts()


def test_an_import_snapshot_that_was_undone_folds_as_nothing() -> None:
    imported = Snapshot(
        tape=TAPE,
        first_entry_id=0,
        last_entry_id=0,
        prompt=PromptRef(name="import", version=1, sha256="9" * 64),
        model="import",
        mode="import",
        entities=(Entity.create("Carol", "person"),),
    )
    edit = Edit(tape=TAPE, op="import", at=4, by="t", snapshot=imported.id)
    undo = Edit(tape=TAPE, op="undo", at=5, by="t", undoes=edit.id)
    assert fold(early(), imported, edits=[edit]).lookup("Carol") == ["person:carol"]
    graph = fold(early(), imported, edits=[edit, undo])
    assert graph.lookup("Carol") == [] and graph.watermark == 4  # an import covers no entry
    later_start = make_snapshot([ALICE], tape=TAPE, first=3, last=6)
    assert fold(later_start, imported).watermark == fold(later_start).watermark == 6
