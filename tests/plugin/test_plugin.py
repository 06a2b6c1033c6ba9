from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bub.framework import BubFramework
from bub.tape import TapeContext

from bub_semantic_memory._models import Entity, Relation
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.plugin._hooks import TAPE_STATE_KEY, SemanticMemoryPlugin
from bub_semantic_memory.plugin._settings import load_settings, resolve_endpoint
from bub_semantic_memory.stores._store import SnapshotStore, session_tape_name
from bub_semantic_memory.testing import status_reply, tool_call_reply
from tests.conftest import make_snapshot
from tests.plugin.conftest import MAYA, Harness

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def system_message(stub_request: object) -> str:
    messages = stub_request.messages  # type: ignore[attr-defined]
    assert messages[0]["role"] == "system"
    assert all(m["role"] != "system" for m in messages[1:]), "memory must never be a trailing system message"
    return str(messages[0]["content"])


def memory_message(stub_request: object) -> str:
    """The injected memory block ("" when none): a user-role message right before the new prompt."""
    messages = stub_request.messages  # type: ignore[attr-defined]
    assert "<memory>" not in system_message(stub_request), "the system prompt stays the same every turn"
    found = [m for m in messages if "<memory>" in str(m.get("content"))]
    if not found:
        return ""
    [block] = found
    assert block["role"] == "user" and messages.index(block) == len(messages) - 2
    return str(block["content"])


async def test_a_fact_taught_in_one_turn_is_in_the_next_turns_context(harness: Harness) -> None:
    harness.extractions["Maya Lin"] = MAYA
    framework, plugin, stub = harness.framework()
    await harness.turn(framework, "Hi, I'm Maya Lin and I live in Lisbon.")
    assert memory_message(stub.requests[0]) == ""
    assert len(harness.extraction_requests()) == 1
    await harness.turn(framework, "Where does Maya live?")
    block = memory_message(stub.requests[1])
    assert "<memory>" in block and "Maya Lin lives in Lisbon" in block
    requests = harness.extraction_requests()
    assert len(requests) == 2  # one extraction per turn
    assert "Maya Lin" in (requests[0].transcript() or "")
    second = requests[1].transcript() or ""
    assert "Where does Maya live?" in second and "I live in Lisbon" not in second  # only the new entries
    assert plugin.stats["extractions"] == 2 and plugin.stats["extraction_failures"] == 0


async def test_the_turn_never_waits_for_the_extractor(harness: Harness) -> None:
    harness.server.latency = 1.5
    framework, plugin, _stub = harness.framework()
    async with framework.running():
        from bub.channels.message import ChannelMessage

        started = asyncio.get_running_loop().time()
        await framework.process_inbound(
            ChannelMessage(session_id="cli:test", channel="cli", chat_id="t", content="hello there")
        )
        turn_seconds = asyncio.get_running_loop().time() - started
        assert turn_seconds < 1.0
        assert len(plugin.memory.running()) == 1  # still extracting in the background
    assert len(harness.extraction_requests()) == 1  # the lifespan waited for it at shutdown


@pytest.mark.slow
async def test_a_failing_extractor_never_fails_the_turn_and_is_retried_later(harness: Harness) -> None:
    harness.server.responder = lambda request: status_reply(500)
    framework, plugin, _stub = harness.framework()
    result = await harness.turn(framework, "I'm Maya Lin and I live in Lisbon.")
    assert result.model_output == "ok"
    assert plugin.stats["extraction_failures"] == 1
    tape = session_tape_name("cli:test", framework.workspace)
    graph = plugin.graph(tape)
    assert graph is not None and graph.watermark == 0  # nothing stored, nothing skipped
    harness.extractions["Maya Lin"] = MAYA
    harness.server.responder = harness.respond
    await harness.turn(framework, "Still there?")
    assert plugin.stats["extractions"] == 1
    assert "Maya Lin" in (harness.extraction_requests()[-1].transcript() or "")  # the backlog, once
    assert graph.watermark > 0 and len(graph) == 2


async def test_a_failed_extraction_is_reported_once_by_the_plugin_and_not_by_instructor(
    harness: Harness, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Instructor logs exhausted re-asks at ERROR ("Max retries exceeded..."): in a bub run that is an
    unprefixed line beside the plugin's own warning."""
    instructor_logger = logging.getLogger("instructor")
    monkeypatch.setattr(instructor_logger, "level", logging.NOTSET)  # as in a fresh bub process
    invalid = {"entities": [{"name": "Nobody", "type": "spaceship", "evidence": [1]}], "relations": []}
    harness.server.responder = lambda request: tool_call_reply(
        request.tool_schema_name() or "Extraction", invalid
    )
    framework, plugin, _stub = harness.framework()
    with caplog.at_level(logging.WARNING):
        result = await harness.turn(framework, "I'm Maya Lin and I live in Lisbon.")
    assert result.model_output == "ok" and plugin.stats["windows_given_up"] == 1
    ours = [r for r in caplog.records if r.name.startswith("bub_semantic_memory")]
    assert [r.getMessage() for r in ours if "stored with nothing kept" in r.getMessage()]
    assert not [r for r in caplog.records if r.name.startswith("instructor")]


async def test_a_crashing_extractor_never_fails_the_turn(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("extractor bug")

    monkeypatch.setattr("bub_semantic_memory.extraction._extractor.Extractor.iter_extract", crash)
    framework, plugin, _stub = harness.framework()
    result = await harness.turn(framework, "I'm Maya Lin.")
    assert result.model_output == "ok" and plugin.stats["extraction_failures"] == 1


async def test_memory_survives_a_process_restart(harness: Harness) -> None:
    harness.extractions["Maya Lin"] = MAYA
    framework, plugin, _ = harness.framework()
    await harness.turn(framework, "I'm Maya Lin and I live in Lisbon.")
    harness.server.reset()
    harness.server.responder = harness.respond
    framework, plugin, stub = harness.framework()  # a new process: new framework, new plugin
    await harness.turn(framework, "Where do I live?")
    assert "Maya Lin lives in Lisbon" in memory_message(stub.requests[0])
    assert plugin.stats["loads"] == 1


async def test_two_workspaces_never_share_memory(harness: Harness, tmp_path: Path) -> None:
    harness.extractions["Maya Lin"] = MAYA
    framework, _, _ = harness.framework()
    await harness.turn(framework, "I'm Maya Lin and I live in Lisbon.")
    harness.workspace = tmp_path / "other-workspace"
    framework, _, stub = harness.framework()
    await harness.turn(framework, "Where does Maya live?")
    assert memory_message(stub.requests[0]) == ""


async def test_a_subagent_temp_session_reads_the_parents_memory_and_writes_nothing(harness: Harness) -> None:
    harness.extractions["Maya Lin"] = MAYA
    framework, plugin, _ = harness.framework()
    await harness.turn(framework, "I'm Maya Lin and I live in Lisbon.")
    parent_tape = session_tape_name("cli:test", framework.workspace)
    subagent_state = {TAPE_STATE_KEY: parent_tape, "session_id": "temp/abc123"}
    assert plugin.system_prompt("who is Maya?", subagent_state) == ""  # the block goes in a message
    assert "Maya Lin" in plugin.memory.block(parent_tape, "who is Maya?")
    context = plugin.build_tape_context()
    assert context.select is not None
    selected = context.select([], TapeContext(state=subagent_state))
    messages = await selected if inspect.isawaitable(selected) else selected
    assert "Maya Lin" in messages[-1]["content"]
    requests = len(harness.server.requests)
    await plugin.save_state("temp/abc123", subagent_state, None, "")
    assert plugin.memory.running() == [] and len(harness.server.requests) == requests


async def test_the_budget_holds_with_ten_thousand_entities(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_BUDGET", "300")
    framework, _plugin, stub = harness.framework()
    tape = session_tape_name("cli:test", framework.workspace)
    people = [Entity.create(f"Person {i}", "person", evidence=[i]) for i in range(10_000)]
    relations = [
        Relation(source=people[i].key, type="knows", target=people[(i * 7 + 1) % 10_000].key)
        for i in range(10_000)
    ]
    import bub
    from bub.store import FileTapeStore

    await SnapshotStore(FileTapeStore(bub.home / "tapes")).append(
        make_snapshot(people, relations, tape=tape, first=1, last=1)
    )
    await harness.turn(framework, "Tell me about Person 77")
    block = memory_message(stub.requests[0])
    assert estimate_tokens(block) <= 300
    assert "Person 77 (person)" in block


def test_constructing_the_plugin_does_no_io(tmp_path: Path) -> None:
    framework = BubFramework(config_file=tmp_path / "config.yml")
    plugin = SemanticMemoryPlugin(framework)
    assert plugin._settings is None and plugin._memory is None
    assert not Path(os.environ["BUB_HOME"]).exists()


async def test_only_one_extraction_per_tape_runs_and_at_most_one_follows(harness: Harness) -> None:
    framework, plugin, _ = harness.framework()
    harness.server.latency = 0.3
    async with framework.running():
        from bub.channels.message import ChannelMessage

        await framework.process_inbound(
            ChannelMessage(session_id="cli:test", channel="cli", chat_id="t", content="one")
        )
        tape = session_tape_name("cli:test", framework.workspace)
        store = framework.get_tape_store()
        assert store is not None
        for _ in range(5):
            plugin.memory.schedule(tape, store)
        assert len(plugin.memory.running()) == 1 and plugin.stats["follow_ups"] == 5
    assert len(harness.extraction_requests()) == 1  # the follow-up found nothing new


def test_settings_default_to_bubs_model_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BUB_MODEL", "openrouter:qwen/qwen3-8b")
    monkeypatch.setenv("BUB_API_KEY", "sk-or-test")
    BubFramework(config_file=tmp_path / "config.yml")
    endpoint = resolve_endpoint(load_settings())
    assert endpoint is not None
    assert (endpoint.model, endpoint.base_url, endpoint.api_key) == (
        "qwen/qwen3-8b",
        "https://openrouter.ai/api/v1",
        "sk-or-test",
    )


def test_environment_overrides_the_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "config.yml"
    config.write_text("semantic-memory:\n  budget: 500\n  every_turns: 3\n", encoding="utf-8")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_BUDGET", "650")
    BubFramework(config_file=config)
    settings = load_settings()
    assert settings.budget == 650 and settings.every_turns == 3


@pytest.mark.slow
def test_bub_hooks_lists_the_plugin_for_its_hooks(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUB_")} | {
        "BUB_HOME": str(tmp_path / "home")
    }
    result = subprocess.run(
        [sys.executable, "-m", "bub", "hooks"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    for hook in (
        "load_state",
        "save_state",
        "system_prompt",
        "provide_lifespan",
        "provide_tape_sidecar",
        "register_cli_commands",
    ):
        assert "semantic-memory" in lines[hook], hook
    memory = subprocess.run(
        [sys.executable, "-m", "bub", "memory", "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert memory.returncode == 0 and "extract" in memory.stdout and "show" in memory.stdout
    commands = memory.stdout.split("Commands:")[1].splitlines()
    listed = {m.group(1) for line in commands if (m := re.match(r"  (\w\S*)", line))}
    assert {"search", "forget", "undo", "export"} <= listed and "memory" not in listed  # bub memory forget
    for spelling in (["forget"], ["memory", "forget"]):  # the old spelling still works, unlisted
        verb = subprocess.run(
            [sys.executable, "-m", "bub", "memory", *spelling, "--help"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert verb.returncode == 0 and f" bub memory {' '.join(spelling)} [OPTIONS]" in verb.stdout, (
            verb.stderr
        )


async def test_the_default_cadence_batches_turns_and_flushes_at_shutdown(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_EVERY_TURNS", "3")
    harness.extractions["Maya Lin"] = MAYA
    framework, plugin, _ = harness.framework()
    async with framework.running():
        from bub.channels.message import ChannelMessage

        for text in ("Hi, I'm Maya Lin and I live in Lisbon.", "ok", "thanks", "one more"):
            await framework.process_inbound(
                ChannelMessage(session_id="cli:test", channel="cli", chat_id="t", content=text)
            )
            await asyncio.sleep(0.2)
            if text == "ok":
                assert harness.extraction_requests() == []  # two turns: not due yet
        assert len(harness.extraction_requests()) == 1  # the third turn made it due
        assert plugin.stats["deferred"] >= 2
    assert len(harness.extraction_requests()) == 2  # the fourth turn was flushed at shutdown
    graph = plugin.graph(session_tape_name("cli:test", framework.workspace))
    assert graph is not None and len(graph) == 2


@pytest.mark.parametrize("placement", ["message", "system"])
async def test_turns_with_different_questions_keep_the_agents_prompt_prefix(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, placement: str
) -> None:
    """A provider's prefix cache serves every message a call shares with the previous call.

    With memory notes between turns, each call's messages are, byte for byte, the start of
    the next call's; with the block in the system message, the first message changes with
    the question and nothing after it can be served from the cache.
    """
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PLACEMENT", placement)
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_EVERY_TURNS", "100")  # the seeded memory stays as it is
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MIN_NEW_TOKENS", "0")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_BUDGET", "60")  # the first note cannot show everything
    # facts only: the earlier questions' lines match every later question alike
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PASSAGE_SHARE", "0")
    framework, _plugin, stub = harness.framework()
    homes = [("Maya Lin", "Lisbon"), ("Tom Okafor", "Lagos"), ("Ines Silva", "Porto"), ("Ravi Rao", "Pune")]
    entities = [
        Entity.create(name, kind, evidence=[1])
        for pair in homes
        for name, kind in zip(pair, ("person", "location"), strict=True)
    ]
    relations = [
        Relation(source=entities[2 * i].key, type="lives_in", target=entities[2 * i + 1].key)
        for i in range(len(homes))
    ]
    import bub
    from bub.store import FileTapeStore

    tape = session_tape_name("cli:test", framework.workspace)
    await SnapshotStore(FileTapeStore(bub.home / "tapes")).append(
        make_snapshot(entities, relations, tape=tape, first=1, last=1)
    )
    for question in ("Where does Ravi live?", "Where does Tom live?", "Where does Maya live?"):
        await harness.turn(framework, question)
    calls = [[json.dumps(m, sort_keys=True) for m in request.messages] for request in stub.requests]
    assert len(calls) == 3
    if placement == "message":
        for before, after in itertools.pairwise(calls):
            assert after[: len(before)] == before  # the whole previous call, unchanged, then the new turn
        notes = [m for m in calls[-1] if "<memory>" in m]
        assert len(notes) >= 2 and "Maya Lin lives in Lisbon" in "".join(notes)  # the last question's fact
        assert "<memory>" not in calls[-1][0]
    else:
        blocks = [call[0] for call in calls]
        assert all("<memory>" in block for block in blocks) and len(set(blocks)) == 3


async def test_a_failing_note_leaves_bubs_own_context_and_the_turn_goes_on(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness.extractions["Maya Lin"] = MAYA
    framework, plugin, stub = harness.framework()
    await harness.turn(framework, "Hi, I'm Maya Lin and I live in Lisbon.")

    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("render bug")

    monkeypatch.setattr(plugin.memory, "block", broken)
    result = await harness.turn(framework, "Where does Maya live?")
    assert result.model_output == "ok" and plugin.stats["injection_failures"] == 1
    messages = stub.requests[-1].messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]  # no note, nothing lost
    assert "<memory>" not in json.dumps(messages)


async def test_memory_falls_back_to_the_system_message_when_another_plugin_owns_the_context(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    from bub.builtin.context import default_tape_context
    from bub.hooks import hookimpl

    class OtherContext:
        @hookimpl
        def build_tape_context(self) -> TapeContext:
            return default_tape_context()

    harness.extractions["Maya Lin"] = MAYA
    framework, _plugin, stub = harness.framework()
    framework.plugin_manager.register(
        OtherContext(), name="other-context"
    )  # newest wins the first-result hook
    await harness.turn(framework, "Hi, I'm Maya Lin and I live in Lisbon.")
    await harness.turn(framework, "Where does Maya live?")
    assert "Maya Lin lives in Lisbon" in system_message(stub.requests[-1])
    assert "another plugin provides the tape context" in caplog.text


async def call_tool(tool_name: str, tape: str, **arguments: object) -> dict[str, Any]:
    """Run one of bub's registered tools as bub's executor does for the agent."""
    from bub.tools import REGISTRY, ToolContext

    tool = REGISTRY[tool_name]
    context = ToolContext(tape=None, state={TAPE_STATE_KEY: tape})  # type: ignore[arg-type]
    return await tool.run(context=context, **arguments)  # type: ignore[no-any-return]


async def test_memory_tools_read_a_tape_not_loaded_yet_and_say_when_they_fail(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness.extractions["Maya Lin"] = MAYA
    framework, _plugin, _stub = harness.framework()
    await harness.turn(framework, "Hi, I'm Maya Lin and I live in Lisbon.")
    tape = session_tape_name("cli:test", framework.workspace)
    framework, plugin, _stub = harness.framework()  # a new process: nothing loaded
    async with framework.running():
        found = await call_tool("memory.search", tape, query="where does she live")
        recalled = await call_tool("memory.recall", tape, name="Maya")
        unknown = await call_tool("memory.recall", tape, name="Tom Becker")

        def broken(*_args: object, **_kwargs: object) -> None:
            raise RuntimeError("index corrupted")

        monkeypatch.setattr(plugin.memory, "search", broken)
        failed = await call_tool("memory.search", tape, query="Lisbon")
    assert [f["fact"] for f in found["facts"]] == ["Maya Lin lives in Lisbon"]
    assert recalled["entity"]["name"] == "Maya Lin"
    assert "no entity named 'Tom Becker'" in str(unknown["error"])
    assert "index corrupted" in str(failed["error"]) and plugin.stats["tool_errors"] == 1
