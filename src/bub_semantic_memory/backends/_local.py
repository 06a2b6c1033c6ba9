"""In-process extraction through llama.cpp (the optional ``local`` extra).

Which file a ``local`` spec means is decided in :mod:`.local_models` (``local`` is
Qwen2.5-Coder 1.5B Instruct, assembled from PyPI packages). This module runs it.

The backend answers the same chat-completion calls as a remote endpoint, so the
extractor's Instructor code path is unchanged. A forced tool call is answered by
decoding the tool's arguments under a grammar built from its JSON schema (output is
schema-valid by construction) *without* writing the schema into the prompt: a chat
template that renders tools would add thousands of tokens per request and ask for a
``<tool_call>`` wrapper that the grammar then forbids. The answer is returned as a tool
call, with ``finish_reason`` ``length`` when the output limit cut it, so a truncated
answer is recognised as such rather than re-asked as invalid JSON.

Speed on a CPU is prompt processing. llama.cpp keeps the KV state of the last prompt
and re-evaluates only what follows the longest common prefix; a RAM cache of states
(``llama_cpp.LlamaRAMCache``) extends that to several prompts, so the two steps of a
two-step prompt each find their own static prefix warm. Prompts should therefore put
their static part (instructions, ontology) first.

Reusing a prefix must not change the answer. llama.cpp evaluates a prompt in batches of
``n_batch`` tokens, and a token's numbers depend on the batch it was evaluated in (the
kernels add up in a different order); resuming at an arbitrary common prefix moved the
next-token logits by up to 0.33 against a cold evaluation of the same prompt, enough for
greedy decoding to pick other tokens, so an answer depended on which request came
before it. :class:`AlignedPrefixReuse` resumes only at a multiple of ``n_batch`` inside
what an earlier prompt evaluated, so every prompt token is evaluated in the batch a cold
evaluation would use, and the logits are bit-identical to the cold ones.

The Gemma base model has no chat template and drops system messages, so for it (only)
the system prompt is folded into the first user message.

A request runs in a worker thread of the backend's own, inside llama.cpp, where asyncio
cannot reach it: cancelling the awaiting task leaves the thread computing, and freeing the
model under it crashes the process (``bub run`` died with SIGSEGV at shutdown this way).
So a running request is stopped through llama.cpp's abort callback, which its CPU kernels
check between graph nodes, and the backend waits for its thread before it frees anything:
a cancelled request (a deadline, shutdown) ends within milliseconds of the current node,
and :meth:`LocalBackend.aclose` never frees a model a thread is still in.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import functools
import importlib
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from openai.types.chat import ChatCompletion

from bub_semantic_memory._errors import ConfigurationError
from bub_semantic_memory.backends._local_models import INSTALL_HINT
from bub_semantic_memory.backends._transport import BackendTraits

__all__ = ["INSTALL_HINT", "AlignedPrefixReuse", "LocalBackend"]

logger = logging.getLogger(__name__)
_silent_log: Any = None  # the ctypes callback must outlive the call that installs it
_STATE_CACHE_BYTES = 1 << 30
_STOP_WAIT_S = 60.0
"""How long closing waits for a stopped request's thread: a model load cannot be stopped."""


def _llama_cpp() -> Any:
    """The llama_cpp module, untyped (its exports differ between releases)."""
    return importlib.import_module("llama_cpp")


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


def _forced_function(tools: list[dict[str, Any]], tool_choice: Any) -> dict[str, Any] | None:
    """The function a request forces (Instructor's tools mode names exactly one), if any."""
    functions = [t["function"] for t in tools if t.get("type") == "function"]
    if isinstance(tool_choice, dict):
        name = tool_choice.get("function", {}).get("name")
        return next((f for f in functions if f.get("name") == name), None)
    return functions[0] if len(functions) == 1 else None


@functools.lru_cache(maxsize=256)
def _grammar(schema_json: str) -> Any:
    """A llama.cpp grammar for a JSON schema (built once per schema: it takes milliseconds)."""
    return _llama_cpp().LlamaGrammar.from_json_schema(schema_json, verbose=False)


def _as_tool_call(response: dict[str, Any], name: str) -> dict[str, Any]:
    """A plain completion whose text is the arguments, reshaped as the forced tool call."""
    choice = response["choices"][0]
    arguments = choice["message"].get("content") or ""
    finish = "length" if choice.get("finish_reason") == "length" else "tool_calls"
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{response.get('id', 'local')}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        ],
    }
    return {
        **response,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }


class AlignedPrefixReuse:
    """Mixed into ``llama_cpp.Llama``: prefix reuse that gives bit-identical answers.

    ``Llama.generate`` keeps the longest common prefix of the KV cache and evaluates the
    rest of the prompt from there. This mixin moves that starting point back to the last
    multiple of ``n_batch`` that lies inside the prompt part of the cache (tokens a
    prompt evaluation computed, never generated ones, which were evaluated one at a time),
    and evaluates from there. It costs fewer than ``n_batch`` re-evaluated tokens per
    request. The count of such tokens travels with saved states, so a state restored
    from the RAM cache is resumed under the same rule.
    """

    n_batch: int
    n_tokens: int
    _prompt_tokens_evaluated = 0  # leading cache positions a prompt evaluation computed
    _prompt_pending = False  # the next eval() is the prompt of a generate() call

    def generate(self, tokens: Any, *args: Any, **kwargs: Any) -> Any:
        self._prompt_pending = True
        return (yield from cast("Any", super()).generate(tokens, *args, **kwargs))

    def eval(self, tokens: Any) -> None:
        base = cast("Any", super())
        if not self._prompt_pending:
            base.eval(tokens)
            return
        self._prompt_pending = False
        start = self.n_tokens
        resume = min(start, self._prompt_tokens_evaluated) // self.n_batch * self.n_batch
        replay = [int(t) for t in base._input_ids[resume:start]]  # empty when nothing is re-evaluated
        self.n_tokens = resume
        base.eval([*replay, *tokens])
        self._prompt_tokens_evaluated = self.n_tokens

    def reset(self) -> None:
        cast("Any", super()).reset()
        self._prompt_tokens_evaluated = 0

    def save_state(self) -> Any:
        state = cast("Any", super()).save_state()
        state.prompt_tokens_evaluated = self._prompt_tokens_evaluated
        return state

    def load_state(self, state: Any) -> None:
        cast("Any", super()).load_state(state)
        self._prompt_tokens_evaluated = getattr(state, "prompt_tokens_evaluated", 0)


@functools.cache
def _reproducible_llama_class() -> type:
    """``llama_cpp.Llama`` with :class:`AlignedPrefixReuse` (built on first use: the import is optional)."""
    return type("ReproducibleLlama", (AlignedPrefixReuse, _llama_cpp().Llama), {})


class LocalBackend:
    """A llama.cpp model answering chat completions in this process (one request at a time).

    Args:
        model_path: a GGUF file.
        chat_format: llama.cpp chat format (``gemma`` for the base smoke-test model;
            ``None`` uses the template stored in the GGUF file).
        context_tokens: the context llama.cpp opens (window planning reads it).
        n_threads: CPU threads (default: all cores).
        n_batch: prompt tokens evaluated per batch. 64 was faster on 2 cores than 128, 256 or
            512 (31.3 against 27.2 prompt tokens/s at 512, 1,024 tokens of the 1.5B model) and
            bounds what aligned prefix reuse evaluates again to 63 tokens.
        repeat_penalty: 1.1 stops small models from looping until max_tokens.
        state_cache_bytes: RAM for KV states of earlier prompts (0: only the last prompt).
    """

    def __init__(
        self,
        model_path: Path,
        *,
        chat_format: str | None = None,
        context_tokens: int = 8192,
        n_threads: int | None = None,
        n_batch: int = 64,
        repeat_penalty: float = 1.1,
        state_cache_bytes: int = _STATE_CACHE_BYTES,
    ) -> None:
        self.model_path = model_path
        self.chat_format = chat_format
        self.context_tokens = context_tokens
        self.n_threads = n_threads or os.cpu_count() or 2
        self.n_batch = n_batch
        self.repeat_penalty = repeat_penalty
        self.state_cache_bytes = state_cache_bytes
        self._llm: Any = None
        self._lock = asyncio.Lock()
        self._stop = threading.Event()  # read by llama.cpp's abort callback, between graph nodes
        self._abort_callback: Any = None  # the ctypes callback must outlive the context it is set on
        self._worker: concurrent.futures.ThreadPoolExecutor | None = None
        self._in_flight: asyncio.Future[Any] | None = None
        self.stopped_requests = 0
        """Requests stopped inside llama.cpp (cancelled by a deadline or at shutdown)."""

    @property
    def traits(self) -> BackendTraits:
        """In process and grammar-constrained: tool arguments are decoded under a grammar built
        from the schema, so enums in it (turn numbers, candidate names) hold while generating.

        The fingerprint is what decides an answer besides the request: the model file (name and
        size), the batch size (prompt tokens are evaluated in batches of that size and the
        numbers depend on them) and the default repeat penalty.
        """
        try:
            size = self.model_path.stat().st_size
        except OSError:
            size = None
        return BackendTraits(
            in_process=True,
            grammar_constrained=True,
            context_tokens=self.context_tokens,
            fingerprint={
                "file": self.model_path.name,
                "bytes": size,
                "n_batch": self.n_batch,
                "repeat_penalty": self.repeat_penalty,
                "prefix_reuse": "aligned",
            },
        )

    @staticmethod
    def check_installed() -> None:
        """Raise :class:`ConfigurationError` when llama-cpp-python (the ``local`` extra) is missing."""
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise ConfigurationError(INSTALL_HINT) from exc

    def _load(self) -> Any:
        llama_cpp = _llama_cpp()

        if not logger.isEnabledFor(logging.DEBUG):
            # llama.cpp writes load-time notes straight to stderr; keep them for --verbose only.
            global _silent_log
            if _silent_log is None:
                _silent_log = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
            llama_cpp.llama_log_set(_silent_log, ctypes.c_void_p(0))
        llm = _reproducible_llama_class()(
            model_path=str(self.model_path),
            chat_format=self.chat_format,
            n_ctx=self.context_tokens,
            n_threads=self.n_threads,
            n_batch=self.n_batch,
            verbose=False,
        )
        if self.state_cache_bytes:
            llm.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=self.state_cache_bytes))
        self._abort_callback = llama_cpp.ggml_abort_callback(lambda _data: self._stop.is_set())
        llama_cpp.llama_set_abort_callback(llm._ctx.ctx, self._abort_callback, None)
        return llm

    async def create(self, **kwargs: Any) -> ChatCompletion:
        """Answer one chat-completion request (``model`` is ignored: the file decides).

        Cancelling the awaiting task stops the request inside llama.cpp and waits for its
        thread; the model then starts the next request from an empty context.
        """
        async with self._lock:
            if self._llm is None:
                self._llm = await self._in_worker(self._load)
            response = await self._in_worker(functools.partial(self._answer, kwargs))
        return cast("ChatCompletion", response)

    async def _in_worker(self, call: Callable[[], Any]) -> Any:
        """Run ``call`` in the model's thread; if the caller is cancelled, stop it and wait for it."""
        if self._worker is None:
            self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="llama-cpp")
        running = self._in_flight = asyncio.wrap_future(self._worker.submit(call))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            if not running.done():
                await self._stop_request(running, keep_stopped=False)
            raise
        finally:
            self._in_flight = None

    async def _stop_request(self, running: asyncio.Future[Any], *, keep_stopped: bool) -> bool:
        """Stop what the model's thread computes and wait until the thread is out of llama.cpp.

        Returns whether it is out (a model load cannot be stopped, only waited for).
        """
        self._stop.set()
        await asyncio.wait([running], timeout=_STOP_WAIT_S)
        self.stopped_requests += 1
        if not running.done():
            logger.warning("semantic memory: the local model did not stop within %.0f s", _STOP_WAIT_S)
            return False
        if not running.cancelled():
            running.exception()  # llama.cpp's "aborted" is the expected end of a stopped request
        if not keep_stopped:
            if self._llm is not None:
                self._llm.reset()  # what the stopped request left in the KV cache is not reused
            self._stop.clear()
        return True

    def _answer(self, kwargs: dict[str, Any]) -> Any:
        request = {k: v for k, v in kwargs.items() if k not in ("model", "timeout")}
        messages = list(request.pop("messages", []))
        request["messages"] = _fold_system_messages(messages) if self.chat_format == "gemma" else messages
        request.setdefault("repeat_penalty", self.repeat_penalty)
        request.setdefault("temperature", 0.0)
        tools, tool_choice = request.pop("tools", None), request.pop("tool_choice", None)
        function = _forced_function(tools, tool_choice) if tools else None
        if function is None:
            if tools:
                request.update(tools=tools, tool_choice=tool_choice)
            return self._llm.create_chat_completion_openai_v1(**request)
        # Sorted keys: the grammar writes an object's properties in the order it reads them, so
        # the model fills them in alphabetical order, not the schema's (a relation's ends before
        # its type, a reasoning note after "entities"). Kept on purpose: in the schema's order
        # (type first), extract@9's relation F1 on the quick fixtures fell from 0.439 to 0.300.
        schema = json.dumps(function.get("parameters") or {"type": "object"}, sort_keys=True)
        evaluated = self._prompt_tokens_evaluated()
        raw = self._llm.create_chat_completion(grammar=_grammar(schema), **request)
        self._count_reused(raw, evaluated)
        return ChatCompletion.model_validate(_as_tool_call(raw, str(function["name"])))

    def _prompt_tokens_evaluated(self) -> int | None:
        """llama.cpp's count of prompt tokens evaluated so far (None: a stand-in model without one)."""
        ctx = getattr(getattr(self._llm, "_ctx", None), "ctx", None)
        perf = getattr(_llama_cpp(), "llama_perf_context", None)
        return None if ctx is None or perf is None else int(perf(ctx).n_p_eval)

    def _count_reused(self, raw: dict[str, Any], evaluated_before: int | None) -> None:
        """Report the prompt tokens llama.cpp did not evaluate (their KV state was reused) as the
        response's ``cached_tokens``, as a provider reports its prefix cache: a request's cost on a
        CPU is the tokens evaluated, not the tokens sent."""
        evaluated_after = self._prompt_tokens_evaluated()
        usage = raw.get("usage")
        if evaluated_before is None or evaluated_after is None or not isinstance(usage, dict):
            return
        sent = int(usage.get("prompt_tokens") or 0)
        reused = max(0, sent - (evaluated_after - evaluated_before))
        usage["prompt_tokens_details"] = {"cached_tokens": reused}

    def reset(self) -> None:
        """Forget every evaluated prompt (the next request is processed cold; for benchmarks)."""
        if self._llm is not None:
            self._llm.reset()
            if self.state_cache_bytes:
                self._llm.set_cache(_llama_cpp().LlamaRAMCache(capacity_bytes=self.state_cache_bytes))

    async def aclose(self) -> None:
        """Stop a running request, wait for the model's thread, then free the model.

        Safe to call while a request is running (at shutdown): the model is freed only once
        no thread is inside llama.cpp; one that is still there is left to the process's exit
        rather than freed under it. A later request loads the model again.
        """
        future = self._in_flight
        out = True
        if future is not None and not future.done():
            out = await self._stop_request(future, keep_stopped=True)
        llm, self._llm = self._llm, None
        if out and llm is not None and hasattr(llm, "close"):
            llm.close()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=False)
        self._stop.clear()
