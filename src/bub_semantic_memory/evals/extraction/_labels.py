"""Foreign label spaces: label maps, dataset ontologies, and what a dataset's gold lets a run score.

Datasets written elsewhere label their gold in their own words (``PER``, ``ORG``,
``per:alternate_names``). Scored as written, such gold can never match an extraction
whose types come from the prompt's ontology: typed entity F1 and relation F1 are 0 by
construction. Two ways bridge the gap:

* a **label map** (``--label-map FILE``, YAML or JSON) translates gold labels into the
  ontology's types for scoring::

      entity_types: {PER: person, ORG: organization, GPE: place}
      relation_types: {"per:siblings": family_of, "org:employees": works_for}
      symmetric: [family_of]      # compared in either direction (besides the ontology's own)
      inverses: {child_of: parent_of}   # x child_of y is y parent_of x (besides the ontology's own)

* a **dataset ontology**: a fixture directory may hold ``ontology.yaml`` (the same shape
  as a prompt's ``ontology`` front matter). The prompt's template then shows the model
  that ontology instead of its own, so the model can answer in the dataset's types.

:func:`check_label_space` says, before a run, what the gold asks that the run cannot
give: gold types outside the ontology, relation endpoints that are not gold entities,
and how many gold items are unreachable. Nothing is refused: the report only warns.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bub_semantic_memory._errors import FixtureError
from bub_semantic_memory._models import normalize_name
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.evals._dataset import Gold, describe_validation_error
from bub_semantic_memory.evals.extraction._scoring import ScoringConfig

__all__ = [
    "DATASET_ONTOLOGY_FILE",
    "LabelMap",
    "LabelSpaceReport",
    "check_label_space",
    "load_dataset_ontology",
    "load_label_map",
    "ontology_sha256",
    "scoring_config",
]

DATASET_ONTOLOGY_FILE = "ontology.yaml"


class LabelMap(BaseModel):
    """Gold labels -> ontology types, for scoring (see the module docstring).

    Attributes:
        entity_types: gold entity type -> ontology entity type.
        relation_types: gold relation label -> ontology relation type.
        symmetric: relation types (after mapping) whose direction does not matter.
        inverses: relation type (after mapping) -> the type it is the inverse of; the key is
            the form both are compared in.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    entity_types: dict[str, str] = Field(default_factory=dict)
    relation_types: dict[str, str] = Field(default_factory=dict)
    symmetric: list[str] = Field(default_factory=list)
    inverses: dict[str, str] = Field(default_factory=dict)

    def entity_type(self, label: str) -> str:
        """The ontology type ``label`` is scored as."""
        return self.entity_types.get(label, label)

    def relation_type(self, label: str) -> str:
        """The ontology relation type ``label`` is scored as."""
        return self.relation_types.get(label, label)


def load_label_map(path: Path) -> LabelMap:
    """Read a label map (YAML or JSON; JSON is YAML).

    Raises:
        FixtureError: the file cannot be read or does not have the documented shape.
    """
    data = _read_yaml(path, "label map")
    try:
        return LabelMap.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise FixtureError(f"{path}: not a label map: {describe_validation_error(exc)}") from exc


def load_dataset_ontology(fixtures_dir: Path) -> Ontology | None:
    """The ``ontology.yaml`` of a fixture directory, or None when it has none.

    Raises:
        FixtureError: the file exists but is not a valid ontology.
    """
    path = fixtures_dir / DATASET_ONTOLOGY_FILE
    if not path.is_file():
        return None
    try:
        return Ontology.model_validate(_read_yaml(path, "ontology"))
    except ValidationError as exc:
        raise FixtureError(f"{path}: not an ontology: {describe_validation_error(exc)}") from exc


def ontology_sha256(ontology: Ontology) -> str:
    """A content hash of an ontology (its canonical JSON), recorded wherever one is substituted."""
    canonical = json.dumps(ontology.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _read_yaml(path: Path, what: str) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FixtureError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise FixtureError(f"{path}: not valid YAML or JSON: {' '.join(str(exc).split())}") from exc


class LabelSpaceReport(BaseModel):
    """What the gold asks for that a run under ``ontology`` cannot give (see :func:`check_label_space`).

    Attributes:
        unknown_entity_types: gold entity type (after the label map) -> gold entities of it.
        unknown_relation_types: gold relation type (after the label map) -> gold relations of it.
        dangling_endpoints: relation endpoints naming no gold entity -> relations using them.
        entities: gold entities in all.
        relations: gold relations in all.
    """

    unknown_entity_types: dict[str, int] = Field(default_factory=dict)
    unknown_relation_types: dict[str, int] = Field(default_factory=dict)
    dangling_endpoints: dict[str, int] = Field(default_factory=dict)
    entities: int = 0
    relations: int = 0
    relations_with_dangling_endpoints: int = 0

    @property
    def unreachable_entities(self) -> int:
        """Gold entities no typed match can reach (their type is not in the ontology)."""
        return sum(self.unknown_entity_types.values())

    @property
    def unreachable_relations(self) -> int:
        """Gold relations no match can reach (their type is not in the ontology)."""
        return sum(self.unknown_relation_types.values())

    def __bool__(self) -> bool:
        return bool(self.unknown_entity_types or self.unknown_relation_types or self.dangling_endpoints)

    def lines(self, *, limit: int = 8) -> list[str]:
        """Human-readable warnings, one per problem kind (empty when everything can be scored)."""
        out: list[str] = []
        if self.unknown_entity_types:
            out.append(
                f"{self.unreachable_entities} of {self.entities} gold entities have types outside the "
                f"ontology and cannot match a typed prediction: {_top(self.unknown_entity_types, limit)}"
            )
        if self.unknown_relation_types:
            out.append(
                f"{self.unreachable_relations} of {self.relations} gold relations have types outside the "
                f"ontology and cannot be matched: {_top(self.unknown_relation_types, limit)}"
            )
        if self.dangling_endpoints:
            out.append(
                f"{self.relations_with_dangling_endpoints} of {self.relations} gold relations name an "
                "endpoint that is not a gold entity (matched by name; a model must also extract it as "
                f"an entity, which then counts as spurious): {_top(self.dangling_endpoints, limit)}"
            )
        if out:
            out.append(
                "Use --label-map FILE, or an ontology.yaml in the fixture directory (see evals/README.md)."
            )
        return out


def _top(counts: Mapping[str, int], limit: int) -> str:
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{name} ({count})" for name, count in ranked[:limit])
    return shown + (f", and {len(ranked) - limit} more" if len(ranked) > limit else "")


def check_label_space(
    golds: Iterable[Gold], ontology: Ontology, label_map: LabelMap | None = None
) -> LabelSpaceReport:
    """Count the gold items a run under ``ontology`` (with ``label_map``) cannot score."""
    labels = label_map or LabelMap()
    entity_types: Counter[str] = Counter()
    relation_types: Counter[str] = Counter()
    dangling: Counter[str] = Counter()
    report = LabelSpaceReport()
    for gold in golds:
        report.entities += len(gold.entities)
        report.relations += len(gold.relations)
        names = {normalize_name(e.name) for e in gold.entities} | {
            normalize_name(a) for e in gold.entities for a in e.aliases
        }
        for entity in gold.entities:
            mapped = labels.entity_type(entity.type)
            if mapped not in ontology.entity_types:
                entity_types[mapped] += 1
        for relation in gold.relations:
            mapped = labels.relation_type(relation.type)
            if mapped not in ontology.relation_types:
                relation_types[mapped] += 1
            ends = [e for e in (relation.source, relation.target) if normalize_name(e) not in names]
            dangling.update(ends)
            report.relations_with_dangling_endpoints += bool(ends)
    report.unknown_entity_types = dict(entity_types)
    report.unknown_relation_types = dict(relation_types)
    report.dangling_endpoints = dict(dangling)
    return report


def scoring_config(
    ontology: Ontology, label_map: LabelMap | None = None, relation_synonyms: Mapping[str, str] | None = None
) -> ScoringConfig:
    """How a run under ``ontology`` is scored: its symmetric and inverse types, plus the label map
    and synonyms."""
    labels = label_map or LabelMap()
    return ScoringConfig.from_ontology(
        ontology,
        relation_synonyms={**(relation_synonyms or {}), **labels.relation_types},
        entity_types=labels.entity_types,
        symmetric=labels.symmetric,
        inverses=labels.inverses,
    )
