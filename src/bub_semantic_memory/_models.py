"""The stored memory data model: entities, relations, snapshots, usage.

These are the shapes written to the memory sidecar and read back, so they are
pydantic models. Identity is derived from content: an entity's key is its type
plus its normalised name (``person:alice-chen``), never a random id, so the same
fact extracted twice folds into one entity (see :mod:`bub_semantic_memory.memory._graph`).
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "FACT_KINDS",
    "SUPERSEDING_KINDS",
    "Entity",
    "Fact",
    "FactKind",
    "PromptRef",
    "Relation",
    "RelationKey",
    "Snapshot",
    "Usage",
    "entity_key",
    "normalize_name",
]

SNAPSHOT_SCHEMA_VERSION = 1
_ARTICLES = frozenset({"the", "a", "an"})

type RelationKey = tuple[str, str, str]
"""(source key, relation type, target key)."""


@functools.lru_cache(maxsize=65_536)
def normalize_name(text: str) -> str:
    """Fold a name for comparison: NFKC, case-folded, punctuation to spaces, leading article dropped.

    ``"The  Apollo-Project!"`` and ``"apollo project"`` normalise alike. Letters, digits
    and combining marks of every script are kept, so ``"张伟"`` stays ``"张伟"`` and the
    vowel signs of ``"राम"`` stay inside the word instead of splitting it.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(ch if unicodedata.category(ch)[0] in "LNM" else " " for ch in folded)
    words = kept.split()
    if len(words) > 1 and words[0] in _ARTICLES:
        words = words[1:]
    return " ".join(words)


def entity_key(entity_type: str, name: str) -> str:
    """The deterministic key of an entity: ``<type>:<normalised-name-with-dashes>``.

    Raises:
        ValueError: if the name has no letters or digits.
    """
    slug = normalize_name(name).replace(" ", "-")
    if not slug:
        raise ValueError(f"entity name {name!r} has no letters or digits")
    return f"{entity_type}:{slug}"


def sorted_evidence(values: Iterable[int]) -> tuple[int, ...]:
    """Entry ids as stored: sorted, without duplicates."""
    return tuple(sorted(set(values)))


# Evidence is kept sorted by whoever builds it (Entity.create, the validators, the graph)
# rather than by a validator: a per-field Python validator made loading 10,000 stored
# snapshots three times slower.
type Evidence = tuple[int, ...]
"""Tape entry ids that state a fact: sorted, without duplicates."""


class Entity(BaseModel):
    """A person, project, place... remembered from a tape.

    Attributes:
        key: ``<type>:<slug>``, derived from type and normalised name.
        name: display name, as first written in the tape.
        type: an entity type of the ontology.
        aliases: other names the tape used for it.
        attributes: small facts about it (``{"role": "designer"}``).
        evidence: tape entry ids that mention it.
    """

    model_config = ConfigDict(frozen=True)

    key: str
    name: str
    type: str
    aliases: tuple[str, ...] = ()
    attributes: dict[str, str] = Field(default_factory=dict)
    evidence: Evidence = ()

    @classmethod
    def create(
        cls,
        name: str,
        type: str,
        *,
        aliases: list[str] | tuple[str, ...] = (),
        attributes: dict[str, str] | None = None,
        evidence: list[int] | tuple[int, ...] = (),
    ) -> Entity:
        """Build an entity whose key is derived from ``type`` and ``name``."""
        return cls(
            key=entity_key(type, name),
            name=name,
            type=type,
            aliases=tuple(a for a in dict.fromkeys(aliases) if normalize_name(a) != normalize_name(name)),
            attributes=dict(attributes or {}),
            evidence=sorted_evidence(evidence),
        )

    def names(self) -> list[str]:
        """The display name followed by the aliases."""
        return [self.name, *self.aliases]


class Relation(BaseModel):
    """A typed edge between two entity keys.

    ``valid_from`` / ``valid_until`` hold the entry id (or an ISO date) at which the
    fact started or stopped being true. A superseded fact keeps its history: it is
    closed with ``valid_until``, never deleted.
    """

    model_config = ConfigDict(frozen=True)

    source: str
    type: str
    target: str
    attributes: dict[str, str] = Field(default_factory=dict)
    evidence: Evidence = ()
    valid_from: int | str | None = None
    valid_until: int | str | None = None

    @property
    def key(self) -> RelationKey:
        """(source, type, target): two relations with the same key are the same fact."""
        return (self.source, self.type, self.target)

    @property
    def is_current(self) -> bool:
        """True unless a newer fact closed this one."""
        return self.valid_until is None


type FactKind = Literal["event", "state", "preference", "plan", "opinion"]
"""What a fact says: something that happened (an event), how things are (a state), what someone likes
or wants (a preference), what someone intends to do (a plan), what someone thinks of something
(an opinion)."""

FACT_KINDS: tuple[str, ...] = get_args(FactKind.__value__)
"""Every fact kind, in the order the prompts list them."""

SUPERSEDING_KINDS = frozenset({"state", "preference", "plan"})
"""Kinds whose newer fact on the same topic replaces the older one ("lives in Bergen" then "moved to
Stavanger"); events and opinions accumulate (two trips are two facts)."""


class Fact(BaseModel):
    """A statement about one or more entities, in the speaker's terms ("Maren's mother moved to Stavanger").

    Typed relations hold what the ontology names and the graph can walk; a fact holds what people
    say that no relation type fits: what someone did, likes, plans or thinks, and when.

    Attributes:
        statement: a short sentence with names instead of pronouns.
        kind: see :data:`FactKind`.
        about: the keys of the entities it is about (each must exist, as relation endpoints must).
        topic: a word or two naming what it is about (``home``, ``piano lessons``): a newer fact of a
            superseding kind about the same first entity and topic replaces this one.
        when: the date it happened or held, resolved from the entry that said it: ``2023-05-05``,
            ``2023-05``, ``2023``, or a week ``2023-W18`` (None: no time was said, or none resolved).
        said_when: the time as the speaker said it ("last Friday"), kept beside the resolved date.
        evidence: tape entry ids that state it.
        valid_from, valid_until: the entry ids it held from and until (``valid_until`` set when a
            newer fact on its topic superseded it).
    """

    model_config = ConfigDict(frozen=True)

    statement: str
    kind: FactKind
    about: tuple[str, ...]
    topic: str = ""
    when: str | None = None
    said_when: str | None = None
    evidence: Evidence = ()
    valid_from: int | None = None
    valid_until: int | None = None

    @property
    def key(self) -> str:
        """What makes two facts the same statement: the kind and the normalised words."""
        return fact_key(self.kind, self.statement)

    @property
    def is_current(self) -> bool:
        """True unless a newer fact on its topic closed this one."""
        return self.valid_until is None


def fact_key(kind: str, statement: str) -> str:
    """The identity of a fact: ``<kind>:<normalised statement>``."""
    return f"{kind}:{normalize_name(statement)}"


class PromptRef(BaseModel):
    """Which prompt file produced a snapshot: name, version and the file's sha256.

    ``ontology_sha256`` is set when an eval replaced the prompt's ontology with a
    dataset's (see :mod:`bub_semantic_memory.evals.extraction`): the replacement's hash.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    version: int
    sha256: str
    ontology_sha256: str | None = None

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"


class Usage(BaseModel):
    """What one extraction cost, counted over every attempt, failed ones included.

    Attributes:
        requests: HTTP requests sent (transport retries included).
        attempts: model responses received and validated (first answers plus re-asks).
        reasks: validation re-asks (0 means the first answer was valid).
        latency_s: wall time of the whole call, retries and back-off included.
        cached_tokens: prompt tokens the provider served from its prefix cache, when it
            says so (``usage.prompt_tokens_details.cached_tokens``); 0 otherwise.
    """

    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    attempts: int = 0
    reasks: int = 0
    latency_s: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            requests=self.requests + other.requests,
            attempts=self.attempts + other.attempts,
            reasks=self.reasks + other.reasks,
            latency_s=self.latency_s + other.latency_s,
        )


class Snapshot(BaseModel):
    """The result of extracting one contiguous range of a tape's entries.

    A tape's memory is the fold of its snapshots. The snapshot id is derived from the
    tape, the range and the prompt, so the same extraction stored twice (two writers,
    a retried append) folds once.
    """

    model_config = ConfigDict(frozen=True)

    schema_version: int = SNAPSHOT_SCHEMA_VERSION
    id: str = ""
    tape: str
    first_entry_id: int
    last_entry_id: int
    prompt: PromptRef
    model: str
    mode: str
    usage: Usage = Field(default_factory=Usage)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    entities: tuple[Entity, ...] = ()
    relations: tuple[Relation, ...] = ()
    facts: tuple[Fact, ...] = ()
    """Statements the window made (absent in sidecars written before facts existed: none)."""
    dropped: tuple[str, ...] = ()
    """Items of the model's answer left out because they broke a rule after every re-ask,
    one reason each (the window's valid items are kept)."""

    @model_validator(mode="after")
    def _check_range_and_derive_id(self) -> Snapshot:
        if self.first_entry_id > self.last_entry_id:
            raise ValueError(
                f"snapshot range is empty: first_entry_id {self.first_entry_id} > "
                f"last_entry_id {self.last_entry_id}"
            )
        if not self.id:
            # Frozen model: the id is derived once, here, and never changes.
            object.__setattr__(self, "id", self._derive_id())
        return self

    def _derive_id(self) -> str:
        material = f"{self.tape}|{self.first_entry_id}|{self.last_entry_id}|{self.prompt.sha256}|{self.model}"
        return hashlib.sha256(material.encode("utf-8")).hexdigest()[:20]
