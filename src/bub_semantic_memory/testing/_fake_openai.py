"""In-process fake of an OpenAI-compatible chat completions server, for tests.

This module owns the test double that stands in for a real LLM endpoint: a stdlib
:class:`http.server.ThreadingHTTPServer` bound to ``127.0.0.1`` on an ephemeral port and served
from a daemon thread, so that sync and async clients (``openai``, ``instructor``, bare ``httpx``)
talk to it over real sockets. Tests script the answers to ``POST /v1/chat/completions`` with
:class:`Reply` values (successful completions, tool calls, SSE streams, HTTP errors, connection
resets, delays) and inspect every request the server received as a :class:`RecordedRequest`.

Importing this module has no side effects; a server only listens between :meth:`FakeOpenAIServer.start`
and :meth:`FakeOpenAIServer.stop` (or inside ``with FakeOpenAIServer() as server:``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Final, Self, cast
from urllib.parse import urlsplit

__all__ = [
    "CHAT_COMPLETIONS_PATH",
    "DEFAULT_USAGE",
    "MODELS_PATH",
    "CompletionReply",
    "DelayReply",
    "FakeOpenAIServer",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "ResetReply",
    "Responder",
    "ToolCall",
    "closed_port_url",
    "delay_reply",
    "empty_choices_reply",
    "json_content_reply",
    "length_reply",
    "raw_reply",
    "refusal_reply",
    "reset_reply",
    "status_reply",
    "text_reply",
    "tool_call_reply",
]

CHAT_COMPLETIONS_PATH: Final = "/v1/chat/completions"
"""Path whose POST requests are answered from the script (or the responder)."""

MODELS_PATH: Final = "/v1/models"
"""Path that lists the fake models on GET."""

DEFAULT_USAGE: Final[tuple[int, int]] = (100, 20)
"""Default ``(prompt_tokens, completion_tokens)`` reported by completion replies."""

_DEFAULT_MODEL: Final = "fake-model"
_STREAM_PIECES: Final = 3
_JOIN_TIMEOUT: Final = 5.0


# --------------------------------------------------------------------------------------------------
# Recorded requests
# --------------------------------------------------------------------------------------------------


_TRANSCRIPT = re.compile(r"<transcript>\n?(.*?)</transcript>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One HTTP request as the fake server received it.

    ``headers`` has lower-cased names (repeated headers are joined with ``", "``); ``body`` is the
    parsed JSON body, or ``None`` when the body is empty or not JSON; ``raw`` is the body bytes as
    received; ``received_at`` is a :func:`time.monotonic` timestamp; ``path`` excludes the query
    string, which is kept in ``query``.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    received_at: float
    query: str = ""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's ``messages`` list (empty when absent or the body is not a JSON object)."""
        if isinstance(self.body, dict):
            messages = self.body.get("messages")
            if isinstance(messages, list):
                return cast(list[dict[str, Any]], messages)
        return []

    @property
    def model(self) -> str | None:
        """The request's ``model`` field, or ``None``."""
        if isinstance(self.body, dict):
            model = self.body.get("model")
            if isinstance(model, str):
                return model
        return None

    @property
    def stream(self) -> bool:
        """Whether the request asked for a server-sent-events stream (``"stream": true``)."""
        return isinstance(self.body, dict) and self.body.get("stream") is True

    @property
    def include_usage(self) -> bool:
        """Whether a streaming request asked for a final usage chunk (``stream_options.include_usage``)."""
        if not isinstance(self.body, dict):
            return False
        options = self.body.get("stream_options")
        return isinstance(options, dict) and options.get("include_usage") is True

    def transcript(self) -> str | None:
        """The text inside the ``<transcript>`` block of the first user message that has one.

        ``None`` when no user message carries a transcript (not an extraction request).
        """
        for message in self.messages:
            if message.get("role") == "user":
                match = _TRANSCRIPT.search(str(message.get("content") or ""))
                if match:
                    return match.group(1)
        return None

    def transcript_entry_ids(self) -> list[int]:
        """The tape entry ids of the transcript's numbered lines (``[12] user: ...``), in order."""
        lines = (self.transcript() or "").splitlines()
        return [int(line[1 : line.index("]")]) for line in lines if line.startswith("[") and "]" in line]

    def tool_parameters(self, name: str | None = None) -> dict[str, Any] | None:
        """The JSON schema ``parameters`` of the tool called ``name`` (default: the forced one)."""
        wanted = name if name is not None else self.tool_schema_name()
        tools = self.body.get("tools", []) if isinstance(self.body, dict) else []
        for tool in tools if isinstance(tools, list) else ():
            function = tool.get("function", {}) if isinstance(tool, dict) else {}
            parameters = function.get("parameters") if isinstance(function, dict) else None
            if function.get("name") == wanted and isinstance(parameters, dict):
                return cast(dict[str, Any], parameters)
        return None

    def starts_window(self) -> bool:
        """Whether this is the first extraction request of a window (count these to count windows):
        a forced tool call that is neither a two-step prompt's ``Relations`` call nor a re-ask
        (which ends with the ``tool`` message carrying the validation error)."""
        last = self.messages[-1] if self.messages else {}
        return self.tool_schema_name() not in (None, "Relations") and last.get("role") != "tool"

    def tool_schema_name(self) -> str | None:
        """The function name forced by ``tool_choice`` (``{"type": "function", "function": {"name": ...}}``).

        Returns ``None`` when there is no ``tool_choice`` or it does not name a function
        (``"auto"``, ``"required"``, ...).
        """
        if not isinstance(self.body, dict):
            return None
        choice = self.body.get("tool_choice")
        if not isinstance(choice, dict):
            return None
        function = choice.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if isinstance(name, str):
                return name
        name = choice.get("name")  # Responses-API style {"type": "function", "name": ...}
        return name if isinstance(name, str) else None


# --------------------------------------------------------------------------------------------------
# Replies
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reply:
    """Base class of every scripted answer; build instances with the ``*_reply`` functions."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call in an assistant message; ``arguments`` is sent verbatim."""

    name: str
    arguments: str
    id: str = "call_1"


@dataclass(frozen=True, slots=True)
class CompletionReply(Reply):
    """A successful chat completion, sent as JSON or, for ``"stream": true`` requests, as SSE chunks.

    ``model=None`` echoes the request's model. ``empty_choices`` sends ``"choices": []``.
    ``usage`` is ``(prompt_tokens, completion_tokens)`` or ``None`` to omit it;
    ``cached_tokens`` adds ``usage.prompt_tokens_details.cached_tokens`` as providers with a
    prefix cache report it.
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    usage: tuple[int, int] | None = DEFAULT_USAGE
    empty_choices: bool = False
    model: str | None = None
    cached_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class RawReply(Reply):
    """An HTTP response sent exactly as given (status, content type, extra headers, body bytes)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ResetReply(Reply):
    """Status line and headers promising ``declared_length`` bytes, ``partial_body``, then a TCP RST."""

    partial_body: bytes = b'{"id": "chatcmpl-fake", "object": "chat.completion", "choi'
    declared_length: int = 4096
    status: int = 200


@dataclass(frozen=True, slots=True)
class DelayReply(Reply):
    """Wait ``seconds`` (without blocking other requests), then answer with ``then``."""

    seconds: float
    then: Reply


type Responder = Callable[[RecordedRequest], Reply]
"""Computes a reply for a chat completions request when the script is empty."""


def _dump(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False)


def tool_call_reply(
    name: str,
    arguments: Mapping[str, Any] | str,
    *,
    usage: tuple[int, int] | None = DEFAULT_USAGE,
    finish_reason: str = "tool_calls",
    call_id: str = "call_1",
) -> CompletionReply:
    """An assistant message that calls function ``name``.

    A mapping is serialised to JSON; a string is sent verbatim (so it may be invalid JSON).
    """
    args = arguments if isinstance(arguments, str) else _dump(dict(arguments))
    return CompletionReply(
        content=None,
        tool_calls=(ToolCall(name=name, arguments=args, id=call_id),),
        finish_reason=finish_reason,
        usage=usage,
    )


def text_reply(
    text: str, *, usage: tuple[int, int] | None = DEFAULT_USAGE, finish_reason: str = "stop"
) -> CompletionReply:
    """An assistant message whose content is ``text`` (streamed in a few deltas when asked to)."""
    return CompletionReply(content=text, usage=usage, finish_reason=finish_reason)


def json_content_reply(
    obj: object, *, usage: tuple[int, int] | None = DEFAULT_USAGE, finish_reason: str = "stop"
) -> CompletionReply:
    """An assistant message whose content is the JSON text of ``obj`` (JSON / JSON_SCHEMA / MD_JSON modes)."""
    return CompletionReply(content=_dump(obj), usage=usage, finish_reason=finish_reason)


def refusal_reply(text: str, *, usage: tuple[int, int] | None = DEFAULT_USAGE) -> CompletionReply:
    """A plain-text assistant answer with no tool call (a model declining to call the tool)."""
    return CompletionReply(content=text, usage=usage, finish_reason="stop")


def length_reply(
    partial_arguments: str, name: str, *, usage: tuple[int, int] | None = DEFAULT_USAGE
) -> CompletionReply:
    """A tool call cut off by the token limit: truncated ``arguments`` and ``finish_reason="length"``."""
    return tool_call_reply(name, partial_arguments, usage=usage, finish_reason="length")


def empty_choices_reply(*, usage: tuple[int, int] | None = DEFAULT_USAGE) -> CompletionReply:
    """A well-formed completion with ``"choices": []``."""
    return CompletionReply(empty_choices=True, usage=usage)


def _error_body(status: int, message: str | None = None) -> bytes:
    kind, code = {
        400: ("invalid_request_error", "bad_request"),
        401: ("invalid_request_error", "invalid_api_key"),
        403: ("invalid_request_error", "forbidden"),
        404: ("invalid_request_error", "not_found"),
        429: ("requests", "rate_limit_exceeded"),
    }.get(status, ("server_error", "server_error"))
    text = message if message is not None else f"fake-openai: simulated HTTP {status} error"
    return _dump({"error": {"message": text, "type": kind, "param": None, "code": code}}).encode()


def status_reply(
    code: int,
    *,
    body: bytes | str | Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> RawReply:
    """An HTTP error such as 429 (pass ``headers={"Retry-After": "1"}``), 500, 502 or 503.

    ``body`` defaults to an OpenAI-style ``{"error": {...}}`` JSON document; a mapping is serialised
    to JSON, a string is UTF-8 encoded.
    """
    if body is None:
        payload = _error_body(code)
    elif isinstance(body, bytes):
        payload = body
    elif isinstance(body, str):
        payload = body.encode()
    else:
        payload = _dump(dict(body)).encode()
    return RawReply(body=payload, status=code, headers=tuple((headers or {}).items()))


def raw_reply(body: bytes, *, status: int = 200, content_type: str = "application/json") -> RawReply:
    """A response with exactly ``body`` (e.g. bytes that are not JSON despite the content type)."""
    return RawReply(body=body, status=status, content_type=content_type)


def reset_reply(*, partial_body: bytes | None = None, declared_length: int = 4096) -> ResetReply:
    """Headers promising ``declared_length`` bytes, part of a body, then an abrupt close (RST)."""
    if partial_body is None:
        return ResetReply(declared_length=declared_length)
    return ResetReply(partial_body=partial_body, declared_length=declared_length)


def delay_reply(seconds: float, then: Reply) -> DelayReply:
    """Sleep ``seconds`` before answering with ``then`` (for client read timeouts)."""
    if seconds < 0:
        raise ValueError("seconds must be >= 0")
    return DelayReply(seconds=seconds, then=then)


def closed_port_url() -> str:
    """A ``http://127.0.0.1:<port>/v1`` base URL with nothing listening (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# --------------------------------------------------------------------------------------------------
# Rendering completions
# --------------------------------------------------------------------------------------------------


def _usage(usage: tuple[int, int], cached_tokens: int | None = None) -> dict[str, Any]:
    prompt, completion = usage
    document: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached_tokens is not None:
        document["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return document


def _split(text: str, pieces: int = _STREAM_PIECES) -> list[str]:
    """Split ``text`` into at most ``pieces`` non-empty consecutive fragments."""
    if not text:
        return []
    size = -(-len(text) // pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _message(reply: CompletionReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return message


def _completion(reply: CompletionReply, completion_id: str, model: str) -> dict[str, Any]:
    choices = (
        []
        if reply.empty_choices
        else [
            {"index": 0, "message": _message(reply), "logprobs": None, "finish_reason": reply.finish_reason}
        ]
    )
    document: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
    }
    if reply.usage is not None:
        document["usage"] = _usage(reply.usage, reply.cached_tokens)
    return document


def _deltas(reply: CompletionReply) -> Iterator[dict[str, Any]]:
    """The ``delta`` objects of a streamed completion, before the finishing chunk."""
    if reply.content is not None or not reply.tool_calls:
        yield {"role": "assistant", "content": ""}
        for piece in _split(reply.content or ""):
            yield {"content": piece}
    for index, call in enumerate(reply.tool_calls):
        head: dict[str, Any] = {
            "tool_calls": [
                {
                    "index": index,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
            ]
        }
        if index == 0 and reply.content is None:
            head = {"role": "assistant", "content": None, **head}
        yield head
        for fragment in _split(call.arguments):
            yield {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}


def _chunks(reply: CompletionReply, completion_id: str, model: str, include_usage: bool) -> Iterator[str]:
    """The ``data:`` payloads (JSON text) of a streamed completion, ``[DONE]`` excluded."""
    created = int(time.time())

    def chunk(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> str:
        document: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
        }
        if include_usage:
            document["usage"] = usage
        return _dump(document)

    if reply.empty_choices:
        yield chunk([])
    else:
        for delta in _deltas(reply):
            yield chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}])
        yield chunk([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": reply.finish_reason}])
    if include_usage and reply.usage is not None:
        yield chunk([], _usage(reply.usage, reply.cached_tokens))


# --------------------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------------------


class _Aborted(Exception):
    """Raised inside a handler to drop the connection without answering (server stopping)."""


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that tracks its connections and threads so ``stop`` can end them."""

    daemon_threads = True
    block_on_close = False  # FakeOpenAIServer.stop joins the handler threads itself, with a timeout
    request_queue_size = 128

    def __init__(self, owner: FakeOpenAIServer, address: tuple[str, int]) -> None:
        self.owner = owner
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._aborted: set[socket.socket] = set()
        self._handler_threads: set[threading.Thread] = set()
        self._counter = itertools.count(1)
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        conn = cast(socket.socket, request)
        thread = threading.Thread(
            target=self._serve_connection,
            args=(conn, client_address),
            name=f"fake-openai-conn-{next(self._counter)}",
            daemon=True,
        )
        with self._lock:
            self._connections.add(conn)
            self._handler_threads.add(thread)
        thread.start()

    def _serve_connection(self, conn: socket.socket, client_address: Any) -> None:
        try:
            self.process_request_thread(conn, client_address)
        finally:
            with self._lock:
                self._handler_threads.discard(threading.current_thread())

    def abort_connection(self, conn: socket.socket) -> None:
        """Make the coming close of ``conn`` send a RST instead of a FIN."""
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with self._lock:
            self._aborted.add(conn)

    def shutdown_request(self, request: Any) -> None:
        conn = cast(socket.socket, request)
        with self._lock:
            self._connections.discard(conn)
            aborted = conn in self._aborted
            self._aborted.discard(conn)
        if not aborted:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_WR)
        self.close_request(conn)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exception()
        if error is None or isinstance(error, OSError | _Aborted):
            return  # the peer went away (timeouts, resets, server stopping): nothing to report
        self.owner._record_error(error)

    def close_connections(self) -> list[threading.Thread]:
        """Shut down every open connection (waking blocked readers); return the live handler threads."""
        with self._lock:
            connections = list(self._connections)
            threads = list(self._handler_threads)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        return threads


class _Handler(BaseHTTPRequestHandler):
    """Records each request and answers it from the owning FakeOpenAIServer."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes; avoid 40 ms stalls
    server_version = "FakeOpenAI/1.0"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    @property
    def _server(self) -> _HTTPServer:
        return cast(_HTTPServer, self.server)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    do_PUT = do_POST
    do_PATCH = do_POST
    do_DELETE = do_GET
    do_HEAD = do_GET
    do_OPTIONS = do_GET

    # -- request --------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size_line = self.rfile.readline(65537)
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _record(self) -> RecordedRequest:
        raw = self._read_body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        target = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=target.path,
            headers=headers,
            body=body,
            raw=raw,
            received_at=time.monotonic(),
            query=target.query,
        )
        self._server.owner._record_request(request)
        return request

    def _dispatch(self) -> None:
        request = self._record()
        owner = self._server.owner
        if request.method == "POST" and request.path == CHAT_COMPLETIONS_PATH:
            reply = owner._next_reply(request)
        elif request.method in ("GET", "HEAD") and request.path == MODELS_PATH:
            reply = RawReply(body=_dump(owner._models_document()).encode())
        elif request.method in ("GET", "HEAD") and request.path.startswith(MODELS_PATH + "/"):
            model_id = request.path.removeprefix(MODELS_PATH + "/")
            if model_id in owner.model_ids:
                reply = RawReply(body=_dump(owner._model_document(model_id)).encode())
            else:
                reply = status_reply(404, body=_error_body(404, f"The model '{model_id}' does not exist"))
        else:
            message = f"fake-openai: unknown path {request.method} {request.path}"
            reply = status_reply(404, body=_error_body(404, message))
        if not owner._sleep(owner.latency):
            raise _Aborted
        self._send(reply, request)

    # -- response -------------------------------------------------------------------------------

    def _start(self, status: int, content_type: str, extra: Iterable[tuple[str, str]] = ()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("x-request-id", self._server.owner._next_id("req_fake"))
        for name, value in extra:
            self.send_header(name, value)

    def _send(self, reply: Reply, request: RecordedRequest) -> None:
        owner = self._server.owner
        match reply:
            case DelayReply(seconds=seconds, then=then):
                if not owner._sleep(seconds):
                    raise _Aborted
                self._send(then, request)
            case RawReply(body=body, status=status, content_type=content_type, headers=headers):
                self._start(status, content_type, headers)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)
            case ResetReply(partial_body=partial, declared_length=declared, status=status):
                self._start(status, "application/json")
                self.send_header("Content-Length", str(max(declared, len(partial) + 1)))
                self.end_headers()
                self.wfile.write(partial)
                self.wfile.flush()
                self.close_connection = True
                self._server.abort_connection(self.connection)
            case CompletionReply():
                model = reply.model or request.model or _DEFAULT_MODEL
                completion_id = owner._next_id("chatcmpl-fake")
                if request.stream:
                    self._send_stream(_chunks(reply, completion_id, model, request.include_usage))
                else:
                    body = _dump(_completion(reply, completion_id, model)).encode()
                    self._send(RawReply(body=body), request)
            case _:
                message = f"fake-openai: unsupported reply {reply!r}"
                self._send(status_reply(500, body=_error_body(500, message)), request)

    def _send_stream(self, payloads: Iterable[str]) -> None:
        self._start(200, "text/event-stream; charset=utf-8", [("Cache-Control", "no-cache")])
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for payload in itertools.chain(payloads, ["[DONE]"]):
            event = f"data: {payload}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")


# --------------------------------------------------------------------------------------------------
# Public server
# --------------------------------------------------------------------------------------------------


class FakeOpenAIServer:
    """A scripted OpenAI-compatible HTTP server on ``127.0.0.1`` for tests.

    ``POST /v1/chat/completions`` is answered with the next reply from the FIFO script
    (:meth:`enqueue`), else with ``responder(request)`` when a responder is set, else with HTTP 500
    whose error message says "no reply scripted". ``GET /v1/models`` lists ``model_ids``; other
    paths get a 404 JSON error. Every request is recorded in :attr:`requests`.

    ``latency`` seconds are added before every reply; each connection has its own thread, so
    latency and :func:`delay_reply` never serialise concurrent requests. Use as a context manager,
    or call :meth:`start` and :meth:`stop`.
    """

    _instances: ClassVar[itertools.count[int]] = itertools.count(1)

    def __init__(
        self,
        latency: float = 0.0,
        *,
        responder: Responder | None = None,
        model_ids: Sequence[str] = (_DEFAULT_MODEL,),
        host: str = "127.0.0.1",
    ) -> None:
        """Configure (but do not start) a server; ``latency`` is in seconds."""
        self.latency: float = latency
        """Seconds to wait before every reply (may be changed while running)."""
        self.responder: Responder | None = responder
        """Called for chat completions requests when the script is empty."""
        self.model_ids: tuple[str, ...] = tuple(model_ids)
        """Model ids listed by ``GET /v1/models``."""
        self._host = host
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._name = f"fake-openai-server-{next(self._instances)}"

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind an ephemeral port and serve from a daemon thread; returns ``self``."""
        if self._httpd is not None:
            raise RuntimeError("FakeOpenAIServer is already running")
        self._stopping.clear()
        httpd = _HTTPServer(self, (self._host, 0))
        thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, name=self._name, daemon=True
        )
        self._httpd, self._thread = httpd, thread
        thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop open connections, join all server threads. Safe to call twice."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._stopping.set()
        httpd.shutdown()
        handlers = httpd.close_connections()
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for handler in handlers:
            handler.join(max(0.0, deadline - time.monotonic()))
        httpd.server_close()
        thread.join(max(0.0, deadline - time.monotonic()))
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        """Start the server."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the server."""
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server is listening."""
        return self._httpd is not None

    @property
    def port(self) -> int:
        """The TCP port the server listens on (only while running)."""
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running; call start() or use it as a context manager")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, the ``base_url`` for OpenAI clients (only while running)."""
        return f"http://{self._host}:{self.port}/v1"

    # -- script -----------------------------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        """Append replies to the FIFO script answering the next chat completions requests."""
        for reply in replies:
            if not isinstance(reply, Reply):
                raise TypeError(f"expected a Reply, got {type(reply).__name__}")
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """Number of scripted replies not consumed yet."""
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Clear the script, the recorded requests and the recorded errors (keeps the responder)."""
        with self._lock:
            self._script.clear()
            self._requests.clear()
            self._errors.clear()

    # -- inspection -------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """The recorded requests whose path (without query string) equals ``path``."""
        return [r for r in self.requests if r.path == path]

    @property
    def errors(self) -> list[BaseException]:
        """Unexpected exceptions raised while answering (e.g. by the responder), oldest first."""
        with self._lock:
            return list(self._errors)

    # -- used by the handler ----------------------------------------------------------------------

    def _record_request(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _record_error(self, error: BaseException) -> None:
        with self._lock:
            self._errors.append(error)

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}-{next(self._ids)}"

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            scripted = self._script.popleft() if self._script else None
        if scripted is not None:
            return scripted
        responder = self.responder
        if responder is None:
            message = (
                f"fake-openai: no reply scripted for {request.method} {request.path} "
                "(call server.enqueue(...) or set server.responder)"
            )
            return status_reply(500, body=_error_body(500, message))
        try:
            reply = responder(request)
            if not isinstance(reply, Reply):
                raise TypeError(f"responder returned {type(reply).__name__}, not a Reply")
        except Exception as error:
            self._record_error(error)
            message = f"fake-openai: responder raised {type(error).__name__}: {error}"
            return status_reply(500, body=_error_body(500, message))
        return reply

    def _sleep(self, seconds: float) -> bool:
        """Wait ``seconds`` unless the server stops first; return whether it is still running."""
        if seconds > 0:
            return not self._stopping.wait(seconds)
        return not self._stopping.is_set()

    def _models_document(self) -> dict[str, Any]:
        return {"object": "list", "data": [self._model_document(m) for m in self.model_ids]}

    @staticmethod
    def _model_document(model_id: str) -> dict[str, Any]:
        return {"id": model_id, "object": "model", "created": 0, "owned_by": "fake-openai"}
