"""A slow model: the plugin gives an extraction call the same deadline as the CLI, and lets it finish.

A model in this process answers in tens of seconds per request on a CPU; the plugin once ran
it under the 180 s deadline of a hosted endpoint, and a window of three requests failed every
time. The default suite runs that case on a scaled clock (each request "takes" 200 s and
returns at once); ``-m local_model`` runs the real local model through the plugin.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from bub.framework import BubFramework
from bub.store import InMemoryTapeStore
from bub.tape import TapeEntry

import bub_semantic_memory.backends._transport as transport
from bub_semantic_memory._models import Snapshot
from bub_semantic_memory.backends._transport import HOSTED, BackendTraits, OpenAIBackend
from bub_semantic_memory.cli._options import extractor_config as cli_config
from bub_semantic_memory.extraction._config import default_bounds
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.plugin import SemanticMemoryPlugin
from bub_semantic_memory.stores._store import SnapshotStore
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, SchemaFollowingOracle
from tests.conftest import DATA
from tests.extraction.test_config import packaged_traits, parsed_options
from tests.plugin.conftest import MAYA

HOSTED_DEADLINE = transport.RetryPolicy().deadline_s
SECONDS_PER_REQUEST = 200.0
"""What each request of the slow model takes on the scaled clock: a second request of a window
starts past a 180 s deadline, and a third well within 600 s."""
TAPE = "slow-tape"
TURNS = [
    ("user", "Hi, I'm Maya Lin and I live in Lisbon."),
    ("assistant", "Nice to meet you, Maya."),
]


class ScaledClock:
    """The transport's clock, on which each request of :class:`SlowModel` takes minutes."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


class SlowModel(OpenAIBackend):
    """The fake endpoint, declaring ``traits`` and taking :data:`SECONDS_PER_REQUEST` per request."""

    def __init__(self, server: FakeOpenAIServer, traits: BackendTraits, clock: ScaledClock) -> None:
        super().__init__(base_url=server.base_url, api_key="k", timeout_s=10)
        self.traits = traits
        self.clock = clock

    async def create(self, **kwargs: Any) -> Any:
        self.clock.offset += SECONDS_PER_REQUEST
        return await super().create(**kwargs)


def tape_store() -> InMemoryTapeStore:
    store = InMemoryTapeStore()
    for number, (role, text) in enumerate(TURNS, start=1):
        store.append(TAPE, TapeEntry(number, "message", {"role": role, "content": text}, {}, ""))
    return store


async def extract_with_the_plugin(
    traits: BackendTraits, server: FakeOpenAIServer, clock: ScaledClock
) -> tuple[SemanticMemoryPlugin, list[Snapshot]]:
    """The plugin's own extraction of the tape (its cadence flushed as at shutdown); snapshots stored."""
    plugin = SemanticMemoryPlugin(
        BubFramework(), open_backend=lambda config: SlowModel(server, traits, clock)
    )
    store = tape_store()
    plugin.memory.schedule(TAPE, store, force=True)
    for task in plugin.memory.running():
        await task
    stored, _ = await SnapshotStore(store).load(TAPE)
    return plugin, stored


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer) -> ScaledClock:
    clock = ScaledClock()
    monkeypatch.setattr(transport, "clock", clock)
    fake_openai.responder = SchemaFollowingOracle(OracleResponder.from_golds([MAYA]))
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PROMPT", "extract@9")  # entities, sweep, relations
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_RETRY_COOLDOWN", "0")
    return clock


async def test_the_plugin_finishes_a_slow_local_extraction_past_the_hosted_deadline(
    slow: ScaledClock, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", "local")
    traits = packaged_traits("qwen2.5-coder-1.5b")
    plugin, stored = await extract_with_the_plugin(traits, fake_openai, slow)
    extractor = plugin.memory.extractor
    assert isinstance(extractor, Extractor)
    cli = Extractor(
        cli_config(parsed_options(("extract",), [str(DATA / "bub_run_tape.jsonl"), "--prompt", "extract@9"])),
        backend=SlowModel(fake_openai, traits, slow),
    )
    assert extractor.bounds.retry.deadline_s == cli.bounds.retry.deadline_s == 600.0
    assert plugin.stats["extraction_failures"] == 0
    [snapshot] = stored
    assert {e.name for e in snapshot.entities} == {"Maya Lin", "Lisbon"}
    assert snapshot.usage.requests >= 2
    assert snapshot.usage.latency_s > HOSTED_DEADLINE, "the window took longer than 180 s would allow"


async def test_the_same_slow_model_behind_an_endpoint_runs_out_of_the_hosted_deadline(
    slow: ScaledClock, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: under the 180 s bound the same window fails, so the test above can fail."""
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", "slow-hosted-model")
    plugin, stored = await extract_with_the_plugin(HOSTED, fake_openai, slow)
    assert plugin.memory.extractor is not None
    assert plugin.memory.extractor.bounds.retry.deadline_s == HOSTED_DEADLINE == 180.0
    assert plugin.stats["extraction_failures"] == 1 and stored == []


# The user's bub home, read before the autouse fixture points BUB_HOME at a temp dir: the
# packaged model is assembled there once, not again for every run.
USER_BUB_HOME = os.environ.get("BUB_HOME") or str(Path.home() / ".bub")


@pytest.mark.local_model
@pytest.mark.timeout(900)  # the local deadline (600 s) and the model's assembly and load
async def test_the_plugin_stores_a_snapshot_with_the_real_local_model_within_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``model: local`` through the plugin, on a two-turn tape: a snapshot within the documented deadline.

    Needs ``make setup-local``; without the ``local`` extra the plugin's extractor is off and
    this fails saying why (opting in means wanting it run).
    """
    monkeypatch.setenv("BUB_HOME", USER_BUB_HOME)
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", "local")
    plugin = SemanticMemoryPlugin(BubFramework())
    extractor = plugin.memory.extractor  # the model file is assembled here, not timed
    assert isinstance(extractor, Extractor), f"extraction is off: {dict(plugin.stats)}"
    deadline = extractor.bounds.retry.deadline_s
    assert default_bounds()["deadline"].endswith(f"{deadline:g} for a local model")
    store = tape_store()
    started = time.monotonic()
    plugin.memory.schedule(TAPE, store, force=True)
    for task in plugin.memory.running():
        await task
    elapsed = time.monotonic() - started
    stored, _ = await SnapshotStore(store).load(TAPE)
    assert plugin.stats["extraction_failures"] == 0, dict(plugin.stats)
    assert stored and stored[-1].last_entry_id == len(TURNS)
    assert elapsed < deadline, f"the plugin's local extraction took {elapsed:.0f} s"
