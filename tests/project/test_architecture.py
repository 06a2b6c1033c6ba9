"""The package's layers, read from the source: imports flow one way.

The layers are the package's folders (the private modules at the top of the package are
the foundation every layer shares). Every ``import`` of a ``bub_semantic_memory`` module
counts between layers, including imports inside functions (deferred for start-up time)
and under ``TYPE_CHECKING``: a deferred or type-only import is still a dependency, so no
two modules may import each other that way either. docs/architecture.md draws the same
layers.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = "bub_semantic_memory"
SOURCE = Path(__file__).resolve().parents[2] / "src" / PACKAGE

# What each layer may import besides itself, bottom to top. "foundation" is the package's
# private top-level modules (data model, ontology, errors, tokens, mentions); "package" is
# the top-level __init__, which re-exports the public API.
_BELOW: dict[str, set[str]] = {
    "foundation": set(),
    "tape": {"foundation"},
    "memory": {"foundation"},
    "backends": {"foundation"},
    "extraction": {"foundation", "tape", "memory", "backends"},
    "stores": {"foundation", "tape", "memory"},
    "agent": {"foundation", "tape", "memory", "backends", "extraction", "stores"},
    "package": {"foundation", "tape", "memory", "backends", "extraction", "stores", "agent"},
    # the eval harness measures what the agent layer does (the cost of the plugin's cadence)
    "evals": {"foundation", "tape", "memory", "backends", "extraction", "agent", "stores", "testing"},
    "testing": {"foundation"},
    "cli": {"foundation", "tape", "memory", "backends", "extraction", "stores", "agent", "evals"},
    # bub's hooks are the outermost adapter: the plugin registers the CLI with bub.
    "plugin": {"foundation", "tape", "memory", "backends", "extraction", "stores", "agent", "cli"},
}
ALLOWED: dict[str, set[str]] = {name: {name, *below} for name, below in _BELOW.items()}
CORE = {"foundation", "tape", "memory", "backends", "extraction", "stores", "agent"}


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(SOURCE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    if parts[1] not in ALLOWED:
        assert parts[1].startswith("_"), f"{module}: a top-level module is private or a layer's folder"
        return "foundation"
    return parts[1]


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
        "bub_semantic_memory.extraction._extractor",
        "bub_semantic_memory.plugin._hooks",
        "bub_semantic_memory.cli._app",
    } <= set(graph)
    # Deferred imports are found too: the CLI imports the extraction eval inside a command.
    assert "bub_semantic_memory.evals.extraction" in {m for ms in graph.values() for m in ms}


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
        "bub_semantic_memory.memory._graph": {
            "bub_semantic_memory.plugin._hooks",
            "bub_semantic_memory._models",
        },
        "bub_semantic_memory.evals.extraction._runner": {"bub_semantic_memory.cli._app"},
    }
    assert forbidden_imports(graph) == [
        "bub_semantic_memory.memory._graph (memory) imports bub_semantic_memory.plugin._hooks (plugin)",
        "bub_semantic_memory.evals.extraction._runner (evals) imports bub_semantic_memory.cli._app (cli)",
    ]


def test_no_modules_import_each_other_in_a_cycle() -> None:
    cycles = _cycles(import_graph(type_only=True))
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


def _source_trees() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(SOURCE.rglob("*.py"))}


def test_backend_abilities_are_declared_not_probed() -> None:
    """No ``getattr(<...backend...>, ...)``: what a backend can do is its declared ``traits``."""
    probes = [
        f"{path.relative_to(SOURCE)}:{node.lineno}"
        for path, tree in _source_trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and node.args
        and "backend" in ast.unparse(node.args[0])
    ]
    assert not probes, probes


def test_strategy_names_are_written_in_one_module() -> None:
    from bub_semantic_memory.extraction._strategies import STRATEGIES

    home = SOURCE / "extraction" / "_strategies.py"
    elsewhere = [
        f"{path.relative_to(SOURCE)}:{node.lineno} {node.value!r}"
        for path, tree in _source_trees().items()
        if path != home
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in STRATEGIES
    ]
    assert not elsewhere, elsewhere


def test_the_cli_uses_only_typers_public_api() -> None:
    """Neither click (typer vendors its own) nor a private typer module such as ``typer._click``."""
    private = [
        f"{path.relative_to(SOURCE)}:{line} {name}"
        for path, tree in _source_trees().items()
        for line, name in _imported_names(tree)
        if name.split(".")[0] == "click"
        or (name.split(".")[0] == "typer" and any(part.startswith("_") for part in name.split(".")[1:]))
    ]
    assert not private, private


def _imported_names(tree: ast.Module) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return found


# Who imports bub, and why (docs/architecture.md says the same): importing bub loads a .env
# file and its framework, so every other module works on plain tape files and paths.
BUB_IMPORTERS = {
    "stores": "its tape stores, entries and sidecars hold the memory",
    "agent": "the tape-store protocol, for types only",
    "plugin": "hooks, settings and tools",
    "bub_semantic_memory._home": "bub's home directory (packaged models, prompts written by an installed package)",
    "bub_semantic_memory.cli._common": "bub's file store for --tapes-dir",
    "bub_semantic_memory.evals.extraction._replay": "bub's in-memory tape store: a tape replayed as the plugin extracts it",
    "bub_semantic_memory.evals.qa._contexts": "bub's in-memory tape store: the QA contexts search a session's tape",
}


def _imports_bub(path: Path) -> bool:
    return any(
        name == "bub" or name.startswith("bub.")
        for _, name in _imported_names(ast.parse(path.read_text(encoding="utf-8")))
    )


def test_only_the_documented_modules_import_bub() -> None:
    importers = {module_name(path) for path in sorted(SOURCE.rglob("*.py")) if _imports_bub(path)}
    undocumented = sorted(m for m in importers if m not in BUB_IMPORTERS and layer(m) not in BUB_IMPORTERS)
    assert not undocumented, f"import bub without a reason in docs/architecture.md: {undocumented}"
    assert {m for m in BUB_IMPORTERS if m.startswith(PACKAGE)} <= importers, (
        "a documented importer no longer imports bub"
    )
    doc = (SOURCE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in BUB_IMPORTERS:
        shown = name.removeprefix(f"{PACKAGE}.").replace(".", "/") if name.startswith(PACKAGE) else name
        assert f"`{shown}`" in doc, f"docs/architecture.md does not name {shown} among bub's importers"


# The eval harness is a folder per product (dataset, importers, extraction, qa, reports): each
# subpackage's __init__.py is its face and says what it exports; every other module is private.
EVALS = SOURCE / "evals"


def test_every_evals_module_is_a_face_or_private() -> None:
    public = [
        str(path.relative_to(SOURCE))
        for path in sorted(EVALS.rglob("*.py"))
        if path.name != "__init__.py" and not path.name.startswith("_")
    ]
    assert not public, f"name these modules with a leading underscore, behind their package's face: {public}"


def test_every_evals_package_face_declares_all() -> None:
    faces = sorted(EVALS.rglob("__init__.py"))
    assert {path.parent.name for path in faces} >= {"evals", "extraction", "importers", "qa", "reports"}
    for face in faces:
        tree = ast.parse(face.read_text(encoding="utf-8"))
        declared = [
            node
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets)
        ]
        assert declared, f"{face.relative_to(SOURCE)} has no __all__"
        assert ast.get_docstring(tree), f"{face.relative_to(SOURCE)} does not say what it owns"


def test_every_evals_face_exports_what_it_lists() -> None:
    import importlib

    for face in sorted(EVALS.rglob("__init__.py")):
        module = importlib.import_module(module_name(face))
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert not missing, f"{module.__name__}.__all__ lists names it does not have: {missing}"


def test_evals_modules_import_each_other_by_their_private_paths() -> None:
    """A face imports the modules behind it; a private module never imports a face of evals (the
    faces import their modules eagerly, so a module importing a face could find it half built)."""
    faces = {module_name(path) for path in EVALS.rglob("__init__.py")}
    graph = import_graph()
    through_faces = [
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.startswith(f"{PACKAGE}.evals.") and module not in faces
        for target in sorted(targets & faces)
    ]
    assert not through_faces, through_faces


# -- faces: what a layer offers the others ---------------------------------------------------------

FACE_EXCEPTIONS: dict[str, str] = {}
"""``importer -> private module`` pairs allowed to bypass a layer's face, each with the reason (none today)."""


def private_cross_layer_imports() -> list[str]:
    """Imports of another layer's private module (``from bub_semantic_memory.memory._graph import ...``)."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        importer = module_name(path)
        if layer(importer) == "package":
            continue
        for target in imported_modules(path):
            parts = target.split(".")
            private = any(part.startswith("_") for part in parts[2:])
            other_layer = layer(target) not in (layer(importer), "foundation", "package")
            if private and other_layer and f"{importer} -> {target}" not in FACE_EXCEPTIONS:
                found.append(f"{importer} imports {target}")
    return sorted(set(found))


def test_a_layer_uses_another_only_through_its_face() -> None:
    bypassing = private_cross_layer_imports()
    assert not bypassing, "\n".join(bypassing)


def test_every_module_is_a_face_or_private() -> None:
    public = [
        path.relative_to(SOURCE).as_posix()
        for path in SOURCE.rglob("*.py")
        if path.name != "__init__.py" and not path.name.startswith("_")
    ]
    assert public == []


LAYER_FACES = sorted(name for name in _BELOW if (SOURCE / name / "__init__.py").exists())


@pytest.mark.parametrize("name", LAYER_FACES)
def test_each_layer_face_says_what_it_owns_and_exports_only_what_it_has(name: str) -> None:
    import importlib

    face = importlib.import_module(f"{PACKAGE}.{name}")
    assert face.__doc__, f"{name}/__init__.py has no docstring"
    exported = getattr(face, "__all__", None)
    assert exported, f"{name}/__init__.py has no __all__"
    assert len(exported) == len(set(exported)) and all(hasattr(face, n) for n in exported)


# -- docs/architecture.md names the modules there are -------------------------------------------

ARCHITECTURE = SOURCE.parents[1] / "docs" / "architecture.md"


def test_the_architecture_document_names_every_module_and_no_other() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    files = {p.stem for p in SOURCE.rglob("_*.py") if p.stem != "__init__"}
    named = set(re.findall(r"`(_[a-z][a-z0-9_]*)(?:\.py)?`", text)) | set(
        re.findall(r"\b(_[a-z][a-z0-9_]*)\.py\b", text)
    )
    assert sorted(files - named) == [], "modules the document does not name"
    assert sorted(named - files) == [], "names in the document that are no module"
    folders = {
        p.parent.relative_to(SOURCE).as_posix() for p in SOURCE.rglob("__init__.py") if p.parent != SOURCE
    }
    assert all(f"{folder}/" in text or f"`{folder.rsplit('/', 1)[-1]}`" in text for folder in folders)
