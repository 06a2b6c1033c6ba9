"""The CI budget check (``python -m benchmarks --only 8 --check``) on a prompt directory of one's own."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.__main__ import exit_code
from benchmarks.common import Section
from benchmarks.prefix_cache import extraction_costs, hosted_budget_rows

from bub_semantic_memory.extraction._prompts import PromptLibrary
from tests.conftest import REPO


def promoting_for_hosted(root: Path, ref: str | None) -> PromptLibrary:
    """A copy of the bundled prompts whose only promotion is ``ref`` for hosted models."""
    shutil.copytree(REPO / "prompts", root)
    library = PromptLibrary(root)
    manifest = library.manifest()
    manifest.promoted = {}
    library.save_manifest(manifest)
    if ref is not None:
        library.promote(
            library.load(ref), model="m", model_class="hosted", scores={}, baseline=None, tolerance=None
        )
    return library


async def budget_check(library: PromptLibrary, prompt: str) -> int:
    """What ``--only 8 --check --prompts-dir`` decides: section 8's budget rows, then the exit code."""
    section = Section(8, "Prefix cache")
    section.rows += hosted_budget_rows(await extraction_costs(library, prompt))
    return exit_code([section], check=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("promoted", "expected"),
    [
        ("extract@3", 1),  # two calls a window, the schemas sent twice: about 10.7x the session
        ("extract@12", 0),  # one compact call a window: about 3.7x
        (None, 0),  # nothing promoted for hosted models: nothing runs for them unless named
    ],
)
async def test_the_budget_check_fails_a_prompt_directory_whose_hosted_promotion_is_over_budget(
    promoted: str | None, expected: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library = promoting_for_hosted(tmp_path / "prompts", promoted)
    assert await budget_check(library, promoted or "extract@12") == expected
    missed = capsys.readouterr().err
    assert ("missed: hosted class" in missed) == bool(expected)


@pytest.mark.slow
def test_the_budget_check_writes_its_results_into_a_directory_a_clean_checkout_lacks(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "budget.md"  # `make budget`'s --out; no reports/ in a fresh clone
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", "8", "--check", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_text(encoding="utf-8").startswith("# Benchmark results")
