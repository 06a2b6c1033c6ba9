"""The tests' layout: ``tests/`` mirrors ``src/bub_semantic_memory/`` (tests/README.md says the rule).

A test module sits in the folder of the subpackage it tests (``tests/memory/`` for
``memory/``, ``tests/evals/qa/`` for ``evals/qa/``), at the top of ``tests/`` when it tests a
module at the top of the package (``tests/test_models.py`` for ``_models.py``), or in one of
the cross-cutting folders tests/README.md lists. Every folder that holds a test module is a
package (an ``__init__.py``), so two ``test_edits.py`` in two folders are two modules.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

TESTS = REPO / "tests"
SOURCE = REPO / "src" / "bub_semantic_memory"

CROSS_CUTTING = {
    "project": "the project as a whole: architecture, public API, README, Makefile, docs",
    "reliability": "invariants across layers, counted (docs/reliability.md)",
}
"""Folders of tests that test no one subpackage; tests/README.md lists each."""


def subpackages(source: Path) -> set[Path]:
    """The package's subpackages, as paths relative to the package (``memory``, ``evals/qa``)."""
    return {init.parent.relative_to(source) for init in source.rglob("__init__.py") if init.parent != source}


def top_level_modules(source: Path) -> set[str]:
    """The modules at the top of the package by the name their tests take (``_models.py``: ``models``)."""
    return {path.stem.lstrip("_") for path in source.glob("*.py") if path.name != "__init__.py"}


def misplaced(tests: Path, source: Path, cross_cutting: set[str]) -> list[str]:
    """Each test module that breaks the mirror rule, with what is wrong, as ``path: reason``."""
    packages = subpackages(source)
    modules = top_level_modules(source)
    problems = []
    for path in sorted(tests.rglob("test_*.py")):
        relative = path.relative_to(tests)
        folder = relative.parent
        if folder == Path():
            if relative.stem.removeprefix("test_") not in modules:
                problems.append(f"{relative}: names no module at the top of the package")
        elif folder.parts[0] not in cross_cutting and folder not in packages:
            problems.append(f"{relative}: {folder} names no subpackage and is not a cross-cutting folder")
        for parent in [folder, *folder.parents][:-1]:
            if not (tests / parent / "__init__.py").is_file():
                problems.append(f"{relative}: {parent} has no __init__.py")
    return problems


def untested(tests: Path, source: Path) -> list[str]:
    """Each subpackage without a folder of tests."""
    return sorted(str(package) for package in subpackages(source) if not (tests / package).is_dir())


def test_every_test_module_sits_where_the_module_it_tests_is() -> None:
    assert misplaced(TESTS, SOURCE, set(CROSS_CUTTING)) == []


def test_every_subpackage_has_a_folder_of_tests() -> None:
    assert untested(TESTS, SOURCE) == []


def test_the_readme_of_tests_lists_every_cross_cutting_folder() -> None:
    readme = (TESTS / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^- `tests/([a-z_]+)/`", readme, flags=re.MULTILINE))
    assert listed == set(CROSS_CUTTING)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A package with a foundation module and a nested subpackage, and a mirrored tests folder."""
    source = tmp_path / "src" / "pkg"
    for module in [
        "__init__.py",
        "_models.py",
        "memory/__init__.py",
        "evals/__init__.py",
        "evals/qa/__init__.py",
    ]:
        (source / module).parent.mkdir(parents=True, exist_ok=True)
        (source / module).touch()
    tests = tmp_path / "tests"
    for module in [
        "__init__.py",
        "test_models.py",
        "memory/__init__.py",
        "memory/test_graph.py",
        "evals/__init__.py",
        "evals/qa/__init__.py",
        "evals/qa/test_run.py",
        "project/__init__.py",
        "project/test_readme.py",
        "helpers/__init__.py",
        "helpers/bub_env.py",
    ]:
        (tests / module).parent.mkdir(parents=True, exist_ok=True)
        (tests / module).touch()
    return tests, source


def test_a_mirrored_tree_breaks_no_rule(tree: tuple[Path, Path]) -> None:
    tests, source = tree
    assert misplaced(tests, source, {"project"}) == []
    assert untested(tests, source) == []


def test_a_test_module_in_a_folder_that_names_no_subpackage_is_reported(tree: tuple[Path, Path]) -> None:
    tests, source = tree
    (tests / "graph").mkdir()
    (tests / "graph" / "__init__.py").touch()
    (tests / "graph" / "test_fold.py").touch()
    (tests / "helpers" / "test_env.py").touch()
    (tests / "test_graph.py").touch()
    assert misplaced(tests, source, {"project"}) == [
        "graph/test_fold.py: graph names no subpackage and is not a cross-cutting folder",
        "helpers/test_env.py: helpers names no subpackage and is not a cross-cutting folder",
        "test_graph.py: names no module at the top of the package",
    ]


def test_a_folder_of_tests_without_init_and_a_subpackage_without_tests_are_reported(
    tree: tuple[Path, Path],
) -> None:
    tests, source = tree
    (tests / "evals" / "qa" / "__init__.py").unlink()
    (source / "tape").mkdir()
    (source / "tape" / "__init__.py").touch()
    assert misplaced(tests, source, {"project"}) == ["evals/qa/test_run.py: evals/qa has no __init__.py"]
    assert untested(tests, source) == ["tape"]
