"""What the model fills in: response models built from an ontology, and their validators.

The response model is separate from the storage model (:mod:`.models`): it speaks
the model's language (names, turn numbers), and validation turns it into stored
entities and relations (keys, entry ids). The validators read a
:class:`ValidationScope` passed through Instructor's validation context, and
collect every problem of a response into one error, so a single re-ask can fix
them all. They enforce:

* entity and relation types of the ontology (also as enums in the JSON schema, which
  grammar-constrained backends enforce while decoding);
* relation endpoints that are entities of this response or known entities (no
  dangling ends), with source and target types the relation allows;
* evidence that points at turn numbers of the transcript window;
* grounding: each new entity's name or one of its aliases occurs in the window,
  ignoring case and punctuation;
* no self-loops and no duplicates.

Some answers have one right fix and are not re-asked: a duplicate entity is merged into
its first listing, and a self-loop, or an entity or relation naming what an instruction
planted in the transcript introduced (:mod:`.planted`), is dropped with its reason.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Annotated, Any, Literal, Union, cast, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    create_model,
    model_validator,
)

from bub_semantic_memory.mentions import fold_text, is_mentioned
from bub_semantic_memory.models import Entity, Relation, entity_key, normalize_name, sorted_evidence
from bub_semantic_memory.ontology import Ontology
from bub_semantic_memory.planted import PlantedNames
from bub_semantic_memory.transcript import TranscriptLine

__all__ = [
    "Constraints",
    "ExtractionResponse",
    "KnownEntity",
    "Salvage",
    "ValidationScope",
    "build_classification_model",
    "build_entities_model",
    "build_phrases_model",
    "build_relations_model",
    "build_response_model",
    "leftover_names",
    "salvage",
]

# Bounds on every list and string: a remote model that exceeds them is re-asked, and a
# grammar-constrained local model cannot exceed them at all, which stops a small model
# from rambling until its token limit.
MAX_NAME = 80
MAX_ALIASES = 5
MAX_EVIDENCE = 8
MAX_ATTRIBUTES = 5
MAX_ENTITIES = 30
MAX_RELATIONS = 40
MAX_REASONING = 300
MAX_PHRASE = 48  # a task or event named by a phrase ("book the hotel"): short, so a weak model cannot ramble
_PHRASE_WORD = r'[^ ?!,;"\\\n]'
PHRASE_PATTERN = rf"^[a-z0-9]{_PHRASE_WORD}*( {_PHRASE_WORD}+){{0,4}}$"
"""A phrase name: up to five words, starting in lower case (capitalised names are candidates),
no question, exclamation, comma or semicolon (a grammar turns this into decoding rules; the
length bound does not survive that, the word bound does)."""
MAX_CLASSIFIED = 40  # candidate names one classification call types; more: the entities are listed
NOT_AN_ENTITY = "none"
_EVIDENCE_HELP = "Turn numbers (the number in brackets) of the lines that state this."


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
            in each line's :attr:`~bub_semantic_memory.transcript.TranscriptLine.speech`
            (a named sender counts, the renderer's ``user:`` prefixes do not).
        known: entities of the tape's memory, by key.
        planted: the names an instruction planted in ``lines`` introduces (found from
            ``lines`` when not given); entities and relations naming one are dropped.
    """

    ontology: Ontology
    lines: Sequence[TranscriptLine]
    known: dict[str, KnownEntity] = field(default_factory=dict)
    planted: PlantedNames | None = None
    turn_ids: frozenset[int] = field(init=False)
    _folded_text: str = field(init=False, repr=False)
    _known_names: dict[tuple[str, str], str] = field(init=False, repr=False)
    _known_any: dict[str, str] = field(init=False, repr=False)
    _folded_lines: list[tuple[int, str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.planted is None:
            self.planted = PlantedNames(self.lines)
        self.turn_ids = frozenset(line.entry_id for line in self.lines)
        self._folded_lines = [(line.entry_id, fold_text(line.speech)) for line in self.lines]
        self._folded_text = " ".join(folded for _, folded in self._folded_lines)
        self._known_names = {}
        self._known_any = {}
        for entity in self.known.values():
            for name in (entity.name, *entity.aliases):
                folded = normalize_name(name)
                self._known_names.setdefault((entity.type, folded), entity.key)
                self._known_any.setdefault(folded, entity.key)

    def occurs(self, name: str) -> bool:
        """Whether ``name`` occurs in the window (see :mod:`~bub_semantic_memory.mentions`)."""
        return is_mentioned(name, self._folded_text)

    def mentions(self, names: list[str]) -> list[int]:
        """Turn numbers whose line mentions one of ``names``."""
        return [turn for turn, text in self._folded_lines if any(is_mentioned(n, text) for n in names)]

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


class _ResponseBase(BaseModel):
    """Validation shared by every generated response model."""

    model_config = ConfigDict(extra="ignore")

    _entities: list[Entity] = PrivateAttr(default_factory=list)
    _relations: list[Relation] = PrivateAttr(default_factory=list)
    _dropped: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _validate_against_scope(self, info: ValidationInfo) -> _ResponseBase:
        scope = (info.context or {}).get("scope") if isinstance(info.context, dict) else None
        scope = scope if isinstance(scope, ValidationScope) else _CURRENT_SCOPE.get()
        if not isinstance(scope, ValidationScope):
            return self  # No scope (e.g. schema generation or a unit test of the shape only).
        resolver = _Resolver(scope)
        entities = [
            resolver.add_entity(e) for e in [*getattr(self, "entities", []), *getattr(self, "phrases", [])]
        ]
        relations = [resolver.add_relation(r) for r in getattr(self, "relations", [])]
        if resolver.problems:
            listed = "\n".join(f"- {p}" for p in resolver.problems)
            raise ValueError(f"{len(resolver.problems)} problem(s) with the extraction:\n{listed}")
        del entities  # merged duplicates live on in resolver.keys, in first-listed order
        self._entities = list(resolver.keys.values())
        self._relations = [r for r in relations if r is not None]
        self._dropped = list(resolver.dropped)
        return self


class ExtractionResponse(_ResponseBase):
    """Static shape of a response, for typing; the real classes are built per ontology."""

    def resolved(self) -> tuple[list[Entity], list[Relation]]:
        """The validated storage entities and relations (keys and entry ids resolved)."""
        return list(self._entities), list(self._relations)

    @property
    def dropped(self) -> list[str]:
        """Items left out without a re-ask because leaving them out is the one right answer."""
        return list(self._dropped)


@dataclass(frozen=True)
class Salvage:
    """What validated in an answer that was still invalid after the re-asks, and what was dropped.

    Attributes:
        entities / relations: the items that pass every rule, resolved for storage.
        dropped: one reason per item left out (the validator's own message).
    """

    entities: list[Entity]
    relations: list[Relation]
    dropped: list[str]

    def resolved(self) -> tuple[list[Entity], list[Relation]]:
        """The kept entities and relations (the same shape as :meth:`ExtractionResponse.resolved`)."""
        return list(self.entities), list(self.relations)


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
    for field_name in ("entities", "phrases", "relations"):
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
            if field_name != "relations":
                resolver.add_entity(item)
            elif (relation := resolver.add_relation(item)) is not None:
                relations.append(relation)
            dropped.extend(" ".join(p.split()) for p in resolver.problems[before:])
    return Salvage(list(resolver.keys.values()), relations, [*dropped, *resolver.dropped])


def _describe(raw: Any) -> str:
    if isinstance(raw, dict):
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
        if not ontology.allows(raw.type, source_type, target_type):
            relation = ontology.relation_types[raw.type]
            self.problems.append(
                f"{label}: {raw.type} goes from {'/'.join(relation.source) or 'any'} to "
                f"{'/'.join(relation.target) or 'any'}, not from {source_type} to {target_type}"
            )
            return None
        if ontology.is_symmetric(raw.type) and target_key < source_key:
            source_key, target_key = target_key, source_key
        rel_key = (source_key, raw.type, target_key)
        if rel_key in self.relation_keys:
            return None  # the same fact twice has one right answer: keep the first listing
        self.relation_keys.add(rel_key)
        evidence = self._check_evidence(label, list(raw.evidence))
        return Relation(
            source=source_key, type=raw.type, target=target_key, evidence=sorted_evidence(evidence)
        )


def _literal(values: list[str]) -> Any:
    return Literal[tuple(values)]


def _list_of(item: Any) -> Any:
    return list[item]


@dataclass(frozen=True)
class Constraints:
    """What one window allows, written into the response schema (grammar-constrained backends
    enforce it while decoding; validators enforce it for everyone else).

    Attributes:
        turns: the turn numbers evidence may cite (empty: any integer).
        names: entity names to pick from (None: free text; empty: nothing to name).
        at_least: entities a listing must name (a grammar-constrained small model otherwise
            takes the shortest path, ``[]``); set only when the new lines hold a candidate, so
            a window that names nothing new can still answer ``[]``.
        phrase_types: entity types whose names may also be a short phrase of the transcript
            rather than a candidate ("book the hotel" as a task, "soft opening" as an event);
            only with ``names`` (free-text names allow any phrase anyway).
    """

    turns: tuple[int, ...] = ()
    names: tuple[str, ...] | None = None
    at_least: int = 0
    phrase_types: tuple[str, ...] = ()


def _evidence_field(turns: tuple[int, ...]) -> tuple[Any, Any]:
    item: Any = Literal[turns] if turns else int
    return (_list_of(item), Field(default_factory=list, max_length=MAX_EVIDENCE, description=_EVIDENCE_HELP))


def _entity_model(ontology: Ontology, constraints: Constraints) -> type[BaseModel]:
    if constraints.names:
        return _picked_entity_model(ontology, constraints)
    return create_model(
        "ExtractedEntity",
        name=(
            Annotated[str, Field(min_length=1, max_length=MAX_NAME)],
            Field(description="The name exactly as written in the transcript."),
        ),
        type=_entity_type_field(list(ontology.entity_types)),
        aliases=(
            list[Annotated[str, Field(max_length=MAX_NAME)]],
            Field(default_factory=list, max_length=MAX_ALIASES, description="Other names used for it."),
        ),
        attributes=(
            dict[Annotated[str, Field(max_length=40)], Annotated[str, Field(max_length=MAX_NAME)]],
            Field(
                default_factory=dict,
                max_length=MAX_ATTRIBUTES,
                description="Short facts, e.g. role or due date.",
            ),
        ),
        evidence=_evidence_field(constraints.turns),
    )


def _entity_type_field(types: list[str]) -> tuple[Any, Any]:
    return (_literal(types), Field(description="One entity type of the list."))


def _picked_entity_model(ontology: Ontology, constraints: Constraints) -> type[BaseModel]:
    """Candidate mode (small models): names and aliases are picked, not written, and there
    are no free-text attributes for a weak model to ramble in."""
    names = list(constraints.names or ())
    return create_model(
        "ExtractedEntity",
        name=(_literal(names), Field(description="The name exactly as written in the transcript.")),
        type=_entity_type_field(list(ontology.entity_types)),
        aliases=(_list_of(_literal(names)), Field(default_factory=list, max_length=3)),
        evidence=_evidence_field(constraints.turns),
    )


def _phrase_entity_model(constraints: Constraints) -> type[BaseModel]:
    """A task or event that no capitalised span names ("book the hotel"): a short phrase,
    which the validators then require to occur in the transcript."""
    return create_model(
        "PhraseEntity",
        name=(
            Annotated[str, Field(min_length=3, max_length=MAX_PHRASE, pattern=PHRASE_PATTERN)],
            Field(description="A short phrase copied from the transcript."),
        ),
        type=_entity_type_field(list(constraints.phrase_types)),
        evidence=_evidence_field(constraints.turns),
    )


def _entity_fields(ontology: Ontology, constraints: Constraints, *, at_least: int = 0) -> dict[str, Any]:
    """``entities`` and, with phrase types, ``phrases``: a separate list, so a minimum of
    entities is always met by picking a candidate, never by inventing a phrase."""
    most = MAX_ENTITIES if constraints.names is None else min(MAX_ENTITIES, len(constraints.names))
    fields: dict[str, Any] = {
        "entities": (
            _list_of(_entity_model(ontology, constraints)),
            Field(min_length=min(at_least, most), max_length=most),
        )
    }
    if constraints.names is not None and constraints.phrase_types:
        fields.update(_phrase_field(constraints))
    return fields


def _phrase_field(constraints: Constraints) -> dict[str, Any]:
    return {
        "phrases": (
            _list_of(_phrase_entity_model(constraints)),
            Field(  # required: a grammar-constrained model skips an optional list
                max_length=MAX_ENTITIES,
                description=f"Each {' or '.join(constraints.phrase_types)} that no candidate name names, "
                "by a short lower-case phrase copied from the transcript.",
            ),
        )
    }


def _relation_model(ontology: Ontology, constraints: Constraints) -> type[BaseModel]:
    endpoint: Any = Annotated[str, Field(max_length=MAX_NAME + 40)]
    return create_model(
        "ExtractedRelation",
        source=(endpoint, Field(description="Entity name (or known key) the relation starts from.")),
        type=(_literal(list(ontology.relation_types)), Field(description="One relation type of the list.")),
        target=(endpoint, Field(description="Entity name (or known key) the relation points to.")),
        evidence=_evidence_field(constraints.turns),
    )


def _reasoning_field() -> tuple[type[str], Any]:
    return (
        str,
        Field(
            max_length=MAX_REASONING, description="One or two sentences: who and what the turns are about."
        ),
    )


@functools.lru_cache(maxsize=128)
def build_response_model(
    ontology: Ontology, *, reasoning: bool = False, constraints: Constraints | None = None
) -> type[ExtractionResponse]:
    """The single-call response model: (reasoning), entities, then relations."""
    constraints = constraints or Constraints()
    fields: dict[str, Any] = {}
    if reasoning:
        fields["reasoning"] = _reasoning_field()
    fields.update(_entity_fields(ontology, constraints))
    fields["relations"] = (_list_of(_relation_model(ontology, constraints)), Field(max_length=MAX_RELATIONS))
    return cast("type[ExtractionResponse]", create_model("Extraction", __base__=ExtractionResponse, **fields))


@functools.lru_cache(maxsize=128)
def build_entities_model(
    ontology: Ontology, *, reasoning: bool = False, constraints: Constraints | None = None
) -> type[ExtractionResponse]:
    """Step one of the two-step strategy: entities only, at least ``constraints.at_least`` of
    them (with an empty candidate list nothing may be named)."""
    constraints = constraints or Constraints()
    fields: dict[str, Any] = {}
    if reasoning:
        fields["reasoning"] = _reasoning_field()
    fields.update(_entity_fields(ontology, constraints, at_least=constraints.at_least))
    return cast("type[ExtractionResponse]", create_model("Entities", __base__=ExtractionResponse, **fields))


@functools.lru_cache(maxsize=128)
def build_phrases_model(constraints: Constraints) -> type[ExtractionResponse]:
    """The phrase step of the three-step strategy: only the ``phrases`` list (of
    ``constraints.phrase_types``), which may be empty."""
    fields = _phrase_field(constraints)
    return cast("type[ExtractionResponse]", create_model("Phrases", __base__=ExtractionResponse, **fields))


class ClassifiedResponse(ExtractionResponse):
    """A classification answer: one field per candidate name, holding its type or ``none``.

    Each field's alias is the candidate name, so the JSON object's keys are the names
    and a grammar-constrained model visits every candidate in order (it cannot stop
    after the first few, which is how a small model that lists entities loses recall).
    """

    @property
    def entities(self) -> list[Any]:
        """The typed candidates as entity items.

        A name inside exactly one longer typed name ("Robert" in "Robert Castillo",
        "Tidewater" in "Project Tidewater") becomes that one's alias, whatever type the
        short form was given: out of context, the short form's type is the guess.
        """
        typed = {
            str(info.alias): str(getattr(self, name))
            for name, info in type(self).model_fields.items()
            if getattr(self, name) != NOT_AN_ENTITY
        }
        owners = {name: _containing(name, typed) for name in typed}
        return [
            SimpleNamespace(
                name=name,
                type=kind,
                aliases=[alias for alias, owner in owners.items() if owner == name],
                evidence=[],
            )
            for name, kind in typed.items()
            if owners[name] is None
        ]


def _containing(name: str, typed: Mapping[str, str]) -> str | None:
    """The one longer typed candidate that contains ``name`` as whole words, if exactly one."""
    words = normalize_name(name).split()
    longer = [other for other in typed if other != name and _has_words(normalize_name(other).split(), words)]
    return longer[0] if len(longer) == 1 else None


def leftover_names(names: Sequence[str], taken: Sequence[Entity | KnownEntity]) -> list[str]:
    """The names that are no taken name or alias, nor a run of whole words inside or around one."""
    taken_words = [normalize_name(n).split() for t in taken for n in (t.name, *t.aliases)]
    return [
        name
        for name in names
        if not any(_overlap(normalize_name(name).split(), other) for other in taken_words)
    ]


def _overlap(words: list[str], other: list[str]) -> bool:
    return words == other or _has_words(other, words) or _has_words(words, other)


def _has_words(words: list[str], part: list[str]) -> bool:
    return len(part) < len(words) and any(
        words[i : i + len(part)] == part for i in range(len(words) - len(part) + 1)
    )


@functools.lru_cache(maxsize=128)
def build_classification_model(ontology: Ontology, names: tuple[str, ...]) -> type[ExtractionResponse]:
    """Step one of the ``classify`` strategy: every candidate name gets a type or ``none``.

    ``names`` must be distinct; at most :data:`MAX_CLASSIFIED` of them.
    """
    choice = _literal([*ontology.entity_types, NOT_AN_ENTITY])
    fields: dict[str, Any] = {f"candidate_{i}": (choice, Field(alias=name)) for i, name in enumerate(names)}
    return cast(
        "type[ExtractionResponse]",
        create_model("Classification", __base__=ClassifiedResponse, **fields),
    )


def build_relations_model(
    ontology: Ontology, endpoints: Mapping[str, str], *, turns: tuple[int, ...] = ()
) -> type[ExtractionResponse] | None:
    """Step two of the two-step strategy: relations typed by the ontology over known endpoints.

    ``endpoints`` maps entity names to their types. Each relation type becomes its
    own variant whose source and target are enums of the names of allowed types, so
    a grammar-constrained backend can only emit relations the ontology allows between
    entities that exist. The list is bounded by the number of endpoints (three
    relations per entity at most), so a small model that starts repeating itself under
    a grammar stops within a few items instead of at its output limit. Returns None
    when no relation type fits the endpoints.
    """
    variants: list[Any] = []
    for rel_name, rel in ontology.relation_types.items():
        sources = sorted(n for n, t in endpoints.items() if not rel.source or t in rel.source)
        targets = sorted(n for n, t in endpoints.items() if not rel.target or t in rel.target)
        if not sources or not targets or len(set(sources) | set(targets)) < 2:
            continue
        variants.append(
            create_model(
                f"Relation_{rel_name}",
                type=(_literal([rel_name]), Field(description=rel.description)),
                source=(_literal(sources), ...),
                target=(_literal(targets), ...),
                evidence=_evidence_field(turns),
            )
        )
    if not variants:
        return None
    item: Any = Annotated[Union[tuple(variants)], Field(discriminator="type")]  # noqa: UP007
    return cast(
        "type[ExtractionResponse]",
        create_model(
            "Relations",
            __base__=ExtractionResponse,
            relations=(_list_of(item), Field(max_length=min(MAX_RELATIONS, 3 * len(endpoints)))),
        ),
    )
