"""A stand-in for llama-cpp-python whose model computes in a native-like way, for shutdown tests.

What matters about the real library at shutdown: a request computes in a worker thread that
asyncio cannot cancel, it stops only when llama.cpp's abort callback says so (checked between
graph nodes), and freeing the model while that thread computes kills the process. This module
keeps those three properties and nothing else:

* a request "computes" in steps of ``_STEP_S`` seconds, asking the abort callback after each
  step, until it has computed for ``FAKE_LLAMA_SECONDS`` (default: until aborted); an aborted
  request raises ``RuntimeError("llama_decode returned 2")`` as the real ``decode`` does;
* ``Llama.close()`` while a request computes calls ``os.abort()`` (the real library crashes
  there with SIGSEGV);
* an answer is the smallest JSON instance of the forced tool's schema (no entities, no
  relations), which the extractor accepts, so an extraction that is let finish stores a snapshot.

``FAKE_LLAMA_SLOW_ONCE=<path>``: the first request of the first process to get there computes
until aborted and then creates ``<path>``; every later request (a catch-up process) answers
at once. ``FAKE_LLAMA_LOG=<path>``: one line per event (``start``, ``aborted``, ``answered``,
``closed``), with the process id.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

_STEP_S = 0.01
on_free_while_computing = os.abort
"""What freeing a computing model does: the real library crashes (in-process tests record it)."""

ggml_abort_callback = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p)
llama_log_callback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


def llama_log_set(callback: Any, user_data: Any) -> None:
    del callback, user_data


def llama_set_abort_callback(ctx: Any, callback: Any, data: Any) -> None:
    ctx.abort_callback = callback


def _log(event: str) -> None:
    path = os.environ.get("FAKE_LLAMA_LOG")
    if path:
        with Path(path).open("a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {event}\n")


class LlamaRAMCache:
    def __init__(self, capacity_bytes: int = 0) -> None:
        self.capacity_bytes = capacity_bytes


class LlamaGrammar:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema

    @classmethod
    def from_json_schema(cls, schema_json: str, verbose: bool = False) -> LlamaGrammar:
        return cls(json.loads(schema_json))


class _Context:
    def __init__(self) -> None:
        self.ctx = self
        self.abort_callback: Any = None


def _smallest(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """The smallest instance of ``schema`` (the JSON a model decoding under its grammar could stop at)."""
    if "$ref" in schema:
        return _smallest(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return _smallest(schema[key][0], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: _smallest(properties[name], defs) for name in schema.get("required", [])}
    if kind == "array":
        return [_smallest(schema.get("items", {}), defs) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * schema.get("minLength", 0)
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


class Llama:
    def __init__(self, model_path: str, **kwargs: Any) -> None:
        self.model_path = model_path
        self._ctx = _Context()
        self._computing = threading.Event()
        self._closed = False

    def set_cache(self, cache: Any) -> None:
        self.cache = cache

    def reset(self) -> None:
        pass

    def _compute(self) -> None:
        """Compute until done or aborted, as a request's decode calls would."""
        seconds = float(os.environ.get("FAKE_LLAMA_SECONDS", "inf"))
        flag = os.environ.get("FAKE_LLAMA_SLOW_ONCE")
        if flag:
            seconds = 0.0 if Path(flag).exists() else float("inf")
        self._computing.set()
        _log("start")
        try:
            started = time.monotonic()
            while time.monotonic() - started < seconds:
                time.sleep(_STEP_S)
                callback = self._ctx.abort_callback
                if callback is not None and callback(None):
                    _log("aborted")
                    if flag:
                        Path(flag).touch()
                    raise RuntimeError("llama_decode returned 2")
        finally:
            self._computing.clear()

    def create_chat_completion(
        self, *, grammar: LlamaGrammar | None = None, **request: Any
    ) -> dict[str, Any]:
        self._compute()
        schema: dict[str, Any] = grammar.schema if grammar is not None else {"type": "object"}
        content = json.dumps(_smallest(schema, dict(schema.get("$defs", {}))))
        _log("answered")
        return {
            "id": "fake",
            "object": "chat.completion",
            "created": 0,
            "model": self.model_path,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }

    def create_chat_completion_openai_v1(self, **request: Any) -> dict[str, Any]:
        return self.create_chat_completion(**request)

    def close(self) -> None:
        if self._computing.is_set():
            _log("freed while computing")
            on_free_while_computing()  # the real library dies here with SIGSEGV
        self._closed = True
        _log("closed")
