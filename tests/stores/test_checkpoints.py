"""Checkpointed loads: the fold after a checkpoint equals the full fold; a bad checkpoint only costs time."""

from __future__ import annotations

import hashlib
import json

import pytest
from bub.store import FileTapeStore
from bub.tape import TapeEntry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bub_semantic_memory._models import Entity, Relation, Snapshot
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores._checkpoint import (
    CHECKPOINT_ANCHOR,
    CHECKPOINT_VERSION,
    CheckpointError,
    decode_checkpoint,
    encode_checkpoint,
)
from bub_semantic_memory.stores._store import SnapshotStore, memory_tape_name
from tests.conftest import make_snapshot
from tests.stores.conftest import Backend

TAPE = "0123456789abcdef__aaaabbbbccccdddd"
ONTOLOGY = PromptLibrary().load("extract").ontology
NAMES = [
    "Alice Chen",
    "Alice",
    "Bob",
    "The Globex",
    "Globex",
    "Lisbon",
    "Porto",
    "Maya Lin",
    "Maya",
    "Apollo",
]
TYPES = ["person", "organization", "location", "project", "task"]
RELATIONS = [
    "knows",
    "lives_in",
    "works_for",
    "partner_of",
    "uses",
    "family_of",
    "member_of",
    "works_on",  # with assigned_to, an inverse pair: stored in one direction
    "assigned_to",
    "manages",
    "reports_to",
]


@st.composite
def snapshot_sequences(draw: st.DrawFn) -> list[Snapshot]:
    """Snapshots over a small pool of names (so aliases, merges and supersessions happen), ranges in any order."""
    count = draw(st.integers(1, 14))
    snapshots = []
    for index in range(count):
        first = draw(st.integers(1, 60))
        last = first + draw(st.integers(0, 5))
        entities = []
        for _ in range(draw(st.integers(0, 4))):
            name, kind = draw(st.sampled_from(NAMES)), draw(st.sampled_from(TYPES))
            aliases = draw(st.lists(st.sampled_from(NAMES), max_size=2))
            evidence = draw(st.lists(st.integers(first, last), max_size=2))
            attributes = draw(
                st.dictionaries(st.sampled_from(["role", "city"]), st.sampled_from(["a", "b"]), max_size=1)
            )
            entities.append(
                Entity.create(name, kind, aliases=aliases, evidence=evidence, attributes=attributes)
            )
        relations = []
        if len(entities) >= 2:
            for _ in range(draw(st.integers(0, 3))):
                source, target = draw(st.permutations(entities))[:2]
                relations.append(
                    Relation(
                        source=source.key,
                        type=draw(st.sampled_from(RELATIONS)),
                        target=target.key,
                        evidence=tuple(sorted(set(draw(st.lists(st.integers(first, last), max_size=2))))),
                    )
                )
        snapshots.append(
            make_snapshot(entities, relations, tape=TAPE, first=first, last=last, sha=f"{index:064d}")
        )
    return snapshots


def state_of(graph: MemoryGraph) -> str:
    return json.dumps(graph.to_state(), sort_keys=False)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # the default suite is deterministic: the same 150 sequences every run
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(snapshot_sequences(), st.data())
def test_the_fold_after_a_checkpoint_equals_the_full_fold(
    snapshots: list[Snapshot], data: st.DataObject
) -> None:
    split = data.draw(st.integers(0, len(snapshots)))
    full = MemoryGraph.fold(snapshots, ONTOLOGY, tape=TAPE)
    head = MemoryGraph.fold(snapshots[:split], ONTOLOGY, tape=TAPE)
    stored = json.loads(json.dumps(encode_checkpoint(head, through=split)))  # through a store and back
    resumed = decode_checkpoint(stored, ONTOLOGY, tape=TAPE).graph
    for snapshot in snapshots[split:]:
        resumed.add(snapshot)
    assert state_of(resumed) == state_of(full)
    assert resumed.watermark == full.watermark and resumed.snapshot_count == full.snapshot_count
    assert [e.key for e in resumed.entities()] == [e.key for e in full.entities()]
    assert resumed.relations() == full.relations() and resumed.ranked_keys() == full.ranked_keys()


def stream(count: int, start: int = 1) -> list[Snapshot]:
    people = [Entity.create(f"Person {i % 7}", "person", evidence=[start + i]) for i in range(count)]
    return [
        make_snapshot(
            [person, Entity.create(f"City {i % 3}", "location")],
            [
                Relation(
                    source=person.key, type="lives_in", target=f"location:city-{i % 3}", evidence=(start + i,)
                )
            ],
            tape=TAPE,
            first=start + i,
            last=start + i,
        )
        for i, person in enumerate(people)
    ]


async def test_a_cold_load_reads_the_checkpoint_and_only_the_snapshots_after_it(backend: Backend) -> None:
    head, tail = stream(30), stream(10, start=31)
    async with backend.open() as store:
        memory = SnapshotStore(store)
        for snapshot in head:
            await memory.append(snapshot)
        assert await memory.checkpoint(TAPE, ONTOLOGY)
        assert not await memory.checkpoint(TAPE, ONTOLOGY)  # nothing new since: no second checkpoint
        for snapshot in tail:
            await memory.append(snapshot)
    async with backend.open() as store:
        loaded = await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)
        everything, _ = await SnapshotStore(store).load(TAPE)
    assert loaded.report.issues == [] and loaded.checkpoint_through == 30 and loaded.tail_snapshots == 10
    assert [s.id for s in everything] == [s.id for s in head + tail]  # a checkpoint is not a snapshot
    assert state_of(loaded.graph) == state_of(MemoryGraph.fold(head + tail, ONTOLOGY, tape=TAPE))


def _tampered(reason: str, graph: MemoryGraph, through: int) -> dict[str, object]:
    state = encode_checkpoint(graph, through)
    if reason == "hash":
        state["graph"] = str(state["graph"]).replace("Person 1", "Person X")  # a flipped fact, same length
    elif reason == "version":
        state["version"] = CHECKPOINT_VERSION + 1
    elif reason == "ontology":
        rules = ONTOLOGY.model_dump()
        rules["relation_types"]["lives_in"]["single_valued"] = False
        state = encode_checkpoint(MemoryGraph.fold([], Ontology.model_validate(rules)), through) | {
            "graph": state["graph"]
        }
    elif reason == "malformed":
        text = '{"nodes": 3}'
        state |= {"graph": text, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    return state


@pytest.mark.parametrize("reason", ["hash", "version", "ontology", "malformed"])
async def test_a_bad_checkpoint_is_reported_and_the_snapshots_are_folded_instead(
    backend: Backend, reason: str
) -> None:
    snapshots = stream(12)
    async with backend.open() as store:
        memory = SnapshotStore(store)
        for snapshot in snapshots[:8]:
            await memory.append(snapshot)
        fake = _tampered(reason, MemoryGraph.fold(snapshots[:2], ONTOLOGY, tape=TAPE), through=8)
        await memory._append_entry(TAPE, lambda _: TapeEntry.anchor(CHECKPOINT_ANCHOR, fake))
        for snapshot in snapshots[8:]:
            await memory.append(snapshot)
        loaded = await memory.load_graph(TAPE, ONTOLOGY)
    assert loaded.report.counts == {"bad_checkpoint": 1} and loaded.checkpoint_through == 0
    assert loaded.tail_snapshots == 12  # nothing lost: every snapshot folded
    assert state_of(loaded.graph) == state_of(MemoryGraph.fold(snapshots, ONTOLOGY, tape=TAPE))


def test_a_checkpoint_folded_without_inverse_types_is_not_used_under_them() -> None:
    data = ONTOLOGY.model_dump()
    del data["relation_types"]["assigned_to"], data["relation_types"]["reports_to"]
    plain = Ontology.model_validate(data)
    assert not plain.inverses and ONTOLOGY.inverses
    stored = encode_checkpoint(MemoryGraph.fold(stream(2), plain, tape=TAPE), through=2)
    with pytest.raises(CheckpointError, match="other relation rules"):
        decode_checkpoint(stored, ONTOLOGY, tape=TAPE)


async def test_a_torn_checkpoint_line_in_a_file_store_falls_back_to_the_snapshots(tmp_path) -> None:
    memory = SnapshotStore(FileTapeStore(tmp_path))
    for snapshot in stream(5):
        await memory.append(snapshot)
    assert await memory.checkpoint(TAPE, ONTOLOGY)
    path = tmp_path / f"{memory_tape_name(TAPE)}.jsonl"
    path.write_bytes(path.read_bytes()[:-200])  # the writer died inside the checkpoint line
    loaded = await memory.load_graph(TAPE, ONTOLOGY)
    assert loaded.checkpoint_through == 0 and loaded.tail_snapshots == 5
    assert loaded.report.counts == {"malformed_json": 1}
    assert state_of(loaded.graph) == state_of(MemoryGraph.fold(stream(5), ONTOLOGY, tape=TAPE))
