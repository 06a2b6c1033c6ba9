"""Made-up memories: distractor entities and relations for evals and benchmarks.

A memory that lived for months holds hundreds or thousands of entities a question is not
about. :func:`make_memory` builds one, deterministically from a seed: pronounceable made-up
names that are no word of one another (so a distractor never matches a real name by accident),
people, projects, organisations and places, three relations each, as extraction snapshots.
The memory-QA eval plants such a memory beside a fixture's (``--distractors``), and the
benchmarks size memory blocks and time the plugin's model calls against it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from bub_semantic_memory._models import Entity, Fact, PromptRef, Relation, Snapshot, Usage
from bub_semantic_memory.tape import Entry

__all__ = [
    "DISTRACTOR_PROMPT_REF",
    "ROLES",
    "SEED",
    "TECHNOLOGIES",
    "MemoryFixture",
    "NameGenerator",
    "make_memory",
    "memory_snapshot",
]

SEED = 20_251_130
DISTRACTOR_PROMPT_REF = PromptRef(name="extract", version=2, sha256="b" * 64)
"""The prompt reference the made-up snapshots carry."""

_ONSETS = [
    "b", "br", "c", "ch", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "sh",
    "t", "th", "v", "w", "z", "kr", "st", "tr", "gr", "pl", "fl",
]  # fmt: skip
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ei", "ou", "ia", "ee"]
_CODAS = ["", "", "n", "r", "l", "s", "th", "m", "nd", "rk", "x", "v"]
_ORG_SUFFIXES = ["Labs", "Systems", "Group", "Works", "Studio", "Partners", "Foundation", "Bank"]
_PLACE_SUFFIXES = ["", "ville", "port", "ford", "haven", "burg", "field"]
TECHNOLOGIES = [
    "PostgreSQL", "Redis", "Kafka", "Django", "FastAPI", "React", "Kubernetes", "Terraform",
    "ClickHouse", "Rust", "Go", "TypeScript", "Elasticsearch", "RabbitMQ", "Airflow", "Spark",
]  # fmt: skip
ROLES = [
    "designer", "staff engineer", "product manager", "data scientist", "SRE", "tech lead",
    "recruiter", "account manager", "QA lead", "security engineer", "CTO", "analyst",
]  # fmt: skip


class NameGenerator:
    """Unique, pronounceable made-up names (no name is a word of another entity's name)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def _word(self, syllables: int) -> str:
        parts = [self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(syllables)]
        return ("".join(parts) + self.rng.choice(_CODAS)).capitalize()

    def _unique(self, make: Any, count: int = 1) -> str:
        """A fresh name from ``make(*words)`` with ``count`` made-up words, never reused."""
        while True:
            words = [self._word(self.rng.choice((2, 3))) for _ in range(count)]
            if any(w.lower() in self.used for w in words):
                continue
            self.used.update(w.lower() for w in words)
            return str(make(*words))

    def person(self) -> str:
        return self._unique(lambda first, last: f"{first} {last}", 2)

    def project(self) -> str:
        return self._unique(lambda word: f"Project {word}")

    def organization(self) -> str:
        return self._unique(lambda word: f"{word} {self.rng.choice(_ORG_SUFFIXES)}")

    def location(self) -> str:
        return self._unique(lambda word: word + self.rng.choice(_PLACE_SUFFIXES))

    def technology(self, index: int) -> str:
        if index < len(TECHNOLOGIES):
            name = TECHNOLOGIES[index]
            self.used.add(name.lower())
            return name
        return self._unique(lambda word: f"{word}DB")


@dataclass
class MemoryFixture:
    """The snapshots of a synthetic memory, the names in it (for queries), and the tape entries that
    say its facts (one user message per entity, at the entry id its evidence points at)."""

    snapshots: list[Snapshot]
    names: list[str]
    entries: list[Entry] = field(default_factory=list)

    def told(self, after: int = 0) -> list[Entry]:
        """The entries that say the memory, with event entries between them: a tape store that
        numbers entries one by one from ``after + 1`` gives each the id its evidence points at."""
        filled: list[Entry] = []
        position = after
        for entry in sorted(self.entries, key=lambda e: e.id):
            filled.extend(
                Entry(i, "event", {"name": "gap", "data": {}}) for i in range(position + 1, entry.id)
            )
            filled.append(entry)
            position = entry.id
        return filled


def memory_snapshot(
    tape: str,
    number: int,
    entities: list[Entity],
    relations: list[Relation],
    *,
    usage: Usage | None = None,
    offset: int = 0,
    facts: tuple[Fact, ...] = (),
) -> Snapshot:
    """The ``number``-th snapshot of a made-up memory (entries ``offset + 12 * number + 1`` to ``+ 11``)."""
    first = offset + 12 * number + 1
    return Snapshot(
        tape=tape,
        first_entry_id=first,
        last_entry_id=first + 11,
        prompt=DISTRACTOR_PROMPT_REF,
        model="fake-extractor",
        mode="tools",
        usage=usage or Usage(),
        entities=tuple(entities),
        relations=tuple(relations),
        facts=facts,
    )


def make_memory(
    n_entities: int,
    *,
    per_snapshot: int = 10,
    seed: int = SEED,
    tape: str = "bench-tape",
    offset: int = 0,
    stated: bool = False,
    hub: int = 0,
) -> MemoryFixture:
    """A memory of ``n_entities`` entities with 3 relations each, as extraction snapshots.

    60% people, 20% projects, 10% organisations, 10% places. Each entity is the source (or,
    for places and organisations, the target) of three relations of ontology types, so the
    memory holds about ``3 * n_entities`` relations. Every snapshot covers 12 tape entries.
    ``stated``: each person also states a plan ("Maya Lin plans to visit Brenport"), so the
    memory holds stated facts as well (drawn from a second random stream: the rest is the same).
    ``hub``: the first person also knows that many of the other people (taken in order), as the
    user of a personal tape knows nearly everyone in it; the rest is the same.
    """
    rng = random.Random(seed + n_entities)
    names = NameGenerator(rng)
    kinds = ["person"] * 6 + ["project"] * 2 + ["organization", "location"]
    entities: list[Entity] = []
    for index in range(n_entities):
        kind = kinds[index % len(kinds)]
        maker = {
            "person": names.person,
            "project": names.project,
            "organization": names.organization,
            "location": names.location,
        }[kind]
        name = maker()
        aliases = [name.split()[0]] if kind == "person" and rng.random() < 0.3 else []
        attributes = {"role": rng.choice(ROLES)} if kind == "person" and rng.random() < 0.5 else {}
        position = offset + 12 * (index // per_snapshot) + 2 + index % per_snapshot
        entities.append(
            Entity.create(name, kind, aliases=aliases, attributes=attributes, evidence=[position])
        )
    by_type: dict[str, list[Entity]] = {}
    for entity in entities:
        by_type.setdefault(entity.type, []).append(entity)

    def pick(kind: str, not_key: str) -> Entity:
        pool = by_type.get(kind) or by_type["person"]
        choice = rng.choice(pool)
        return choice if choice.key != not_key or len(pool) == 1 else pick(kind, not_key)

    relations_by_snapshot: dict[int, list[Relation]] = {}
    for index, entity in enumerate(entities):
        position = entity.evidence[0]
        if entity.type == "person":
            triples = [
                (entity, "knows", pick("person", entity.key)),
                (entity, "works_on", pick("project", entity.key)),
                (entity, "lives_in" if index % 2 else "works_for", pick(
                    "location" if index % 2 else "organization", entity.key
                )),
            ]  # fmt: skip
        elif entity.type == "project":
            triples = [
                (entity, "part_of", pick("organization", entity.key)),
                (entity, "depends_on", pick("project", entity.key)),
                (pick("person", entity.key), "manages", entity),
            ]
        elif entity.type == "organization":
            triples = [
                (entity, "located_in", pick("location", entity.key)),
                (pick("person", entity.key), "member_of", entity),
                (pick("project", entity.key), "part_of", entity),
            ]
        else:
            triples = [
                (pick("organization", entity.key), "located_in", entity),
                (pick("person", entity.key), "lives_in", entity),
                (entity, "located_in", pick("location", entity.key)),
            ]
        relations_by_snapshot.setdefault(index // per_snapshot, []).extend(
            Relation(source=s.key, type=t, target=o.key, evidence=(position,))
            for s, t, o in triples
            if s.key != o.key
        )
    if hub:
        people = by_type.get("person", [])
        for other in people[1 : hub + 1]:
            relations_by_snapshot.setdefault((other.evidence[0] - offset) // 12, []).append(
                Relation(source=people[0].key, type="knows", target=other.key, evidence=other.evidence)
            )
    facts_by_snapshot = _plans(entities, by_type, seed + n_entities + 1, per_snapshot) if stated else {}
    snapshots: list[Snapshot] = []
    for number in range(max(1, -(-n_entities // per_snapshot))):
        chunk = entities[number * per_snapshot : (number + 1) * per_snapshot]
        relations = relations_by_snapshot.get(number, [])
        usage = Usage(prompt_tokens=1800, completion_tokens=220, requests=1, attempts=1, latency_s=1.2)
        facts = tuple(facts_by_snapshot.get(number, ()))
        snapshots.append(
            memory_snapshot(tape, number, chunk, relations, usage=usage, offset=offset, facts=facts)
        )
    return MemoryFixture(
        snapshots=snapshots,
        names=[e.name for e in entities],
        entries=_said(entities, relations_by_snapshot, facts_by_snapshot),
    )


def _plans(
    entities: list[Entity], by_type: dict[str, list[Entity]], seed: int, per_snapshot: int
) -> dict[int, list[Fact]]:
    """One stated plan per person, to visit a place of the memory, by snapshot number."""
    rng = random.Random(seed)
    places = by_type.get("location") or entities
    plans: dict[int, list[Fact]] = {}
    for index, person in enumerate(entities):
        if person.type != "person":
            continue
        place = rng.choice(places)
        plans.setdefault(index // per_snapshot, []).append(
            Fact(
                statement=f"{person.name} plans to visit {place.name}",
                kind="plan",
                about=(person.key, place.key),
                topic="trip",
                evidence=person.evidence,
            )
        )
    return plans


def _said(
    entities: list[Entity], relations: dict[int, list[Relation]], facts: dict[int, list[Fact]]
) -> list[Entry]:
    """One user message per entity, at its evidence entry id, saying the facts stated there."""
    names = {entity.key: entity.name for entity in entities}
    by_position: dict[int, list[str]] = {}
    for stated in relations.values():
        for relation in stated:
            sentence = f"{names[relation.source]} {relation.type.replace('_', ' ')} {names[relation.target]}"
            by_position.setdefault(relation.evidence[0], []).append(sentence)
    for plans in facts.values():
        for fact in plans:
            by_position.setdefault(fact.evidence[0], []).append(fact.statement)
    entries = []
    for entity in entities:
        position = entity.evidence[0]
        role = f", {entity.attributes['role']}" if "role" in entity.attributes else ""
        said = "; ".join(by_position.get(position, []))
        text = f"About {entity.name} ({entity.type}{role}): {said}." if said else f"About {entity.name}."
        entries.append(Entry(position, "message", {"role": "user", "content": text}))
    return entries
