"""The ontology: which entity and relation types exist and how relations behave.

An ontology travels with a prompt version (it is part of the prompt file's front
matter), so a snapshot's prompt sha256 also pins the ontology that shaped it. It says
which relation types are symmetric (``knows``: either direction is the same fact) and
which are single-valued (``lives_in``: a newer value closes the older one).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

__all__ = ["Ontology", "RelationType"]

_TYPE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


class RelationType(BaseModel):
    """One relation type.

    Attributes:
        description: what the relation means, shown to the model.
        symmetric: ``a knows b`` is the same fact as ``b knows a``.
        single_valued: a source has one current target (``lives_in``); a newer one supersedes.
        source: entity types allowed as source (empty: any).
        target: entity types allowed as target (empty: any).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str
    symmetric: bool = False
    single_valued: bool = False
    source: tuple[str, ...] = ()
    target: tuple[str, ...] = ()


class Ontology(BaseModel):
    """Entity types (name -> description) and relation types (name -> :class:`RelationType`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entity_types: dict[str, str] = Field(min_length=1)
    relation_types: dict[str, RelationType] = Field(default_factory=dict)
    _hash: int | None = PrivateAttr(default=None)

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
        return self

    def __hash__(self) -> int:
        # Frozen, so the hash of its JSON form is stable; it lets schemas built from an
        # ontology be cached (see bub_semantic_memory.extraction._responses).
        if self._hash is None:
            self._hash = hash(self.model_dump_json())
        return self._hash

    def is_symmetric(self, relation_type: str) -> bool:
        """Whether ``relation_type`` is symmetric (unknown types are not)."""
        relation = self.relation_types.get(relation_type)
        return relation is not None and relation.symmetric

    def is_single_valued(self, relation_type: str) -> bool:
        """Whether a newer value of ``relation_type`` supersedes the older one."""
        relation = self.relation_types.get(relation_type)
        return relation is not None and relation.single_valued

    def allows(self, relation_type: str, source_type: str, target_type: str) -> bool:
        """Whether the ontology allows ``source_type -relation_type-> target_type``.

        Symmetric relations are checked in both directions.
        """
        relation = self.relation_types.get(relation_type)
        if relation is None:
            return False

        def fits(src: str, dst: str) -> bool:
            return (not relation.source or src in relation.source) and (
                not relation.target or dst in relation.target
            )

        return fits(source_type, target_type) or (relation.symmetric and fits(target_type, source_type))
