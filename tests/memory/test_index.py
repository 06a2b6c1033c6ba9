"""Ranked retrieval over the memory: questions that name nothing, facts that changed, an index that lasts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bub_semantic_memory._models import Entity, Fact, PromptRef, Relation, Snapshot
from bub_semantic_memory.agent._policy import MemoryPolicy
from bub_semantic_memory.agent._search import EMPTY_MEMORY, recall_entity, search_memory
from bub_semantic_memory.agent._service import MemoryService
from bub_semantic_memory.agent._setup import MemorySetup
from bub_semantic_memory.evals.qa import make_memory
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory import _index
from bub_semantic_memory.memory._graph import MemoryGraph, item_id
from bub_semantic_memory.memory._index import Finding, MemoryIndex, asks_about_the_past
from bub_semantic_memory.memory._render import render_memory
from bub_semantic_memory.tape._transcript import render_transcript

ONTOLOGY = PromptLibrary().load("extract@9").ontology
REF = PromptRef(name="extract", version=9, sha256="9" * 64)

MAYA = Entity.create("Maya Lin", "person", evidence=[2])
LENA = Entity.create("Lena", "person", evidence=[4])
PORTO = Entity.create("Porto", "location", evidence=[4])
JONAS = Entity.create("Jonas Weber", "person", aliases=["Jonas"], evidence=[6])
BERLIN = Entity.create("Berlin", "location", evidence=[6])
LISBON = Entity.create("Lisbon", "location", evidence=[9])
LINES = {
    2: "[2] user: I'm Maya Lin.",
    4: "[4] user: My sister Lena just moved to Porto for her new job.",
    6: "[6] user: Jonas Weber lives in Berlin.",
    9: "[9] user: Jonas moved to Lisbon last month.",
}


def snapshot(
    first: int, last: int, entities: list[Entity], relations: list[Relation], tape: str = "t"
) -> Snapshot:
    return Snapshot(
        tape=tape,
        first_entry_id=first,
        last_entry_id=last,
        prompt=REF,
        model="m",
        mode="tools",
        entities=tuple(entities),
        relations=tuple(relations),
    )


FACTS = [
    snapshot(
        1,
        7,
        [MAYA, LENA, PORTO, JONAS, BERLIN],
        [
            Relation(source=MAYA.key, type="family_of", target=LENA.key, evidence=(4,)),
            Relation(source=LENA.key, type="lives_in", target=PORTO.key, evidence=(4,)),
            Relation(source=JONAS.key, type="lives_in", target=BERLIN.key, evidence=(6,)),
        ],
    ),
    snapshot(
        8,
        10,
        [JONAS, LISBON],
        [Relation(source=JONAS.key, type="lives_in", target=LISBON.key, evidence=(9,))],
    ),
]


def memory_with_distractors(count: int) -> tuple[MemoryGraph, dict[int, str]]:
    """The facts above inside ``count`` made-up entities, all told later, and the lines that told them."""
    made_up = make_memory(count, offset=10)
    distractors = [s.model_copy(update={"tape": "t"}) for s in made_up.snapshots]
    lines = {**LINES, **{line.entry_id: line.text for line in render_transcript(made_up.entries).lines}}
    return MemoryGraph.fold([*FACTS, *distractors], ONTOLOGY, tape="t"), lines


def test_a_question_that_names_nothing_finds_its_fact_among_a_thousand_distractors() -> None:
    graph, lines = memory_with_distractors(1000)
    index = MemoryIndex(graph)
    index.refresh(lines)
    question = "Where did my sister move?"
    ranking = index.rank(question)
    assert ranking.facts[0].sentence == "Lena lives in Porto"  # "sister" and "moved" are in its evidence line
    block = render_memory(graph, query=question, budget=800, ranking=ranking)
    assert "Lena lives in Porto" in block.text and "> [4] user: My sister Lena" in block.text
    assert block.tokens <= 800
    # by names and recency alone, the 1,000 more recent distractors fill the block
    assert "Porto" not in render_memory(graph, query=question, budget=800).text


def test_a_superseded_fact_ranks_below_the_current_one_and_above_it_for_the_past() -> None:
    index = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t"))
    index.refresh(LINES)
    now = [
        f
        for f in index.rank("Where does Jonas live?").facts
        if f.type == "lives_in" and "Jonas" in f.sentence
    ]
    assert [(f.sentence, f.current) for f in now] == [
        ("Jonas Weber lives in Lisbon", True),
        ("formerly: Jonas Weber lives in Berlin", False),
    ]
    before = [f for f in index.rank("Where did Jonas live before?").facts if "Jonas" in f.sentence]
    assert before[0].sentence == "formerly: Jonas Weber lives in Berlin" and not before[0].current
    assert before[0].valid_until == 9 and before[0].evidence == (6,)


def test_the_past_is_asked_for_in_words_like_before_and_used_to() -> None:
    assert asks_about_the_past("Where did Jonas live before?")
    assert asks_about_the_past("Who used to handle the Orion ticket?")
    assert asks_about_the_past("Which city did she live in previously?")
    assert not asks_about_the_past("Where does Jonas live now?")


def test_the_index_rewrites_only_what_changed() -> None:
    graph = MemoryGraph.fold(FACTS[:1], ONTOLOGY, tape="t")
    index = MemoryIndex(graph)
    assert index.refresh(LINES) == 5 + 3  # five entities, three facts
    assert index.refresh() == 0  # nothing changed
    graph.add(FACTS[1])
    # Lisbon and the new fact are written; Jonas's Berlin fact changes to "formerly"
    assert index.refresh() == 3
    assert len(index) == 6 + 4


def test_a_finding_is_never_older_than_the_graph_and_the_lines_it_was_built_from() -> None:
    graph = MemoryGraph.fold(FACTS[:1], ONTOLOGY, tape="t")
    index = MemoryIndex(graph)
    index.refresh(LINES)

    def berlin() -> Finding:
        [found] = [f for f in index.facts_of(JONAS.key) if "Berlin" in f.sentence]
        return found

    assert berlin().current and berlin() is berlin()  # remembered between questions
    graph.add(FACTS[1])  # Jonas moves to Lisbon: the Berlin fact is superseded
    assert not berlin().current and berlin().valid_until == 9
    index.refresh({6: "[6] user: Jonas lives in [REDACTED]"})  # the line is redacted again
    assert berlin().evidence_lines == ("[6] user: Jonas lives in [REDACTED]",)


def test_an_index_kept_up_snapshot_by_snapshot_holds_what_one_built_at_the_end_holds() -> None:
    made_up = make_memory(120, offset=10, stated=True)
    jonas = Entity.create("Jonas", "person", evidence=[7])  # merged into "Jonas Weber" by name
    out_of_order = [
        # a relation under a key no entity has yet: an earlier window folded later
        snapshot(
            11, 12, [LISBON], [Relation(source=jonas.key, type="lives_in", target=LISBON.key, evidence=(12,))]
        ),
        snapshot(5, 7, [jonas], []),
        # a relation between two keys that are no entity's: a full read does not find it
        snapshot(
            13, 13, [], [Relation(source="person:bo", type="knows", target="person:cy", evidence=(13,))]
        ),
    ]
    snapshots = [*FACTS, *out_of_order, *(s.model_copy(update={"tape": "t"}) for s in made_up.snapshots)]
    lines = {**LINES, **{line.entry_id: line.text for line in render_transcript(made_up.entries).lines}}
    graph = MemoryGraph(ONTOLOGY, tape="t")
    kept_up = MemoryIndex(graph)
    questions = ("Where did my sister move?", "Where does Jonas live?", "Who plans to visit a place?")
    for number, folded in enumerate(snapshots):
        graph.add(folded)
        said = {entry: text for entry, text in lines.items() if entry <= folded.last_entry_id}
        kept_up.refresh(said, {entry: f"2026-01-{1 + entry % 28:02d}" for entry in said})
        kept_up.rank(questions[number % 3])  # findings remembered from one snapshot to the next
        kept_up.facts_of(graph.resolve(JONAS.key))
        # what the snapshot names, and the other ends of what it superseded (Berlin, when Jonas moves)
        assert (graph.changed_since(graph.version - 1) or set()) >= {
            k for e in folded.entities for k in (e.key, graph.resolve(e.key))
        } | {k for r in folded.relations for k in (graph.resolve(r.source), graph.resolve(r.target))} | {
            graph.resolve(k) for f in folded.facts for k in f.about
        }
    assert BERLIN.key in (graph.changed_since(len(FACTS) - 1) or ())  # Jonas moved to Lisbon (FACTS[1])
    redated = dict.fromkeys((*LINES, *list(lines)[-40:]), "2026-02-02")
    kept_up.refresh({6: "[6] user: Jonas Weber lives in [REDACTED]."}, redated)  # said again
    at_the_end = MemoryIndex(MemoryGraph.fold(snapshots, ONTOLOGY, tape="t"))
    dates = {entry: f"2026-01-{1 + entry % 28:02d}" for entry in lines}
    at_the_end.refresh({**lines, 6: "[6] user: Jonas Weber lives in [REDACTED]."}, {**dates, **redated})
    assert kept_up._texts == at_the_end._texts
    assert {k: sorted(v) for k, v in kept_up._items.items()} == {
        k: sorted(v) for k, v in at_the_end._items.items()
    }
    assert {d: i.entities for d, i in kept_up._items_by_doc.items()} == {
        d: i.entities for d, i in at_the_end._items_by_doc.items()
    }
    for question in questions:
        assert {f.id for f in kept_up.rank(question).facts} == {f.id for f in at_the_end.rank(question).facts}
        assert set(kept_up.rank(question).facts) == set(at_the_end.rank(question).facts)  # what they say, too
    for key in sorted(at_the_end._items):
        assert kept_up.facts_of(key) == at_the_end.facts_of(key), key


def test_an_entitys_facts_in_order_are_those_a_fresh_fold_gives_after_every_fold() -> None:
    """The order is kept from one model call to the next until a fold touches the entity."""
    made_up = make_memory(60, offset=10, stated=True, hub=30)
    jonas = Entity.create("Jonas", "person", evidence=[7])  # merged into "Jonas Weber" by name
    snapshots = [
        *FACTS,
        snapshot(5, 7, [jonas], []),
        *(s.model_copy(update={"tape": "t"}) for s in made_up.snapshots),
    ]
    graph = MemoryGraph(ONTOLOGY, tape="t")

    def in_order(of: MemoryGraph, key: str) -> list[tuple[str, object, tuple[int, ...]]]:
        return [(i, item.valid_until, tuple(sorted(item.evidence))) for i, item in of.facts_in_order(key)]

    for number, folded in enumerate(snapshots, start=1):
        graph.add(folded)
        fresh = MemoryGraph.fold(snapshots[:number], ONTOLOGY, tape="t")
        for key in sorted(graph._nodes):
            assert in_order(graph, key) == in_order(fresh, key), (number, key)
    assert len(graph.facts_in_order(made_up.snapshots[0].entities[0].key)) > 30  # the hub


def test_a_question_about_someone_the_user_knows_finds_what_links_them_as_scoring_every_fact_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The user of a personal tape is related to nearly everyone: of the user's many facts, ranking
    scores only those that can rank, and finds the same facts as scoring all of them."""
    made_up = make_memory(1000, offset=10, stated=True, hub=400)
    user, *others = [e for s in made_up.snapshots for e in s.entities if e.type == "person"]
    # the user under a second key, merged by name: a fact about both is about the user once
    again = Entity(key="person:the-user", name=user.name, type="person", evidence=(9,))
    ritual = Fact(
        statement="A ritual of zebra gardening", kind="event", about=(user.key, again.key), evidence=(9,)
    )
    merged = snapshot(9, 9, [again], []).model_copy(update={"facts": (ritual,)})
    graph = MemoryGraph.fold(
        [*FACTS, merged, *(s.model_copy(update={"tape": "t"}) for s in made_up.snapshots)], ONTOLOGY, tape="t"
    )
    lines = {**LINES, **{line.entry_id: line.text for line in render_transcript(made_up.entries).lines}}
    assert (
        graph.degree(user.key) > _index._NEIGHBOURS_MAX
        and len(graph.facts_in_order(user.key)) > _index._MANY_ITEMS
    )
    questions = [
        f"When did I meet {others[150].name}?",
        f"What is {user.name} up to these days?",
        f"Does {user.name} know {others[0].name}?",
        f"Who around {others[1].name} does {user.name} know?",
        f"What about {user.name}?",
        "Where did my sister move?",
    ]
    index = MemoryIndex(graph)
    index.refresh(lines)
    chosen = [index.rank(question) for question in questions]
    met = {f"{user.name} knows {others[150].name}", f"{others[150].name} knows {user.name}"}  # symmetric
    assert met & {f.sentence for f in chosen[0].facts}
    monkeypatch.setattr(_index, "_MANY_ITEMS", 10**9)
    every_fact = MemoryIndex(graph)
    every_fact.refresh(lines)
    assert [every_fact.rank(question) for question in questions] == chosen


def test_a_fold_names_the_relations_and_facts_it_changed_and_the_entities_to_read_again() -> None:
    """So that a refresh reads what a fold changed, not every fact of each entity it added to
    (the user of a personal tape, related to thousands, is added to by nearly every fold)."""
    graph = MemoryGraph.fold(FACTS[:1], ONTOLOGY, tape="t")
    before = graph.version
    graph.add(FACTS[1])  # Jonas, known, moves to Lisbon, new: the Berlin relation is closed
    renewed, changed = graph.facts_changed_since(before) or (set(), [])
    assert renewed == {LISBON.key}
    assert sorted(item_id(item) for item in changed) == [
        f"r\t{JONAS.key}\tlives_in\t{BERLIN.key}",
        f"r\t{JONAS.key}\tlives_in\t{LISBON.key}",
    ]
    before = graph.version
    graph.add(snapshot(11, 12, [Entity.create("Jonas", "person", evidence=[12])], []))  # merged by name
    assert graph.facts_changed_since(before) == ({"person:jonas", JONAS.key}, [])
    assert graph.facts_changed_since(-1) is None  # before the graph began: read everything


def test_a_graph_that_cannot_say_what_changed_has_its_index_read_again() -> None:
    graph = MemoryGraph.fold(FACTS[:1], ONTOLOGY, tape="t")
    assert graph.changed_since(-1) is None  # before the graph began
    restored = MemoryGraph.from_state(graph.to_state())
    assert restored.changed_since(restored.version) == set()
    assert restored.changed_since(restored.version - 1) is None  # folded before the checkpoint
    index = MemoryIndex(restored)
    index.refresh(LINES)
    restored.add(FACTS[1])
    index.refresh()
    lisbon = index._texts[f"r\t{JONAS.key}\tlives_in\t{LISBON.key}"]
    assert lisbon == "Jonas Weber lives in Lisbon [9] user: Jonas moved to Lisbon last month."


_RANK_IN_A_FRESH_PROCESS = """
from bub_semantic_memory.evals.qa import make_memory
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.memory._index import MemoryIndex
from bub_semantic_memory.memory._render import render_memory

memory = make_memory(300)
graph = MemoryGraph.fold(memory.snapshots, PromptLibrary().load("extract@9").ontology, tape="t")
index = MemoryIndex(graph)
names = [e.name for s in memory.snapshots for e in s.entities][:40]
for name in names:
    question = f"Who does {name} know, and where do they work?"
    ranking = index.rank(question)
    print([f.id for f in ranking.facts])
    print(render_memory(graph, query=question, budget=800, ranking=ranking).text)
"""


@pytest.mark.slow
def test_a_question_gets_the_same_memory_in_every_process() -> None:
    """Ties in BM25 ("knows" facts alike) must not be broken by set order, which Python's string
    hashing changes from one process to the next: the memory QA answers are cached by context."""
    outputs = {
        subprocess.run(
            [sys.executable, "-c", _RANK_IN_A_FRESH_PROCESS],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert len(outputs) == 1


def test_a_word_in_hundreds_of_documents_is_not_searched_for_in_a_large_memory() -> None:
    graph, lines = memory_with_distractors(1000)
    index = MemoryIndex(graph)
    index.refresh(lines)
    managing = sum("manages" in text.split() for text in index._texts.values())
    assert 500 < managing < len(index) // 4  # below a quarter of the memory, and yet common
    assert index.rank("manages").facts == ()
    assert index.rank("Where did my sister move?").facts[0].sentence == "Lena lives in Porto"


def test_word_counts_are_read_once_until_the_index_changes() -> None:
    graph = MemoryGraph.fold(FACTS[:1], ONTOLOGY, tape="t")
    index = MemoryIndex(graph)
    index.refresh(LINES)
    statements: list[str] = []
    index._db.set_trace_callback(statements.append)

    def counts() -> int:
        return sum(sql.startswith("SELECT count(*)") for sql in statements)

    question = "Where does Jonas live now?"
    first = index.rank(question)
    words = counts()
    assert words == 5  # where, does, jonas, live, now
    assert index.rank(question) == first
    assert counts() == words  # none counted again
    graph.add(FACTS[1])
    moved = index.rank(question)
    assert moved.facts[0].sentence == "Jonas Weber lives in Lisbon"
    assert counts() == 2 * words  # the documents changed: every word counted again


def test_a_full_findings_cache_lets_go_of_its_oldest_finding_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Letting go of 4,096 findings at once took 2.5 ms of one model call (benchmarks section 2)."""
    monkeypatch.setattr(_index, "_FINDINGS_KEPT", 3)
    graph = MemoryGraph.fold(FACTS, ONTOLOGY, tape="t")
    index = MemoryIndex(graph)
    index.refresh(LINES)
    found = [finding for key in (MAYA.key, LENA.key, JONAS.key) for finding in index.facts_of(key)]
    assert len(found) > 3
    assert len(index._findings) == 3
    latest = index.facts_of(JONAS.key)
    assert all(again is before for again, before in zip(latest, found[-len(latest) :], strict=True))


def test_a_refresh_lets_go_of_the_findings_a_new_snapshot_changed_and_keeps_the_rest() -> None:
    """So that the first model call after an extraction builds only what changed (building
    twenty findings took 0.19 ms of it at 10,000 entities)."""
    graph = MemoryGraph.fold(FACTS[:1], ONTOLOGY, tape="t")
    index = MemoryIndex(graph)
    index.refresh(LINES)
    lena, jonas = index.facts_of(LENA.key), index.facts_of(JONAS.key)
    graph.add(FACTS[1])  # Jonas moves to Lisbon
    index.refresh({9: LINES[9]})
    assert all(later is earlier for later, earlier in zip(index.facts_of(LENA.key), lena, strict=True))
    moved = index.facts_of(JONAS.key)
    assert len(moved) == len(jonas) + 1 and not any(later in jonas for later in moved)
    assert [f.current for f in moved if "Berlin" in f.sentence] == [False]


def test_the_search_tables_stay_in_few_segments_however_many_small_writes_they_take() -> None:
    """Each write leaves an FTS5 segment behind, and a query reads every segment: after 30
    extractions, a 10,000-entity memory was searched three times slower (benchmarks section 2).
    Merging them changes what is found in no way."""
    made_up = make_memory(400, offset=10)
    lines = {line.entry_id: line.text for line in render_transcript(made_up.entries).lines}
    graph = MemoryGraph(ONTOLOGY, tape="t")
    merged, unmerged = MemoryIndex(graph), MemoryIndex(graph)
    unmerged._compact = lambda *args: None  # type: ignore[method-assign]
    for folded in made_up.snapshots:  # 40 extractions
        graph.add(folded.model_copy(update={"tape": "t"}))
        said = {e: text for e, text in lines.items() if folded.first_entry_id <= e <= folded.last_entry_id}
        merged.refresh(said)
        unmerged.refresh(said)

    def segments(index: MemoryIndex, table: str) -> int:
        return int(index._db.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()[0])

    for table in ("docs", "lines"):
        assert segments(merged, table) <= 5 < 10 <= segments(unmerged, table), table
    for name in made_up.names[::20]:
        question = f"Who does {name} know, and where do they live?"
        assert merged.rank(question) == unmerged.rank(question)
        assert merged.passages(question) == unmerged.passages(question)


async def test_the_index_serves_a_memory_loaded_from_a_checkpoint_as_it_served_the_fresh_fold(
    tmp_path: Path,
) -> None:
    from bub.store import FileTapeStore

    from bub_semantic_memory.stores._store import SnapshotStore

    store = FileTapeStore(tmp_path / "tapes")
    sidecar = SnapshotStore(store)
    for item in FACTS:
        await sidecar.append(item)
    fresh = MemoryService.from_setup(
        MemorySetup(folds_with=ONTOLOGY, policy=MemoryPolicy()), extractor=lambda: None
    )
    await fresh.load("t", store)
    graph = fresh.graph("t")
    assert graph is not None
    assert await sidecar.checkpoint("t", ONTOLOGY)
    restarted = MemoryService.from_setup(
        MemorySetup(folds_with=ONTOLOGY, policy=MemoryPolicy()), extractor=lambda: None
    )
    await restarted.load("t", store)  # a new process: the newest checkpoint, then the tail
    for question in ("Where does Jonas live?", "Where did my sister move?"):
        assert restarted.search("t", question) == fresh.search("t", question)
        assert restarted.block("t", question) == fresh.block("t", question)


def test_search_and_recall_say_when_the_memory_is_empty_or_the_name_unknown() -> None:
    service = MemoryService.from_setup(MemorySetup(folds_with=ONTOLOGY), extractor=lambda: None)
    assert search_memory(service, "t", "anything") == {"error": EMPTY_MEMORY}
    assert recall_entity(service, "t", "Jonas") == {"error": EMPTY_MEMORY}


async def test_recall_gives_every_fact_of_an_entity_current_first(tmp_path: Path) -> None:
    from bub.store import FileTapeStore

    from bub_semantic_memory.stores._store import SnapshotStore

    store = FileTapeStore(tmp_path / "tapes")
    for item in FACTS:
        await SnapshotStore(store).append(item)
    service = MemoryService.from_setup(MemorySetup(folds_with=ONTOLOGY), extractor=lambda: None)
    await service.load("t", store)
    recalled = recall_entity(service, "t", "jonas")
    assert recalled["entity"]["name"] == "Jonas Weber"
    assert [(f["fact"], f["current"]) for f in recalled["facts"]] == [
        ("Jonas Weber lives in Lisbon", True),
        ("formerly: Jonas Weber lives in Berlin", False),
    ]
    assert "no entity named 'Nobody'" in recall_entity(service, "t", "Nobody")["error"]


def test_memory_search_prints_ranked_facts_and_their_json(tmp_path: Path) -> None:
    import asyncio

    from bub.store import FileTapeStore

    from bub_semantic_memory.cli import app
    from bub_semantic_memory.stores._store import SnapshotStore

    store = FileTapeStore(tmp_path / "tapes")
    for item in FACTS:
        asyncio.run(SnapshotStore(store).append(item))
    args = [
        "memory",
        "search",
        "where did Jonas live before",
        "--tape",
        "t",
        "--tapes-dir",
        str(tmp_path / "tapes"),
    ]
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert (
        text.stdout.splitlines()[0]
        == "- formerly: Jonas Weber lives in Berlin (superseded at entry 9)  [entries 6]"
    )
    data = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert set(data) == {"query", "facts", "entities"}
    assert set(data["facts"][0]) == {
        "fact",
        "kind",
        "when",
        "current",
        "entities",
        "type",
        "valid_from",
        "valid_until",
        "evidence",
        "stated",
        "said",
    }
    empty = CliRunner().invoke(
        app, ["memory", "search", "x", "--tape", "none", "--tapes-dir", str(tmp_path / "tapes")]
    )
    assert empty.exit_code == 1 and empty.stderr.splitlines() == [
        "Error: no memory for tape none (no such tape in the store); tapes with a memory: t"
    ]


# -- the tape's own lines, beside the facts ----------------------------------------------------

PLUMBER = "[11] user: The plumber comes on Thursday at 9, the landlord pays for it."


def test_a_note_carries_the_tape_line_that_answers_what_no_fact_holds() -> None:
    graph, lines = memory_with_distractors(1000)
    index = MemoryIndex(graph)
    index.refresh({**lines, 11: PLUMBER})
    question = "When is the plumber coming?"  # no entity, no fact: only the tape says it
    [best, *_] = index.passages(question)
    assert (best.entry_id, best.text) == (11, PLUMBER)
    block = render_memory(
        graph,
        query=question,
        budget=800,
        ranking=index.rank(question),
        passages=[best.text],
        passage_budget=200,
    )
    assert f"  > {PLUMBER}" in block.text and block.passages == 1 and block.tokens <= 800
    assert block.text.index("Thursday at 9") > block.text.index("- ")  # after the facts
    assert (
        "Thursday" not in render_memory(graph, query=question, budget=800, ranking=index.rank(question)).text
    )


def test_new_lines_are_indexed_as_they_come_and_a_changed_line_replaces_its_old_text() -> None:
    index = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t"))
    index.refresh(LINES)
    assert index.passages("plumber Thursday") == ()
    index.refresh({11: PLUMBER})
    assert [p.entry_id for p in index.passages("plumber Thursday")] == [11]
    assert index.line_count == len(LINES) + 1
    index.refresh({11: "[11] user: The plumber comes on [redacted]."})
    assert index.passages("Thursday") == ()
    assert [p.text for p in index.passages("plumber")] == ["[11] user: The plumber comes on [redacted]."]


def test_a_line_that_asks_brings_its_reply_though_the_reply_shares_no_word_with_the_question() -> None:
    index = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t"))
    asked = "[21] assistant: Nice! Do you have any hobbies you love?"
    reply = "[25] user: Besides writing, I enjoy reading and long walks."
    told = "[30] user: My hobbies keep me busy."
    index.refresh({**LINES, 21: asked, 25: reply, 30: told, 31: "[31] user: Reading is slow."})
    found = [p.entry_id for p in index.passages("What are my hobbies?")]
    assert found[found.index(21) + 1] == 25  # right after the line that asked
    assert 31 not in found  # a line that does not ask brings nothing
    replies_extra = [p.entry_id for p in index.passages("What are my hobbies?", limit=2)]
    assert replies_extra == [30, 21, 25]  # the limit counts the lines that match
    index.refresh({26: "[26] user: Oh, and hiking."})  # a line said after the reply
    found = [p.entry_id for p in index.passages("any hobbies you love")]
    assert found[:2] == [21, 25]  # 21's reply is still 25
    assert [p.entry_id for p in index.passages("hobbies busy reading")].count(25) == 1  # once, though matched


def test_the_words_a_question_is_built_of_do_not_outrank_the_word_it_is_about() -> None:
    index = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t"))
    chatter = {40 + i: f"[{40 + i}] user (Joanna): What has made you pick that one, Nate?" for i in range(3)}
    cake = "[70] user (Nate): I tried a new recipe: coconut milk ice cream."
    filler = {100 + i: f"[{100 + i}] user (Joanna): Sounds good to me." for i in range(20)}
    index.refresh({**LINES, **chatter, 70: cake, **filler})
    found = [p.entry_id for p in index.passages("What recipes has Nate made?", limit=3)]
    assert found[0] == 70  # "what", "has": not what the question is about
    assert [p.entry_id for p in index.passages("What was that?", limit=1)] != []  # nothing else to search by


def test_a_question_about_one_sender_gets_their_lines_first_and_the_questions_they_answered() -> None:
    lines = {
        50: "[50] user (Tim): I collect fantasy books, a big collection.",
        51: "[51] user (Tim): My collection of maps keeps growing.",
        60: "[60] user (Tim): Do you collect anything, John?",
        61: "[61] user (John): Sneakers! And jerseys.",
        62: "[62] user (John): I started a collection of DVDs last year, after we moved to the new flat.",
    }
    lines |= {70 + i: f"[{70 + i}] user ({who}): Nice to hear!" for i, who in enumerate(["John", "Tim"] * 6)}
    senders = {entry: text.split("(")[1].split(")")[0] for entry, text in lines.items()}
    named = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t"))
    named.refresh({**LINES, **lines}, senders=senders)
    plain = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t"))
    plain.refresh({**LINES, **lines})  # a tape that names no sender (a personal tape: "user")

    def found(index: MemoryIndex, question: str) -> list[int]:
        return [p.entry_id for p in index.passages(question, limit=4)]

    question = "What items does John collect?"
    assert found(plain, question).index(62) > found(plain, question).index(50)  # BM25 alone
    first = found(named, question)
    assert set(first[:3]) == {60, 61, 62} and set(first[3:]) == {50, 51}  # John's, then the rest on topic
    assert not any(entry >= 70 for entry in first)  # a line of his that is not about it stays out
    for other in ("What do Tim and John collect?", "Who is John?", "What items does john collect?"):
        assert found(named, other) == found(plain, other)  # two names, nothing but the name, not as written


def test_a_sender_is_told_by_the_longest_name_a_question_holds_and_never_by_a_function_word() -> None:
    lines = {
        80: "[80] user (Ann): I collect stamps, Mary Ann.",  # short: BM25's best for all three words
        81: "[81] user (Mary Ann): My collection of old maps grows every year since we moved.",
        82: "[82] user (Will): I collect coins, and so does Ann.",
    }
    senders = {entry: text.split("(")[1].split(")")[0] for entry, text in lines.items()}
    index = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t"))
    index.refresh({**LINES, **lines}, senders=senders)
    plain = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t"))
    plain.refresh({**LINES, **lines})

    def first(index: MemoryIndex, question: str) -> int:
        return index.passages(question, limit=1)[0].entry_id

    assert first(index, "What does Mary Ann collect?") == 81  # "Ann" inside "Mary Ann" is not a second name
    assert first(plain, "What does Mary Ann collect?") == 80
    question = "Will Ann collect anything?"  # "Will" asks; it names no one
    assert first(index, question) == 80 == first(plain, question)


def test_a_named_senders_line_a_forget_hides_is_not_brought_forward() -> None:
    from bub_semantic_memory.memory._edit_builder import forget_entity

    before = MemoryGraph.fold(FACTS, ONTOLOGY, tape="t")
    forgotten = forget_entity(before, LENA.key, at=30, by="test")
    index = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t", edits=[forgotten]))
    lines = {
        21: "[21] user (Nate): My sister Lena collects stamps.",
        22: "[22] user (Nate): I collect old comics now.",
        23: "[23] user (Joanna): I collect shells.",
    }
    index.refresh({**LINES, **lines}, senders={21: "Nate", 22: "Nate", 23: "Joanna"})
    found = [p.entry_id for p in index.passages("What does Nate collect?", limit=3)]
    assert found[0] == 22 and 21 not in found and 23 in found


def test_the_us_is_a_word_to_search_for() -> None:
    index = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t"))
    index.refresh({**LINES, 90: "[90] user: The US was great, we loved it."})
    assert [p.entry_id for p in index.passages("When did they visit the US?")] == [90]


def test_a_reply_a_forget_hides_is_not_brought_by_the_line_that_asked() -> None:
    from bub_semantic_memory.memory._edit_builder import forget_entity

    before = MemoryGraph.fold(FACTS, ONTOLOGY, tape="t")
    forgotten = forget_entity(before, LENA.key, at=30, by="test")
    index = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t", edits=[forgotten]))
    index.refresh(
        {
            **LINES,
            21: "[21] assistant: Where does your sister live now?",
            25: "[25] user: Lena lives in Porto.",
        }
    )
    found = [p.entry_id for p in index.passages("Where does my sister live?")]
    assert 21 in found and 25 not in found


def test_a_line_that_names_a_forgotten_entity_is_not_shown_unless_said_after_the_forget() -> None:
    from bub_semantic_memory.memory._edit_builder import forget_entity

    before = MemoryGraph.fold(FACTS, ONTOLOGY, tape="t")
    forgotten = forget_entity(before, LENA.key, at=7, by="test")
    index = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t", edits=[forgotten]))
    said_again = "[12] user: Lena called again about Porto."
    index.refresh({**LINES, 12: said_again})
    found = [p.entry_id for p in index.passages("Where did Lena move? Porto")]
    assert 12 in found and 4 not in found  # line 4 said it before the forget, line 12 after
    unforgotten = MemoryIndex(before)
    unforgotten.refresh(LINES)
    assert 4 in [p.entry_id for p in unforgotten.passages("Where did Lena move? Porto")]


async def test_the_plugins_note_for_a_question_that_names_nothing_quotes_the_tape(tmp_path: Path) -> None:
    from bub.store import FileTapeStore
    from bub.tape import TapeEntry

    from bub_semantic_memory.stores._store import SnapshotStore

    store = FileTapeStore(tmp_path / "tapes")
    for entry_id in range(1, 12):
        text = {4: "My sister Lena just moved to Porto.", 11: "The plumber comes on Thursday at 9."}.get(
            entry_id, f"Message {entry_id}."
        )
        store.append("t", TapeEntry(entry_id, "message", {"role": "user", "content": text}, {}, ""))
    for item in FACTS:
        await SnapshotStore(store).append(item)
    default = MemoryService.from_setup(
        MemorySetup(folds_with=ONTOLOGY, policy=MemoryPolicy()), extractor=lambda: None
    )
    await default.load("t", store)
    assert "Thursday at 9" in default.block("t", "When is the plumber coming?")
    facts_only = MemoryService.from_setup(
        MemorySetup(folds_with=ONTOLOGY, policy=MemoryPolicy(passage_share=0.0)), extractor=lambda: None
    )
    await facts_only.load("t", store)
    assert "Thursday" not in facts_only.block("t", "When is the plumber coming?")
    assert "Lena" in facts_only.block("t", "When is the plumber coming?")  # the facts are still there


def test_a_forget_hides_lines_that_use_a_first_name_and_the_lines_of_a_forgotten_relation() -> None:
    from bub_semantic_memory.memory._edit_builder import forget_entity, forget_relation

    before = MemoryGraph.fold(FACTS, ONTOLOGY, tape="t")
    question = "Where does Jonas live? Lisbon Berlin"
    entity = MemoryIndex(
        MemoryGraph.fold(FACTS, ONTOLOGY, tape="t", edits=[forget_entity(before, JONAS.key, at=20, by="t")])
    )
    entity.refresh(LINES)
    assert [
        p.entry_id for p in entity.passages(question)
    ] == []  # "Jonas moved to Lisbon" names him by first name
    relation = forget_relation(before, (JONAS.key, "lives_in", BERLIN.key), at=20, by="t")
    assert relation.lines == (6,)
    index = MemoryIndex(MemoryGraph.fold(FACTS, ONTOLOGY, tape="t", edits=[relation]))
    index.refresh(LINES)
    assert [p.entry_id for p in index.passages(question)] == [9]  # line 6 said the forgotten relation


async def test_the_lines_a_note_quotes_are_redacted_by_the_patterns_extraction_uses(tmp_path: Path) -> None:
    from bub.store import FileTapeStore
    from bub.tape import TapeEntry

    from bub_semantic_memory.stores._store import SnapshotStore
    from bub_semantic_memory.tape._redact import Redactor

    store = FileTapeStore(tmp_path / "tapes")
    for entry_id in range(1, 12):
        text = "The plumber's door code is DOOR-4471." if entry_id == 11 else f"Message {entry_id}."
        store.append("t", TapeEntry(entry_id, "message", {"role": "user", "content": text}, {}, ""))
    for item in FACTS:
        await SnapshotStore(store).append(item)
    setup = MemorySetup(folds_with=ONTOLOGY, redactor=Redactor([r"DOOR-\d+"]))
    service = MemoryService.from_setup(setup, extractor=lambda: None)
    await service.load("t", store)
    block = service.block("t", "What is the plumber's door code?")
    assert "plumber's door code" in block and "DOOR-4471" not in block
