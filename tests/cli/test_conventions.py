"""The command line's conventions, checked on every command as a user sees them.

Help without value placeholders on flags, no word cut in a 60-column terminal, one
``Error:`` line with a non-zero exit for every failure (usage errors included), one
default prompt (the promoted version) named in ``--help``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from bub_semantic_memory.cli import app
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, tool_call_reply
from tests.conftest import DATA, REPO

runner = CliRunner()
FIXTURES = REPO / "evals" / "fixtures"
REPORTS = REPO / "evals" / "reports"
SCRIPT = Path(sys.executable).parent / "semantic-memory"


def command_paths() -> list[list[str]]:
    found: list[list[str]] = [[]]

    def walk(command: object, path: list[str]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            found.append([*path, name])
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def help_of(path: list[str], columns: int = 80) -> str:
    """Help as a terminal of ``columns`` shows it (typer's runner pins 80; ``terminal_width`` overrides)."""
    result = runner.invoke(app, [*path, "--help"], terminal_width=columns)
    assert result.exit_code == 0, (path, result.output)
    return result.stdout


def flags_of(path: list[str]) -> list[str]:
    """The boolean flags of a command (``--json``, ``--help``...), from its click definition."""
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    ctx = command.make_context("semantic-memory", [], resilient_parsing=True)
    return [
        opt for param in command.get_params(ctx) if getattr(param, "is_flag", False) for opt in param.opts
    ]


def one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: "), stderr
    return lines[0]


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "root")
def test_help_never_gives_a_default_as_none(path: list[str]) -> None:
    """An unset option's default is decided somewhere (by the model's class, say): help says how."""
    text = " ".join(help_of(path, columns=400).split())
    assert "default: None" not in text


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "root")
def test_help_shows_flags_without_a_value_placeholder(path: list[str]) -> None:
    text = help_of(path)
    assert "<bool>" not in text
    flags = flags_of(path)
    assert "--help" in flags
    for flag in flags:
        line = next(line for line in text.splitlines() if re.search(rf"(^|[ ,]){flag}\b", line))
        after = line.split(flag, 1)[1]
        assert not after.lstrip().startswith("<"), line


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "root")
def test_help_in_a_60_column_terminal_cuts_no_word(path: list[str]) -> None:
    text = help_of(path, columns=60)
    words = {word.strip("[]();,.") for word in text.split()}
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    expected = [command.help or ""]
    expected += [getattr(p, "help", None) or "" for p in command.params]
    expected += [str(p.envvar) for p in command.params if isinstance(p.envvar, str)]
    # A group lists each subcommand by the first paragraph of its help.
    expected += [(c.help or "").split("\n\n")[0] for c in getattr(command, "commands", {}).values()]
    for phrase in expected:
        for word in phrase.replace("``", "").split():  # code is shown without its double backticks
            assert word.strip("[]();,.") in words, (word, text)
    assert "``" not in text
    body = text.split("\n\n", 1)[1]  # the usage's "[ARGS]..." is syntax, not a cut
    assert "…" not in body and not any(line.endswith("...") for line in body.splitlines())
    assert all(len(line) <= 60 for line in text.splitlines()), text


def test_help_honours_columns() -> None:
    done = subprocess.run(
        [str(SCRIPT), "extract", "--help"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "60"},
    )
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert (
        max(len(line) for line in lines)
        <= 60
        < max(len(line) for line in help_of(["extract"], 100).splitlines())
    )
    assert "BUB_SEMANTIC_MEMORY_PROMPTS_DIR]" in done.stdout.split()


def test_a_flag_given_a_value_is_one_usage_error_line() -> None:
    result = runner.invoke(app, ["--verbose", "true", "prompts", "list"])
    assert result.exit_code == 2
    assert one_error_line(result.stderr) == ("Error: No such command 'true' (see 'semantic-memory --help')")
    assert result.stdout == ""


def test_an_unknown_option_is_one_usage_error_line() -> None:
    result = runner.invoke(app, ["eval", "run", "--bogus"])
    assert result.exit_code == 2
    line = one_error_line(result.stderr)
    assert "No such option: --bogus" in line and "'semantic-memory eval run --help'" in line


def test_a_missing_tape_file_is_one_usage_error_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["extract", str(tmp_path / "nope.jsonl"), "--model", "m"])
    assert result.exit_code == 2
    assert "does not exist" in one_error_line(result.stderr)


def test_the_console_script_prints_one_error_line(tmp_path: Path) -> None:
    """The installed entry point, not only the test runner, keeps usage errors to one line."""
    done = subprocess.run(
        [str(SCRIPT), "extract", str(tmp_path / "missing.jsonl"), "--model", "m"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "60"},
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "missing.jsonl" in one_error_line(done.stderr)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_extract_exits_1_when_no_entry_could_be_read(tmp_path: Path, as_json: bool) -> None:
    tape = tmp_path / "garbage.jsonl"
    tape.write_text("garbage\n{bad\n[1, 2]\nnope\n", encoding="utf-8")
    result = runner.invoke(app, ["extract", str(tape), "--model", "m", *(["--json"] if as_json else [])])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert one_error_line(result.stderr) == (
        f"Error: no entries in {tape}: 4 line(s) skipped or repaired: 3 malformed JSON, 1 not an object"
    )


def test_extract_of_an_empty_tape_exits_1(tmp_path: Path) -> None:
    tape = tmp_path / "empty.jsonl"
    tape.write_text("", encoding="utf-8")
    result = runner.invoke(app, ["extract", str(tape), "--model", "m", "--json"])
    assert result.exit_code == 1 and result.stdout == ""
    assert one_error_line(result.stderr) == f"Error: no entries in {tape}: the file is empty"


def test_extract_names_each_skipped_line_only_with_verbose(tmp_path: Path) -> None:
    tape = tmp_path / "garbage.jsonl"
    tape.write_text("garbage\n[1]\n", encoding="utf-8")
    result = runner.invoke(app, ["--verbose", "extract", str(tape), "--model", "m"])
    assert result.exit_code == 1
    assert "line 1: not valid JSON" in result.stderr and "line 2: expected a JSON object" in result.stderr


PROMPT_COMMANDS = [["extract"], ["eval", "run"]]
READING_COMMANDS = [
    ["show"],
    ["memory", "search"],
    ["memory", "export"],
    ["memory", "forget"],
    ["memory", "edits"],
]


@pytest.mark.parametrize("path", PROMPT_COMMANDS, ids=" ".join)
def test_help_names_the_promoted_prompt_as_the_default(path: list[str]) -> None:
    promoted = PromptLibrary().manifest().promoted["extract"]
    text = " ".join(help_of(path, columns=200).split())
    listed = ", ".join(
        f"extract@{promoted[c].version} for {c}" if c in promoted else f"none for {c}"
        for c in ("local", "hosted")
    )
    assert f"[default: extract, the version promoted for the model's class: {listed}]" in text


@pytest.mark.parametrize("path", READING_COMMANDS, ids=" ".join)
def test_a_verb_that_reads_a_memory_folds_it_with_the_version_that_extracted_it(path: list[str]) -> None:
    text = " ".join(help_of(path, columns=200).split())
    assert (
        "Prompt version whose ontology folds the memory (default: the version that extracted the tape)"
        in text
    )


def test_eval_run_defaults_to_the_promoted_prompt(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    library = PromptLibrary(prompts)
    for version in (1, 2, 3):
        source = REPO / "prompts" / "extract" / f"v{version}.md"
        (prompts / "extract").mkdir(exist_ok=True)
        (prompts / "extract" / f"v{version}.md").write_bytes(source.read_bytes())
    manifest = PromptLibrary().manifest()
    manifest.promoted["extract"] = {
        model_class: promotion.model_copy(update={"version": 1})
        for model_class, promotion in manifest.promoted["extract"].items()
    } | {"hosted": manifest.promoted["extract"]["local"].model_copy(update={"version": 1})}
    library.save_manifest(manifest)
    quick = [f for f in FIXTURES.iterdir() if f.name == "smalltalk-good-morning"]
    assert quick
    with FakeOpenAIServer(responder=OracleResponder.from_golds([])) as server:
        result = runner.invoke(
            app,
            [
                "eval",
                "run",
                "--fixtures",
                str(FIXTURES),
                "--fixture",
                "smalltalk-good-morning",
                "--model",
                "oracle",
                "--base-url",
                server.base_url,
                "--prompts-dir",
                str(prompts),
                "--out",
                str(tmp_path / "out"),
                "--cache-dir",
                str(tmp_path / "cache"),
            ],
        )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [run["prompt"] for run in report["runs"]] == ["extract@1"]


def test_tables_in_a_60_column_terminal_split_instead_of_cutting_words() -> None:
    three_runs = REPORTS / "local-quick-extract1-2-3" / "report.json"
    done = subprocess.run(
        [str(SCRIPT), "eval", "compare", str(three_runs), str(three_runs)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "60"},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 60 for line in lines), done.stdout
    assert "…" not in done.stdout
    assert "Summary (continued)" in done.stdout
    for word in ("extract@1", "extract@2", "extract@3", "significant", "difference", "Completion"):
        assert word in done.stdout.split(), word
    for part in done.stdout.split("Summary")[1:]:
        header = [
            line.strip("┃").split("┃") for line in part.split("┡")[0].splitlines() if line.startswith("┃")
        ]
        columns = [" ".join(" ".join(cells).split()) for cells in zip(*header, strict=True)]
        assert columns[0] == "Metric" and not columns[1].startswith("Δ"), columns  # Δ stays beside its run
    wide = subprocess.run(
        [str(SCRIPT), "eval", "compare", str(three_runs), str(three_runs)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert "Summary (continued)" not in wide.stdout and "…" not in wide.stdout


@pytest.mark.slow
def test_help_inside_bub_keeps_the_conventions(tmp_path: Path) -> None:
    """Mounted as ``bub memory``, the commands still show flags without ``<bool>``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUB_")}
    env["BUB_HOME"] = str(tmp_path / "bub")
    done = subprocess.run(
        [sys.executable, "-m", "bub", "memory", "extract", "--help"],
        capture_output=True,
        text=True,
        check=False,
        env={**env, "COLUMNS": "60"},
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "<bool>" not in done.stdout and "--json" in done.stdout
    assert all(len(line) <= 60 for line in done.stdout.splitlines()), done.stdout


def test_an_unforeseen_error_is_one_line_too(tmp_path: Path) -> None:
    extraction: dict[str, list[object]] = {"entities": [], "relations": []}
    out = tmp_path / "missing-dir" / "snapshots.jsonl"
    with FakeOpenAIServer(responder=lambda request: tool_call_reply("Extraction", extraction)) as server:
        args = ["extract", str(DATA / "bub_run_tape.jsonl"), "--model", "m", "--base-url", server.base_url]
        result = runner.invoke(app, [*args, "--api-key", "k", "--prompt", "extract@1", "--out", str(out)])
        verbose = runner.invoke(
            app, ["--verbose", *args, "--api-key", "k", "--prompt", "extract@1", "--out", str(out)]
        )
    assert result.exit_code == 1 and result.stdout == ""
    line = one_error_line(result.stderr)
    assert line.startswith("Error: FileNotFoundError: ") and "--verbose shows the traceback" in line
    assert verbose.exit_code == 1 and isinstance(verbose.exception, FileNotFoundError)
