"""``bub run`` with the plugin on a model in its own process: the reply is printed, nothing crashes.

The model is a stand-in for llama-cpp-python (``tests/helpers/fake_llama_cpp``) with the three
properties that decide a shutdown: a request computes in a thread asyncio cannot cancel, it stops
only through llama.cpp's abort callback, and freeing the model under a computing thread kills the
process. Each test runs the real ``bub`` CLI as a subprocess, since only a real process shows
what its shutdown does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bub_semantic_memory.stores._store import SNAPSHOT_EVENT
from bub_semantic_memory.testing import FakeOpenAIServer, text_reply
from tests.conftest import REPO

FAKE_LLAMA = REPO / "tests" / "helpers" / "fake_llama_cpp"
MESSAGE = "Hi, I'm Maya Lin from Globex and I live in Lisbon."


def bub_env(tmp_path: Path, server: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    """bub's agent model on the fake server; the plugin's model a fake GGUF file in the process."""
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF")
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("BUB_", "OPENAI_", "FAKE_LLAMA"))}
    return keep | {
        "BUB_HOME": str(tmp_path / "bub-home"),
        "BUB_MODEL": f"openai:{server.model_ids[0]}",
        "BUB_API_BASE": server.base_url,
        "BUB_API_KEY": "test-key",
        "BUB_SEMANTIC_MEMORY_MODEL": f"local:{model}",
        "BUB_SEMANTIC_MEMORY_EVERY_TURNS": "1",  # the turn's extraction starts before shutdown
        # and is inside the model when shutdown gives up on it (by default shutdown does not wait)
        "BUB_SEMANTIC_MEMORY_SHUTDOWN_TIMEOUT": "3",
        "PYTHONPATH": os.pathsep.join([str(FAKE_LLAMA), os.environ.get("PYTHONPATH", "")]),
        "FAKE_LLAMA_LOG": str(tmp_path / "llama.log"),
        **extra,
    }


def bub_run(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "bub", "run", MESSAGE],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def events(tmp_path: Path) -> list[str]:
    log = tmp_path / "llama.log"
    return [line.split(" ", 1)[1] for line in log.read_text().splitlines()] if log.exists() else []


def stored_snapshots(tmp_path: Path) -> list[dict[str, object]]:
    sidecars = list((tmp_path / "bub-home" / "tapes").glob("*__sidecar__semantic_memory.jsonl"))
    entries = [json.loads(line) for path in sidecars for line in path.read_text().splitlines()]
    return [e["payload"]["data"] for e in entries if e["payload"].get("name") == SNAPSHOT_EVENT]


@pytest.mark.slow
def test_bub_run_prints_its_reply_while_the_local_model_is_still_computing(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=lambda request: text_reply("Noted, Maya.")) as server:
        # the model computes until stopped: an extraction that would outlive any shutdown timeout
        env = bub_env(tmp_path, server, BUB_SEMANTIC_MEMORY_CATCH_UP="false")
        started = time.monotonic()
        result = bub_run(tmp_path, env)
        elapsed = time.monotonic() - started

    assert result.returncode == 0, result.stderr[-2000:]
    assert "Noted, Maya." in result.stdout
    assert events(tmp_path) == ["start", "aborted", "closed"]  # stopped, then freed: never under a thread
    assert elapsed < 120  # the reply did not wait for the extraction (which never ends by itself)
    assert stored_snapshots(tmp_path) == []  # nothing stored for the cut window: extracted again later


@pytest.mark.slow
def test_an_extraction_cut_at_shutdown_is_finished_by_a_catch_up_process(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=lambda request: text_reply("Noted, Maya.")) as server:
        # bub's own request computes until stopped; the catch-up process's requests answer at once
        env = bub_env(tmp_path, server, FAKE_LLAMA_SLOW_ONCE=str(tmp_path / "stopped-once"))
        result = bub_run(tmp_path, env)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "Noted, Maya." in result.stdout

        deadline = time.monotonic() + 120
        while not stored_snapshots(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.5)

    snapshots = stored_snapshots(tmp_path)
    assert len(snapshots) == 1, (tmp_path / "bub-home" / "semantic-memory" / "catch-up.log").read_text()
    assert snapshots[0]["first_entry_id"] == 1  # the whole turn, from the tape's first entry
    pids = {line.split(" ", 1)[0] for line in (tmp_path / "llama.log").read_text().splitlines()}
    assert len(pids) == 2  # bub's process stopped its request, another process answered
    log = (tmp_path / "bub-home" / "semantic-memory" / "catch-up.log").read_text()
    assert "1 snapshot(s) stored" in log
    assert "Traceback" not in log and "RuntimeWarning" not in log


@pytest.mark.local_model
@pytest.mark.timeout(1200)  # it waits up to 900 s for the catch-up process to store the memory
def test_bub_run_with_the_embedded_model_prints_its_reply_and_a_catch_up_stores_the_memory(
    tmp_path: Path,
) -> None:
    """The same with the real embedded model (``-m local_model``; needs ``make setup-local``)."""
    home = tmp_path / "bub-home"
    home.mkdir()
    assembled = Path(os.environ.get("BUB_HOME", Path.home() / ".bub")) / "models"
    if assembled.is_dir():
        (home / "models").symlink_to(assembled)  # the model assembled once, not once per test
    with FakeOpenAIServer(responder=lambda request: text_reply("Noted, Maya.")) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BUB_", "OPENAI_"))} | {
            "BUB_HOME": str(home),
            "BUB_MODEL": f"openai:{server.model_ids[0]}",
            "BUB_API_BASE": server.base_url,
            "BUB_API_KEY": "test-key",
            "BUB_SEMANTIC_MEMORY_MODEL": "local",
            "BUB_SEMANTIC_MEMORY_EVERY_TURNS": "1",
        }
        for _ in range(2):
            result = bub_run(tmp_path, env)
            assert result.returncode == 0, result.stderr[-2000:]
            assert "Noted, Maya." in result.stdout
        deadline = time.monotonic() + 900
        while not stored_snapshots(tmp_path) and time.monotonic() < deadline:
            time.sleep(2)
    assert stored_snapshots(tmp_path), (home / "semantic-memory" / "catch-up.log").read_text()
