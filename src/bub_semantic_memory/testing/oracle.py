"""A fake extraction model that answers from known facts: for harness tests and benchmarks.

:class:`OracleResponder` is a responder for :class:`~.fake_openai.FakeOpenAIServer`.
Given facts (entities with names, types, aliases; relations between entity names),
it answers each extraction request with the entities named in the request's
``<transcript>`` section and the relations between them, shaped for whichever
response model the request asks for (``Extraction``, ``Entities`` or ``Relations``).
It is not a model of quality: it shows that the pipeline around the model works.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bub_semantic_memory.models import normalize_name
from bub_semantic_memory.testing.fake_openai import RecordedRequest, Reply, tool_call_reply

__all__ = ["OracleResponder"]

def _occurs(folded_text: str, name: str) -> bool:
    folded = normalize_name(name)
    if not folded:
        return False
    return f" {folded} " in folded_text if folded.isascii() else folded in folded_text


def _shown_name(folded_text: str, entity: Mapping[str, Any]) -> str:
    """The entity's name if the transcript uses it, else the first alias it uses."""
    if _occurs(folded_text, entity["name"]):
        return str(entity["name"])
    return str(next(a for a in entity.get("aliases", ()) if _occurs(folded_text, a)))


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

    def __call__(self, request: RecordedRequest) -> Reply:
        self.requests += 1
        name = request.tool_schema_name() or "Extraction"
        transcript = request.transcript()
        if transcript is None:  # no transcript block: answer from the first user message
            prompts = [str(m.get("content") or "") for m in request.messages if m.get("role") == "user"]
            transcript = prompts[0] if prompts else ""
        folded = f" {normalize_name(transcript)} "
        mentioned: list[Mapping[str, Any]] = []
        seen: set[tuple[str, str]] = set()
        for entity in self.entities:
            names_of = (entity["name"], *entity.get("aliases", ()))
            if not any(_occurs(folded, n) for n in names_of):
                continue
            identity = (str(entity["type"]), normalize_name(_shown_name(folded, entity)))
            if identity not in seen:
                seen.add(identity)
                mentioned.append(entity)
        names = {e["name"] for e in mentioned}
        entities = [
            {
                "name": _shown_name(folded, e),
                "type": e["type"],
                "aliases": [a for a in e.get("aliases", ()) if _occurs(folded, a)],
            }
            for e in mentioned
        ]
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
        answer: dict[str, Any] = {}
        if "reasoning" in (request.tool_parameters() or {}).get("properties", {}):
            answer["reasoning"] = "The facts the transcript states."
        if name != "Relations":
            answer["entities"] = entities
        if name != "Entities":
            answer["relations"] = relations
        return tool_call_reply(name, answer)
