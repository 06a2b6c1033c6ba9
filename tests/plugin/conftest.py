"""A real bub framework with the plugin and a stub model, against a fake extraction endpoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from bub.channels.message import ChannelMessage
from bub.framework import BubFramework

from bub_semantic_memory.plugin import SemanticMemoryPlugin
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, RecordedRequest, Reply
from tests.helpers.bub_env import StubModel, make_framework, use_fake_extractor


@dataclass
class Harness:
    tmp_path: Path
    server: FakeOpenAIServer
    extractions: dict[str, dict[str, Any]] = field(default_factory=dict)
    workspace: Path | None = None

    def framework(self) -> tuple[BubFramework, SemanticMemoryPlugin, StubModel]:
        return make_framework(self.tmp_path / "config.yml", self.workspace or self.tmp_path / "workspace")

    async def turn(self, framework: BubFramework, text: str, session_id: str = "cli:test") -> Any:
        async with framework.running():
            return await framework.process_inbound(
                ChannelMessage(session_id=session_id, channel="cli", chat_id="test", content=text)
            )

    def respond(self, request: RecordedRequest) -> Reply:
        """Extraction calls get the registered facts the transcript mentions (the agent makes no calls)."""
        return OracleResponder.from_golds(self.extractions.values())(request)

    def extraction_requests(self) -> list[RecordedRequest]:
        """One request per extracted window (a two-step prompt's relations call is not counted)."""
        return [r for r in self.server.requests if r.starts_window()]


MAYA: dict[str, list[dict[str, Any]]] = {
    "entities": [
        {"name": "Maya Lin", "type": "person", "aliases": ["Maya"]},
        {"name": "Lisbon", "type": "location"},
    ],
    "relations": [{"source": "Maya Lin", "type": "lives_in", "target": "Lisbon"}],
}


@pytest.fixture
def harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer) -> Harness:
    use_fake_extractor(monkeypatch, fake_openai.base_url)
    monkeypatch.chdir(tmp_path)
    harness = Harness(tmp_path, fake_openai)
    fake_openai.responder = harness.respond
    return harness
