"""The README's Python examples run as written (against a fake OpenAI-compatible endpoint)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, SchemaFollowingOracle
from tests.conftest import DATA, REPO

# What tests/data/bub_run_tape.jsonl says (the README shows the note rendered from these facts).
BUB_RUN_FACTS = {
    "entities": [
        {"name": "Maya Lin", "type": "person", "aliases": ["Maya"]},
        {"name": "Globex", "type": "organization"},
        {"name": "Lisbon", "type": "location"},
        {"name": "Orion migration", "type": "task", "aliases": ["Orion"]},
        {"name": "Tom Becker", "type": "person"},
        {"name": "Dana Whitfield", "type": "person", "aliases": ["Dana"]},
    ],
    "relations": [
        {"source": "Maya Lin", "type": "works_for", "target": "Globex"},
        {"source": "Orion migration", "type": "assigned_to", "target": "Tom Becker"},
    ],
}


def python_blocks(section: str) -> list[str]:
    """The ```python blocks of the README section headed ``## <section>``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, flags=re.DOTALL)


@pytest.fixture
def oracle_endpoint() -> Iterator[FakeOpenAIServer]:
    golds = [fixture.gold for fixture in load_fixtures(REPO / "evals" / "fixtures", tags=["quick"])]
    oracle = SchemaFollowingOracle(OracleResponder.from_golds([*golds, BUB_RUN_FACTS]))
    with FakeOpenAIServer(responder=oracle) as server:
        yield server


def run_block(code: str, cwd: Path, server: FakeOpenAIServer) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k"}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_readme_shows_both_python_examples() -> None:
    assert len(python_blocks("Use it from Python")) == 2


@pytest.mark.slow
def test_the_extract_fold_render_example_prints_a_memory_note(
    oracle_endpoint: FakeOpenAIServer, tmp_path: Path
) -> None:
    shutil.copy(DATA / "bub_run_tape.jsonl", tmp_path / "tape.jsonl")
    done = run_block(python_blocks("Use it from Python")[0], tmp_path, oracle_endpoint)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<memory>") and done.stdout.endswith("</memory>\n")
    assert "Tom Becker (person)" in done.stdout and "- Orion" in done.stdout
    assert oracle_endpoint.requests, "the example extracted through the endpoint"


@pytest.mark.slow
def test_the_eval_example_prints_a_score_per_prompt_version(
    oracle_endpoint: FakeOpenAIServer, tmp_path: Path
) -> None:
    (tmp_path / "evals").symlink_to(REPO / "evals")
    done = run_block(python_blocks("Use it from Python")[1], tmp_path, oracle_endpoint)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["extract@2", "extract@5"]
    assert all(re.search(r"entity F1 \d\.\d{3} relation F1 \d\.\d{3}$", line) for line in lines)


def test_the_readme_quotes_the_default_prompt_as_help_shows_it() -> None:
    """The text comes from the manifest: a promotion changes it, and the README must follow."""
    from bub_semantic_memory.cli._app import PROMOTED_PROMPT

    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert f"which `--help` shows as `{PROMOTED_PROMPT}`" in readme


def test_the_readme_names_each_tool_as_bub_registers_it_and_as_the_model_calls_it() -> None:
    """Both names of each agent tool, from bub itself: its registry and the names it offers a model."""
    from collections import Counter

    from bub.tools import REGISTRY, model_tools

    from bub_semantic_memory.plugin._tools import memory_tool_names, register_memory_tools

    async def load(tape: str) -> None:
        return None

    saved = dict(REGISTRY)  # bub's registry is global: leave it as it was
    try:
        register_memory_tools(lambda: None, lambda context: "", load, Counter(), lambda: None)  # type: ignore[arg-type,return-value]
        tools = [REGISTRY[name] for name in memory_tool_names()]
        offered = [(tool.name, model.name) for tool, model in zip(tools, model_tools(tools), strict=True)]
    finally:
        REGISTRY.clear()
        REGISTRY.update(saved)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(memory[._]\w+)` \| `(memory[._]\w+)` \|", readme, flags=re.MULTILINE)
    assert rows == offered and len(rows) == 3
