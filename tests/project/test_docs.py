"""Every path under ``tests/`` that the documentation names exists (the tests move with the code).

The documentation is every Markdown file of the repository but the CHANGELOG (which says
where things were) and the committed eval reports (written by the harness).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import REPO

TESTS_PATH = re.compile(r"(?<![\w/.-])tests/[\w./-]*")


def documents() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    return [
        REPO / name
        for name in listed
        if name != "CHANGELOG.md" and not name.startswith(("evals/reports/", "prompts/"))
    ]


def named_test_paths(text: str) -> set[str]:
    """The paths under ``tests/`` named in ``text``, without the punctuation that ends a sentence."""
    return {match.rstrip(".") for match in TESTS_PATH.findall(text)}


def missing_paths(root: Path, doc: Path) -> list[str]:
    text = doc.read_text(encoding="utf-8")
    return sorted(path for path in named_test_paths(text) if not (root / path).exists())


def test_the_documents_include_the_readme_and_the_docs_folder() -> None:
    names = {path.relative_to(REPO).as_posix() for path in documents()}
    assert {"README.md", "docs/architecture.md", "tests/README.md"} <= names


def test_every_tests_path_the_documentation_names_exists() -> None:
    missing = {doc.relative_to(REPO).as_posix(): missing_paths(REPO, doc) for doc in documents()}
    assert {doc: paths for doc, paths in missing.items() if paths} == {}


def test_a_moved_test_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "tests" / "memory").mkdir(parents=True)
    (tmp_path / "tests" / "memory" / "test_graph.py").touch()
    doc = tmp_path / "README.md"
    doc.write_text(
        "`tests/memory/test_graph.py` folds; tests/test_graph.py did.\n"
        "See tests/memory/. Not a path: src/tests/x.py or `mytests/y.py`.\n",
        encoding="utf-8",
    )
    assert named_test_paths(doc.read_text(encoding="utf-8")) == {
        "tests/memory/test_graph.py",
        "tests/test_graph.py",
        "tests/memory/",
    }
    assert missing_paths(tmp_path, doc) == ["tests/test_graph.py"]
