from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bub_semantic_memory
from bub_semantic_memory import _errors as errors

TAPE_LINES = [
    {
        "id": 1,
        "kind": "message",
        "payload": {"role": "user", "content": "I'm Maya Lin and I live in Lisbon."},
    },
    {"id": 2, "kind": "message", "payload": {"role": "assistant", "content": "Noted."}},
]
ANSWER = {
    "entities": [
        {"name": "Maya Lin", "type": "person", "evidence": [1]},
        {"name": "Lisbon", "type": "location", "evidence": [1]},
    ],
    "relations": [{"source": "Maya Lin", "type": "lives_in", "target": "Lisbon", "evidence": [1]}],
}


async def test_the_documented_path_works_from_the_top_level_names_alone(tmp_path: Path) -> None:
    """Read a tape, extract, store, load, render: only names ``bub_semantic_memory`` exports."""
    from bub.store import InMemoryTapeStore

    import bub_semantic_memory as sm
    from bub_semantic_memory.testing import FakeOpenAIServer, tool_call_reply

    tape_file = tmp_path / "tape.jsonl"
    tape_file.write_text("".join(json.dumps(line) + "\n" for line in TAPE_LINES), encoding="utf-8")
    entries, report = sm.read_tape_file(tape_file)
    assert isinstance(report, sm.ReadReport) and len(entries) == 2
    with FakeOpenAIServer() as server:
        server.enqueue(tool_call_reply("Extraction", ANSWER))
        config = sm.ExtractorConfig(
            model="any-model", base_url=server.base_url, api_key="k", prompt="extract@1"
        )
        async with sm.Extractor(config) as extractor:
            [snapshot] = await extractor.extract(entries, tape="t")
    assert isinstance(snapshot, sm.Snapshot) and isinstance(snapshot.usage, sm.Usage)
    assert snapshot.prompt == sm.PromptLibrary().load("extract@1").ref
    store = InMemoryTapeStore()
    await sm.SnapshotStore(store).append(snapshot)
    memory = sm.MemoryService.from_setup(
        sm.MemorySetup(prompt="extract@1", policy=sm.MemoryPolicy(budget=200))
    )
    graph = await memory.load("t", store)
    assert isinstance(graph, sm.MemoryGraph)
    assert graph.lookup("maya lin")  # look-ups normalise names
    block = sm.render_memory(graph, query="Where does Maya live?")
    assert "Maya Lin lives in Lisbon" in block.text and block.tokens <= 200
    assert (
        memory.block("t", "Where does Maya live?")
        == sm.render_memory(graph, query="Where does Maya live?", budget=200).text
    )


def test_every_public_name_resolves_and_says_what_it_is() -> None:
    for name in bub_semantic_memory.__all__:
        value = getattr(bub_semantic_memory, name)
        assert value.__doc__, f"{name} has no docstring"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        bub_semantic_memory.Nope  # noqa: B018


def test_every_exported_exception_descends_from_the_root() -> None:
    exported = [getattr(errors, name) for name in errors.__all__]
    for exc in exported:
        assert issubclass(exc, errors.SemanticMemoryError), exc
    for name in bub_semantic_memory.__all__:
        value = getattr(bub_semantic_memory, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, errors.SemanticMemoryError), name


def test_importing_the_package_does_not_import_bub_or_touch_the_environment() -> None:
    code = "import sys, bub_semantic_memory; print('bub' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_core_modules_never_import_the_plugin_or_the_cli() -> None:
    code = (
        "import sys, bub_semantic_memory.extraction._extractor, bub_semantic_memory.stores._store, bub_semantic_memory.memory._render;"
        "print(sorted(m for m in sys.modules if m.startswith(('bub_semantic_memory.plugin', 'bub_semantic_memory.cli'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


SOURCE = Path(bub_semantic_memory.__file__).parent
LAYERS = sorted(p.parent.name for p in SOURCE.glob("*/__init__.py"))
_REFERENCE = re.compile(r"bub_semantic_memory\.(?P<layer>[a-z]+)\.(?P<name>[A-Za-z_]\w*)")


def _referenced_names() -> list[tuple[str, str, str]]:
    """``(file, layer, name)`` of every ``bub_semantic_memory.<layer>.<name>`` written in the source."""
    return [
        (str(path.relative_to(SOURCE)), match["layer"], match["name"])
        for path in sorted(SOURCE.rglob("*.py"))
        for match in _REFERENCE.finditer(path.read_text(encoding="utf-8"))
        if match["layer"] in LAYERS
    ]


def _is_module(layer: str, name: str) -> bool:
    return (SOURCE / layer / f"{name}.py").is_file() or (SOURCE / layer / name / "__init__.py").is_file()


@pytest.mark.parametrize("layer", LAYERS)
def test_every_name_a_layer_exports_resolves(layer: str) -> None:
    face = importlib.import_module(f"bub_semantic_memory.{layer}")
    assert len(face.__all__) == len(set(face.__all__)), f"a name is listed twice in {layer}.__all__"
    missing = [name for name in face.__all__ if not hasattr(face, name)]
    assert not missing, f"bub_semantic_memory.{layer}.__all__ names what it does not define: {missing}"


def test_every_name_the_source_refers_to_through_a_layer_is_exported_by_it() -> None:
    """A docstring's ``bub_semantic_memory.backends.BackendTraits`` must be importable as written."""
    references = _referenced_names()
    assert ("extraction/_config.py", "backends", "BackendTraits") in references  # the check sees them
    wrong = [
        f"{where}: bub_semantic_memory.{layer}.{name}"
        for where, layer, name in references
        if not _is_module(layer, name)
        and name not in importlib.import_module(f"bub_semantic_memory.{layer}").__all__
    ]
    assert not wrong, "referred to but neither a module nor exported:\n" + "\n".join(wrong)


PUBLIC_API = {
    # data
    "Entity", "Relation", "Fact", "Snapshot", "Usage", "PromptRef", "Edit", "Ontology", "RelationType",
    "entity_key", "normalize_name",
    # tapes
    "read_tape_file", "render_transcript", "Transcript", "ReadReport", "Redactor",
    # extraction
    "Extractor", "ExtractorConfig", "PromptLibrary", "PromptTemplate", "RetryPolicy",
    # memory
    "MemoryGraph", "MemoryBlock", "render_memory", "export_memory",
    # a tape's memory in a store, and of running agents
    "SnapshotStore", "session_tape_name", "validate_tape_name",
    "MemorySetup", "MemoryPolicy", "MemoryService", "MemoryEditor",
    # errors
    "SemanticMemoryError", "ConfigurationError", "TapeNameError", "TapeReadError", "PromptError",
    "PromptNotFoundError", "PromptFormatError", "PromptIntegrityError", "StoreError", "EditError",
    "ExtractionError", "TransportError", "ValidationExhaustedError", "OutputTruncatedError",
    "ReplayMissError", "EvalError", "FixtureError", "GateError",
}  # fmt: skip


def test_the_package_exports_exactly_its_public_api() -> None:
    """The root's face, pinned: a name added or dropped is a change of the public API, made here too."""
    assert set(bub_semantic_memory.__all__) == PUBLIC_API
    assert len(bub_semantic_memory.__all__) == len(PUBLIC_API)
