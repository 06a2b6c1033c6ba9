"""The package's layers, read from the source: imports flow one way.

Every ``import`` of a ``bub_semantic_memory`` module counts between layers, including imports
inside functions (deferred for start-up time) and under ``TYPE_CHECKING``: a deferred import
is still a dependency. Within the core, a cycle through imports that exist only for type
annotations is allowed (``backends`` names ``ExtractorConfig`` in a signature, ``config``
asks ``backends`` what a local spec is). docs/architecture.md draws the same layers.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = "bub_semantic_memory"
SOURCE = Path(__file__).resolve().parents[1] / "src" / PACKAGE

# Which layers each layer may import. Core is everything not named here.
ALLOWED: dict[str, set[str]] = {
    "core": {"core"},
    "package": {"core"},  # the top-level __init__ re-exports core names only
    "settings": {"core"},
    "evals": {"core", "evals"},
    "testing": {"core", "evals", "testing"},
    "cli": {"core", "evals", "settings", "cli"},
    # bub's hooks are the outermost adapter: the plugin registers the CLI with bub.
    "plugin": {"core", "settings", "cli"},
}


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(SOURCE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    return parts[1] if parts[1] in ALLOWED else "core"


def imported_modules(path: Path, *, type_only: bool = True) -> set[str]:
    """The package modules ``path`` imports (``from x import y`` resolved to ``x.y`` when that is a module).

    ``type_only=False`` leaves out the imports under ``if TYPE_CHECKING:``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = (
        set()
        if type_only
        else {id(node) for block in _type_checking_blocks(tree) for node in ast.walk(block)}
    )
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(PACKAGE))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            assert node.level == 0, f"{path}: relative import; the package uses absolute imports"
            found.add(node.module)
            found.update(
                f"{node.module}.{alias.name}" for alias in node.names if _is_module(node.module, alias.name)
            )
    return found


def _type_checking_blocks(tree: ast.Module) -> list[ast.If]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]


def _is_module(parent: str, name: str) -> bool:
    folder = SOURCE.joinpath(*parent.split(".")[1:])
    return (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists()


def import_graph(*, type_only: bool = True) -> dict[str, set[str]]:
    graph = {
        module_name(path): imported_modules(path, type_only=type_only)
        for path in sorted(SOURCE.rglob("*.py"))
    }
    return {module: targets - {module} for module, targets in graph.items()}


def test_the_source_tree_is_where_the_test_expects_it() -> None:
    graph = import_graph()
    assert {
        "bub_semantic_memory.extractor",
        "bub_semantic_memory.plugin",
        "bub_semantic_memory.cli._app",
    } <= set(graph)
    # Deferred imports are found too: the CLI imports the eval runner inside a command.
    assert "bub_semantic_memory.evals.runner" in {m for ms in graph.values() for m in ms}


def forbidden_imports(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} ({layer(module)}) imports {target} ({layer(target)})"
        for module, targets in graph.items()
        for target in sorted(targets)
        if layer(target) not in ALLOWED[layer(module)]
    ]


def test_imports_flow_one_way_between_layers() -> None:
    wrong = forbidden_imports(import_graph())
    assert not wrong, "\n".join(wrong)


def test_a_forbidden_import_is_reported() -> None:
    graph = {
        "bub_semantic_memory.graph": {"bub_semantic_memory.plugin", "bub_semantic_memory.models"},
        "bub_semantic_memory.evals.runner": {"bub_semantic_memory.cli._app"},
    }
    assert forbidden_imports(graph) == [
        "bub_semantic_memory.graph (core) imports bub_semantic_memory.plugin (plugin)",
        "bub_semantic_memory.evals.runner (evals) imports bub_semantic_memory.cli._app (cli)",
    ]


def test_core_modules_import_each_other_without_cycles() -> None:
    runtime = import_graph(type_only=False)
    graph = {m: {t for t in ts if layer(t) == "core"} for m, ts in runtime.items() if layer(m) == "core"}
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
    ],
)
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert _cycles(graph) == expected


def test_every_third_party_import_is_declared() -> None:
    """Nothing the package imports may arrive only as someone else's dependency."""
    import tomllib

    project = tomllib.loads((SOURCE.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {_import_name(req) for req in project["dependencies"]}
    declared |= {_import_name(req) for reqs in project["optional-dependencies"].values() for req in reqs}
    # Imported only inside the store readers, guarded, for bub's SQLAlchemy tape store.
    optional_store_imports = {"sqlalchemy", "bub_tapestore_sqlalchemy"}
    undeclared: dict[str, set[str]] = defaultdict(set)
    for path in SOURCE.rglob("*.py"):
        for top in _third_party_imports(path):
            if top not in declared and top not in optional_store_imports:
                undeclared[top].add(module_name(path))
    assert not undeclared, dict(undeclared)


# Distributions whose import name differs from their project name.
IMPORT_NAMES = {"pyyaml": "yaml", "llama_cpp_python": "llama_cpp"}


def _import_name(requirement: str) -> str:
    name = requirement.split(";")[0]
    for mark in "[<>=!~ ":
        name = name.split(mark)[0]
    name = name.strip().lower().replace("-", "_")
    return IMPORT_NAMES.get(name, name)


def _third_party_imports(path: Path) -> set[str]:
    import sys

    tops: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
    return {t for t in tops if t not in sys.stdlib_module_names and t not in {PACKAGE, "__future__"}}
