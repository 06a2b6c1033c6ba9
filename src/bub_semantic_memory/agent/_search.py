"""What a memory search or recall returns: the same data for the agent's tools and the CLI.

:func:`search_memory` ranks what a query is about (entities and facts, see
:class:`~bub_semantic_memory.memory.MemoryIndex`) and :func:`recall_entity` gathers everything
about one entity; both answer with plain JSON-ready data: entity keys, validity (the tape
positions a fact held from and until), the dates and entry ids that state it and the lines that
said it. An empty memory or an unknown entity is an ``error`` in the result, never an exception.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bub_semantic_memory.agent._service import MemoryService
    from bub_semantic_memory.memory import Finding, MemoryGraph

__all__ = ["EMPTY_MEMORY", "recall_entity", "search_memory"]

EMPTY_MEMORY = "the memory of this conversation is empty: nothing was extracted yet"


def fact_data(fact: Finding) -> dict[str, Any]:
    """A relation or stated fact as JSON-ready data."""
    return {
        "fact": fact.sentence,
        "kind": fact.kind,
        "type": fact.type,
        "current": fact.current,
        "entities": list(fact.entities),
        "when": fact.when,
        "valid_from": fact.valid_from,
        "valid_until": fact.valid_until,
        "evidence": list(fact.evidence),
        "stated": list(fact.stated),
        "said": list(fact.evidence_lines),
    }


def entity_data(graph: MemoryGraph, key: str) -> dict[str, Any] | None:
    """An entity as JSON-ready data (None: no such entity)."""
    view = graph.view(key)
    if view is None:
        return None
    return {
        "key": view.key,
        "name": view.name,
        "type": view.type,
        "aliases": list(view.aliases),
        "attributes": dict(view.attributes),
    }


def _stated_between(stated: tuple[str, ...], start: str | None, end: str | None) -> bool:
    """Whether a fact was stated on a day within [start, end] (days compared as ISO dates)."""
    if start is None and end is None:
        return True
    days = [day[:10] for day in stated]
    return any((start is None or day >= start[:10]) and (end is None or day <= end[:10]) for day in days)


def _day(when: str | None) -> tuple[str, ...]:
    """A resolved date as a day a range can hold (a month or year counts as its first day)."""
    if not when or "W" in when:
        return ()
    return ((when + "-01-01")[:10] if len(when) == 4 else (when + "-01")[:10],)


def search_memory(
    service: MemoryService,
    tape: str,
    query: str,
    *,
    entity_type: str | None = None,
    start: str | None = None,
    end: str | None = None,
    limit: int = 10,
) -> dict[str, Any]:
    """The facts and entities of ``tape``'s loaded memory that ``query`` is about, best first.

    Args:
        entity_type: only entities of this type (and facts touching one).
        start, end: only facts stated on a day within these ISO dates (or, for a stated fact
            with a resolved date, that happened within them).
        limit: at most this many facts and this many entities.
    """
    graph = service.graph(tape)
    ranking = service.search(tape, query, limit=50)
    if graph is None or ranking is None:
        return {"error": EMPTY_MEMORY}
    entities = [e for e in (entity_data(graph, k) for k in ranking.entities) if e is not None]
    facts = list(ranking.facts)
    if entity_type is not None:
        entities = [e for e in entities if e["type"] == entity_type]
        allowed = {e["key"] for e in entities}
        facts = [f for f in facts if allowed.intersection(f.entities)]
    found = [fact_data(f) for f in facts if _stated_between((*f.stated, *_day(f.when)), start, end)]
    return {"query": query, "facts": found[:limit], "entities": entities[:limit]}


def recall_entity(service: MemoryService, tape: str, name: str) -> dict[str, Any]:
    """Everything ``tape``'s loaded memory holds about the entity called ``name`` (or an alias of it)."""
    graph = service.graph(tape)
    index = service.index(tape)
    if graph is None or index is None or len(graph) == 0:
        return {"error": EMPTY_MEMORY}
    keys = graph.lookup(name) or graph.named_in(name)
    if not keys:
        return {"error": f"no entity named {name!r} in memory; a search finds facts by content"}
    key = graph.resolve(keys[0])
    index.refresh()
    return {
        "entity": entity_data(graph, key),
        "facts": [fact_data(f) for f in index.facts_of(key)],
        "other_matches": [graph.resolve(k) for k in keys[1:]],
    }
