"""The ontology: which entity and relation types exist and how relations behave.

An ontology travels with a prompt version (it is part of the prompt file's front
matter), so a snapshot's prompt sha256 also pins the ontology that shaped it. It says
which relation types are symmetric (``knows``: either direction is the same fact), which
are single-valued (``lives_in``: a newer value closes the older one) and which are the
inverse of another (``assigned_to`` of ``works_on``: ``T-12 assigned_to Ana`` is the fact
``Ana works_on T-12`` said from the other end).

Inverse types. ``inverse_of`` is declared on the narrower type of a pair, the one whose
endpoint types, turned around, its inverse allows (every ``assigned_to``, task -> person, is
a ``works_on`` read backwards; not every ``works_on`` is an ``assigned_to``: a project has no
assignee). That type is the *canonical* form of the fact: :meth:`Ontology.orient` turns a
relation of the inverse into it whenever the endpoint types fit, so the validator, the graph
and the rendered memory hold one fact once, and the single-valued rule of the canonical type
(one current assignee per task) applies however the fact was stated.

The prompt versions released before ``inverse_of`` existed cannot declare it (their files
are pinned by hash), yet they share the types whose inverses the gold states.
:data:`DEFAULT_INVERSES` holds those pairs; they apply to an ontology none of whose types
declares ``inverse_of``, for each pair whose two types it has and whose endpoint types fit.
An ontology that declares any inverse gets exactly the ones it declares. The defaults are
not part of the ontology's data (its JSON form, and so its hash, is unchanged), only of
how relations are read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

__all__ = ["DEFAULT_INVERSES", "Ontology", "RelationType"]

_TYPE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")

DEFAULT_INVERSES: Mapping[str, str] = MappingProxyType(
    {
        "assigned_to": "works_on",  # T-12 assigned_to Ana == Ana works_on T-12
        "reports_to": "manages",  # Ana reports_to Ben == Ben manages Ana
    }
)
"""Canonical type -> its inverse, for ontologies that declare no ``inverse_of`` (see the module
docstring). Every released prompt version has both types of each pair."""


class RelationType(BaseModel):
    """One relation type.

    Attributes:
        description: what the relation means, shown to the model.
        symmetric: ``a knows b`` is the same fact as ``b knows a``.
        single_valued: a source has one current target (``lives_in``); a newer one supersedes.
        source: entity types allowed as source (empty: any).
        target: entity types allowed as target (empty: any).
        inverse_of: the relation type this one is the inverse of (``x assigned_to y`` is
            ``y works_on x``); this type is the canonical form of the pair (see the module docstring).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str
    symmetric: bool = False
    single_valued: bool = False
    source: tuple[str, ...] = ()
    target: tuple[str, ...] = ()
    inverse_of: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_inverse(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """An ontology without inverses dumps (and hashes) as it did before ``inverse_of`` existed."""
        data: dict[str, Any] = handler(self)
        if data.get("inverse_of") is None:
            data.pop("inverse_of", None)
        return data

    def fits(self, source_type: str, target_type: str) -> bool:
        """Whether ``source_type -> target_type`` has endpoint types this type allows, as written."""
        return (not self.source or source_type in self.source) and (
            not self.target or target_type in self.target
        )


def _covers(allowed: tuple[str, ...], types: tuple[str, ...]) -> bool:
    """Whether every type of ``types`` is allowed by ``allowed`` (empty: any)."""
    return not allowed or (bool(types) and set(types) <= set(allowed))


class Ontology(BaseModel):
    """Entity types (name -> description) and relation types (name -> :class:`RelationType`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entity_types: dict[str, str] = Field(min_length=1)
    relation_types: dict[str, RelationType] = Field(default_factory=dict)
    _hash: int | None = PrivateAttr(default=None)
    _inverses: dict[str, str] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check_names(self) -> Ontology:
        for name in [*self.entity_types, *self.relation_types]:
            if not _TYPE_NAME.match(name):
                raise ValueError(
                    f"type name {name!r} must be snake_case (a-z, 0-9, _), at most 40 characters"
                )
        for name, relation in self.relation_types.items():
            unknown = [t for t in (*relation.source, *relation.target) if t not in self.entity_types]
            if unknown:
                raise ValueError(f"relation type {name!r} names unknown entity types: {', '.join(unknown)}")
        declared = {n: r.inverse_of for n, r in self.relation_types.items() if r.inverse_of is not None}
        for name, inverse in declared.items():
            problem = self._inverse_problem(name, inverse)
            if problem is not None:
                raise ValueError(f"relation type {name!r}: inverse_of {inverse!r}: {problem}")
        twice = sorted({i for i in declared.values() if list(declared.values()).count(i) > 1})
        if twice:
            raise ValueError(f"more than one relation type is the inverse of: {', '.join(twice)}")
        return self

    def _inverse_problem(self, name: str, inverse: str) -> str | None:
        """Why ``name`` cannot be the canonical inverse of ``inverse`` here (None: it can)."""
        relation, other = self.relation_types[name], self.relation_types.get(inverse)
        if other is None:
            return "no such relation type"
        if inverse == name:
            return "a type is not its own inverse (say symmetric: true)"
        if relation.symmetric or other.symmetric:
            return "a symmetric type has no inverse"
        if other.inverse_of is not None:
            return f"{inverse!r} declares an inverse itself; declare it on one type of the pair only"
        if not (_covers(other.target, relation.source) and _covers(other.source, relation.target)):
            return (
                f"every {name} turned around must be allowed as {inverse}: {inverse} goes from "
                f"{'/'.join(other.source) or 'any'} to {'/'.join(other.target) or 'any'}, {name} from "
                f"{'/'.join(relation.source) or 'any'} to {'/'.join(relation.target) or 'any'}"
            )
        return None

    def __hash__(self) -> int:
        # Frozen, so the hash of its JSON form is stable; it lets schemas built from an
        # ontology be cached (see bub_semantic_memory.extraction._responses).
        if self._hash is None:
            self._hash = hash(self.model_dump_json())
        return self._hash

    def __eq__(self, other: object) -> bool:
        # By the types alone: pydantic also compares private attributes, so an ontology whose
        # hash or inverses were computed (cached) would differ from its own copy.
        if not isinstance(other, Ontology):
            return NotImplemented
        return self.entity_types == other.entity_types and self.relation_types == other.relation_types

    @property
    def inverses(self) -> Mapping[str, str]:
        """Canonical type -> its inverse: the declared ``inverse_of``, or the defaults that apply."""
        if self._inverses is None:
            declared = {n: r.inverse_of for n, r in self.relation_types.items() if r.inverse_of is not None}
            if not declared:
                declared = {
                    name: inverse
                    for name, inverse in DEFAULT_INVERSES.items()
                    if name in self.relation_types
                    and inverse in self.relation_types
                    and self._inverse_problem(name, inverse) is None
                }
            self._inverses = declared
        return MappingProxyType(self._inverses)

    def inverse(self, relation_type: str) -> str | None:
        """The type that states ``relation_type``'s facts from the other end (either side of a pair)."""
        inverses = self.inverses
        if relation_type in inverses:
            return inverses[relation_type]
        return next((name for name, inverse in inverses.items() if inverse == relation_type), None)

    def is_symmetric(self, relation_type: str) -> bool:
        """Whether ``relation_type`` is symmetric (unknown types are not)."""
        relation = self.relation_types.get(relation_type)
        return relation is not None and relation.symmetric

    def is_single_valued(self, relation_type: str) -> bool:
        """Whether a newer value of ``relation_type`` supersedes the older one."""
        relation = self.relation_types.get(relation_type)
        return relation is not None and relation.single_valued

    def allows(self, relation_type: str, source_type: str, target_type: str) -> bool:
        """Whether the ontology allows ``source_type -relation_type-> target_type`` as written.

        Symmetric relations are checked in both directions. (A relation of an inverse pair
        written backwards is not allowed here; :meth:`orient` reads it.)
        """
        relation = self.relation_types.get(relation_type)
        if relation is None:
            return False
        return relation.fits(source_type, target_type) or (
            relation.symmetric and relation.fits(target_type, source_type)
        )

    def orient(self, relation_type: str, source_type: str, target_type: str) -> tuple[str, bool] | None:
        """The canonical form of ``source -relation_type-> target``: ``(type, turned)``, where
        ``turned`` says the canonical form runs from ``target`` to ``source``; None when the
        ontology allows the relation in no direction.

        A type of an inverse pair is read in either direction (``Ana assigned_to T-12`` is
        ``T-12 assigned_to Ana``), and a relation of the inverse becomes the canonical type when
        its endpoint types fit (``Ana works_on T-12`` is ``T-12 assigned_to Ana``; ``Ana works_on
        Atlas``, a project, stays). Other types are as :meth:`allows` says, never turned
        (symmetric ones are ordered by whoever stores them).
        """
        relation = self.relation_types.get(relation_type)
        if relation is None:
            return None
        inverse = self.inverse(relation_type)
        if inverse is None:
            return (relation_type, False) if self.allows(relation_type, source_type, target_type) else None
        forms: tuple[tuple[str, bool], ...]
        if relation_type in self.inverses:  # the canonical type of its pair: as written, or backwards
            forms = ((relation_type, False), (relation_type, True))
        else:  # the inverse: the canonical type turned around, else as written, else backwards
            forms = ((inverse, True), (relation_type, False), (inverse, False), (relation_type, True))
        for name, turned in forms:
            ends = (target_type, source_type) if turned else (source_type, target_type)
            if self.relation_types[name].fits(*ends):
                return name, turned
        return None
