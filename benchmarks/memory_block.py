"""3. Memory block: its size against the memory's size, and which answers survive the budget.

* **Size**: synthetic memories of 100, 1,000 and 10,000 entities (3 relations each) are
  rendered with :func:`render_memory` for unique queries (entity names present, absent, or
  none) at budgets of 200, 400 and 800 tokens; the block's estimated tokens must never exceed
  the budget. The published design's block (every snapshot rendered) is sized alongside.
* **Answer survival**: for every eval fixture whose ``gold.json`` carries questions answered
  by a gold fact (the answer is a gold name, alias or attribute value: what a memory built from
  the gold can hold; unanswerable questions and answers such as a count or a phrase are the
  memory-QA eval's), a memory is built from the gold (gold entities via :meth:`Entity.create`,
  gold relations by name, one snapshot), the block is rendered for the question at each budget,
  and the answer counts as surviving when ``normalize_name(answer)`` occurs in
  ``normalize_name(block)``.
  The same is repeated with the fixture's memory inside 1,000 synthetic distractor entities
  (a long-lived memory where the budget has to choose; informational).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import FIXTURES, REPO, BenchConfig, Section, Table
from benchmarks.published import render_every_snapshot
from benchmarks.synthetic import BENCH_PROMPT_REF, make_memory, make_queries
from bub_semantic_memory._models import Entity, Relation, Snapshot, normalize_name
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.evals import Fixture, Gold, Question, load_fixtures
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.memory._render import render_memory
from bub_semantic_memory.tape._transcript import strip_bub_header

__all__ = ["gold_snapshot", "run"]

BUDGETS = (200, 400, 800)
TARGET_SHARE_800 = 0.9


def gold_snapshot(gold: Gold, *, tape: str, offset: int = 0) -> Snapshot:
    """One snapshot holding the gold's entities and relations (relations resolved by name)."""
    entities: list[Entity] = []
    keys: dict[str, str] = {}
    for index, item in enumerate(gold.entities, start=1):
        entity = Entity.create(
            item.name,
            item.type,
            aliases=item.aliases,
            attributes=item.attributes,
            evidence=[offset + index],
        )
        entities.append(entity)
        for name in [item.name, *item.aliases]:
            keys.setdefault(normalize_name(name), entity.key)
    relations = [
        Relation(source=keys[normalize_name(r.source)], type=r.type, target=keys[normalize_name(r.target)])
        for r in gold.relations
        if normalize_name(r.source) in keys and normalize_name(r.target) in keys
    ]
    return Snapshot(
        tape=tape,
        first_entry_id=offset + 1,
        last_entry_id=offset + max(1, len(entities)),
        prompt=BENCH_PROMPT_REF,
        model="gold",
        mode="gold",
        entities=tuple(entities),
        relations=tuple(relations),
    )


def _survives(answer: str, block: str) -> bool:
    return normalize_name(answer) in normalize_name(block)


def answer_facts(gold: Gold) -> list[Question]:
    """The questions of ``gold`` whose answer is one of its names, aliases or attribute values."""
    held = {
        normalize_name(value)
        for entity in gold.entities
        for value in (entity.name, *entity.aliases, *entity.attributes.values())
    }
    return [q for q in gold.questions if q.category != "unanswerable" and normalize_name(q.answer) in held]


def _survival(
    fixtures: Sequence[Fixture], distractors: Sequence[Snapshot], ontology: Ontology
) -> tuple[dict[int, tuple[int, int]], int, list[str]]:
    """Per budget: (answers surviving, questions); the largest block seen; the misses at 800."""
    counts = {budget: [0, 0] for budget in BUDGETS}
    largest = 0
    missed: list[str] = []
    for fixture in fixtures:
        offset = 12 * (len(distractors) + 1)
        graph = MemoryGraph.fold(
            [*distractors, gold_snapshot(fixture.gold, tape="bench", offset=offset)],
            ontology,
            tape="bench",
        )
        for question in answer_facts(fixture.gold):
            for budget in BUDGETS:
                block = render_memory(graph, query=question.question, budget=budget)
                largest = max(largest, block.tokens - budget)
                counts[budget][1] += 1
                if _survives(question.answer, block.text):
                    counts[budget][0] += 1
                elif budget == BUDGETS[-1]:
                    missed.append(f"{fixture.id}: {question.question} → {question.answer}")
    return {b: (c[0], c[1]) for b, c in counts.items()}, largest, missed


async def run(config: BenchConfig) -> Section:
    section = Section(
        3,
        "Memory block",
        method=(
            "`render_memory(graph, query, budget)` on synthetic memories (3 relations per entity) for unique "
            "queries, and on memories built from the gold of every fixture with questions answered by a gold "
            "name, alias or attribute value (one snapshot; an answer survives when its `normalize_name` form "
            "occurs in the normalised block). Block tokens = `estimate_tokens` of the block."
        ),
    )
    ontology = PromptLibrary().load("extract").ontology
    sizes = (100, 1000) if config.quick else (100, 1000, 10_000)
    query_count = 30 if config.quick else 200
    size_table = Table(
        "Block tokens against memory size (max / mean over queries; budget never exceeded?)",
        ["entities", "relations", *(f"budget {b}" for b in BUDGETS), "published: every snapshot"],
    )
    over_budget = 0
    blocks = 0
    for n in sizes:
        memory = make_memory(n)
        graph = MemoryGraph.fold(memory.snapshots, ontology, tape="bench")
        queries = [strip_bub_header(q)[0] for q in make_queries(memory.names, query_count, seed=n + 3)]
        cells: list[str] = []
        for budget in BUDGETS:
            sizes_seen = [render_memory(graph, query=q, budget=budget).tokens for q in queries]
            blocks += len(sizes_seen)
            over = sum(1 for tokens in sizes_seen if tokens > budget)
            over_budget += over
            cells.append(
                f"{max(sizes_seen)} / {sum(sizes_seen) / len(sizes_seen):.0f}"
                + (f" ({over} over!)" if over else "")
            )
        published = estimate_tokens(render_every_snapshot(memory.snapshots))
        size_table.rows.append([f"{n:,}", f"{graph.relation_count:,}", *cells, f"{published:,}"])
    section.row(
        "memory block tokens never above the budget",
        f"{over_budget} of {blocks:,} blocks over budget",
        "never above the budget",
        over_budget == 0,
        f"memories of {', '.join(f'{n:,}' for n in sizes)} entities × budgets {', '.join(map(str, BUDGETS))} "
        f"× {query_count} queries; the published design's block grows with the memory (see table)",
        kind="count",
    )

    fixtures = [f for f in load_fixtures(FIXTURES) if answer_facts(f.gold)]
    questions = sum(len(answer_facts(f.gold)) for f in fixtures)
    shares, largest, missed = _survival(fixtures, [], ontology)
    distractor_count = 200 if config.quick else 1000
    noisy_shares, noisy_largest, noisy_missed = _survival(
        fixtures, make_memory(distractor_count, tape="bench").snapshots, ontology
    )
    survival = Table(
        f"Answer facts surviving into the block ({len(fixtures)} fixtures, {questions} questions)",
        ["memory", *(f"budget {b}" for b in BUDGETS)],
    )
    survival.rows.append(
        ["the fixture's gold only", *(f"{s}/{n} = {s / n:.3f}" for s, n in (shares[b] for b in BUDGETS))]
    )
    survival.rows.append(
        [
            f"the gold inside {distractor_count:,} distractor entities",
            *(f"{s}/{n} = {s / n:.3f}" for s, n in (noisy_shares[b] for b in BUDGETS)),
        ]
    )
    for budget in BUDGETS:
        kept, total = shares[budget]
        share = kept / total if total else 0.0
        section.row(
            f"answer survival at budget {budget}",
            f"{share:.3f} ({kept}/{total})",
            "≥ 0.9 at 800" if budget == 800 else "",
            share >= TARGET_SHARE_800 if budget == 800 else None,
            f"with {distractor_count:,} distractor entities: "
            f"{noisy_shares[budget][0] / noisy_shares[budget][1]:.3f}",
            kind="share",
        )
    section.tables += [size_table, survival]
    if largest > 0 or noisy_largest > 0:
        section.notes.append("A fixture block exceeded its budget (see the size row).")
    if missed:
        section.notes.append("Answers missing at budget 800 (gold only): " + "; ".join(missed))
    if noisy_missed:
        shown = "; ".join(noisy_missed[:8]) + (
            f"; … ({len(noisy_missed)} in all)" if len(noisy_missed) > 8 else ""
        )
        section.notes.append(f"Answers missing at budget 800 with {distractor_count:,} distractors: {shown}")
    section.notes.append(
        f"Fixtures: {Path(FIXTURES).relative_to(REPO)}, those whose gold has questions answered by a gold "
        "name, alias or attribute value."
    )
    return section
