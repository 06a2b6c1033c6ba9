"""Which backend answers a model spec: the only module that reads one.

Model specs (``--model``, the plugin's ``model`` setting):

* ``local``: the capable default packaged model (``local:qwen2.5-coder-1.5b``);
* ``local:<name>``: a packaged model of :data:`~bub_semantic_memory.backends._local_models.REGISTRY`;
* ``local:/path/to/model.gguf`` (or ``local:~/...``, ``local:./...``): any GGUF file;
* anything else: a model at an OpenAI-compatible endpoint.

:func:`open_backend` turns a spec into a :class:`~bub_semantic_memory.backends._transport.ChatBackend`:
the in-process :class:`~bub_semantic_memory.backends._local.LocalBackend` (imported only then, since
it needs the ``local`` extra) or an :class:`~bub_semantic_memory.backends._transport.OpenAIBackend`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bub_semantic_memory._errors import ConfigurationError
from bub_semantic_memory.backends._local_models import DEFAULT_LOCAL_MODEL, PATH_CONTEXT_TOKENS, REGISTRY

if TYPE_CHECKING:
    from bub_semantic_memory.backends._transport import BackendTraits, ChatBackend

__all__ = ["LocalSpec", "declared_traits", "is_local_spec", "model_note", "open_backend", "parse_local_spec"]

_PREFIX = "local:"


@dataclass(frozen=True)
class LocalSpec:
    """A parsed ``local`` spec: a packaged model by name, or a GGUF file by path (exactly one)."""

    name: str | None = None
    path: Path | None = None


def is_local_spec(spec: str) -> bool:
    """Whether ``spec`` names an in-process model (``local`` or ``local:...``)."""
    return spec == "local" or spec.startswith(_PREFIX)


def parse_local_spec(spec: str) -> LocalSpec | None:
    """The local model ``spec`` selects, or None for a hosted model.

    Raises:
        ConfigurationError: ``local:<name>`` with a name that is neither packaged nor a path.
    """
    if not is_local_spec(spec):
        return None
    if spec == "local":
        return LocalSpec(name=DEFAULT_LOCAL_MODEL)
    rest = spec.removeprefix(_PREFIX)
    if rest in REGISTRY:
        return LocalSpec(name=rest)
    if rest.endswith(".gguf") or rest.startswith(("/", "~", ".")):
        return LocalSpec(path=Path(rest).expanduser())
    known = ", ".join(REGISTRY)
    raise ConfigurationError(
        f"unknown local model {rest!r}: use one of {known}, or local:/path/to/model.gguf"
    )


def model_note(spec: str) -> str:
    """What a packaged model is, for reports and logs (empty for anything else).

    A hosted model named like a packaged one is that model behind llama.cpp's HTTP server
    (``semantic-memory serve``): the hosted code path, measured as a proxy for hosted models.
    """
    if spec in REGISTRY:
        return (
            f"{spec} served over HTTP by llama.cpp's OpenAI-compatible server (tools mode): the hosted "
            "code path, a proxy for hosted models, which may score otherwise"
        )
    try:
        local = parse_local_spec(spec)
    except ConfigurationError:
        return ""
    if local is None or local.name is None:
        return ""
    purpose = REGISTRY[local.name].purpose
    return f"{local.name} ({purpose}); local CPU model, hosted models may score otherwise"


def declared_traits(spec: str) -> BackendTraits:
    """What the backend ``spec`` opens declares about itself, known without opening it (no model file
    is assembled or loaded, no client is made): a model in this process decodes under a grammar
    with a known context; anything else is an endpoint (:data:`~._transport.HOSTED`).

    The prompt version a memory uses is chosen from these traits (the version promoted for their
    model class) before any extractor exists; an opened backend declares the same class.

    Raises:
        ConfigurationError: ``local:<name>`` with a name that is neither packaged nor a path.
    """
    from bub_semantic_memory.backends._transport import HOSTED, BackendTraits

    local = parse_local_spec(spec)
    if local is None:
        return HOSTED
    context = REGISTRY[local.name].context_tokens if local.name is not None else PATH_CONTEXT_TOKENS
    return BackendTraits(in_process=True, grammar_constrained=True, context_tokens=context)


def open_backend(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    http_client: Any = None,
    models_dir: Path | None = None,
) -> ChatBackend:
    """The backend that answers ``model`` (a model spec).

    Args:
        model: a local spec (``local``, ``local:<name|path>``) or a model at an endpoint.
        base_url, api_key: the OpenAI-compatible endpoint (hosted models only).
        http_client: an ``httpx.AsyncClient`` for a hosted endpoint (tests, proxies).
        models_dir: where packaged local models are assembled (default ``<bub home>/models``).

    Raises:
        ConfigurationError: a local spec without the ``local`` extra, or naming no usable file.
    """
    local = parse_local_spec(model)
    if local is None:
        from bub_semantic_memory.backends._transport import OpenAIBackend

        return OpenAIBackend(base_url=base_url, api_key=api_key, http_client=http_client)
    return open_local_backend(local, models_dir=models_dir)


def open_local_backend(local: LocalSpec, *, models_dir: Path | None = None) -> ChatBackend:
    """The in-process backend of a parsed local spec; the model file loads on first use."""
    from bub_semantic_memory.backends._local import LocalBackend
    from bub_semantic_memory.backends._local_models import resolve_local_file

    if models_dir is None:
        from bub_semantic_memory._home import models_dir as default_models_dir

        models_dir = default_models_dir()
    LocalBackend.check_installed()
    resolved = resolve_local_file(local.name, local.path, models_dir=models_dir)
    return LocalBackend(
        resolved.path, chat_format=resolved.chat_format, context_tokens=resolved.context_tokens
    )
