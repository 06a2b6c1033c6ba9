"""Every command of the README's shell blocks runs as written, or says here why it cannot.

Each command (a line of a ```sh block, continuation lines joined) is one of:

* run here, as written, by ``bash`` in the project's environment, with ``BUB_HOME`` holding the
  tapes the commands name (``T``, ``OTHER``) and ``OPENAI_BASE_URL`` pointing at a fake endpoint;
* run by ``.ci/newcomer`` (the quickstart's two ``make`` commands and ``pip install``, in a fresh
  clone with nothing beside it);
* parsed only, by the CLI's own parser, when it needs what no test machine has (a named hosted
  endpoint, a GGUF file at a path of the user's, a network install), with the reason.

A command added to the README and to none of these lists fails
:func:`test_every_readme_command_is_run_or_says_why_not`.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from bub.store import FileTapeStore
from bub.tape import TapeEntry

from bub_semantic_memory._models import Entity, Fact, Relation
from bub_semantic_memory.cli import app
from bub_semantic_memory.stores._store import SnapshotStore, session_tape_name
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, SchemaFollowingOracle
from tests.conftest import REPO, make_snapshot

BIN = Path(sys.executable).parent


def readme_commands() -> list[str]:
    """The README's shell commands: comments dropped, continuation lines joined."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    commands: list[str] = []
    for block in re.findall(r"```(?:sh|bash)\n(.*?)```", text, flags=re.DOTALL):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            command = spaced(line)
            if command:
                commands.append(command)
    return commands


def spaced(command: str) -> str:
    """``command`` without its comment, quoted the one way ``shlex`` quotes (still a shell command)."""
    return shlex.join(shlex.split(command, comments=True))


RUN_HERE = [
    spaced(c)
    for c in (
        'semantic-memory memory forget "Alice Chen" --tape T',
        'semantic-memory memory forget --relation "Alice Chen" lives_in Lisbon --tape T',
        'semantic-memory memory forget --fact "Alice moved to Lisbon" --tape T',
        'semantic-memory memory forget "Alice Chen" --purge --tape T',
        'semantic-memory memory set "Alice Chen" role "lead designer" --tape T',
        'semantic-memory memory unset "Alice Chen" role --tape T',
        'semantic-memory memory merge "Alice Chen" "A. Chen" --tape T',
        'semantic-memory memory split "Alice Chen" "A. Chen" --tape T',
        'semantic-memory memory end "Alice Chen" lives_in Lisbon --at 120 --tape T',
        "semantic-memory memory edits --tape T",
        "semantic-memory memory export --format graphml --history --tape T -o memory.graphml",
        "semantic-memory memory import memory.json --tape OTHER",
        "semantic-memory prompts new extract --from extract@2",
        "semantic-memory prompts diff extract@2 extract@4",
        "bub hooks",
        "semantic-memory show --session cli:local --workspace .",
        'semantic-memory memory search "Lisbon" --session cli:local -w .',
    )
]
"""Run as written, each in a sandbox of its own (the verbs act on tape T's memory, see :func:`sandbox`)."""

SETUP: dict[str, list[str]] = {
    # the memory.json a user would have exported before importing it
    spaced("semantic-memory memory import memory.json --tape OTHER"): [
        "semantic-memory memory export --tape T -o memory.json"
    ],
    # the split undoes a merge made first
    spaced('semantic-memory memory split "Alice Chen" "A. Chen" --tape T'): [
        'semantic-memory memory merge "Alice Chen" "A. Chen" --tape T'
    ],
    # unset clears an attribute set first
    spaced('semantic-memory memory unset "Alice Chen" role --tape T'): [
        'semantic-memory memory set "Alice Chen" role "lead designer" --tape T'
    ],
}

NEWCOMER = {"make eval", "make test", "pip install .", "bub hooks"}
"""Run by .ci/newcomer in a fresh clone with nothing beside it."""

PARSED_ONLY: dict[str, str] = {
    spaced(c): reason
    for c, reason in (
        (
            "semantic-memory eval run --locomo ../shared/datasets/locomo/locomo8.json --split test --sessions 4 "
            "--model local --cadence plugin --concurrency 1 --out reports/locomo",
            "LoCoMo's file lies outside the project, and the extraction is half an hour of the embedded model",
        ),
        (
            "semantic-memory eval qa --locomo ../shared/datasets/locomo/locomo8.json --split test "
            "--sessions 4 --memory reports/locomo/report.json --run extract@9 "
            "--condition memory --condition memory-no-lines --condition bm25 --condition tape-search "
            "--condition full",
            "LoCoMo's file lies outside the project, and the memory is the command above's",
        ),
        (
            'semantic-memory eval run --model gpt-4o-mini --api-key "$OPENAI_API_KEY" --prompt extract@1 '
            "--prompt extract@2 --out reports/openai",
            "OpenAI's endpoint (every fixture, twice)",
        ),
        (
            'semantic-memory eval run --model deepseek-chat --base-url https://api.deepseek.com/v1 --api-key "$DEEPSEEK_API_KEY"',
            "DeepSeek's endpoint",
        ),
        (
            "semantic-memory eval run --model qwen2.5:7b --base-url http://localhost:11434/v1",
            "a running Ollama",
        ),
        ("semantic-memory eval run --model my-model --base-url http://localhost:8000/v1", "a running vLLM"),
        (
            "semantic-memory eval run --model local --base-url http://localhost:8080/v1",
            "a running llama-server",
        ),
        (
            "semantic-memory eval run --model local:/models/qwen2.5-7b-instruct-q4_k_m.gguf",
            "a GGUF file of the user's",
        ),
        ("semantic-memory memory undo 3fa2c1e0 --tape T", "an edit id that 'memory edits' printed"),
        (
            "semantic-memory eval run --prompt extract@2 --prompt extract@4 --model gpt-4o-mini",
            "OpenAI's endpoint (every fixture, twice)",
        ),
        (
            "semantic-memory prompts promote extract@4 --model gpt-4o-mini",
            "OpenAI's endpoint (the gate's runs)",
        ),
        (
            "semantic-memory eval run --model local --fixture ... --prompt extract@9 --prompt extract@15 "
            "--concurrency 1 --out evals/reports/pairs-tune-extract9-vs-15",
            "how a committed report was made: 38 min of the embedded model",
        ),
        (
            "semantic-memory eval run --model local --fixture ... --prompt extract@9 --prompt extract@15 "
            "--concurrency 1 --out evals/reports/pairs-test-extract9-vs-15",
            "how a committed report was made: 1 h 38 min of the embedded model",
        ),
        (
            "semantic-memory eval run --locomo ../shared/datasets/locomo/locomo8.json --sample conv-30 --sessions 4 "
            "--model local --cadence plugin --concurrency 1 -p extract@9 -p extract@18 --out DIR",
            "a measurement on LoCoMo (kept outside the repository): 15 min of the embedded model",
        ),
        (
            "semantic-memory eval qa --locomo ../shared/datasets/locomo/locomo8.json --sample conv-30 --sessions 4 "
            "--memory DIR/report.json --run extract@18 --condition memory --condition memory-no-lines "
            "--condition bm25",
            "reads the report the command before it wrote",
        ),
        (
            "semantic-memory eval run --model local --tag quick --tag sample --prompt extract@4 --prompt extract@9 "
            "--concurrency 1 --out evals/reports/qwen-sample-extract4-vs-9",
            "how a committed report was made: the embedded model on 22 fixtures",
        ),
        (
            "semantic-memory prompts promote extract@9 --model local --tag quick --tag sample --concurrency 1 "
            "--prompts-dir prompts",
            "the gate's runs on the embedded model",
        ),
    )
}

NOT_RUNNABLE: dict[str, str] = {
    spaced("$EDITOR prompts/extract/v4.md"): "an editor",
    spaced(
        "semantic-memory eval run --model local $(ls evals/fixtures | grep -v '^long-tape' | sed 's/^/--fixture /') "
        "--prompt extract@4 --prompt extract@9 --concurrency 1 --out evals/reports/qwen-all45-extract4-vs-9"
    ): "how a committed report was made (36 min of the embedded model); its fixtures come from a subshell",
    spaced(
        'pip install "git+https://github.com/bubbuild/bub-contrib.git#subdirectory=packages/bub-tapestore-sqlalchemy" '
        '"psycopg[binary]"'
    ): "an install from GitHub (no network here; CI installs the same package from a vendored copy)",
    spaced(
        'pip install "git+https://github.com/bubbuild/bub-contrib.git#subdirectory=packages/bub-tapestore-redis"'
    ): "an install from GitHub (no network here; CI installs the same package from a vendored copy)",
    spaced("export BUB_TAPESTORE_SQLALCHEMY_URL=postgresql+psycopg://bub:secret@db.internal/bub"): (
        "a setting; the store tests run bub against the same variable"
    ),
    spaced("export BUB_TAPESTORE_REDIS_URL=redis://:secret@cache.internal:6379/0"): (
        "a setting; the store tests run bub against the same variable"
    ),
}


def test_every_readme_command_is_run_or_says_why_not() -> None:
    classified = {*RUN_HERE, *NEWCOMER, *PARSED_ONLY, *NOT_RUNNABLE}
    commands = readme_commands()
    assert [c for c in commands if c not in classified] == []
    assert sorted(classified - set(commands)) == []  # no stale entry either


def test_the_newcomer_script_runs_the_quickstart_in_a_fresh_clone_and_ci_runs_it() -> None:
    script = (REPO / ".ci" / "newcomer").read_text(encoding="utf-8")
    assert "git clone" in script
    for command in NEWCOMER:
        assert re.search(rf"^\s*(env -u CI )?{re.escape(command)}( |$)", script, flags=re.MULTILINE), command
    assert re.search(
        r"^\.ci/newcomer$", (REPO / ".ci" / "run").read_text(encoding="utf-8"), flags=re.MULTILINE
    )


@pytest.mark.parametrize("command", sorted(PARSED_ONLY))
def test_a_command_that_needs_what_this_machine_lacks_parses(command: str) -> None:
    words = shlex.split(command)[1:]  # a key variable stays its name: parsing needs no value
    group: typer.core.TyperGroup = typer.main.get_command(app)  # type: ignore[assignment]
    path: list[str] = []
    command_object: object = group
    while isinstance(command_object, typer.core.TyperGroup) and words and words[0] in command_object.commands:
        path.append(words.pop(0))
        command_object = command_object.commands[path[-1]]
    assert isinstance(command_object, typer.core.TyperCommand), path
    with command_object.make_context(" ".join(path), list(words)) as context:  # raises on a bad option
        assert context.params


ALICE = Entity.create("Alice Chen", "person", aliases=["Ali"], evidence=[2])
A_CHEN = Entity.create("A. Chen", "person", evidence=[4])
LISBON = Entity.create("Lisbon", "location", evidence=[2])


def seed(home: Path, workspace: Path) -> None:
    """Tapes T and OTHER in bub's file store under ``home``, and the tape ``bub run`` keeps in
    ``workspace`` (session ``cli:local``); all but OTHER with a memory of Alice Chen."""
    store = FileTapeStore(home / "tapes")
    lines = ["Hi, I'm Alice Chen.", "Alice moved to Lisbon.", "ok", "A. Chen signed the lease.", "ok"]
    bub_run_tape = session_tape_name("cli:local", workspace)
    for tape in ("T", "OTHER", bub_run_tape):
        for text in lines:
            store.append(tape, TapeEntry.message({"role": "user", "content": text}))
    moved = Fact(statement="Alice moved to Lisbon", kind="event", about=(ALICE.key,), evidence=(2,))
    for tape in ("T", bub_run_tape):
        snapshot = make_snapshot(
            [ALICE, A_CHEN, LISBON],
            [Relation(source=ALICE.key, type="lives_in", target=LISBON.key, evidence=(2,))],
            tape=tape,
            first=1,
            last=5,
        ).model_copy(update={"facts": (moved,)})
        asyncio.run(SnapshotStore(store).append(snapshot))


@pytest.fixture
def endpoint() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=SchemaFollowingOracle(OracleResponder())) as server:
        yield server


def sandbox(tmp_path: Path, server: FakeOpenAIServer) -> tuple[Path, dict[str, str]]:
    """A working directory with the project's prompts and fixtures, and bub's home with tapes T and OTHER."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("prompts", "evals"):
        (work / name).symlink_to(REPO / name) if name == "evals" else _copy_tree(REPO / name, work / name)
    home = tmp_path / "bub-home"
    seed(home, work)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("BUB_", "OPENAI_"))}
    return work, keep | {
        "BUB_HOME": str(home),
        "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "test-key",
        # 'prompts new' writes into the prompt directory: the sandbox's copy, not the project's
        "BUB_SEMANTIC_MEMORY_PROMPTS_DIR": str(work / "prompts"),
    }


def _copy_tree(source: Path, target: Path) -> None:
    import shutil

    shutil.copytree(source, target)


@pytest.mark.slow
@pytest.mark.parametrize("command", RUN_HERE)
def test_a_readme_command_runs_as_written(command: str, tmp_path: Path, endpoint: FakeOpenAIServer) -> None:
    work, env = sandbox(tmp_path, endpoint)
    for step in [*SETUP.get(command, []), command]:
        done = subprocess.run(
            ["bash", "-c", step], cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"{step}\n{done.stdout}\n{done.stderr}"
        assert not done.stderr.startswith("Error"), done.stderr
