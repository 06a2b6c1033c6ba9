"""What starting the command line costs: help and --version import no model client and no bub.

Timing a process on a shared machine is noise; which modules a process imported is not.
``openai`` alone takes about a second to import, so help that imports it cannot be fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

from tests.conftest import REPO

SCRIPT = Path(sys.executable).parent / "semantic-memory"
HEAVY = ("openai", "instructor", "bub", "httpx", "httpx2", "aiohttp", "llama_cpp")
"""Modules a command imports when it runs, never for its help: the model clients and bub (which
also loads a ``.env`` file and its framework when imported)."""


def imported_by(args: list[str]) -> set[str]:
    """The top-level modules (and ``HEAVY`` submodules) the real console script imported for ``args``."""
    done = subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "COLUMNS": "80"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            names.add(name)
            names.add(name.split(".", 1)[0])
    return names


def test_root_help_imports_no_model_client_and_no_bub() -> None:
    imported = imported_by(["--help"])
    assert "bub_semantic_memory.cli" in imported  # the profile did record the CLI's imports
    assert sorted(imported & set(HEAVY)) == []


def test_every_command_help_imports_no_model_client_and_no_bub() -> None:
    """Each command's help, printed in one process: the defaults shown (the promoted prompt,
    the backend's bounds) must not pull in what only running the command needs."""
    code = (
        "import json, sys, typer.main\n"
        "from typer.testing import CliRunner\n"
        "from bub_semantic_memory.cli import app\n"
        "paths = [[]]\n"
        "def walk(command, path):\n"
        "    for name, sub in getattr(command, 'commands', {}).items():\n"
        "        paths.append([*path, name]); walk(sub, [*path, name])\n"
        "walk(typer.main.get_command(app), [])\n"
        "codes = [CliRunner().invoke(app, [*p, '--help']).exit_code for p in paths]\n"
        f"print(json.dumps([len(paths), codes, sorted(m for m in sys.modules if m in {HEAVY!r})]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    count, codes, heavy = json.loads(done.stdout)
    assert count > 20 and set(codes) == {0}
    assert heavy == []


def test_a_command_that_opens_a_store_does_import_bub(tmp_path: Path) -> None:
    """The other side of deferring: what a command needs is imported when it runs (and the
    profile sees imports made inside a command, so the checks above are not vacuous)."""
    imported = imported_by(["memory", "edits", "--tape", "t", "--tapes-dir", str(tmp_path), "--json"])
    assert {"bub", "bub_semantic_memory.stores._store"} <= imported


def test_version_prints_the_installed_version() -> None:
    done = subprocess.run(
        [str(SCRIPT), "--version"], capture_output=True, text=True, check=False, timeout=120
    )
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert (done.returncode, done.stdout, done.stderr) == (0, f"semantic-memory {declared}\n", "")
    assert version("bub-semantic-memory") == declared
