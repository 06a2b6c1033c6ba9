"""Validation of a model's answer against the window it was given.

The response models (:mod:`._responses`) speak the model's language (names, turn
numbers); validation turns an answer into stored entities and relations (keys, entry ids).
It reads a :class:`ValidationScope` (the window's lines, the tape's known entities, the
ontology) and collects every problem of an answer into one error, so a single re-ask can
fix them all. It enforces:

* relation endpoints that are entities of this answer or known entities (no dangling
  ends), with source and target types the relation allows (a type of an inverse pair in
  either direction; it is stored in the pair's canonical form, see :mod:`bub_semantic_memory._ontology`);
* evidence that points at turn numbers of the transcript window; an entity or relation given
  none gets the lines that name it (a relation: that name both ends, else either);
* grounding: each new entity's name or one of its aliases occurs in the window,
  ignoring case and punctuation;
* one name, one entity: an alias is never another entity's name or alias;
* no self-loops and no duplicates;
* facts about entities of this answer or known ones, supported by their evidence lines: the
  lines hold at least half of the statement's content words (:mod:`bub_semantic_memory._statements`)
  and name one of the entities the fact is about (or are said by it). The time a fact was said
  to happen ("last Friday") is resolved against the date of its first evidence line.

Some answers have one right fix and are not re-asked: a duplicate entity is merged into
its first listing, and a self-loop, or an entity or relation naming what an instruction
planted in the transcript introduced (:mod:`._planted`), is dropped with its reason. When
the re-asks run out, :func:`salvage` keeps the items that pass every rule one by one.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, get_args

from pydantic import BaseModel, TypeAdapter, ValidationError

from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory._models import (
    Entity,
    Fact,
    Relation,
    entity_key,
    normalize_name,
    sorted_evidence,
)
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory._statements import grounding_problem
from bub_semantic_memory.extraction._planted import PlantedNames
from bub_semantic_memory.tape import TranscriptLine, resolve_when

__all__ = [
    "KnownEntity",
    "Resolved",
    "Salvage",
    "ValidationScope",
    "current_scope",
    "resolve_answer",
    "salvage",
    "validation_scope",
]


@dataclass(frozen=True)
class KnownEntity:
    """An entity already in the tape's memory, offered to the model for reuse."""

    key: str
    name: str
    type: str
    aliases: tuple[str, ...] = ()

    @classmethod
    def of(cls, entity: Entity) -> KnownEntity:
        return cls(entity.key, entity.name, entity.type, entity.aliases)


@dataclass
class ValidationScope:
    """Everything the validators need to know about one extraction call.

    Attributes:
        ontology: the types the response may use.
        lines: the transcript lines (overlap included) the model saw; names are grounded
            in each line's :attr:`~bub_semantic_memory.tape._transcript.TranscriptLine.speech`
            (a named sender counts, the renderer's ``user:`` prefixes do not).
        known: entities of the tape's memory, by key.
        planted: the names an instruction planted in ``lines`` introduces (found from
            ``lines`` when not given); entities and relations naming one are dropped.
        drop_unsupported_facts: a fact its line does not state is dropped and counted instead
            of re-asked (an answer of one fact per turn would be asked again whole for one).
    """

    ontology: Ontology
    lines: Sequence[TranscriptLine]
    known: dict[str, KnownEntity] = field(default_factory=dict)
    planted: PlantedNames | None = None
    drop_unsupported_facts: bool = False
    turn_ids: frozenset[int] = field(init=False)
    _folded_text: str = field(init=False, repr=False)
    _known_names: dict[tuple[str, str], str] = field(init=False, repr=False)
    _known_any: dict[str, str] = field(init=False, repr=False)
    _folded_lines: list[tuple[int, str]] = field(init=False, repr=False)
    _by_turn: dict[int, TranscriptLine] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.planted is None:
            self.planted = PlantedNames(self.lines)
        self.turn_ids = frozenset(line.entry_id for line in self.lines)
        self._folded_lines = [(line.entry_id, fold_text(line.speech)) for line in self.lines]
        self._folded_text = " ".join(folded for _, folded in self._folded_lines)
        self._by_turn = {line.entry_id: line for line in self.lines}
        self._known_names = {}
        self._known_any = {}
        for entity in self.known.values():
            for name in (entity.name, *entity.aliases):
                folded = normalize_name(name)
                self._known_names.setdefault((entity.type, folded), entity.key)
                self._known_any.setdefault(folded, entity.key)

    def occurs(self, name: str) -> bool:
        """Whether ``name`` occurs in the window (see :mod:`~bub_semantic_memory._mentions`)."""
        return is_mentioned(name, self._folded_text)

    def mentions(self, names: list[str]) -> list[int]:
        """Turn numbers whose line mentions one of ``names``."""
        return [turn for turn, text in self._folded_lines if any(is_mentioned(n, text) for n in names)]

    def line(self, turn: int) -> TranscriptLine | None:
        """The window's line of turn ``turn``, if it shows one."""
        return self._by_turn.get(turn)

    def is_planted(self, name: str) -> bool:
        """Whether ``name`` was introduced by a planted instruction (a known entity never is)."""
        return (
            self.planted is not None and self.planted.plants(name) and self.known_key_any_type(name) is None
        )

    def known_key_for(self, entity_type: str, names: list[str]) -> str | None:
        """The key of a known entity of this type named by one of ``names``, if any."""
        for name in names:
            if name in self.known and self.known[name].type == entity_type:
                return name
            key = self._known_names.get((entity_type, normalize_name(name)))
            if key is not None:
                return key
        return None

    def known_key_any_type(self, reference: str) -> str | None:
        """A known entity referred to by key, name or alias (any type)."""
        if reference in self.known:
            return reference
        return self._known_any.get(normalize_name(reference))


_CURRENT_SCOPE: ContextVar[ValidationScope | None] = ContextVar("validation_scope", default=None)


@contextlib.contextmanager
def validation_scope(scope: ValidationScope) -> Iterator[None]:
    """Make ``scope`` the one the response validators check against, in this task.

    The extractor uses this rather than Instructor's ``context=`` argument: Instructor
    also renders every message as a Jinja template with that context, which would
    evaluate (or choke on) braces that people type into a conversation.
    """
    token = _CURRENT_SCOPE.set(scope)
    try:
        yield
    finally:
        _CURRENT_SCOPE.reset(token)


def current_scope() -> ValidationScope | None:
    """The scope :func:`validation_scope` set in this task, if any."""
    return _CURRENT_SCOPE.get()


@dataclass(frozen=True)
class Resolved:
    """An answer that passed every rule, resolved for storage.

    Attributes:
        entities: in first-listed order, duplicates merged into their first listing.
        relations: the relations, endpoints resolved to entity keys.
        dropped: one reason per item left out without a re-ask (a self-loop, a planted name).
        facts: the facts, about-names resolved to entity keys and times to dates.
    """

    entities: list[Entity]
    relations: list[Relation]
    dropped: list[str]
    facts: list[Fact] = field(default_factory=list)


def resolve_answer(
    scope: ValidationScope, entities: Iterable[Any], relations: Iterable[Any], facts: Iterable[Any] = ()
) -> Resolved:
    """Check an answer's entity, relation and fact items against ``scope`` and resolve them.

    Raises:
        ValueError: the answer breaks rules; the message lists every problem (one re-ask
            can then fix them all).
    """
    resolver = _Resolver(scope)
    for entity in entities:
        resolver.add_entity(entity)
    resolved = [resolver.add_relation(r) for r in relations]
    stated = [resolver.add_fact(f) for f in facts]
    if resolver.problems:
        listed = "\n".join(f"- {p}" for p in resolver.problems)
        raise ValueError(f"{len(resolver.problems)} problem(s) with the extraction:\n{listed}")
    return Resolved(
        entities=list(resolver.keys.values()),
        relations=[r for r in resolved if r is not None],
        dropped=list(resolver.dropped),
        facts=[f for f in stated if f is not None],
    )


@dataclass(frozen=True)
class Salvage:
    """What validated in an answer that was still invalid after the re-asks, and what was dropped.

    Attributes:
        entities / relations / facts: the items that pass every rule, resolved for storage.
        dropped: one reason per item left out (the validator's own message).
    """

    entities: list[Entity]
    relations: list[Relation]
    dropped: list[str]
    facts: list[Fact] = field(default_factory=list)

    def resolved(self) -> tuple[list[Entity], list[Relation]]:
        """The kept entities and relations (the same shape as :meth:`ExtractionResponse.resolved`)."""
        return list(self.entities), list(self.relations)

    def resolved_facts(self) -> list[Fact]:
        """The kept facts."""
        return list(self.facts)


def salvage(response_model: type[BaseModel], arguments: str | None, scope: ValidationScope) -> Salvage | None:
    """Keep the items of an invalid answer that validate one by one; drop the rest with a reason.

    Used when re-asks are exhausted: a wrong relation then costs that relation, not the
    window. Returns None when the answer is not a JSON object at all (nothing to keep).
    """
    try:
        data = json.loads(arguments or "")
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    resolver = _Resolver(scope)
    dropped: list[str] = []
    relations: list[Relation] = []
    facts: list[Fact] = []
    for field_name in ("entities", "phrases", "relations", "facts"):
        items = data.get(field_name)
        field = response_model.model_fields.get(field_name)
        if field is None or not isinstance(items, list):
            continue
        adapter: TypeAdapter[Any] = TypeAdapter(get_args(field.annotation)[0])
        for raw in items:
            try:
                item = adapter.validate_python(raw)
            except ValidationError:
                dropped.append(f"{field_name[:-1]} {_describe(raw)} does not fit the schema")
                continue
            before = len(resolver.problems)
            if field_name == "facts":
                if (fact := resolver.add_fact(item)) is not None:
                    facts.append(fact)
            elif field_name != "relations":
                resolver.add_entity(item)
            elif (relation := resolver.add_relation(item)) is not None:
                relations.append(relation)
            dropped.extend(" ".join(p.split()) for p in resolver.problems[before:])
    return Salvage(list(resolver.keys.values()), relations, [*dropped, *resolver.dropped], facts)


def _describe(raw: Any) -> str:
    if isinstance(raw, dict):
        if "statement" in raw:
            return repr(str(raw["statement"])[:80])
        if "name" in raw:
            return repr(str(raw["name"])[:80])
        if "source" in raw:
            return f"({str(raw.get('source'))[:40]!r} {raw.get('type')} {str(raw.get('target'))[:40]!r})"
    return repr(str(raw)[:80])


class _Resolver:
    """Turns one response's entities and relations into storage objects, collecting problems."""

    def __init__(self, scope: ValidationScope) -> None:
        self.scope = scope
        self.problems: list[str] = []
        self.keys: dict[str, Entity] = {}
        self.names: dict[str, str] = {}
        self.merged: list[str] = []  # keys listed more than once, merged into the first listing
        self.dropped: list[str] = []  # items left out without a re-ask (a self-loop, a planted name)
        self.display_names: dict[str, str] = {}  # folded display name -> key
        self.alias_owners: dict[str, str] = {}  # folded alias -> key
        self.relation_keys: set[tuple[str, str, str]] = set()
        self.fact_keys: set[str] = set()

    def _check_evidence(self, what: str, evidence: list[int]) -> list[int]:
        bad = [t for t in evidence if t not in self.scope.turn_ids]
        if bad:
            self.problems.append(
                f"{what}: evidence {bad} are not turn numbers of the transcript; "
                f"use numbers shown in brackets ({min(self.scope.turn_ids)}-{max(self.scope.turn_ids)})"
                if self.scope.turn_ids
                else f"{what}: evidence {bad} are not turn numbers of the transcript"
            )
        return [t for t in evidence if t in self.scope.turn_ids]

    def add_entity(self, raw: Any) -> Entity | None:
        name = str(raw.name).strip()
        names = [name, *(a.strip() for a in getattr(raw, "aliases", ()) if a.strip())]
        label = f"entity {name!r}"
        if planted := next((n for n in names if self.scope.is_planted(n)), None):
            self.dropped.append(f"{label} names {planted!r}, introduced by a planted instruction")
            return None
        known_key = self.scope.known_key_for(raw.type, names)
        if known_key is None and not any(self.scope.occurs(n) for n in names):
            self.problems.append(
                f"{label} does not occur in the transcript; extract only names written there "
                "(use the exact spelling)"
            )
            return None
        try:
            key = known_key or entity_key(raw.type, name)
        except ValueError:
            self.problems.append(f"{label} has no letters or digits")
            return None
        if key in self.keys:
            self._merge_duplicate(key, names, raw, label)
            return None
        evidence = self._check_evidence(label, list(raw.evidence)) or self.scope.mentions(names)
        if known_key is not None:
            known = self.scope.known[known_key]
            display = known.name
        else:
            display = name
        entity = Entity.create(
            display,
            raw.type,
            aliases=[n for n in names if normalize_name(n) != normalize_name(display)],
            attributes={
                str(k): str(v) for k, v in dict(getattr(raw, "attributes", {})).items() if str(v).strip()
            },
            evidence=evidence,
        ).model_copy(update={"key": key})
        if not self._names_are_unique(entity, label):
            return None
        self.keys[key] = entity
        for n in names:
            self.names.setdefault(normalize_name(n), key)
        return entity

    def _merge_duplicate(self, key: str, names: list[str], raw: Any, label: str) -> None:
        """The same entity listed twice has one right answer: merge it into the first listing
        (names, facts and evidence update the entity already resolved)."""
        first = self.keys[key]
        aliases = [n for n in names if normalize_name(n) != normalize_name(first.name)]
        attributes = {
            str(k): str(v) for k, v in dict(getattr(raw, "attributes", {})).items() if str(v).strip()
        }
        evidence = self._check_evidence(label, list(raw.evidence))
        merged = first.model_copy(
            update={
                "aliases": tuple(dict.fromkeys([*first.aliases, *aliases])),
                "attributes": {**attributes, **first.attributes},
                "evidence": sorted_evidence([*first.evidence, *evidence]),
            }
        )
        self.keys[key] = merged
        for n in names:
            self.names.setdefault(normalize_name(n), key)
        self.merged.append(key)
        return

    def _names_are_unique(self, entity: Entity, label: str) -> bool:
        """An alias names one entity only: it cannot be shared, nor be another entity's name."""
        problems = len(self.problems)
        display = normalize_name(entity.name)
        if display in self.alias_owners:
            owner = self.keys[self.alias_owners[display]].name
            self.problems.append(
                f"{label} is also listed as an alias of {owner!r}; one name, one entity: "
                "merge them or drop the alias"
            )
        for alias in entity.aliases:
            folded = normalize_name(alias)
            if folded in self.display_names:
                other = self.keys[self.display_names[folded]].name
                self.problems.append(
                    f"{label}: alias {alias!r} is the name of entity {other!r}; "
                    "an alias must be another name of the same entity"
                )
            elif folded in self.alias_owners:
                other = self.keys[self.alias_owners[folded]].name
                self.problems.append(
                    f"{label}: alias {alias!r} is also an alias of {other!r}; give each alias to one entity"
                )
        if len(self.problems) > problems:
            return False
        self.display_names.setdefault(display, entity.key)
        for alias in entity.aliases:
            self.alias_owners.setdefault(normalize_name(alias), entity.key)
        return True

    def _endpoint(self, reference: str, role: str, label: str) -> tuple[str, str] | None:
        reference = reference.strip()
        if reference in self.keys:
            return reference, self.keys[reference].type
        key = self.names.get(normalize_name(reference))
        if key is not None:
            return key, self.keys[key].type
        known = self.scope.known_key_any_type(reference)
        if known is not None:
            return known, self.scope.known[known].type
        self.problems.append(
            f"{label}: {role} {reference!r} is not an entity of this extraction nor a known entity; "
            "add it to entities or use an existing name"
        )
        return None

    def add_relation(self, raw: Any) -> Relation | None:
        label = f"relation ({raw.source!r} {raw.type} {raw.target!r})"
        if planted := next((str(n) for n in (raw.source, raw.target) if self.scope.is_planted(str(n))), None):
            self.dropped.append(f"{label} names {planted!r}, introduced by a planted instruction")
            return None
        source = self._endpoint(str(raw.source), "source", label)
        target = self._endpoint(str(raw.target), "target", label)
        if source is None or target is None:
            return None
        (source_key, source_type), (target_key, target_type) = source, target
        if source_key == target_key:
            # Not a fact, whatever was meant: dropped and counted rather than re-asked (a small
            # model under a grammar answers a re-ask about it with nothing at all).
            self.dropped.append(f"{label} links an entity to itself")
            return None
        ontology = self.scope.ontology
        oriented = ontology.orient(raw.type, source_type, target_type)
        if oriented is None:
            relation = ontology.relation_types[raw.type]
            self.problems.append(
                f"{label}: {raw.type} goes from {'/'.join(relation.source) or 'any'} to "
                f"{'/'.join(relation.target) or 'any'}, not from {source_type} to {target_type}"
            )
            return None
        # One fact, one form: a relation of an inverse pair is stored as the pair's canonical
        # type (``Ana works_on T-12`` as ``T-12 assigned_to Ana``), a symmetric one in key order.
        rel_type, turned = oriented
        if turned or (ontology.is_symmetric(rel_type) and target_key < source_key):
            source_key, target_key = target_key, source_key
        rel_key = (source_key, rel_type, target_key)
        if rel_key in self.relation_keys:
            return None  # the same fact twice has one right answer: keep the first listing
        self.relation_keys.add(rel_key)
        evidence = self._check_evidence(label, list(raw.evidence)) or self._stating(source_key, target_key)
        return Relation(
            source=source_key, type=rel_type, target=target_key, evidence=sorted_evidence(evidence)
        )

    def add_fact(self, raw: Any) -> Fact | None:
        statement = " ".join(str(raw.statement).split())
        label = f"fact {statement[:80]!r}"
        names = [str(n) for n in raw.about]
        if planted := next((n for n in names if self.scope.is_planted(n)), None):
            self.dropped.append(f"{label} names {planted!r}, introduced by a planted instruction")
            return None
        about: list[str] = []
        for name in names:
            endpoint = self._endpoint(name, "entity", label)
            if endpoint is None:
                return None
            about.append(endpoint[0])
        about = list(dict.fromkeys(about))
        if not about:
            self.problems.append(f"{label} is about no entity; name the entities it is about")
            return None
        evidence = self._check_evidence(label, list(raw.evidence))
        lines = [line for turn in evidence if (line := self.scope.line(turn)) is not None]
        if not lines:
            self.problems.append(f"{label} gives no evidence; give the turn numbers that state it")
            return None
        if not self._grounded(label, statement, about, lines):
            return None
        key = Fact(statement=statement, kind=raw.kind, about=tuple(about)).key
        if key in self.fact_keys:
            return None  # the same statement twice has one right answer: keep the first listing
        self.fact_keys.add(key)
        said_when = " ".join(str(getattr(raw, "when", "") or "").split()) or None
        resolved = (
            resolve_when(said_when, lines[0].date, prefer="future" if raw.kind == "plan" else "past")
            if said_when
            else None
        )
        return Fact(
            statement=statement,
            kind=raw.kind,
            about=tuple(about),
            topic=normalize_name(str(getattr(raw, "topic", "") or "")),
            when=resolved.value if resolved is not None else None,
            said_when=said_when,
            evidence=sorted_evidence(evidence),
            valid_from=min(evidence),
        )

    def _grounded(self, label: str, statement: str, about: list[str], lines: list[TranscriptLine]) -> bool:
        """Whether the evidence lines name (or are said by) an entity of the fact and hold its words."""
        names = [name for key in about for name in self._names_of(key)]
        problem = grounding_problem(statement, names, " ".join(line.speech for line in lines))
        if problem is not None and self.scope.drop_unsupported_facts:
            self.dropped.append(f"{label}: {problem}")
            return False
        if problem is not None:
            self.problems.append(
                f"{label}: {problem}; state only what the given turns say, in their words, about the "
                "entities they name"
            )
            return False
        return True

    def _stating(self, source: str, target: str) -> list[int]:
        """The lines of the window that state a relation given without evidence: those that name
        (or are said by) both of its ends, else those that name either.

        A grammar-constrained model skips an optional list, so a small model's relations came
        with none; without evidence a relation has no date, no line to quote and no line for a
        forget to hide.
        """
        sources, targets = (
            set(self.scope.mentions(self._names_of(source))),
            self.scope.mentions(self._names_of(target)),
        )
        both = [turn for turn in targets if turn in sources]
        return both or list(sorted_evidence([*sources, *targets]))

    def _names_of(self, key: str) -> list[str]:
        if key in self.keys:
            return self.keys[key].names()
        known = self.scope.known.get(key)
        return [known.name, *known.aliases] if known is not None else []
