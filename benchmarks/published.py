"""BASELINE: an emulation of the published plugin's design (bub-semantic-memory 0.1.x).

This is not our code path; it is the design the benchmarks compare against, written out
explicitly so the comparison can be read:

* on **every model call** (one per turn plus one per tool round) it re-extracts the whole
  window since the last anchor: every conversation entry after the last anchor is rendered
  and sent to the extractor in one request;
* it **blocks** the model call while doing so (the call waits for the extractor's answer);
* it **appends a snapshot** each time (nothing is deduplicated);
* it **renders every snapshot** into the prompt (no budget, no relevance order).

To compare like with like, the request is built from the same prompt template our extractor
uses (with no context section and no known-entity list, which only makes the baseline's
per-call overhead smaller) and sent through the same OpenAI-compatible transport. Rendering
of the window is memoised across calls on one tape so that the benchmark spends its own time
on requests, not on re-rendering; the text sent is identical to rendering the window afresh.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bub_semantic_memory._models import Snapshot
from bub_semantic_memory.backends._transport import OpenAIBackend
from bub_semantic_memory.extraction._prompts import PromptTemplate
from bub_semantic_memory.tape._transcript import Entry, TranscriptLine, render_transcript

__all__ = ["PublishedDesign", "render_every_snapshot"]

_TOOL = {
    "type": "function",
    "function": {
        "name": "Extraction",
        "description": "Entities and relations stated in the transcript.",
        "parameters": {
            "type": "object",
            "properties": {
                "entities": {"type": "array", "items": {"type": "object"}},
                "relations": {"type": "array", "items": {"type": "object"}},
            },
            "required": ["entities", "relations"],
        },
    },
}


@dataclass
class _StoredSnapshot:
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)


class PublishedDesign:
    """The published design's per-model-call work, against an OpenAI-compatible endpoint.

    Args:
        prompt: the prompt template (ours, for an apples-to-apples request).
        base_url / api_key / model: the extraction endpoint.
    """

    def __init__(self, prompt: PromptTemplate, *, base_url: str, api_key: str, model: str) -> None:
        self.prompt = prompt
        self.model = model
        self.backend = OpenAIBackend(base_url=base_url, api_key=api_key)
        self.snapshots: list[_StoredSnapshot] = []
        self._seen = 0
        self._lines: list[TranscriptLine] = []
        self._lead: Entry | None = None  # the tool_call whose results may follow

    async def aclose(self) -> None:
        await self.backend.aclose()

    def window(self, entries: Sequence[Entry]) -> list[TranscriptLine]:
        """The rendered entries after the last anchor (``entries`` grows between calls)."""
        if len(entries) < self._seen:
            self._seen, self._lines, self._lead = 0, [], None
        new = list(entries[self._seen :])
        self._seen = len(entries)
        for index in range(len(new) - 1, -1, -1):
            if new[index].kind == "anchor":
                # A new anchor: the window restarts after it.
                self._lines, self._lead, new = [], None, new[index + 1 :]
                break
        lead = [self._lead] if self._lead is not None else []
        rendered = list(render_transcript([*lead, *new]).lines)
        if lead and rendered and rendered[0].entry_id == lead[0].id:
            rendered = rendered[1:]
        self._lines.extend(rendered)
        for entry in new:
            if entry.kind == "tool_call":
                self._lead = entry
            elif entry.kind == "tool_result":
                self._lead = None
        return self._lines

    def messages(self, entries: Sequence[Entry]) -> list[dict[str, str]]:
        lines = self.window(entries)
        return self.prompt.render(
            transcript="\n".join(line.text for line in lines),
            context="",
            known_entities=[],
            first_entry_id=lines[0].entry_id if lines else 0,
            last_entry_id=lines[-1].entry_id if lines else 0,
            step="all",
            entities=[],
        )

    async def on_model_call(self, entries: Sequence[Entry]) -> None:
        """What the published design does before each model call: extract, wait, append."""
        response = await self.backend.create(
            model=self.model,
            messages=self.messages(entries),
            tools=[_TOOL],
            tool_choice={"type": "function", "function": {"name": "Extraction"}},
            max_tokens=2048,
            temperature=0.0,
        )
        snapshot = _StoredSnapshot()
        for choice in response.choices:
            for call in choice.message.tool_calls or []:
                if call.type != "function":
                    continue
                arguments = json.loads(call.function.arguments or "{}")
                snapshot.entities.extend(arguments.get("entities", []))
                snapshot.relations.extend(arguments.get("relations", []))
        self.snapshots.append(snapshot)


def render_every_snapshot(snapshots: Sequence[Snapshot]) -> str:
    """The published design's prompt block over stored snapshots: every entity and relation of
    every snapshot, one line each, no budget and no relevance order."""
    lines = ["<memory>"]
    for snapshot in snapshots:
        names = {e.key: e.name for e in snapshot.entities}
        for entity in snapshot.entities:
            details = f"{entity.type}; also {', '.join(entity.aliases)}" if entity.aliases else entity.type
            attributes = "".join(f"; {k}: {v}" for k, v in entity.attributes.items())
            lines.append(f"- {entity.name} ({details}{attributes})")
        for relation in snapshot.relations:
            source = names.get(relation.source, relation.source)
            target = names.get(relation.target, relation.target)
            lines.append(f"- {source} {relation.type.replace('_', ' ')} {target}")
    lines.append("</memory>")
    return "\n".join(lines)
