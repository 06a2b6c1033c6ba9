"""Co-mentioned pairs: which two entities a line names together, and what the ontology lets them be.

Relation F1 fails less on labels than on pairing (evals/README.md, "Why a relation is missed"):
a small model that is asked for "the relations between these entities" relates a few and stops,
leaving entities it found, named in one line, unrelated. The ``pairs`` step asks about those
pairs one by one, the way ``sweep`` asks about the names the entities call left out:

* :func:`co_mentioned_pairs` finds the pairs of entities whose names (or aliases, or the
  sender of the line) occur in one line of the window's new lines, in the order they first
  occur, leaving out pairs that are already related and pairs no relation type can join;
* :func:`pair_choices` words every relation the ontology allows between the two, in the
  direction it is stored (a type of an inverse pair only in its canonical form, a symmetric
  type once), as the sentences a model picks from (``"T-12 assigned to Ana"``), plus ``none``.

The choices are a closed list, so a grammar-constrained model can only answer with a relation
the ontology allows between entities that exist; the validator checks the rest as for any
relation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.tape import TranscriptLine

__all__ = [
    "NO_RELATION",
    "Endpoint",
    "Pair",
    "co_mentioned_pairs",
    "endpoints_of",
    "pair_choices",
    "relation_pairs",
]

NO_RELATION = "none"
"""The choice that says the line states no relation between the two."""


@dataclass(frozen=True)
class Endpoint:
    """An entity a pair can name: its name as the step shows it, its other names, its type."""

    name: str
    type: str
    aliases: tuple[str, ...] = ()

    def named_in(self, folded_line: str) -> bool:
        return any(is_mentioned(name, folded_line) for name in (self.name, *self.aliases))


@dataclass(frozen=True)
class Pair:
    """Two entities named in one line, and the entry ids of the lines that name both."""

    first: Endpoint
    second: Endpoint
    evidence: tuple[int, ...]

    @property
    def key(self) -> str:
        """How the pair is shown to the model (the key of its answer)."""
        return f"{self.first.name} / {self.second.name}"


def pair_choices(ontology: Ontology, pair: Pair) -> dict[str, tuple[str, str, str]]:
    """Sentence -> ``(source name, relation type, target name)`` for every relation the ontology
    allows between the pair, each fact once, in the form it is stored."""
    choices: dict[str, tuple[str, str, str]] = {}
    for relation_type, relation in ontology.relation_types.items():
        ends = [(pair.first, pair.second)]
        if not relation.symmetric:
            ends.append((pair.second, pair.first))
        for source, target in ends:
            if ontology.orient(relation_type, source.type, target.type) != (relation_type, False):
                continue  # not allowed as written, or stored as another type (its inverse)
            sentence = f"{source.name} {relation_type.replace('_', ' ')} {target.name}"
            choices.setdefault(sentence, (source.name, relation_type, target.name))
    return choices


def co_mentioned_pairs(
    ontology: Ontology,
    lines: Sequence[TranscriptLine],
    endpoints: Sequence[Endpoint],
    related: Iterable[tuple[str, str]] = (),
    *,
    limit: int,
) -> tuple[list[Pair], int]:
    """The pairs of ``endpoints`` that one line names together, first co-mention first.

    Args:
        related: pairs of endpoint names already related (in either order); left out.
        limit: the most pairs to return.

    Returns:
        The pairs (at most ``limit``), and how many more there were.
    """
    taken = {frozenset(pair) for pair in related}
    found: dict[frozenset[str], tuple[Endpoint, Endpoint, list[int]]] = {}
    for line in lines:
        folded = fold_text(line.speech)
        named = [endpoint for endpoint in endpoints if endpoint.named_in(folded)]
        for index, first in enumerate(named):
            for second in named[index + 1 :]:
                key = frozenset((first.name, second.name))
                if len(key) < 2 or key in taken:
                    continue
                if key not in found:
                    found[key] = (first, second, [])
                found[key][2].append(line.entry_id)
    pairs = [
        pair
        for first, second, evidence in found.values()
        if pair_choices(ontology, pair := Pair(first, second, tuple(evidence)))
    ]
    return pairs[:limit], max(0, len(pairs) - limit)


def endpoints_of(entities: Iterable[tuple[str, str, Sequence[str]]]) -> list[Endpoint]:
    """Endpoints from ``(name, type, aliases)``, one per name (the first listing wins)."""
    seen: dict[str, Endpoint] = {}
    for name, entity_type, aliases in entities:
        seen.setdefault(name, Endpoint(name, entity_type, tuple(aliases)))
    return list(seen.values())


def relation_pairs(relations: Iterable[tuple[str, str]], names: Mapping[str, str]) -> list[tuple[str, str]]:
    """Relation ends given as keys, as the endpoint names ``names`` maps them to (unknown keys left out)."""
    return [(names[s], names[t]) for s, t in relations if s in names and t in names]
