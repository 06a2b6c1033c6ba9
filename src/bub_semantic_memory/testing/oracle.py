"""A fake extraction model that answers from known facts: for harness tests and benchmarks.

:class:`OracleResponder` is a responder for :class:`~.fake_openai.FakeOpenAIServer`.
Given facts (entities with names, types, aliases; relations between entity names),
it answers each extraction request with the entities named in the request's
``<transcript>`` section and the relations between them, shaped for whichever
response model the request asks for (``Extraction``, ``Entities``, ``Phrases``,
``Relations``, or ``Classification``, where each candidate name gets the type of the entity
it names or ``none``).
It is not a model of quality: it shows that the pipeline around the model works.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bub_semantic_memory.mentions import fold_text, is_mentioned
from bub_semantic_memory.models import normalize_name
from bub_semantic_memory.testing.fake_openai import RecordedRequest, Reply, tool_call_reply

__all__ = ["OracleResponder"]


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
