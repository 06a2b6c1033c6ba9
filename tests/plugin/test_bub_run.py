"""The real HTTP path: ``bub run`` processes against an OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bub_semantic_memory.extraction import PromptLibrary
from bub_semantic_memory.stores._store import SNAPSHOT_EVENT
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, RecordedRequest, Reply, text_reply
from tests.helpers.injection import injected_memory
from tests.plugin.conftest import MAYA

ORACLE = OracleResponder(entities=MAYA["entities"], relations=MAYA["relations"])


def respond(request: RecordedRequest) -> Reply:
    if request.tool_schema_name() is not None:
        return ORACLE(request)
    return text_reply("Noted.")


@pytest.mark.slow
def test_bub_run_twice_remembers_the_first_turn_in_the_second_request(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with FakeOpenAIServer(responder=respond) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BUB_", "OPENAI_"))} | {
            "BUB_HOME": str(tmp_path / "bub-home"),
            "BUB_MODEL": f"openai:{server.model_ids[0]}",
            "BUB_API_BASE": server.base_url,  # the plugin reuses bub's model settings by default
            "BUB_API_KEY": "test-key",
            # no prompt named: a new user's hosted model runs the version promoted for hosted models
        }

        def bub_run(message: str) -> None:
            subprocess.run(
                [sys.executable, "-m", "bub", "run", message],
                cwd=workspace,
                env=env,
                check=True,
                capture_output=True,
                timeout=180,
            )

        bub_run("Hi, I'm Maya Lin and I live in Lisbon.")
        agent_calls = [r for r in server.requests if r.tool_schema_name() is None]
        extractions = [r for r in server.requests if r.starts_window()]
        assert len(agent_calls) == 1 and agent_calls[0].stream
        assert len(extractions) == 1  # bub run waited for the extraction at shutdown
        assert injected_memory(agent_calls[0].messages) == ""
        assert extractions[0].body["model"] == server.model_ids[0]

        bub_run("Where do I live?")
        second = [r for r in server.requests if r.tool_schema_name() is None][1]
        assert "Maya Lin lives in Lisbon" in injected_memory(second.messages)
    sidecars = list((tmp_path / "bub-home" / "tapes").glob("*__sidecar__semantic_memory.jsonl"))
    assert len(sidecars) == 1
    hosted = PromptLibrary().manifest().promoted["extract"]["hosted"]
    entries = [json.loads(line) for line in sidecars[0].read_text(encoding="utf-8").splitlines()]
    events = [e["payload"] for e in entries if e["kind"] == "event"]
    versions = {p["data"]["prompt"]["version"] for p in events if p["name"] == SNAPSHOT_EVENT}
    assert versions == {hosted.version}  # and the second turn's memory above came from it


def agent_uses_memory_search(request: RecordedRequest) -> Reply:
    """The agent's model: asked where the user lives, it searches its memory, then answers."""
    from bub_semantic_memory.testing import tool_call_reply

    if request.tool_schema_name() is not None:
        return ORACLE(request)
    if request.messages and request.messages[-1].get("role") == "tool":
        return text_reply("You live in Lisbon.")
    if "Where do I live" in str(request.messages[-1].get("content")):
        return tool_call_reply("memory_search", {"query": "where does the user live"})
    return text_reply("Noted.")


@pytest.mark.slow
def test_the_agent_searches_its_memory_with_a_tool_in_a_real_bub_run(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with FakeOpenAIServer(responder=agent_uses_memory_search) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BUB_", "OPENAI_"))} | {
            "BUB_HOME": str(tmp_path / "bub-home"),
            "BUB_MODEL": f"openai:{server.model_ids[0]}",
            "BUB_API_BASE": server.base_url,
            "BUB_API_KEY": "test-key",
            "BUB_SEMANTIC_MEMORY_PROMPT": "extract@9",  # the version these tests were written against
        }
        for message in ("Hi, I'm Maya Lin and I live in Lisbon.", "Where do I live?"):
            subprocess.run(
                [sys.executable, "-m", "bub", "run", message],
                cwd=workspace,
                env=env,
                check=True,
                capture_output=True,
                timeout=180,
            )
        agent_calls = [r for r in server.requests if r.tool_schema_name() is None]
    offered = {tool["function"]["name"] for tool in agent_calls[0].body.get("tools", [])}
    assert {"memory_search", "memory_recall"} <= offered  # listed beside bub's own tools
    [answered] = [r for r in agent_calls if r.messages[-1].get("role") == "tool"]
    result = str(answered.messages[-1]["content"])
    assert "Maya Lin lives in Lisbon" in result and '"evidence"' in result
