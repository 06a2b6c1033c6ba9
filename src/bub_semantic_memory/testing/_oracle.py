"""A fake extraction model that answers from known facts: for harness tests and benchmarks.

:class:`OracleResponder` is a responder for :class:`~._fake_openai.FakeOpenAIServer`.
Given facts (entities with names, types, aliases; relations between entity names),
it answers each extraction request with the entities named in the request's
``<transcript>`` section and the relations between them, shaped for whichever
response model the request asks for (``Extraction``, ``Entities``, ``Phrases``,
``Relations``, ``Classification``, where each candidate name gets the type of the entity
it names or ``none``, or ``Pairs``, where each pair gets the choice that states one of the
relations, or ``none``).
It is not a model of quality: it shows that the pipeline around the model works.

Prompt versions in candidate mode (``candidates: true``) constrain entity names and aliases
to enums of the window's capitalised spans, ask for at least one entity when there are
candidates, and type relation endpoints as enums; a model decoding under that schema
(llama.cpp's grammar, or a model that follows it) can only answer within it.
:class:`SchemaFollowingOracle` trims the oracle's answer the same way, so every prompt
version can be run against it. It is a model of cost, not of quality.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory._models import normalize_name
from bub_semantic_memory.testing._fake_openai import CompletionReply, RecordedRequest, Reply, tool_call_reply

__all__ = ["OracleResponder", "SchemaFollowingOracle"]


def _shown_name(folded_text: str, entity: Mapping[str, Any]) -> str:
    """The entity's name if the transcript uses it, else the first alias it uses."""
    if is_mentioned(entity["name"], folded_text):
        return str(entity["name"])
    return str(next(a for a in entity.get("aliases", ()) if is_mentioned(a, folded_text)))


def _values(prop: Mapping[str, Any]) -> list[str]:
    return [str(prop["const"])] if "const" in prop else [str(v) for v in prop.get("enum", ())]


def _relation_ends(schema: Mapping[str, Any]) -> set[tuple[str, str, str]] | None:
    """The (source, type, target) triples a relations schema with enum ends allows (None: any)."""
    variants = [
        d
        for d in schema.get("$defs", {}).values()
        if {"source", "target", "type"} <= set(d.get("properties", {}))
    ]
    if not variants or not all(
        "enum" in v["properties"]["source"] or "const" in v["properties"]["source"] for v in variants
    ):
        return None
    return {
        (source, kind, target)
        for v in variants
        for kind in _values(v["properties"]["type"])
        for source in _values(v["properties"]["source"])
        for target in _values(v["properties"]["target"])
    }


@dataclass
class OracleResponder:
    """Answers extraction requests with the given facts that the transcript mentions.

    Args:
        entities: ``{"name", "type", "aliases"?}`` mappings.
        relations: ``{"source", "target", "type"}`` mappings between entity names.
        drop_relations: answer without relations (a worse "model", for gate tests).
    """

    entities: Sequence[Mapping[str, Any]] = ()
    relations: Sequence[Mapping[str, Any]] = ()
    drop_relations: bool = False
    requests: int = field(default=0, init=False)

    @classmethod
    def from_golds(cls, golds: Iterable[Any], **kwargs: Any) -> OracleResponder:
        """Facts from eval gold files, or mappings with ``entities`` and ``relations`` lists."""
        entities: list[Mapping[str, Any]] = []
        relations: list[Mapping[str, Any]] = []
        for gold in golds:
            facts = gold if isinstance(gold, Mapping) else vars(gold)
            entities.extend(e if isinstance(e, Mapping) else e.model_dump() for e in facts["entities"])
            relations.extend(r if isinstance(r, Mapping) else r.model_dump() for r in facts["relations"])
        return cls(entities=entities, relations=relations, **kwargs)

    def _mentioned(self, folded: str) -> tuple[list[Mapping[str, Any]], list[dict[str, Any]]]:
        """The facts' entities the transcript mentions, and how to answer each.

        One name names one entity, as the extractor's validator demands: entities named in
        full claim their names first, and an entity mentioned only through a name that
        another entity already claimed (one "Bob" in the window, two Bobs in the facts) is
        left out; so is an alias another entity claimed.
        """
        mentioned: list[Mapping[str, Any]] = []
        answers: list[dict[str, Any]] = []
        claimed: set[str] = set()
        in_full = [e for e in self.entities if is_mentioned(e["name"], folded)]
        by_alias = [e for e in self.entities if not is_mentioned(e["name"], folded)]
        for entity in [*in_full, *by_alias]:
            if not any(is_mentioned(n, folded) for n in (entity["name"], *entity.get("aliases", ()))):
                continue
            shown = _shown_name(folded, entity)
            if normalize_name(shown) in claimed:
                continue
            aliases = [
                a
                for a in entity.get("aliases", ())
                if is_mentioned(a, folded) and normalize_name(a) not in claimed | {normalize_name(shown)}
            ]
            claimed.update(normalize_name(n) for n in (shown, *aliases))
            mentioned.append(entity)
            answers.append({"name": shown, "type": entity["type"], "aliases": aliases})
        return mentioned, answers

    def __call__(self, request: RecordedRequest) -> Reply:
        self.requests += 1
        name = request.tool_schema_name() or "Extraction"
        transcript = request.transcript()
        if transcript is None:  # no transcript block: answer from the first user message
            prompts = [str(m.get("content") or "") for m in request.messages if m.get("role") == "user"]
            transcript = prompts[0] if prompts else ""
        folded = fold_text(transcript)
        mentioned, entities = self._mentioned(folded)
        names = {e["name"] for e in mentioned}
        shown = {e["name"]: entity["name"] for e, entity in zip(mentioned, entities, strict=True)}
        relations: list[dict[str, Any]] = []
        for relation in [] if self.drop_relations else self.relations:
            if relation["source"] in names and relation["target"] in names:
                edge = {
                    "source": shown[relation["source"]],
                    "type": relation["type"],
                    "target": shown[relation["target"]],
                }
                if edge not in relations and edge["source"] != edge["target"]:
                    relations.append(edge)
        if name == "Classification":
            return tool_call_reply(name, self._classify(request, mentioned))
        if name == "Pairs":
            return tool_call_reply(name, _pick_pairs(request, relations))
        answer: dict[str, Any] = {}
        if "reasoning" in (request.tool_parameters() or {}).get("properties", {}):
            answer["reasoning"] = "The facts the transcript states."
        if name != "Relations":
            answer.update(_split_phrases(request.tool_parameters() or {}, entities))
        if name != "Entities":
            ends = _relation_ends(request.tool_parameters() or {})
            answer["relations"] = [
                r for r in relations if ends is None or (r["source"], r["type"], r["target"]) in ends
            ]
        return tool_call_reply(name, answer)

    @staticmethod
    def _classify(request: RecordedRequest, mentioned: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        """Each candidate (a key of the schema) typed as the mentioned entity it names, else none."""
        types = {
            normalize_name(n): str(e["type"]) for e in mentioned for n in (e["name"], *e.get("aliases", ()))
        }
        candidates = (request.tool_parameters() or {}).get("properties", {})
        return {c: types.get(normalize_name(c), "none") for c in candidates}


def _pick_pairs(request: RecordedRequest, relations: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each pair (a key of the schema) answered with the choice that states one of ``relations``
    ("T-12 assigned to Ana": source, type in words, target), else ``none``."""
    stated = {f"{r['source']} {str(r['type']).replace('_', ' ')} {r['target']}" for r in relations}
    pairs = (request.tool_parameters() or {}).get("properties", {})
    return {key: next((c for c in _values(prop) if c in stated), "none") for key, prop in pairs.items()}


def _split_phrases(parameters: Mapping[str, Any], entities: list[dict[str, Any]]) -> dict[str, Any]:
    """``entities``, and for a schema with a ``phrases`` list (``phrase_types``) the entities of
    a phrase type that no candidate names, in that list."""
    if "phrases" not in parameters.get("properties", {}):
        return {"entities": entities}
    definitions = parameters.get("$defs", {})
    picked = set(_values(definitions.get("ExtractedEntity", {}).get("properties", {}).get("name", {})))
    phrase_types = set(_values(definitions.get("PhraseEntity", {}).get("properties", {}).get("type", {})))
    phrased = [e for e in entities if e["name"] not in picked and e["type"] in phrase_types]
    return {
        "entities": [e for e in entities if e not in phrased],
        "phrases": [{"name": e["name"], "type": e["type"]} for e in phrased],
    }


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
