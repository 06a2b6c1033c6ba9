"""What the model fills in: response models built from an ontology and a window's constraints.

The response models are separate from the storage model (:mod:`bub_semantic_memory._models`):
they speak the model's language (names, turn numbers), and their validator hands each
answer to :mod:`._validation`, which checks it against the window and resolves it into
stored entities and relations. Types, enums and bounds are written into the JSON schema,
which grammar-constrained backends enforce while decoding (and validators enforce for
everyone else).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Annotated, Any, ClassVar, Literal, Union, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    create_model,
    model_validator,
)

from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory._models import FACT_KINDS, Entity, Fact, Relation, normalize_name
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.extraction._pairs import NO_RELATION, Pair, pair_choices
from bub_semantic_memory.extraction._validation import (
    KnownEntity,
    ValidationScope,
    current_scope,
    resolve_answer,
)

__all__ = [
    "MAX_CLASSIFIED",
    "MAX_NAME",
    "MAX_PAIRS",
    "Constraints",
    "ExtractionResponse",
    "build_classification_model",
    "build_entities_model",
    "build_facts_field",
    "build_facts_model",
    "build_pairs_model",
    "build_phrases_model",
    "build_relations_model",
    "build_response_model",
    "leftover_names",
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
MAX_PAIRS = 16  # co-mentioned pairs one pairs call asks about; more are counted as dropped
MAX_FACTS = 12
MAX_STATEMENT = 160
MAX_ABOUT = 3
MAX_WHEN = 40
MAX_TOPIC = 24
TOPIC_PATTERN = r"^([a-z][a-z ]{0,23})?$"
NOT_AN_ENTITY = "none"
_FactKind: Any = Literal[FACT_KINDS]
_Topic = Annotated[str, Field(max_length=MAX_TOPIC, pattern=TOPIC_PATTERN)]
_When = Annotated[str, Field(max_length=MAX_WHEN)]
"""A fact's kind, topic and time as said, the same in every facts schema."""
_EVIDENCE_HELP = "Turn numbers (the number in brackets) of the lines that state this."


class _ResponseBase(BaseModel):
    """Validation shared by every generated response model."""

    model_config = ConfigDict(extra="ignore")

    _entities: list[Entity] = PrivateAttr(default_factory=list)
    _relations: list[Relation] = PrivateAttr(default_factory=list)
    _facts: list[Fact] = PrivateAttr(default_factory=list)
    _dropped: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _validate_against_scope(self, info: ValidationInfo) -> _ResponseBase:
        scope = (info.context or {}).get("scope") if isinstance(info.context, dict) else None
        scope = scope if isinstance(scope, ValidationScope) else current_scope()
        if not isinstance(scope, ValidationScope):
            return self  # No scope (e.g. schema generation or a unit test of the shape only).
        entities = [*getattr(self, "entities", []), *getattr(self, "phrases", [])]
        resolved = resolve_answer(scope, entities, getattr(self, "relations", []), getattr(self, "facts", []))
        self._entities, self._relations, self._facts, self._dropped = (
            resolved.entities,
            resolved.relations,
            resolved.facts,
            resolved.dropped,
        )
        return self


class ExtractionResponse(_ResponseBase):
    """Static shape of a response, for typing; the real classes are built per ontology."""

    def resolved(self) -> tuple[list[Entity], list[Relation]]:
        """The validated storage entities and relations (keys and entry ids resolved)."""
        return list(self._entities), list(self._relations)

    def resolved_facts(self) -> list[Fact]:
        """The validated facts (about-names resolved to keys, times to dates)."""
        return list(self._facts)

    @property
    def dropped(self) -> list[str]:
        """Items left out without a re-ask because leaving them out is the one right answer."""
        return list(self._dropped)


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
    ontology: Ontology,
    *,
    reasoning: bool = False,
    constraints: Constraints | None = None,
    facts: bool = False,
) -> type[ExtractionResponse]:
    """The single-call response model: (reasoning), entities, relations, then (``facts``) facts."""
    constraints = constraints or Constraints()
    fields: dict[str, Any] = {}
    if reasoning:
        fields["reasoning"] = _reasoning_field()
    fields.update(_entity_fields(ontology, constraints))
    fields["relations"] = (_list_of(_relation_model(ontology, constraints)), Field(max_length=MAX_RELATIONS))
    if facts:
        fields["facts"] = build_facts_field(None, constraints.turns, required=False)
    return cast("type[ExtractionResponse]", create_model("Extraction", __base__=ExtractionResponse, **fields))


def _untitled(schema: dict[str, Any]) -> None:
    """Drop the titles pydantic gives each property: the names say as much, and every token of a
    schema is billed on every request."""
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


def build_facts_field(
    names: Sequence[str] | None, turns: tuple[int, ...] = (), *, required: bool = True
) -> tuple[Any, Any]:
    """The ``facts`` list: statements about entities (picked from ``names``; None: written freely).

    Every string is bounded and the topic is a short lower-case phrase, so a grammar-constrained
    small model cannot ramble; the time is copied as said ("last Friday") and resolved to a date
    by the validator, never computed by the model. ``required``: a grammar-constrained model skips
    an optional list, so the relations call requires it; the single call, written by models that
    follow a schema, may leave it out when there is nothing to state.
    """
    name: Any = _literal(sorted(names)) if names else Annotated[str, Field(max_length=MAX_NAME + 40)]
    item = create_model(
        "ExtractedFact",
        __config__=ConfigDict(json_schema_extra=_untitled),
        statement=(
            Annotated[str, Field(min_length=8, max_length=MAX_STATEMENT)],
            Field(description="A short sentence, names not pronouns."),
        ),
        about=(_list_of(name), Field(min_length=1, max_length=MAX_ABOUT)),
        kind=(_FactKind, ...),
        topic=(_Topic, ...),
        when=(_When, Field(default="", description="As said, or empty.")),
        evidence=_evidence_field(turns),
    )
    # The prompt says what each field means: every word here is billed again on every request.
    if required:
        return (_list_of(item), Field(max_length=MAX_FACTS))
    return (_list_of(item), Field(default_factory=list, max_length=MAX_FACTS))


class TurnFactsResponse(ExtractionResponse):
    """A facts answer: one field per new line that says something, holding what it says about
    the entities (an empty statement: nothing).

    Each field's alias is the line's turn number (and its sender, when named), so a
    grammar-constrained model answers every line in order: asked for a list instead, the 1.5B
    model closed it empty, or (made to fill it) wrote one sentence and repeated it. The class
    knows which line each field answers, so the evidence is that line, never a turn number the
    model picked.
    """

    turn_senders: ClassVar[Mapping[str, str | None]] = {}
    turn_names: ClassVar[tuple[str, ...]] = ()

    @property
    def facts(self) -> list[Any]:
        """The non-empty statements as fact items, citing their line (see :func:`_said_about`)."""
        found = []
        for name, info in type(self).model_fields.items():
            said = getattr(self, name)
            if not said.statement.strip():
                continue
            found.append(
                SimpleNamespace(
                    statement=said.statement,
                    about=_said_about(
                        said.statement, self.turn_names, self.turn_senders.get(str(info.alias))
                    ),
                    kind=said.kind,
                    topic=said.topic,
                    when=said.when,
                    evidence=[int(str(info.alias).split()[0])],
                )
            )
        return found


def _said_about(statement: str, names: Sequence[str], sender: str | None) -> list[str]:
    """Who a statement is about: the name it starts with, else the line's sender, then the other
    names it holds ("Hey Jon! ..." said by Gina is first about Gina)."""
    folded = fold_text(statement)
    named = [name for name in names if is_mentioned(name, folded)]
    leading = next((name for name in named if folded.startswith(fold_text(name))), None)
    first = leading or sender
    return list(dict.fromkeys([first, *named] if first else named))[:MAX_ABOUT]


@functools.lru_cache(maxsize=128)
def build_facts_model(
    names: tuple[str, ...], turns: tuple[tuple[int, str | None], ...]
) -> type[ExtractionResponse]:
    """The ``facts`` step: for each of ``turns`` (a new line's number and, when it is one of
    ``names``, its sender), a short statement of what it says about the entities ``names``.

    Shaped for a grammar-constrained small model: the keys are the turns, so it answers each;
    every string is bounded, the topic is a short lower-case phrase and the time is copied as
    said (the validator resolves it against the line's date). Who a fact is about is not asked:
    picked before the statement was written, the 1.5B model named the other speaker for half the
    lines; the names the statement holds, else the line's sender, say it.
    """
    said = create_model(
        "SaidInTurn",
        __config__=ConfigDict(json_schema_extra=_untitled),
        statement=(Annotated[str, Field(max_length=MAX_STATEMENT)], ...),
        kind=(_FactKind, ...),
        topic=(_Topic, ...),
        when=(_When, ...),
    )
    # Zero-padded to one width, so that the keys sort in transcript order: the local backend
    # builds its grammar from the schema with its keys sorted ("13" before "5" muddled the lines).
    width = max((len(str(turn)) for turn, _ in turns), default=1)
    keys = {
        turn: f"{str(turn).zfill(width)} {sender}" if sender else str(turn).zfill(width)
        for turn, sender in turns
    }
    fields: dict[str, Any] = {f"turn_{turn}": (said, Field(alias=keys[turn])) for turn, _ in turns}
    model = cast("type[TurnFactsResponse]", create_model("Facts", __base__=TurnFactsResponse, **fields))
    model.turn_senders = {keys[turn]: sender for turn, sender in turns}
    model.turn_names = names
    return model


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


class PairedResponse(ExtractionResponse):
    """A pairs answer: one field per co-mentioned pair, holding a sentence of its choices or ``none``.

    Each field's alias is the pair ("Ana / T-12"), so the JSON object's keys are the pairs and a
    grammar-constrained model answers every one (see :mod:`._pairs`); the class knows what each
    sentence states.
    """

    pair_relations: ClassVar[Mapping[str, Mapping[str, tuple[str, str, str]]]] = {}
    pair_evidence: ClassVar[Mapping[str, tuple[int, ...]]] = {}

    @property
    def relations(self) -> list[Any]:
        """The chosen sentences as relation items, with the lines that name both as evidence."""
        found = []
        for name, info in type(self).model_fields.items():
            key, chosen = str(info.alias), str(getattr(self, name))
            if chosen == NO_RELATION:
                continue
            source, relation_type, target = self.pair_relations[key][chosen]
            found.append(
                SimpleNamespace(
                    source=source, type=relation_type, target=target, evidence=list(self.pair_evidence[key])
                )
            )
        return found


@functools.lru_cache(maxsize=128)
def build_pairs_model(ontology: Ontology, pairs: tuple[Pair, ...]) -> type[ExtractionResponse]:
    """The ``pairs`` step: every co-mentioned pair gets one relation the ontology allows, or ``none``.

    ``pairs`` must have distinct keys and at least one choice each (:func:`._pairs.co_mentioned_pairs`
    returns such pairs).
    """
    fields: dict[str, Any] = {}
    relations: dict[str, dict[str, tuple[str, str, str]]] = {}
    for index, pair in enumerate(pairs):
        choices = pair_choices(ontology, pair)
        relations[pair.key] = choices
        fields[f"pair_{index}"] = (_literal([*choices, NO_RELATION]), Field(alias=pair.key))
    model = cast("type[PairedResponse]", create_model("Pairs", __base__=PairedResponse, **fields))
    model.pair_relations = relations
    model.pair_evidence = {pair.key: pair.evidence for pair in pairs}
    return model


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
    ontology: Ontology, endpoints: Mapping[str, str], *, turns: tuple[int, ...] = (), facts: bool = False
) -> type[ExtractionResponse] | None:
    """Step two of the two-step strategy: relations typed by the ontology over known endpoints
    (and, with ``facts``, the facts about them).

    ``endpoints`` maps entity names to their types. Each relation type becomes its
    own variant whose source and target are enums of the names of allowed types, so
    a grammar-constrained backend can only emit relations the ontology allows between
    entities that exist. The list is bounded by the number of endpoints (three
    relations per entity at most), so a small model that starts repeating itself under
    a grammar stops within a few items instead of at its output limit. Returns None
    when no relation type fits the endpoints and no facts are asked for.
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
    fields: dict[str, Any] = {}
    if variants:
        item: Any = Annotated[Union[tuple(variants)], Field(discriminator="type")]  # noqa: UP007
        fields["relations"] = (_list_of(item), Field(max_length=min(MAX_RELATIONS, 3 * len(endpoints))))
    if facts:
        fields["facts"] = build_facts_field(list(endpoints), turns)
    if not fields:
        return None
    return cast("type[ExtractionResponse]", create_model("Relations", __base__=ExtractionResponse, **fields))
