from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bub.store import FileTapeStore
from typer.testing import CliRunner

from bub_semantic_memory.cli import app
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.stores._store import SnapshotStore, session_tape_name
from bub_semantic_memory.tape import read_tape_file
from bub_semantic_memory.testing import FakeOpenAIServer, status_reply, tool_call_reply
from tests.conftest import DATA, REPO
from tests.helpers.snapshot_writer import snapshot

SCRIPT = Path(sys.executable).parent / "semantic-memory"

runner = CliRunner()
TAPE = DATA / "bub_run_tape.jsonl"
EXTRACTION = {
    "entities": [
        {"name": "Maya Lin", "type": "person", "evidence": [6]},
        {"name": "Globex", "type": "organization", "evidence": [6]},
    ],
    "relations": [{"source": "Maya Lin", "type": "works_for", "target": "Globex", "evidence": [6]}],
}


def commands(group: object) -> list[list[str]]:
    import typer.main

    click_group = typer.main.get_command(app)
    found: list[list[str]] = [[]]

    def walk(command: object, path: list[str]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            found.append([*path, name])
            walk(sub, [*path, name])

    walk(click_group, [])
    return found


def test_every_command_has_help() -> None:
    for path in commands(app):
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage" in result.output


def test_prompts_list_shows_versions_and_status() -> None:
    result = runner.invoke(app, ["prompts", "list", "--json"])
    rows = json.loads(result.stdout)
    assert {"extract@1", "extract@2"} <= {r["prompt"] for r in rows}
    assert all(r["status"] in ("draft", "released", "promoted") for r in rows)


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_prompts_list_fits_the_terminal_and_says_for_which_class_a_version_is_promoted(
    columns: int, tmp_path: Path
) -> None:
    # a folder whose path alone is near the terminal's width (a clone in a temp folder, as CI makes)
    prompts = tmp_path / ("clone-" + "x" * 30) / "bub-semantic-memory" / "prompts"
    shutil.copytree(PromptLibrary().root, prompts)
    done = subprocess.run(
        [str(SCRIPT), "prompts", "list", "--prompts-dir", str(prompts)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": str(columns)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= columns for line in lines), done.stdout
    assert "…" not in done.stdout
    library = PromptLibrary()
    cells = [[cell.strip() for cell in line.strip("│").split("│")] for line in lines if line.startswith("│")]
    versions = [f"extract@{v}" for v in library.versions("extract")]
    assert [row[0] for row in cells if row[0]][: len(versions)] == versions  # every version, whole
    promoted = library.manifest().promoted["extract"]
    statuses: dict[str, str] = {}
    for row in cells:  # the first part of the table has the statuses (a narrow one continues)
        if row[0] in versions:
            statuses.setdefault(row[0], row[1])
    for model_class, promotion in promoted.items():
        assert statuses[f"extract@{promotion.version}"] == f"promoted ({model_class})"
    assert not any(status == "promoted" for status in statuses.values())


def test_an_unknown_prompt_is_one_error_line_and_exit_1() -> None:
    result = runner.invoke(app, ["prompts", "show", "extract@404"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        result.stderr.strip().splitlines()[0]
    ] and result.stderr.startswith("Error: extract@404 does not exist")
    assert "Traceback" not in result.output


def test_a_bad_tape_name_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["show", "../escape", "--tapes-dir", str(tmp_path)])
    assert result.exit_code == 1 and "could escape the tape directory" in result.stderr


def test_show_and_session_are_exclusive(tmp_path: Path) -> None:
    result = runner.invoke(app, ["show", "--tapes-dir", str(tmp_path)])
    assert result.exit_code == 2


def test_prompts_new_and_diff(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    created = runner.invoke(
        app, ["prompts", "new", "extract", "--from", "extract@1", "--prompts-dir", str(prompts)]
    )
    assert created.exit_code == 0, created.output
    new = sorted((prompts / "extract").glob("v*.md"))[-1]
    new.write_text(new.read_text().replace("Never invent people", "Never make up people"), encoding="utf-8")
    version = new.stem[1:]
    diff = runner.invoke(
        app, ["prompts", "diff", "extract@1", f"extract@{version}", "--prompts-dir", str(prompts)]
    )
    assert "-- Extract only facts that the transcript states. Never invent people" in diff.stdout.replace(
        "\n-", "\n--"
    )
    assert f"+++ extract@{version} template" in diff.stdout
    same = runner.invoke(app, ["prompts", "diff", "extract@1", "extract@1", "--prompts-dir", str(prompts)])
    assert "do not differ" in same.stdout


def test_extract_prints_json_and_stores_incrementally(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.responder = lambda request: tool_call_reply("Extraction", EXTRACTION)
    tapes = tmp_path / "tapes"
    args = [
        "extract",
        str(TAPE),
        "--model",
        "fake-model",
        "--base-url",
        fake_openai.base_url,
        "--api-key",
        "k",
        "--prompt",
        "extract@1",
        "--tapes-dir",
        str(tapes),
        "--tape",
        "demo",
    ]
    first = runner.invoke(app, [*args, "--store", "--json"])
    assert first.exit_code == 0, first.output
    [snapshot] = json.loads(first.stdout)
    assert [e["key"] for e in snapshot["entities"]] == ["person:maya-lin", "organization:globex"]
    assert len(fake_openai.requests) == 1
    again = runner.invoke(app, [*args, "--store"])
    assert again.exit_code == 0 and "Nothing new after entry 29" in again.stderr
    assert len(fake_openai.requests) == 1
    shown = runner.invoke(
        app, ["show", "demo", "--tapes-dir", str(tapes), "--query", "Where does Maya work?"]
    )
    assert shown.stdout.splitlines()[2:4] == ["- Maya Lin (person)", "  - Maya Lin works for Globex"]
    stats = json.loads(runner.invoke(app, ["show", "demo", "--tapes-dir", str(tapes), "--json"]).stdout)
    assert stats["watermark"] == 29 and stats["entities"] == 2 and stats["tokens"] <= stats["budget"]


def test_show_of_a_tape_without_memory_in_an_empty_store_is_one_error_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["show", "nothing-here", "--tapes-dir", str(tmp_path)])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "Error: no memory for tape nothing-here (no such tape in the store); no tape has a memory yet"
    ]


def test_show_and_search_of_a_tape_without_memory_list_the_tapes_that_have_one(tmp_path: Path) -> None:
    """A mistyped name, or a session's tape before its first extraction: exit 1, and the names to
    try instead (five of them, then a count)."""
    tapes = tmp_path / "tapes"
    store = SnapshotStore(FileTapeStore(tapes))
    names = [f"tape-{n}" for n in range(7)]
    for name in names:
        asyncio.run(store.append(snapshot(name, 1, 10)))
    shutil.copy(TAPE, tapes / "known.jsonl")  # a tape bub wrote, not extracted yet
    entries = len(read_tape_file(TAPE)[0])
    listed = "tapes with a memory: tape-0, tape-1, tape-2, tape-3, tape-4 and 2 more"
    for args in (
        ["show"],
        ["show", "--json"],
        ["memory", "search", "Maya"],
        ["memory", "search", "x", "--json"],
    ):
        for tape, why in (
            ("typo", "no such tape in the store"),
            ("known", f"the tape has {entries} entries, none extracted yet"),
        ):
            where = ["--tape", tape] if args[0] == "memory" else [tape]
            result = runner.invoke(app, [*args[:1], *args[1:2], *where, *args[2:], "--tapes-dir", str(tapes)])
            assert (result.exit_code, result.stdout) == (1, ""), (args, tape)
            assert result.stderr.splitlines() == [f"Error: no memory for tape {tape} ({why}); {listed}"]
    shown = runner.invoke(app, ["show", "tape-0", "--tapes-dir", str(tapes)])
    assert shown.exit_code == 0 and "Person 1" in shown.stdout


def test_show_and_search_say_nothing_on_stderr_about_a_long_tool_result(tmp_path: Path) -> None:
    """A tool result longer than a line's limit is cut in the lines a note may quote, by design;
    it used to print a WARNING line at whoever showed or searched the memory."""
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    lines = TAPE.read_text(encoding="utf-8").splitlines()
    last = json.loads(lines[-1])
    text = " ".join(["word"] * 600)
    long_result = {"id": last["id"] + 1, "kind": "tool_result", "payload": {"results": [text]}}
    (tapes / "t.jsonl").write_text("\n".join([*lines, json.dumps(long_result)]) + "\n", encoding="utf-8")
    asyncio.run(SnapshotStore(FileTapeStore(tapes)).append(snapshot("t", 1, 10)))
    for args in (["show", "t"], ["memory", "search", "Person", "--tape", "t"]):
        result = runner.invoke(app, [*args, "--tapes-dir", str(tapes)])
        assert result.exit_code == 0, args
        # only show's line of what waits for extraction (the snapshot covers entry 1 only)
        lag_lines = [
            line
            for line in result.stderr.splitlines()
            if line.startswith("Tape t: ") and "wait for extraction" in line
        ]
        assert result.stderr.splitlines() == (lag_lines if args[0] == "show" else []), args
        assert "Person 1" in result.stdout
    verbose = runner.invoke(app, ["--verbose", "show", "t", "--tapes-dir", str(tapes)])
    said = f"entry {long_result['id']}: tool result of {len(text):,} characters truncated to 1,500"
    assert said in verbose.stderr  # --verbose still says it


def test_show_of_a_session_without_memory_names_its_hashed_tape(tmp_path: Path) -> None:
    """The real console script: the exit code a shell sees, and the tape name bub gives the session."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = subprocess.run(
        [
            str(SCRIPT),
            "show",
            "--session",
            "cli:local",
            "--workspace",
            str(workspace),
            "--tapes-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    tape = session_tape_name("cli:local", workspace)
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert f"`<workspace hash>__{tape.split('__')[1]}`" in readme  # the README's hash of cli:local
    assert tape == (
        hashlib.md5(str(workspace.resolve()).encode()).hexdigest()[:16]
        + "__"
        + hashlib.md5(b"cli:local").hexdigest()[:16]
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        f"Error: no memory for tape {tape} (no such tape in the store); no tape has a memory yet"
    ]


def test_an_endpoint_failure_is_one_line_with_the_cause(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.responder = lambda request: status_reply(401)
    result = runner.invoke(
        app,
        ["extract", str(TAPE), "--model", "m", "--base-url", fake_openai.base_url, "--prompt", "extract@1"],
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: HTTP 401 from the endpoint")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("flag", ["--verbose", "-v"])
def test_verbose_shows_the_traceback(flag: str) -> None:
    result = runner.invoke(app, [flag, "prompts", "show", "extract@404"])
    assert result.exit_code == 1 and result.exception is not None
