"""Rendering the memory block that is injected into the agent's context.

The block is built from the in-memory graph only (no model call, no store read),
so it can run on every model call. It picks the most relevant facts for the
latest user message and never exceeds a token budget:

1. the entities the message is about: ranked by retrieval over the memory when an index is
   given (:mod:`._index`: BM25 over entities and fact sentences, names, neighbourhood, fused),
   else the entities named in the message (name or alias, normalised) and their neighbours;
2. everything else, most recently mentioned first, then by number of relations.

Each entity contributes a line, then its current relations; superseded relations
appear last, marked as history. An empty graph renders no block at all.

Lines the agent was already shown (``shown``) are left out and cost nothing, so a block
can carry only what is new since earlier blocks that are still in the agent's context.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.memory._graph import EntityView, MemoryGraph, RelationView
from bub_semantic_memory.memory._index import Ranking

__all__ = ["DEFAULT_BUDGET", "MemoryBlock", "render_memory"]

DEFAULT_BUDGET = 800
HEADER = "<memory>\nFacts remembered from earlier in this conversation (may be incomplete):"
FOOTER = "</memory>"
_GIVE_UP_AFTER_MISSES = 25
_QUOTED_FACTS = 5  # the ranked facts whose evidence lines a block quotes


@dataclass(frozen=True)
class MemoryBlock:
    """A rendered memory block.

    Attributes:
        text: the block, or "" when there is nothing to inject.
        tokens: estimated tokens of ``text``.
        entities: entities shown.
        facts: relation lines shown (history included).
        omitted: entities that did not fit in the budget.
    """

    text: str
    tokens: int
    entities: int
    facts: int
    omitted: int

    def __bool__(self) -> bool:
        return bool(self.text)


def _relevance_order(
    graph: MemoryGraph, query: str, *, named_only: bool = False, ranking: Ranking | None = None
) -> Iterator[str]:
    """Keys in injection order, lazily: the rendering stops once the budget is spent.

    With a ranking (retrieval over the memory), its entities come first whether or not the
    query names them; without one, the entities the query names and their neighbours.
    """
    if ranking is not None:
        order: dict[str, None] = dict.fromkeys(ranking.entities)
    else:
        named = graph.named_in(query) if query else []
        order = dict.fromkeys(named)
        for key in named:
            for neighbour in sorted(graph.neighbours(key), key=lambda k: -graph.last_seen(k)):
                order.setdefault(neighbour, None)
    yield from order
    if not named_only:
        yield from (key for key in graph.ranked_keys() if key not in order)


def _entity_line(entity: EntityView) -> str:
    details = [entity.type]
    if entity.aliases:
        details.append("also " + ", ".join(entity.aliases))
    details.extend(f"{k}: {v}" for k, v in sorted(entity.attributes.items()))
    return f"- {entity.name} ({'; '.join(details)})"


def _relation_line(graph: MemoryGraph, relation: RelationView) -> str:
    def name(key: str) -> str:
        entity = graph.view(key)
        return entity.name if entity else key

    text = f"{name(relation.source)} {relation.type.replace('_', ' ')} {name(relation.target)}"
    until = relation.valid_until
    if until is None:
        return f"  - {text}"
    when = f"until entry {until}" if isinstance(until, int) else f"until {until}"
    return f"  - (history, {when}) {text}"


def render_memory(
    graph: MemoryGraph,
    *,
    query: str = "",
    budget: int = DEFAULT_BUDGET,
    shown: Collection[str] = (),
    named_only: bool = False,
    ranking: Ranking | None = None,
) -> MemoryBlock:
    """Render the most relevant facts for ``query`` within ``budget`` estimated tokens.

    Entity and fact lines in ``shown`` are skipped; an entity whose own line was shown can
    still contribute facts that were not. ``named_only`` keeps to the entities relevant to
    ``query`` (steps 1 and 2, or the ranking's), leaving out the rest of the memory.
    ``ranking`` (:meth:`MemoryIndex.rank` of ``query``) orders entities and, within an entity,
    its facts: the ranked ones first, in their order.
    """
    if len(graph) == 0:
        return MemoryBlock(text="", tokens=0, entities=0, facts=0, omitted=0)
    lines = [HEADER]
    used = estimate_tokens(HEADER) + estimate_tokens(FOOTER) + 2
    shown_relations: set[tuple[str, str, str]] = set()
    entities = facts = misses = 0
    fact_order = {fact.key: index for index, fact in enumerate(ranking.facts)} if ranking else {}
    # the lines that stated the best facts: what was said, for an agent to read or search for
    quoted = {fact.key: fact.evidence_lines for fact in ranking.facts[:_QUOTED_FACTS]} if ranking else {}
    quoted_lines: set[str] = set()
    for key in _relevance_order(graph, query, named_only=named_only, ranking=ranking):
        if misses >= _GIVE_UP_AFTER_MISSES:
            break
        entity = graph.view(key)
        if entity is None:
            continue
        line = _entity_line(entity)
        if line not in shown:
            cost = estimate_tokens(line) + 1
            if used + cost > budget:
                misses += 1
                continue
            lines.append(line)
            used += cost
            entities += 1
        edges = sorted(
            graph.edges(key),
            key=lambda r: (
                fact_order.get(r.key, len(fact_order)),
                r.valid_until is not None,
                r.type,
                r.target,
                r.source,
            ),
        )
        for relation in edges:
            if relation.key in shown_relations:
                continue
            fact = _relation_line(graph, relation)
            if fact in shown:
                continue
            cost = estimate_tokens(fact) + 1
            if used + cost > budget:
                continue
            lines.append(fact)
            used += cost
            facts += 1
            shown_relations.add(relation.key)
            for said in quoted.get(relation.key, ()):
                quote = f"    > {said}"
                cost = estimate_tokens(quote) + 1
                if said in quoted_lines or quote in shown or used + cost > budget:
                    continue
                lines.append(quote)
                used += cost
                quoted_lines.add(said)
    if entities == 0 and facts == 0:
        return MemoryBlock(text="", tokens=0, entities=0, facts=0, omitted=len(graph))
    lines.append(FOOTER)
    text = "\n".join(lines)
    return MemoryBlock(
        text=text, tokens=estimate_tokens(text), entities=entities, facts=facts, omitted=len(graph) - entities
    )
