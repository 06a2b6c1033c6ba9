"""The Makefile's set-up: uv in a project-local venv (never the system interpreter), a talkative build."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
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


def test_setup_local_says_what_it_builds_how_long_it_takes_and_reports_while_it_runs() -> None:
    # A stand-in for the 6-7 minute build: 2.5 s, with a report every second.
    done = make("-o", "setup", "setup-local", "VENV_PY=/nonexistent", "TICK=1", "UV=sh -c 'sleep 2.5' --")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[0]
        == "Installing llama-cpp-python: built from source with portable CPU flags (usually 6-7 min on"
    )
    assert lines[1].startswith("2 cores) unless uv has a wheel it built before.")
    ticks = [line for line in lines if "still installing llama-cpp-python" in line]
    assert ticks[:2] == [
        "  ... still installing llama-cpp-python (1 s so far)",
        "  ... still installing llama-cpp-python (2 s so far)",
    ]
    assert lines[-1].startswith("Local model set-up finished in ")


def test_setup_local_passes_on_a_failed_build() -> None:
    done = make("-o", "setup", "setup-local", "VENV_PY=/nonexistent", "UV=sh -c 'exit 3' --")
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
