"""A real bub framework with the plugin and a stub model, against a fake extraction endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from bub.channels.message import ChannelMessage
from bub.framework import BubFramework
from bub.hooks import hookimpl
from bub.hooks.interception import LlmCallDecision, LlmCallRequest

from bub_semantic_memory.plugin import SemanticMemoryPlugin
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, RecordedRequest, Reply, text_reply
from tests.helpers.bub_env import use_fake_extractor


class StubModel:
    """Finishes every agent LLM call without a provider, recording what the model would have seen."""

    def __init__(self) -> None:
        self.requests: list[LlmCallRequest] = []

    @hookimpl
    def before_llm_call(self, request: LlmCallRequest, state: dict[str, Any]) -> LlmCallDecision:
        self.requests.append(request)
        return LlmCallDecision.finish("ok")


@dataclass
class Harness:
    tmp_path: Path
    server: FakeOpenAIServer
    extractions: dict[str, dict[str, Any]] = field(default_factory=dict)
    workspace: Path | None = None

    def framework(self) -> tuple[BubFramework, SemanticMemoryPlugin, StubModel]:
        framework = BubFramework(config_file=self.tmp_path / "config.yml")
        framework.workspace = (self.workspace or self.tmp_path / "workspace").resolve()
        framework.workspace.mkdir(parents=True, exist_ok=True)
        framework.load_builtin_hooks()
        plugin = SemanticMemoryPlugin(framework)
        stub = StubModel()
        framework.plugin_manager.register(plugin, name="semantic-memory")
        framework.plugin_manager.register(stub, name="stub-model")
        return framework, plugin, stub

    async def turn(self, framework: BubFramework, text: str, session_id: str = "cli:test") -> Any:
        async with framework.running():
            return await framework.process_inbound(
                ChannelMessage(session_id=session_id, channel="cli", chat_id="test", content=text)
            )

    def respond(self, request: RecordedRequest) -> Reply:
        """Agent calls get text; extraction calls get the registered facts the transcript mentions."""
        if request.tool_schema_name() is None:
            return text_reply("ok")
        facts = list(self.extractions.values())
        oracle = OracleResponder(
            entities=[e for f in facts for e in f["entities"]],
            relations=[r for f in facts for r in f["relations"]],
        )
        return oracle(request)

    def extraction_requests(self) -> list[RecordedRequest]:
        return [r for r in self.server.requests if r.tool_schema_name() is not None]


def transcript_of(request: RecordedRequest) -> str:
    return str(request.messages[-1]["content"]).split("<transcript>")[-1].split("</transcript>")[0]


MAYA: dict[str, list[dict[str, Any]]] = {
    "entities": [
        {"name": "Maya Lin", "type": "person", "aliases": ["Maya"]},
        {"name": "Lisbon", "type": "location"},
    ],
    "relations": [{"source": "Maya Lin", "type": "lives_in", "target": "Lisbon"}],
}


@pytest.fixture
def harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    with FakeOpenAIServer() as server:
        use_fake_extractor(monkeypatch, server.base_url)
        monkeypatch.chdir(tmp_path)
        harness = Harness(tmp_path, server)
        server.responder = harness.respond
        yield harness


def dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
