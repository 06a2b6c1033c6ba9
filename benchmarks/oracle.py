"""The benchmarks' fake extraction model: oracle answers that follow the request's schema.

:class:`OracleResponder` answers from known facts, whatever the request's JSON schema
allows. Prompt versions in candidate mode (``candidates: true``) constrain entity names and
aliases to enums of the window's capitalised spans, ask for at least one entity when there
are candidates, and type relation endpoints as enums; a model decoding under that schema
(llama.cpp's grammar, or a model that follows it) can only answer within it.
:class:`SchemaFollowingOracle` trims the oracle's answer the same way, so every prompt
version can be benchmarked against it. It is a model of cost, not of quality.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bub_semantic_memory.models import normalize_name
from bub_semantic_memory.testing import (
    CompletionReply,
    OracleResponder,
    RecordedRequest,
    Reply,
    tool_call_reply,
)

__all__ = ["SchemaFollowingOracle"]


def _enum(schema: Mapping[str, Any], *path: str) -> list[Any] | None:
    node: Any = schema
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return list(node["enum"]) if isinstance(node, Mapping) and "enum" in node else None


def _relation_variants(defs: Mapping[str, Any]) -> dict[str, tuple[list[Any], list[Any]]] | None:
    """Two-step relation schemas: relation type -> (allowed sources, allowed targets)."""
    variants: dict[str, tuple[list[Any], list[Any]]] = {}
    for name, definition in defs.items():
        if not name.startswith("Relation_"):
            continue
        props = definition.get("properties", {})
        types = _enum(props, "type") or ([props["type"]["const"]] if "const" in props.get("type", {}) else [])
        sources, targets = _enum(props, "source"), _enum(props, "target")
        for relation_type in types:
            variants[str(relation_type)] = (sources or [], targets or [])
    return variants or None


@dataclass
class SchemaFollowingOracle:
    """Wraps an :class:`OracleResponder`; see the module docstring."""

    oracle: OracleResponder

    def __call__(self, request: RecordedRequest) -> Reply:
        reply = self.oracle(request)
        if not isinstance(reply, CompletionReply) or not reply.tool_calls:
            return reply
        call = reply.tool_calls[0]
        schema = request.tool_parameters(call.name)
        if schema is None:
            return reply
        answer: dict[str, Any] = json.loads(call.arguments)
        defs = schema.get("$defs", {})
        dropped: set[str] = set()
        if "entities" in answer:
            names = _enum(defs, "ExtractedEntity", "properties", "name")
            aliases = _enum(defs, "ExtractedEntity", "properties", "aliases", "items")
            limits = schema.get("properties", {}).get("entities", {})
            kept: list[dict[str, Any]] = []
            for entity in answer["entities"]:
                if names is not None and entity["name"] not in names:
                    dropped.add(entity["name"])
                    continue
                if aliases is not None:
                    entity["aliases"] = [a for a in entity.get("aliases", []) if a in aliases][:3]
                kept.append(entity)
            kept = kept[: limits.get("maxItems", len(kept))]
            if names and len(kept) < limits.get("minItems", 0):
                # The schema demands an entity: a model decoding under it must name a candidate.
                # Prefer one the facts know (with its type), as a model would pick a real name.
                kept.append(self._forced_pick(names))
            answer["entities"] = kept
        if "relations" in answer:
            variants = _relation_variants(defs)
            answer["relations"] = [
                r
                for r in answer["relations"]
                if r["source"] not in dropped
                and r["target"] not in dropped
                and (
                    variants is None
                    or (
                        r["type"] in variants
                        and r["source"] in variants[r["type"]][0]
                        and r["target"] in variants[r["type"]][1]
                    )
                )
            ]
        return tool_call_reply(call.name, answer)

    def _forced_pick(self, names: list[Any]) -> dict[str, Any]:
        types: dict[str, str] = {}
        for entity in self.oracle.entities:
            for name in (entity["name"], *entity.get("aliases", ())):
                types.setdefault(normalize_name(name), str(entity["type"]))
        for name in names:
            if normalize_name(str(name)) in types:
                return {"name": name, "type": types[normalize_name(str(name))], "aliases": []}
        return {"name": names[0], "type": "person", "aliases": []}
