"""Rendering the memory block that is injected into the agent's context.

The block is built from the in-memory graph only (no model call, no store read),
so it can run on every model call. It picks the most relevant facts for the
latest user message and never exceeds a token budget:

1. the entities the message is about: ranked by retrieval over the memory when an index is
   given (:mod:`._index`: BM25 over entities and fact sentences, names, neighbourhood, fused),
   else the entities named in the message (name or alias, normalised) and their neighbours;
2. everything else, most recently mentioned first, then by number of relations.

Each entity contributes a line, then its facts: the ranked ones first (with the lines that
said the best of them), then current relations and stated facts (the newest first), and
superseded ones last, marked as history. A stated fact shows its date when one was
resolved. An empty graph renders no block at all.

After the facts come the transcript lines that match the message best (``passages``, ranked by
the index), within a share of the budget the facts cannot take: an extracted memory misses
what a small model did not extract, and the line that said it is the cheapest way to carry it.
The facts get whatever budget the lines leave unused.

Lines the agent was already shown (``shown``) are left out and cost nothing, so a block
can carry only what is new since earlier blocks that are still in the agent's context.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.memory._graph import EntityView, FactView, MemoryGraph, RelationView
from bub_semantic_memory.memory._index import Ranking, stated_sentence

__all__ = ["DEFAULT_BUDGET", "DEFAULT_PASSAGE_SHARE", "MemoryBlock", "QuotedLine", "render_memory"]

DEFAULT_BUDGET = 800
DEFAULT_PASSAGE_SHARE = 1.0
"""The share of a block's budget the transcript lines that match the message best may take (the
facts get what they leave). Decided on LoCoMo's tune conversations, where the lines held the
answers and the extracted structure few (issue 49: 0.25, 0.5, 0.75 and 1.0 compared)."""
HEADER = "<memory>\nFacts remembered from earlier in this conversation (may be incomplete):"
FOOTER = "</memory>"
PASSAGES_HEADER = "Earlier lines that match the latest message:"
_GIVE_UP_AFTER_MISSES = 25
_QUOTED_FACTS = 5  # the ranked facts whose evidence lines a block quotes


@dataclass(frozen=True)
class MemoryBlock:
    """A rendered memory block.

    Attributes:
        text: the block, or "" when there is nothing to inject.
        tokens: estimated tokens of ``text``.
        entities: entities shown.
        facts: relation and fact lines shown (history included).
        omitted: entities that did not fit in the budget.
        passages: transcript lines shown after the facts.
    """

    text: str
    tokens: int
    entities: int
    facts: int
    omitted: int
    passages: int = 0

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


def _least_line_cost(entity: EntityView) -> int:
    """A lower bound of what :func:`_entity_line` of ``entity`` costs (``- name (type...)``, each
    character a quarter token at least, plus the line break)."""
    return (len(entity.name) + len(entity.type) + 5 + 3) // 4 + 1


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


def _stated_line(fact: FactView) -> str:
    if fact.valid_until is None:
        return f"  - {stated_sentence(fact)}"
    return f"  - (history, until entry {fact.valid_until}) {stated_sentence(fact).removeprefix('formerly: ')}"


def _line(graph: MemoryGraph, item: RelationView | FactView) -> str:
    if isinstance(item.key, str):
        return _stated_line(item)
    return _relation_line(graph, item)


def _facts_in_order(
    graph: MemoryGraph, key: str, fact_order: dict[str, int]
) -> Iterator[tuple[str, RelationView | FactView]]:
    """An entity's relations and stated facts: ranked ones first, in their order, then current
    before history, the newest first."""
    pairs = graph.facts_in_order(key)
    ranked = sorted((pair for pair in pairs if pair[0] in fact_order), key=lambda pair: fact_order[pair[0]])
    if not ranked:
        return iter(pairs)
    return itertools.chain(ranked, (pair for pair in pairs if pair[0] not in fact_order))


def render_memory(
    graph: MemoryGraph,
    *,
    query: str = "",
    budget: int = DEFAULT_BUDGET,
    shown: Collection[str] = (),
    named_only: bool = False,
    ranking: Ranking | None = None,
    passages: Sequence[str | QuotedLine] = (),
    passage_budget: int = 0,
) -> MemoryBlock:
    """Render the most relevant facts for ``query`` within ``budget`` estimated tokens.

    Entity and fact lines in ``shown`` are skipped; an entity whose own line was shown can
    still contribute facts that were not. ``named_only`` keeps to the entities relevant to
    ``query`` (steps 1 and 2, or the ranking's), leaving out the rest of the memory.
    ``ranking`` (:meth:`MemoryIndex.rank` of ``query``) orders entities and, within an entity,
    its facts: the ranked ones first, in their order.

    ``passages`` (transcript lines that match ``query``, best first) follow the facts, as many
    as fit in ``passage_budget`` tokens, which the facts do not use; the budget the passages
    leave unused goes to the facts. Dated lines (:class:`QuotedLine`) are shown under their day,
    days and lines in the conversation's order (see :func:`_pick_passages`).
    """
    if len(graph) == 0:
        return MemoryBlock(text="", tokens=0, entities=0, facts=0, omitted=0)
    lines = [HEADER]
    frame = estimate_tokens(HEADER) + estimate_tokens(FOOTER) + 2
    excerpt, used = _pick_passages(passages, min(passage_budget, budget - frame), shown)
    excerpt_tags = {_entry_tag(line.removeprefix("  > ")) for line in excerpt if line.startswith("  > ")}
    used += frame
    shown_facts: set[str] = set()
    entities = facts = misses = 0
    fact_order = {fact.id: index for index, fact in enumerate(ranking.facts)} if ranking else {}
    # the lines that stated the best facts: what was said, for an agent to read or search for
    quoted = {fact.id: fact.evidence_lines for fact in ranking.facts[:_QUOTED_FACTS]} if ranking else {}
    quoted_lines: set[str] = set()
    for key in _relevance_order(graph, query, named_only=named_only, ranking=ranking):
        if misses >= _GIVE_UP_AFTER_MISSES:
            break
        entity = graph.view(key)
        if entity is None:
            continue
        if not shown and used + _least_line_cost(entity) > budget:  # a miss, known without formatting it
            misses += 1
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
        fact_misses = 0
        for fact_id, item in _facts_in_order(graph, key, fact_order):
            if fact_id in shown_facts:
                continue
            fact = _line(graph, item)
            if fact in shown:
                continue
            cost = estimate_tokens(fact) + 1
            if used + cost > budget:
                fact_misses += 1
                if fact_misses >= _GIVE_UP_AFTER_MISSES:  # an entity of thousands would be read to its end
                    break
                continue
            fact_misses = 0
            lines.append(fact)
            used += cost
            facts += 1
            shown_facts.add(fact_id)
            for said in quoted.get(fact_id, ()):
                quote = f"    > {said}"
                cost = estimate_tokens(quote) + 1
                # the lines below show it already (anchored, so compared by its entry's number)
                repeated = said in quoted_lines or _entry_tag(said) in excerpt_tags
                if repeated or quote in shown or used + cost > budget:
                    continue
                lines.append(quote)
                used += cost
                quoted_lines.add(said)
    if entities == 0 and facts == 0 and not excerpt:
        return MemoryBlock(text="", tokens=0, entities=0, facts=0, omitted=len(graph))
    if excerpt:
        lines.extend([PASSAGES_HEADER, *excerpt])
    lines.append(FOOTER)
    text = "\n".join(lines)
    return MemoryBlock(
        text=text,
        tokens=estimate_tokens(text),
        entities=entities,
        facts=facts,
        omitted=len(graph) - entities,
        passages=len(excerpt_tags),
    )


@dataclass(frozen=True)
class QuotedLine:
    """A transcript line a block may quote, with the day it was said.

    Attributes:
        text: the line (``[25] user: ...``), its relative times already anchored on its day.
        day: the heading of its day (``Monday 8 May 2023``); "" when the entry has no date.
        order: its place in the conversation (the entry id).
    """

    text: str
    day: str = ""
    order: int = 0


def _pick_passages(
    passages: Sequence[str | QuotedLine], budget: int, shown: Collection[str]
) -> tuple[list[str], int]:
    """The passages' lines, as many whole ones as fit in ``budget`` with their heading, taken
    best first (a line that does not fit is skipped; a later, shorter one may still fit), and the
    tokens they take with the heading (0 when none fits).

    A dated line is shown under a line naming its day, which it pays for when it is the day's
    first: the day is said once, not on every line. Days and the lines under them are then in
    the conversation's order, as a person reads an excerpt (lines of undated entries first,
    under no day); without a dated line the lines stay best first.
    """
    picked: list[QuotedLine] = []
    days: set[str] = set()
    used = estimate_tokens(PASSAGES_HEADER) + 1
    for passage in passages:
        quoted = passage if isinstance(passage, QuotedLine) else QuotedLine(passage)
        line = f"  > {quoted.text}"
        cost = estimate_tokens(line) + 1
        if quoted.day and quoted.day not in days:
            cost += estimate_tokens(_day_heading(quoted.day)) + 1
        if line in shown or any(p.text == quoted.text for p in picked) or used + cost > budget:
            continue
        picked.append(quoted)
        days.add(quoted.day)
        used += cost
    if not picked:
        return [], 0
    if not any(p.day for p in picked):
        return [f"  > {p.text}" for p in picked], used
    lines: list[str] = []
    first_said: dict[str, int] = {}
    for quoted in picked:
        first_said[quoted.day] = min(first_said.get(quoted.day, quoted.order), quoted.order)
    for day in sorted(first_said, key=lambda d: (d != "", first_said[d])):  # undated lines first, unheaded
        if day:
            lines.append(_day_heading(day))
        lines.extend(f"  > {p.text}" for p in sorted(picked, key=lambda p: p.order) if p.day == day)
    return lines, used


def _entry_tag(line: str) -> str:
    """``[25]`` of ``[25] user: ...``: which entry a transcript line renders."""
    return line.split(" ", 1)[0]


def _day_heading(day: str) -> str:
    return f"  {day}:"
