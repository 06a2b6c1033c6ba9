"""The Makefile's set-up: uv in a project-local venv (never the system interpreter), a talkative build."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def make(*args: str) -> subprocess.CompletedProcess[str]:
    # Run from make (make test PYTEST_ARGS=...), the suite inherits make's variables: a make it runs
    # would take them as its own.
    inherited = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "PYTEST_ARGS"}
    env = {k: v for k, v in os.environ.items() if k not in inherited}
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )


def test_setup_installs_uv_into_a_project_local_venv_only() -> None:
    planned = make("-n", "-B", "setup")
    assert planned.returncode == 0, planned.stderr
    lines = planned.stdout.splitlines()
    assert "python3 -m venv --clear .tools" in lines
    installs = [line for line in lines if "pip install" in line]
    assert installs and all(line.startswith(".tools/bin/python -m pip install") for line in installs)
    uv_calls = [line for line in lines if " -m uv " in line]
    assert uv_calls and all(".tools/bin/python -m uv" in line for line in uv_calls)
    assert not any(line.startswith(("python3 -m pip", "pip ", "python3 -m uv")) for line in lines)


def fake_uv(tmp_path: Path, plan: str) -> str:
    """A stand-in for uv: its dry run prints ``plan`` as uv's debug output does; a sync takes 2.5 s."""
    script = tmp_path / "uv"
    script.write_text(
        f'#!/bin/sh\ncase "$*" in *--dry-run*) echo "DEBUG {plan}" >&2 ;; *) sleep 2.5 ;; esac\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return f"UV={script}"


def test_setup_local_says_what_it_builds_how_long_it_takes_and_reports_while_it_runs(tmp_path: Path) -> None:
    # uv's plan for a cache without the wheel; a stand-in for the minutes-long build: 2.5 s, a report a second.
    uv = fake_uv(tmp_path, "Identified uncached distribution: llama-cpp-python==0.3.36")
    done = make("-o", "setup-runtime", "setup-local", "VENV_PY=/nonexistent", "TICK=1", uv)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        "Installing llama-cpp-python: built from source with portable CPU flags (about 3 min on 2",
        "idle cores, 10 or more when they are busy). A line follows every 1 s until it is done.",
    ]
    ticks = [line for line in lines if "still installing llama-cpp-python" in line]
    assert ticks[:2] == [
        "  ... still installing llama-cpp-python (1 s so far)",
        "  ... still installing llama-cpp-python (2 s so far)",
    ]
    assert lines[-1].startswith("Local model set-up finished in ")


def test_setup_local_does_not_announce_a_build_when_uv_has_the_wheel(tmp_path: Path) -> None:
    uv = fake_uv(tmp_path, "Registry requirement already cached: llama-cpp-python==0.3.36")
    done = make("-o", "setup-runtime", "setup-local", "VENV_PY=/nonexistent", "TICK=1", uv)
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.splitlines()[0]
        == "Installing llama-cpp-python from the wheel uv built before (no compiling)."
    )
    assert "built from source" not in done.stdout


def test_uvs_plan_names_llama_cpp_python_as_the_makefile_expects() -> None:
    """The pinned uv's dry run says 'already cached' or 'uncached distribution' for the package (or,
    where it is installed already and the Makefile never asks, 'Requirement already installed')."""
    import os
    import re

    tools = REPO / ".tools" / "bin" / "python"
    if not tools.exists():
        pytest.skip("uv is not set up (make setup)")
    done = subprocess.run(
        [
            str(tools),
            "-m",
            "uv",
            "sync",
            "--frozen",
            "--inexact",
            "--no-dev",
            "--extra",
            "local",
            "--dry-run",
            "-v",
        ],
        cwd=REPO,
        env={**os.environ, "VIRTUAL_ENV": str(REPO / ".venv")},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    plan = r"(already cached|uncached distribution|Requirement already installed): llama-cpp-python=="
    assert re.search(plan, done.stderr), done.stderr[-2000:]


def test_make_stores_prints_no_warning() -> None:
    """The vendored store plugins build with uv_build >=0.9.7,<0.10: the pinned uv is inside that bound."""
    done = make("stores")
    assert done.returncode == 0, done.stderr
    assert "warning" not in (done.stdout + done.stderr).lower(), done.stdout + done.stderr


def test_setup_local_passes_on_a_failed_build() -> None:
    done = make("-o", "setup-runtime", "setup-local", "VENV_PY=/nonexistent", "UV=sh -c 'exit 3' --")
    assert done.returncode != 0 and "finished in" in done.stdout


def test_uv_is_pinned_for_the_lock_file_and_the_vendored_store_plugins() -> None:
    planned = make("-n", "-B", "setup")
    [install] = [line for line in planned.stdout.splitlines() if "pip install" in line]
    assert install.endswith(" uv==0.9.30")  # uv-build >=0.9.7,<0.10 builds the vendored plugins


def test_the_environment_holds_no_store_plugin_bub_would_pick() -> None:
    """bub loads every installed store plugin and the last one wins: one in the environment makes
    ``bub run`` pick a Redis or SQL store that no server backs. They live in .stores/ instead."""
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlib.metadata import entry_points; print(sorted(e.name for e in entry_points(group='bub')))",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd="/",
    )
    assert "semantic-memory" in listed.stdout and "tapestore" not in listed.stdout, listed.stdout


def test_make_eval_installs_neither_the_dev_tools_nor_the_smoke_test_model() -> None:
    """The quickstart's eval needs the runtime and the embedded model: no linters, browsers or 270M model."""
    planned = make("-n", "-B", "eval")
    assert planned.returncode == 0, planned.stderr
    uv_lines = [line for line in planned.stdout.splitlines() if " -m uv sync" in line or " -m uv run" in line]
    assert uv_lines and all("--no-dev" in line for line in uv_lines), uv_lines
    assert not any("smoke" in line for line in uv_lines)


def pytest_command(target: str, *args: str) -> list[str]:
    """The pytest arguments ``make -n target`` would run, split as the shell would."""
    import shlex

    planned = make("-n", "-o", "setup", "-o", "stores", target, *args)
    assert planned.returncode == 0, planned.stderr
    [line] = [line for line in planned.stdout.splitlines() if " pytest" in line]
    words = shlex.split(line)
    return words[words.index("pytest") + 1 :]


def test_make_test_leaves_out_the_slow_tests_and_make_test_slow_runs_only_them() -> None:
    assert pytest_command("test") == ["-m", "not slow and not local_model"]
    assert pytest_command("test-slow") == ["-m", "slow and not local_model"]
    assert pytest_command("test-all") == ["-m", "not local_model"]
    assert pytest_command("test", "PYTEST_ARGS=-x tests/memory") == [
        "-m",
        "not slow and not local_model",
        "-x",
        "tests/memory",
    ]


def test_ci_runs_every_test_the_quick_run_leaves_out() -> None:
    """The newcomer's ``make test`` runs the quick tests (the store matrix skips without its plugins);
    ``.ci/run`` then runs the whole store matrix and the slow tests outside it, so CI runs every test
    but the opt-in local-model ones, and none twice."""
    import re
    import shlex

    newcomer = (REPO / ".ci" / "newcomer").read_text(encoding="utf-8")
    assert re.search(r"^env -u CI make test$", newcomer, flags=re.MULTILINE)
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    steps = [shlex.split(line) for line in ci.splitlines() if line.startswith(("make test", ".ci/newcomer"))]
    assert [step[:2] for step in steps] == [[".ci/newcomer"], ["make", "test-stores"], ["make", "test-slow"]]
    matrix = pytest_command("test-stores")
    slow_run = pytest_command("test-slow", *steps[2][2:])
    assert slow_run[:2] == ["-m", "slow and not local_model"]
    assert sorted(arg.removeprefix("--ignore=") for arg in slow_run[2:]) == sorted(matrix)
