"""Progress of long steps: lines in logs, a bar or spinner on a terminal, nothing on stdout."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from bub_semantic_memory.cli import app
from bub_semantic_memory.evals import Prediction
from bub_semantic_memory.evals.extraction import FixtureResult
from bub_semantic_memory.evals.extraction._progress import RunProgress, format_duration
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, delay_reply, tool_call_reply
from tests.conftest import DATA, REPO

FIXTURES = REPO / "evals" / "fixtures"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def result(fixture: str, *, requests: int = 1, ok: bool = True, cached: bool = False) -> FixtureResult:
    return FixtureResult(
        fixture=fixture,
        ok=ok,
        error_type=None if ok else "ExtractionError",
        cached=cached,
        requests_made=requests,
        prediction=Prediction(fixture=fixture),
    )


def test_durations_read_as_seconds_minutes_or_hours() -> None:
    assert [format_duration(s) for s in (0, 42.4, 185, 3720)] == ["0 s", "42 s", "3 min 05 s", "1 h 02 min"]


def test_in_a_log_each_fixture_is_one_line_with_counts_requests_elapsed_and_eta() -> None:
    out, clock = io.StringIO(), Clock()
    with RunProgress(Console(file=out, width=200), 4, clock=clock) as progress:
        progress.start_run("extract@2 (m)", 2)
        clock.now += 10
        progress.fixture_done(result("alpha", requests=2))
        clock.now += 10
        progress.fixture_done(result("beta", ok=False))
        progress.finish_run()
        progress.start_run("extract@3 (m)", 2)
        clock.now += 5
        progress.fixture_done(result("alpha", requests=0, cached=True))
    assert out.getvalue().splitlines() == [
        "[1/4] extract@2 (m) · alpha: ok, 2 request(s); elapsed 10 s, ETA 30 s",
        "[2/4] extract@2 (m) · beta: failed (ExtractionError), 1 request(s); elapsed 20 s, ETA 20 s",
        "[3/4] extract@3 (m) · alpha: ok, cached; elapsed 25 s, ETA 8 s",
    ]
    assert progress.requests == 3


def test_on_a_terminal_a_bar_shows_done_of_total_requests_and_eta() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with RunProgress(console, 2) as progress:
        progress.start_run("extract@2 (m)", 2)
        progress.fixture_done(result("alpha", requests=3))
        progress.fixture_done(result("beta", requests=1))
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "extract@2 (m)" in text and "2/2" in text and "4 requests" in text and "ETA" in text
    assert "[1/2]" not in text  # no per-fixture lines under a bar


def test_disabled_progress_says_nothing() -> None:
    out = io.StringIO()
    with RunProgress(Console(file=out), 1, enabled=False) as progress:
        progress.start_run("x", 1)
        progress.fixture_done(result("alpha"))
    assert out.getvalue() == ""


def test_eval_run_reports_every_fixture_on_stderr_and_keeps_stdout_for_results(tmp_path: Path) -> None:
    from bub_semantic_memory.evals import load_fixtures

    quick = load_fixtures(FIXTURES, tags=["quick"])
    with FakeOpenAIServer(responder=OracleResponder.from_golds(f.gold for f in quick)) as server:
        done = CliRunner().invoke(
            app,
            [
                "eval",
                "run",
                "--fixtures",
                str(FIXTURES),
                "--tag",
                "quick",
                "--prompt",
                "extract@1",
                "--model",
                "oracle",
                "--base-url",
                server.base_url,
                "--out",
                str(tmp_path / "o"),
                "--cache-dir",
                str(tmp_path / "c"),
            ],
        )
    assert done.exit_code == 0, done.output
    lines = [line for line in done.stderr.splitlines() if line.startswith("[") and "still" not in line]
    assert [line.split("]")[0] for line in lines] == [f"[{i}/{len(quick)}" for i in range(1, len(quick) + 1)]
    assert all("extract@1 (oracle)" in line and "ETA" in line for line in lines)
    assert "ETA" not in done.stdout


@pytest.mark.slow
def test_extract_shows_a_spinner_with_elapsed_time_on_a_terminal_and_nothing_on_stdout(
    tmp_path: Path,
) -> None:
    extraction = {"entities": [{"name": "Maya Lin", "type": "person", "evidence": [6]}], "relations": []}
    with FakeOpenAIServer(
        responder=lambda r: delay_reply(1.5, tool_call_reply("Extraction", extraction))
    ) as server:
        master, slave = pty.openpty()
        process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "semantic-memory"),
                "extract",
                str(DATA / "bub_run_tape.jsonl"),
                "--model",
                "m",
                "--base-url",
                server.base_url,
                "--api-key",
                "k",
                "--prompt",
                "extract@1",
                "--json",
            ],
            stdout=subprocess.PIPE,
            stderr=slave,
            env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
        )
        os.close(slave)
        stdout, _ = process.communicate(timeout=60)
        terminal = b""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            terminal += chunk
        os.close(master)
    assert process.returncode == 0
    [snapshot] = json.loads(stdout)  # stdout holds the JSON and nothing else
    assert snapshot["entities"][0]["name"] == "Maya Lin"
    shown = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", terminal).decode()
    assert "Extracting 29 entries of bub_run_tape.jsonl with m" in shown
    assert re.search(r"0:00:0[0-9]", shown)


async def test_a_slow_step_before_the_fixtures_and_a_long_fixture_are_never_silent_for_30_s() -> None:
    out, clock = io.StringIO(), Clock()
    progress = RunProgress(Console(file=out, width=200), 1, clock=clock)

    async def assemble_the_model() -> str:
        for _ in range(7):  # 70 s of assembling and checking a packaged model
            clock.now += 10
            progress.beat()
        return "backend"

    assert await progress.phase("Opening local", assemble_the_model()) == "backend"
    assert out.getvalue().splitlines() == [
        "Opening local: 10 s so far",  # said once it took longer than 2 s
        "Opening local: 40 s so far",
        "Opening local: 1 min 10 s so far",
    ]
    with progress:
        progress.start_run("extract@9 (local)", 1)
        progress.fixture_started("long-tape")
        for _ in range(7):  # a fixture of several minutes: the first request also loads the model
            clock.now += 10
            progress.beat()
        progress.fixture_done(result("long-tape"))
    lines = out.getvalue().splitlines()[3:]
    assert lines[:2] == [
        "[0/1] extract@9 (local) · still extracting long-tape (30 s)",
        "[0/1] extract@9 (local) · still extracting long-tape (1 min 00 s)",
    ]
    assert lines[2].startswith("[1/1] extract@9 (local) · long-tape: ok")


def test_a_quick_run_gets_no_heartbeat_lines() -> None:
    out, clock = io.StringIO(), Clock()
    with RunProgress(Console(file=out, width=200), 1, clock=clock) as progress:
        progress.start_run("x", 1)
        progress.fixture_started("alpha")
        clock.now += 29
        assert progress.beat() is None
        progress.fixture_done(result("alpha"))
    assert len(out.getvalue().splitlines()) == 1


def test_the_heartbeat_says_which_turn_a_replayed_tape_is_at_and_a_resume_is_said_at_once() -> None:
    out, clock = io.StringIO(), Clock()
    with RunProgress(Console(file=out, width=200), 1, clock=clock) as progress:
        progress.start_run("extract@9 (local)", 1)
        progress.fixture_started("conv-50")
        progress.note("conv-50: resuming after entry 412 of 1153 (38 snapshot(s) cached by an earlier run)")
        progress.fixture_progress("conv-50", "turn 211 of 568")
        clock.now += 30
        progress.beat()
        progress.fixture_done(result("conv-50"))
        clock.now += 30
        progress.fixture_started("conv-44")  # a fixture after it starts with nothing said of it
        clock.now += 30
        progress.beat()
    assert out.getvalue().splitlines()[:2] == [
        "conv-50: resuming after entry 412 of 1153 (38 snapshot(s) cached by an earlier run)",
        "[0/1] extract@9 (local) · still extracting conv-50 (30 s, turn 211 of 568)",
    ]
    assert out.getvalue().splitlines()[-1].endswith("still extracting conv-44 (30 s)")
