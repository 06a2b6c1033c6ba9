"""A memory written out for people and other tools, and read back: JSON, GraphML, JSON-LD.

* **JSON** (:class:`MemoryExport`) is the form :func:`read_export` reads back: the entities,
  relations and facts as stored (the same models as a snapshot's), with the tape they came from.
  Written and read again, it gives the same memory.
* **GraphML** is for graph tools (networkx, Gephi, yEd): one node per entity and per stated fact,
  one edge per relation and per entity a fact is about; lists and mappings are JSON text in a
  string attribute, since GraphML values are scalars. Written with the standard library's
  ElementTree: the format is a handful of elements.
* **JSON-LD** is linked data: entities typed with schema.org where a type has a match
  (``person`` is ``Person``...), relations and facts as nodes of this package's vocabulary,
  attributes as JSON literals. Written by hand as JSON (no JSON-LD library is needed to write one).

By default only what holds now is written; ``history`` adds superseded and ended relations and
facts (their ``valid_until`` says since when).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal
from xml.etree import ElementTree

from pydantic import BaseModel, ValidationError

from bub_semantic_memory._errors import EditError
from bub_semantic_memory._models import Entity, Fact, Relation
from bub_semantic_memory.memory._graph import MemoryGraph

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_FORMATS",
    "GRAPHML_NS",
    "MemoryExport",
    "export_memory",
    "read_export",
]

EXPORT_FORMAT: Literal["bub-semantic-memory/export"] = "bub-semantic-memory/export"
EXPORT_FORMATS = ("json", "graphml", "jsonld")
GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
_VOCAB = "urn:bub-semantic-memory:vocab#"
_SCHEMA_TYPES = {
    "person": "Person",
    "organization": "Organization",
    "location": "Place",
    "place": "Place",
    "event": "Event",
    "project": "Project",
    "product": "Product",
    "creative_work": "CreativeWork",
}


class MemoryExport(BaseModel):
    """The JSON export of a memory (``semantic-memory memory export --format json``).

    Attributes:
        format, version: what the file is; :func:`read_export` refuses anything else.
        tape: the tape it was exported from (evidence and validity are entry ids of that tape).
        history: whether superseded and ended relations and facts are included.
        entities, relations, facts: as the memory holds them (entity keys resolved).
    """

    format: Literal["bub-semantic-memory/export"] = EXPORT_FORMAT
    version: Literal[1] = 1
    tape: str
    history: bool = False
    entities: list[Entity]
    relations: list[Relation] = []
    facts: list[Fact] = []

    @classmethod
    def of(cls, graph: MemoryGraph, *, history: bool = False) -> MemoryExport:
        """The export of ``graph``."""
        return cls(
            tape=graph.tape,
            history=history,
            entities=graph.entities(),
            relations=graph.relations(current_only=not history),
            facts=graph.facts(current_only=not history),
        )

    def sha256(self) -> str:
        """A hash of the content (an import's snapshot id is derived from it: imported twice, folded once)."""
        return hashlib.sha256(self.model_dump_json().encode("utf-8")).hexdigest()

    def entities_for(self, *, keep_positions: bool) -> list[Entity]:
        """The entities to import; without evidence into another tape (its entry ids mean nothing there)."""
        return (
            self.entities
            if keep_positions
            else [e.model_copy(update={"evidence": ()}) for e in self.entities]
        )

    def relations_for(self, *, keep_positions: bool) -> list[Relation]:
        """The relations to import (see :meth:`entities_for`); validity is kept as an order."""
        return (
            self.relations
            if keep_positions
            else [r.model_copy(update={"evidence": ()}) for r in self.relations]
        )

    def facts_for(self, *, keep_positions: bool) -> list[Fact]:
        """The facts to import (see :meth:`entities_for`)."""
        return self.facts if keep_positions else [f.model_copy(update={"evidence": ()}) for f in self.facts]


def read_export(text: str | bytes) -> MemoryExport:
    """Read a JSON export.

    Raises:
        EditError: not a JSON export of this package, or a relation or fact naming an entity the
            export does not hold.
    """
    try:
        export = MemoryExport.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise EditError(f"not a memory export ({where}: {first['msg']})") from exc
    keys = {e.key for e in export.entities}
    for relation in export.relations:
        for key in (relation.source, relation.target):
            if key not in keys:
                raise EditError(
                    f"relation {' '.join(relation.key)} names {key}, which the export does not hold"
                )
    for fact in export.facts:
        missing = [k for k in fact.about if k not in keys]
        if missing:
            raise EditError(f"fact {fact.statement!r} is about {missing[0]}, which the export does not hold")
    return export


def export_memory(
    graph: MemoryGraph, *, format: Literal["json", "graphml", "jsonld"] = "json", history: bool = False
) -> str:
    """``graph`` written in ``format`` (see the module docstring)."""
    export = MemoryExport.of(graph, history=history)
    if format == "graphml":
        return _graphml(export)
    if format == "jsonld":
        return json.dumps(_jsonld(export), indent=2, ensure_ascii=False) + "\n"
    return export.model_dump_json(indent=2) + "\n"


# -- GraphML ---------------------------------------------------------------------------------------

_NODE_KEYS = (
    "kind",
    "name",
    "type",
    "aliases",
    "attributes",
    "evidence",
    "statement",
    "fact_kind",
    "topic",
    "when",
    "valid_from",
    "valid_until",
)
_EDGE_KEYS = ("kind", "type", "attributes", "evidence", "valid_from", "valid_until")


def _text(value: object) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, ensure_ascii=False) if value else None
    return str(value)


def fact_id(fact: Fact) -> str:
    """A fact's node id in GraphML and JSON-LD (derived from its key)."""
    return "fact:" + hashlib.sha256(fact.key.encode("utf-8")).hexdigest()[:16]


def _graphml(export: MemoryExport) -> str:
    ElementTree.register_namespace("", GRAPHML_NS)
    root = ElementTree.Element(f"{{{GRAPHML_NS}}}graphml")
    for scope, names in (("node", _NODE_KEYS), ("edge", _EDGE_KEYS)):
        for name in names:
            ElementTree.SubElement(
                root,
                f"{{{GRAPHML_NS}}}key",
                {"id": f"{scope[0]}_{name}", "for": scope, "attr.name": name, "attr.type": "string"},
            )
    graph = ElementTree.SubElement(
        root, f"{{{GRAPHML_NS}}}graph", {"id": export.tape or "memory", "edgedefault": "directed"}
    )

    def element(tag: str, attributes: dict[str, str], data: dict[str, object], scope: str) -> None:
        node = ElementTree.SubElement(graph, f"{{{GRAPHML_NS}}}{tag}", attributes)
        for name, value in data.items():
            text = _text(value)
            if text is not None:
                ElementTree.SubElement(
                    node, f"{{{GRAPHML_NS}}}data", {"key": f"{scope[0]}_{name}"}
                ).text = text

    for entity in export.entities:
        element(
            "node",
            {"id": entity.key},
            {
                "kind": "entity",
                "name": entity.name,
                "type": entity.type,
                "aliases": list(entity.aliases),
                "attributes": entity.attributes,
                "evidence": list(entity.evidence),
            },
            "node",
        )
    for number, relation in enumerate(export.relations):
        element(
            "edge",
            {"id": f"r{number}", "source": relation.source, "target": relation.target},
            {
                "kind": "relation",
                "type": relation.type,
                "attributes": relation.attributes,
                "evidence": list(relation.evidence),
                "valid_from": relation.valid_from,
                "valid_until": relation.valid_until,
            },
            "edge",
        )
    for fact in export.facts:
        element(
            "node",
            {"id": fact_id(fact)},
            {
                "kind": "fact",
                "statement": fact.statement,
                "fact_kind": fact.kind,
                "topic": fact.topic,
                "when": fact.when,
                "evidence": list(fact.evidence),
                "valid_from": fact.valid_from,
                "valid_until": fact.valid_until,
            },
            "node",
        )
        for number, key in enumerate(fact.about):
            element(
                "edge",
                {"id": f"{fact_id(fact)}/about{number}", "source": fact_id(fact), "target": key},
                {"kind": "about"},
                "edge",
            )
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# -- JSON-LD ---------------------------------------------------------------------------------------


def _iri(kind: str, key: str) -> str:
    return f"urn:bub-semantic-memory:{kind}:{key}"


def _jsonld(export: MemoryExport) -> dict[str, Any]:
    context = {
        "@version": 1.1,
        "@vocab": "https://schema.org/",
        "sm": _VOCAB,
        "entityType": "sm:entityType",
        "attributes": {"@id": "sm:attributes", "@type": "@json"},
        "evidence": {"@id": "sm:evidence", "@container": "@list"},
        "source": {"@id": "sm:source", "@type": "@id"},
        "target": {"@id": "sm:target", "@type": "@id"},
        "relationType": "sm:relationType",
        "validFrom": "sm:validFrom",
        "validUntil": "sm:validUntil",
        "statement": "sm:statement",
        "factKind": "sm:factKind",
        "topic": "sm:topic",
        "when": "sm:when",
        "about": {"@id": "about", "@type": "@id"},
    }
    nodes: list[dict[str, Any]] = []
    for entity in export.entities:
        node: dict[str, Any] = {
            "@id": _iri("entity", entity.key),
            "@type": _SCHEMA_TYPES.get(entity.type, "Thing"),
            "entityType": entity.type,
            "name": entity.name,
        }
        if entity.aliases:
            node["alternateName"] = list(entity.aliases)
        if entity.attributes:
            node["attributes"] = entity.attributes
        if entity.evidence:
            node["evidence"] = list(entity.evidence)
        nodes.append(node)
    for number, relation in enumerate(export.relations):
        edge: dict[str, Any] = {
            "@id": _iri("relation", f"{export.tape}/{number}"),
            "@type": "sm:Relation",
            "source": _iri("entity", relation.source),
            "relationType": relation.type,
            "target": _iri("entity", relation.target),
        }
        optional = {
            "validFrom": relation.valid_from,
            "validUntil": relation.valid_until,
            "evidence": list(relation.evidence) or None,
            "attributes": relation.attributes or None,
        }
        edge.update({k: v for k, v in optional.items() if v is not None})
        nodes.append(edge)
    for fact in export.facts:
        node = {
            "@id": _iri("fact", fact_id(fact).removeprefix("fact:")),
            "@type": "sm:Fact",
            "statement": fact.statement,
            "factKind": fact.kind,
            "about": [_iri("entity", k) for k in fact.about],
        }
        optional = {
            "topic": fact.topic or None,
            "when": fact.when,
            "validFrom": fact.valid_from,
            "validUntil": fact.valid_until,
            "evidence": list(fact.evidence) or None,
        }
        node.update({k: v for k, v in optional.items() if v is not None})
        nodes.append(node)
    return {"@context": context, "@id": _iri("tape", export.tape), "@graph": nodes}
