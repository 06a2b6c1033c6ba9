from __future__ import annotations

import random

from bub_semantic_memory._models import Entity, Relation
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.memory._render import QuotedLine, render_memory
from tests.conftest import make_snapshot

ALICE = Entity.create("Alice Chen", "person", aliases=["Ali"], attributes={"role": "designer"}, evidence=[2])
APOLLO = Entity.create("Project Apollo", "project", evidence=[2])
BERLIN = Entity.create("Berlin", "location", evidence=[3])
LISBON = Entity.create("Lisbon", "location", evidence=[8])
ZHANG = Entity.create("张伟", "person", evidence=[9])


def graph(ontology: Ontology) -> MemoryGraph:
    return MemoryGraph.fold(
        [
            make_snapshot(
                [ALICE, APOLLO, BERLIN, LISBON, ZHANG],
                [
                    Relation(source=ALICE.key, type="works_on", target=APOLLO.key, evidence=(2,)),
                    Relation(source=ALICE.key, type="lives_in", target=BERLIN.key, evidence=(3,)),
                    Relation(source=ALICE.key, type="lives_in", target=LISBON.key, evidence=(8,)),
                ],
            )
        ],
        ontology,
    )


def test_an_empty_memory_renders_no_block_at_all(ontology: Ontology) -> None:
    block = render_memory(MemoryGraph(ontology), query="anything")
    assert not block and block.text == "" and block.tokens == 0


def test_the_block_shows_entities_facts_and_history(ontology: Ontology) -> None:
    text = render_memory(graph(ontology), query="where does Ali live?").text
    assert text.splitlines()[:6] == [
        "<memory>",
        "Facts remembered from earlier in this conversation (may be incomplete):",
        "- Alice Chen (person; also Ali; role: designer)",
        "  - Alice Chen lives in Lisbon",
        "  - Alice Chen works on Project Apollo",
        "  - (history, until entry 8) Alice Chen lives in Berlin",
    ]
    assert text.endswith("</memory>")


def test_named_entities_and_their_neighbours_come_first(ontology: Ontology) -> None:
    lines = render_memory(graph(ontology), query="Is Project Apollo on track?").text.splitlines()
    entity_lines = [line for line in lines if line.startswith("- ")]
    assert entity_lines[0].startswith("- Project Apollo")
    assert entity_lines[1].startswith("- Alice Chen")


def test_cjk_names_match_inside_unspaced_text(ontology: Ontology) -> None:
    assert graph(ontology).named_in("张伟在哪里工作?") == [ZHANG.key]


def test_the_budget_is_never_exceeded(ontology: Ontology) -> None:
    big = graph(ontology)
    for budget in (60, 120, 200, 400, 800):
        block = render_memory(big, query="Alice", budget=budget)
        assert block.tokens <= budget
        assert estimate_tokens(block.text) == block.tokens


def test_the_budget_holds_with_ten_thousand_entities(ontology: Ontology) -> None:
    rng = random.Random(7)
    people = [Entity.create(f"Person {i}", "person", evidence=[i]) for i in range(10_000)]
    relations = [
        Relation(source=people[i].key, type="knows", target=people[rng.randrange(10_000)].key, evidence=(i,))
        for i in range(10_000)
        for _ in range(3)
    ]
    relations = [r for r in relations if r.source != r.target]
    memory = MemoryGraph.fold([make_snapshot(people, relations, first=1, last=10_000)], ontology)
    block = render_memory(memory, query="what about Person 42?", budget=800)
    assert 0 < block.tokens <= 800
    assert "- Person 42 (person)" in block.text.splitlines()[2]
    assert block.omitted > 9_000


def test_a_fact_stated_from_both_ends_of_an_inverse_pair_is_rendered_once(ontology: Ontology) -> None:
    ticket = Entity.create("T-12", "task", evidence=[4])
    memory = MemoryGraph.fold(
        [
            make_snapshot(
                [ALICE, ticket],
                [
                    Relation(source=ALICE.key, type="works_on", target=ticket.key, evidence=(4,)),
                    Relation(source=ticket.key, type="assigned_to", target=ALICE.key, evidence=(5,)),
                ],
            )
        ],
        ontology,
    )
    text = render_memory(memory, query="What is Alice on?").text
    assert text.splitlines() == [
        "<memory>",
        "Facts remembered from earlier in this conversation (may be incomplete):",
        "- Alice Chen (person; also Ali; role: designer)",
        "  - T-12 assigned to Alice Chen",
        "- T-12 (task)",
        "</memory>",
    ]


def test_passages_take_at_most_their_share_and_leave_the_rest_to_the_facts(ontology: Ontology) -> None:
    rng = random.Random(3)
    people = [Entity.create(f"Person {i}", "person", evidence=[i]) for i in range(300)]
    crowded = MemoryGraph.fold([make_snapshot(people, [], first=1, last=300)], ontology)
    said = [
        f"[{i}] user: line {i} " + " ".join(rng.choice(["tea", "rain", "bus"]) for _ in range(20))
        for i in range(40)
    ]
    facts_only = render_memory(crowded, query="tea", budget=400)
    for share in (50, 100, 200):
        block = render_memory(crowded, query="tea", budget=400, passages=said, passage_budget=share)
        passage_lines = block.text.split("match the latest message:\n")[1].splitlines()[:-1]
        assert 0 < block.passages == len(passage_lines) and block.tokens <= 400
        assert sum(estimate_tokens(line) + 1 for line in passage_lines) <= share
        assert block.entities < facts_only.entities  # the facts gave up what the lines took
    nothing_matched = render_memory(crowded, query="tea", budget=400, passages=[], passage_budget=200)
    assert nothing_matched.text == facts_only.text  # an unused share goes back to the facts


def test_a_line_already_quoted_as_a_passage_is_not_quoted_again_under_its_fact(ontology: Ontology) -> None:
    from bub_semantic_memory.memory._index import MemoryIndex

    memory = graph(ontology)
    index = MemoryIndex(memory)
    said = "[3] user: Alice Chen moved to Berlin in March."
    index.refresh({3: said, 8: "[8] user: Alice moved on to Lisbon."})
    ranking = index.rank("Where did Alice move to Berlin?")
    quoted = render_memory(memory, query="Where did Alice move to Berlin?", budget=800, ranking=ranking)
    assert f"    > {said}" in quoted.text
    both = render_memory(
        memory,
        query="Where did Alice move to Berlin?",
        budget=800,
        ranking=ranking,
        passages=[said],
        passage_budget=200,
    )
    assert both.text.count(said) == 1 and f"  > {said}" in both.text
    anchored = "[3] user: Alice Chen moved to Berlin in March (March 2023)."  # as a dated note quotes it
    dated = render_memory(
        memory,
        query="Where did Alice move to Berlin?",
        budget=800,
        ranking=ranking,
        passages=[QuotedLine(anchored, "Monday 8 May 2023", 3)],
        passage_budget=200,
    )
    assert "[3] user" in dated.text and dated.text.count("[3] user") == 1  # once, under its day
    assert dated.text.splitlines().count("  Monday 8 May 2023:") == 1 and dated.passages == 1


def test_a_passage_the_agent_was_shown_is_left_out(ontology: Ontology) -> None:
    said = "[3] user: Alice Chen moved to Berlin in March."
    block = render_memory(graph(ontology), query="Berlin", budget=800, passages=[said], passage_budget=200)
    assert block.passages == 1
    note = render_memory(
        graph(ontology),
        query="Berlin",
        budget=800,
        passages=[said],
        passage_budget=200,
        shown={f"  > {said}"},
    )
    assert note.passages == 0 and said not in note.text


def test_a_block_stays_within_its_budget_whatever_share_the_lines_get(ontology: Ontology) -> None:
    said = [f"[{i}] user: " + "word " * (i % 7 + 3) for i in range(60)]
    for share in (0.5, 0.9, 1.0):
        for budget in (60, 120, 400):
            block = render_memory(
                graph(ontology),
                query="word",
                budget=budget,
                passages=said,
                passage_budget=int(budget * share),
            )
            assert block.tokens <= budget and block.passages > 0
