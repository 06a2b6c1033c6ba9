"""The suite's own settings: a per-test time limit, and the markers that split the quick run from the slow."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import REPO

PYTEST_CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"][
    "ini_options"
]


def run_pytest(tests: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest with the project's configuration on a test file of its own (not the project's tests)."""
    config = ["-c", str(REPO / "pyproject.toml"), "--rootdir", str(tests.parent), "-p", "no:cacheprovider"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *config, "-q", str(tests), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_every_test_has_a_time_limit() -> None:
    assert PYTEST_CONFIG["timeout"] == 300


def test_a_test_over_its_time_limit_fails_alone(tmp_path: Path) -> None:
    tests = tmp_path / "test_hangs.py"
    tests.write_text(
        "import time\n\n"
        "import pytest\n\n\n"
        "@pytest.mark.timeout(1)\n"
        "def test_hangs():\n"
        "    time.sleep(60)\n\n\n"
        "def test_after():\n"
        "    pass\n",
        encoding="utf-8",
    )
    done = run_pytest(tests)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Timeout" in done.stdout and "1 failed, 1 passed" in done.stdout, done.stdout


def test_the_slow_marker_is_declared_and_a_run_can_leave_it_out(tmp_path: Path) -> None:
    assert any(marker.startswith("slow:") for marker in PYTEST_CONFIG["markers"])
    tests = tmp_path / "test_marked.py"
    tests.write_text(
        "import pytest\n\n\n@pytest.mark.slow\ndef test_slow():\n    pass\n\n\ndef test_quick():\n    pass\n",
        encoding="utf-8",
    )
    quick = run_pytest(tests, "--collect-only", "-m", "not slow and not local_model")
    assert "test_marked.py::test_quick" in quick.stdout and "test_slow" not in quick.stdout, quick.stdout
    slow = run_pytest(tests, "--collect-only", "-m", "slow and not local_model")
    assert "test_marked.py::test_slow" in slow.stdout and "test_quick" not in slow.stdout, slow.stdout
