"""``bub run`` with the plugin on every store of the matrix, and the CLI reading the configured store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bub_semantic_memory.stores._store import SnapshotStore, memory_tape_name, session_tape_name
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, RecordedRequest, Reply, text_reply
from tests.helpers.injection import injected_memory
from tests.plugin.conftest import MAYA
from tests.stores.conftest import Backend

ORACLE = OracleResponder(entities=MAYA["entities"], relations=MAYA["relations"])
SESSION = "cli:matrix"


def respond(request: RecordedRequest) -> Reply:
    if request.tool_schema_name() is not None:
        return ORACLE(request)
    return text_reply("Noted.")


@pytest.mark.slow
async def test_bub_run_carries_memory_into_the_next_turn_on_every_store(
    backend: Backend, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with FakeOpenAIServer(responder=respond) as server:
        env = backend.process_env() | {
            "BUB_MODEL": f"openai:{server.model_ids[0]}",
            "BUB_API_BASE": server.base_url,
            "BUB_API_KEY": "test-key",
            "BUB_SEMANTIC_MEMORY_PROMPT": "extract@9",  # the version these tests were written against
        }

        def run(*command: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                list(command), cwd=workspace, env=env, check=True, capture_output=True, text=True, timeout=180
            )

        bub = [sys.executable, "-m", "bub"]
        run(*bub, "run", "Hi, I'm Maya Lin and I live in Lisbon.", "--session-id", SESSION)
        assert len([r for r in server.requests if r.starts_window()]) == 1
        run(*bub, "run", "Where do I live?", "--session-id", SESSION)
        second = [r for r in server.requests if r.tool_schema_name() is None][1]
        assert "Maya Lin lives in Lisbon" in injected_memory(second.messages)

        # Outside a running agent, both CLIs read the store bub is configured with.
        show = ["memory", "show", "--session", SESSION, "--workspace", str(workspace)]
        console = Path(sys.executable).with_name("semantic-memory")
        for command in ([*bub, *show], [str(console), *show[1:]]):
            assert "Maya Lin lives in Lisbon" in run(*command).stdout

    tape = session_tape_name(SESSION, workspace)
    async with backend.open() as store:
        graph, report = await SnapshotStore(store).graph(tape)
    # One snapshot per run: the first turn's facts, then the second turn's (flushed at shutdown).
    assert report.issues == [] and graph.snapshot_count == 2 and graph.lookup("Maya Lin")
    sidecar_files = list((backend.home / "tapes").glob(f"{memory_tape_name(tape)}.jsonl"))
    assert len(sidecar_files) == (
        1 if backend.name == "file" else 0
    )  # memory lives where bub keeps its tapes
