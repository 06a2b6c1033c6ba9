from __future__ import annotations

import subprocess
import sys

import bub_semantic_memory
from bub_semantic_memory import errors


def test_the_public_names_are_pinned() -> None:
    assert sorted(bub_semantic_memory.__all__) == sorted(
        [
            "ConfigurationError",
            "Entity",
            "EvalError",
            "ExtractionError",
            "Extractor",
            "FixtureError",
            "GateError",
            "MemoryBlock",
            "MemoryGraph",
            "Ontology",
            "OutputTruncatedError",
            "PromptError",
            "PromptFormatError",
            "PromptIntegrityError",
            "PromptLibrary",
            "PromptNotFoundError",
            "PromptRef",
            "PromptTemplate",
            "ReadReport",
            "Redactor",
            "Relation",
            "RelationType",
            "ReplayMissError",
            "RetryPolicy",
            "SemanticMemoryError",
            "Snapshot",
            "SnapshotStore",
            "StoreError",
            "TapeNameError",
            "TapeReadError",
            "Transcript",
            "TransportError",
            "Usage",
            "ValidationExhaustedError",
            "entity_key",
            "normalize_name",
            "read_tape_file",
            "render_memory",
            "render_transcript",
            "session_tape_name",
            "validate_tape_name",
        ]
    )
    for name in bub_semantic_memory.__all__:
        assert getattr(bub_semantic_memory, name) is not None


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
        "import sys, bub_semantic_memory.extractor, bub_semantic_memory.store, bub_semantic_memory.render;"
        "print(sorted(m for m in sys.modules if m.startswith(('bub_semantic_memory.plugin', 'bub_semantic_memory.cli'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
