"""Tests for the in-process fake OpenAI server, driven through real clients over real sockets."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import instructor
import openai
import pydantic
import pytest
from instructor.core import IncompleteOutputException, InstructorRetryException
from openai.types.chat import ChatCompletionMessageFunctionToolCall, ChatCompletionMessageParam

from bub_semantic_memory.testing import (
    CHAT_COMPLETIONS_PATH,
    MODELS_PATH,
    FakeOpenAIServer,
    RecordedRequest,
    Reply,
    closed_port_url,
    delay_reply,
    empty_choices_reply,
    json_content_reply,
    length_reply,
    raw_reply,
    refusal_reply,
    reset_reply,
    status_reply,
    text_reply,
    tool_call_reply,
)

USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Alice is 30."}]


class Person(pydantic.BaseModel):
    name: str
    age: int


def _server_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("fake-openai")]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv
    assert _server_threads() == []


@pytest.fixture
def client(server: FakeOpenAIServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as c:
        yield c


@pytest.fixture
async def aclient(server: FakeOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as c:
        yield c


# -- lifecycle and plumbing ------------------------------------------------------------------------


def test_import_starts_nothing() -> None:
    code = (
        "import threading, bub_semantic_memory.testing as t, bub_semantic_memory.testing._fake_openai as f\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "assert set(f.__all__) <= set(t.__all__)\n"
        "assert all(hasattr(t, n) for n in t.__all__)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


def test_lifecycle() -> None:
    srv = FakeOpenAIServer()
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    srv.start()
    try:
        assert srv.running
        assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
        with pytest.raises(RuntimeError):
            srv.start()
    finally:
        srv.stop()
    srv.stop()  # idempotent
    assert not srv.running
    assert srv.requests == []
    assert _server_threads() == []


def test_models_list(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    models = client.models.list()
    assert [m.id for m in models.data] == ["fake-model"]
    assert len(server.requests) == 1
    assert server.requests_to(MODELS_PATH)[0].method == "GET"


def test_unknown_path_is_404_json(server: FakeOpenAIServer) -> None:
    with httpx.Client(base_url=server.base_url) as http:
        response = http.post("/embeddings", json={"input": "x"})
    assert response.status_code == 404
    assert "unknown path" in response.json()["error"]["message"]
    assert len(server.requests) == 1
    assert server.requests[0].path == "/v1/embeddings"
    assert server.requests[0].body == {"input": "x"}


def test_unscripted_request_fails_loudly(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(model="m", messages=USER)
    assert info.value.status_code == 500
    assert "no reply scripted" in str(info.value)
    assert len(server.requests) == 1


def test_enqueue_rejects_non_replies(server: FakeOpenAIServer) -> None:
    with pytest.raises(TypeError):
        server.enqueue("hello")  # type: ignore[arg-type]
    assert server.pending == 0
    assert len(server.requests) == 0


def test_script_is_fifo_then_responder_then_reset(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    server.enqueue(text_reply("one"), text_reply("two"))
    seen: list[RecordedRequest] = []

    def responder(request: RecordedRequest) -> Reply:
        seen.append(request)
        return text_reply(f"echo {request.messages[-1]['content']}")

    server.responder = responder
    answers = [
        client.chat.completions.create(model="m", messages=USER).choices[0].message.content for _ in range(3)
    ]
    assert answers == ["one", "two", "echo Alice is 30."]
    assert len(seen) == 1
    assert len(server.requests) == 3
    assert all(r.model == "m" and r.messages == USER for r in server.requests_to(CHAT_COMPLETIONS_PATH))

    server.enqueue(text_reply("never sent"))
    server.reset()
    assert server.pending == 0
    assert server.requests == []
    assert client.chat.completions.create(model="m", messages=USER).choices[0].message.content == (
        "echo Alice is 30."
    )
    assert len(server.requests) == 1


def test_responder_error_becomes_500(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    def responder(request: RecordedRequest) -> Reply:
        raise LookupError("boom")

    server.responder = responder
    with pytest.raises(openai.InternalServerError, match="responder raised LookupError: boom"):
        client.chat.completions.create(model="m", messages=USER)
    assert [type(e) for e in server.errors] == [LookupError]
    assert len(server.requests) == 1


# -- completions -----------------------------------------------------------------------------------


async def test_instructor_parses_tool_call(server: FakeOpenAIServer, aclient: openai.AsyncOpenAI) -> None:
    server.enqueue(tool_call_reply("Person", {"name": "Alice", "age": 30}, usage=(7, 3)))
    extractor = instructor.from_openai(aclient, mode=instructor.Mode.TOOLS)
    person = await extractor.chat.completions.create(
        model="m", response_model=Person, messages=USER, max_retries=0
    )
    assert (type(person).__name__, person.model_dump()) == ("Person", {"name": "Alice", "age": 30})
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request.method == "POST"
    assert request.path == CHAT_COMPLETIONS_PATH
    assert request.headers["authorization"] == "Bearer test"
    assert [tool["function"]["name"] for tool in request.body["tools"]] == ["Person"]
    assert request.body["tool_choice"] == {"type": "function", "function": {"name": "Person"}}
    assert request.tool_schema_name() == "Person"
    assert request.messages == USER
    assert json.loads(request.raw) == request.body


async def test_request_helpers_read_the_transcript_and_the_forced_tools_schema(
    server: FakeOpenAIServer, aclient: openai.AsyncOpenAI
) -> None:
    server.enqueue(tool_call_reply("Person", {"name": "Alice", "age": 30}))
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "Extract. <transcript> in the rules is not a block"},
        {"role": "user", "content": "Known: none\n<transcript>\n[3] user: hi\n[7] tool: ok\n</transcript>"},
    ]
    extractor = instructor.from_openai(aclient, mode=instructor.Mode.TOOLS)
    await extractor.chat.completions.create(
        model="m", response_model=Person, messages=messages, max_retries=0
    )
    request = server.requests[0]
    assert request.transcript() == "[3] user: hi\n[7] tool: ok\n"
    assert request.transcript_entry_ids() == [3, 7]
    parameters = request.tool_parameters()
    assert parameters is not None and set(parameters["properties"]) == {"name", "age"}
    assert request.tool_parameters("Other") is None
    server.enqueue(text_reply("plain"))
    await aclient.chat.completions.create(model="m", messages=USER)
    plain = server.requests[1]
    assert (
        plain.transcript() is None and plain.transcript_entry_ids() == [] and plain.tool_parameters() is None
    )


def test_tool_call_reply_shape(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    server.enqueue(tool_call_reply("Person", {"name": "Bob", "age": 4}))
    completion = client.chat.completions.create(model="gpt-x", messages=USER)
    assert completion.object == "chat.completion"
    assert completion.id
    assert completion.created > 0
    assert completion.model == "gpt-x"
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.role == "assistant"
    assert choice.message.content is None
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert call.id == "call_1"
    assert call.type == "function"
    assert call.function.name == "Person"
    assert json.loads(call.function.arguments) == {"name": "Bob", "age": 4}
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (100, 20)
    assert completion.usage.total_tokens == 120
    assert len(server.requests) == 1
    assert server.requests[0].tool_schema_name() is None


async def test_invalid_json_arguments_reach_client(
    server: FakeOpenAIServer, aclient: openai.AsyncOpenAI
) -> None:
    server.enqueue(tool_call_reply("Person", '{"name": "Al'), tool_call_reply("Person", "{not json"))
    completion = await aclient.chat.completions.create(model="m", messages=USER)
    calls = completion.choices[0].message.tool_calls
    assert calls is not None
    assert isinstance(calls[0], ChatCompletionMessageFunctionToolCall)
    assert calls[0].function.arguments == '{"name": "Al'

    extractor = instructor.from_openai(aclient, mode=instructor.Mode.TOOLS)
    with pytest.raises(InstructorRetryException, match="Invalid JSON"):
        await extractor.chat.completions.create(
            model="m", response_model=Person, messages=USER, max_retries=0
        )
    assert len(server.requests) == 2


async def test_length_reply_is_incomplete_output(
    server: FakeOpenAIServer, aclient: openai.AsyncOpenAI
) -> None:
    server.enqueue(length_reply('{"name": "Ali', "Person"))
    extractor = instructor.from_openai(aclient, mode=instructor.Mode.TOOLS)
    with pytest.raises(IncompleteOutputException):
        await extractor.chat.completions.create(
            model="m", response_model=Person, messages=USER, max_retries=0
        )
    assert len(server.requests) == 1


@pytest.mark.parametrize("mode", [instructor.Mode.JSON, instructor.Mode.MD_JSON, instructor.Mode.JSON_SCHEMA])
async def test_json_content_reply_for_json_modes(
    server: FakeOpenAIServer, aclient: openai.AsyncOpenAI, mode: instructor.Mode
) -> None:
    server.enqueue(json_content_reply({"name": "Carol", "age": 41}))
    extractor = instructor.from_openai(aclient, mode=mode)
    person = await extractor.chat.completions.create(
        model="m", response_model=Person, messages=USER, max_retries=0
    )
    assert person.model_dump() == {"name": "Carol", "age": 41}
    assert len(server.requests) == 1


def test_refusal_and_empty_choices(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    server.enqueue(refusal_reply("I can't help with that."), empty_choices_reply())
    refusal = client.chat.completions.create(model="m", messages=USER)
    assert refusal.choices[0].message.content == "I can't help with that."
    assert refusal.choices[0].message.tool_calls is None
    assert refusal.choices[0].finish_reason == "stop"
    empty = client.chat.completions.create(model="m", messages=USER)
    assert empty.choices == []
    assert empty.usage is not None
    assert len(server.requests) == 2


# -- HTTP errors and broken transports --------------------------------------------------------------


def test_429_carries_retry_after(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    server.enqueue(status_reply(429, headers={"Retry-After": "1"}))
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(model="m", messages=USER)
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "1"
    assert isinstance(info.value.body, dict)
    assert info.value.body["code"] == "rate_limit_exceeded"
    assert len(server.requests) == 1


@pytest.mark.parametrize("code", [500, 502, 503])
async def test_5xx_is_internal_server_error(
    server: FakeOpenAIServer, aclient: openai.AsyncOpenAI, code: int
) -> None:
    server.enqueue(status_reply(code), status_reply(code, body={"error": {"message": "custom"}}))
    with pytest.raises(openai.InternalServerError) as info:
        await aclient.chat.completions.create(model="m", messages=USER)
    assert info.value.status_code == code
    with pytest.raises(openai.InternalServerError, match="custom"):  # also for streaming requests
        await aclient.chat.completions.create(model="m", messages=USER, stream=True)
    assert len(server.requests) == 2


def test_reset_mid_body_is_connection_error(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    server.enqueue(reset_reply(), text_reply("recovered"))
    with pytest.raises(openai.APIConnectionError) as info:
        client.chat.completions.create(model="m", messages=USER)
    assert not isinstance(info.value, openai.APITimeoutError)
    # The server keeps serving after the reset.
    assert client.chat.completions.create(model="m", messages=USER).choices[0].message.content == "recovered"
    assert len(server.requests) == 2


def test_reset_sends_rst_after_partial_body(server: FakeOpenAIServer) -> None:
    server.enqueue(reset_reply(partial_body=b'{"partial', declared_length=1000))
    body = b"{}"
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    received = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(request)
        with pytest.raises(ConnectionResetError):  # RST, never a clean EOF
            while True:
                data = sock.recv(4096)
                assert data, "connection closed cleanly instead of being reset"
                received += data
    if received:
        assert received.startswith(b"HTTP/1.1 200")
        assert b"Content-Length: 1000" in received
    assert len(server.requests) == 1
    assert server.requests[0].body == {}


def test_delay_beyond_timeout_is_timeout_error(server: FakeOpenAIServer) -> None:
    server.enqueue(delay_reply(5.0, text_reply("too late")), text_reply("on time"))
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=0.2) as client:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="m", messages=USER)
        # The sleeping handler does not block the next request.
        assert (
            client.chat.completions.create(model="m", messages=USER).choices[0].message.content == "on time"
        )
        assert time.monotonic() - started < 2.0
    assert len(server.requests) == 2


def test_non_json_body_is_client_error(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    server.enqueue(raw_reply(b"<html>bad gateway</html>"))
    with pytest.raises(json.JSONDecodeError):
        client.chat.completions.create(model="m", messages=USER)
    assert len(server.requests) == 1


async def test_connection_refused(server: FakeOpenAIServer) -> None:
    url = closed_port_url()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert url != server.base_url
    async with openai.AsyncOpenAI(base_url=url, api_key="test", max_retries=0) as aclient:
        with pytest.raises(openai.APIConnectionError) as info:
            await aclient.chat.completions.create(model="m", messages=USER)
    assert not isinstance(info.value, openai.APITimeoutError)
    assert len(server.requests) == 0


# -- streaming -------------------------------------------------------------------------------------

TEXT = "Alice is a thirty-year-old engineer."


def test_stream_text_sync(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    server.enqueue(text_reply(TEXT))
    with client.chat.completions.create(model="m", messages=USER, stream=True) as stream:
        chunks = list(stream)
        content_type = stream.response.headers["content-type"]
    assert content_type.startswith("text/event-stream")
    assert all(c.object == "chat.completion.chunk" and c.model == "m" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) > 1
    assert "".join(pieces) == TEXT
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    assert all(c.usage is None for c in chunks)
    assert len(server.requests) == 1
    assert server.requests[0].stream


async def test_stream_text_async_with_usage(server: FakeOpenAIServer, aclient: openai.AsyncOpenAI) -> None:
    server.enqueue(text_reply(TEXT, usage=(11, 5)))
    stream = await aclient.chat.completions.create(
        model="m",
        messages=USER,
        stream=True,
        stream_options={"include_usage": True},
    )
    async with stream:
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == TEXT
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens, last.usage.total_tokens) == (11, 5, 16)
    assert all(c.usage is None for c in chunks[:-1])
    assert server.requests[0].include_usage
    assert len(server.requests) == 1


async def test_stream_tool_call_assembled(server: FakeOpenAIServer, aclient: openai.AsyncOpenAI) -> None:
    arguments = {"name": "Alice", "age": 30}
    server.enqueue(tool_call_reply("Person", arguments))
    stream = await aclient.chat.completions.create(model="m", messages=USER, stream=True)
    names: list[str] = []
    fragments: list[str] = []
    ids: list[str] = []
    finish: list[str | None] = []
    async with stream:
        async for chunk in stream:
            choice = chunk.choices[0]
            finish.append(choice.finish_reason)
            for delta in choice.delta.tool_calls or []:
                assert delta.index == 0
                if delta.id:
                    ids.append(delta.id)
                if delta.function and delta.function.name:
                    names.append(delta.function.name)
                if delta.function and delta.function.arguments:
                    fragments.append(delta.function.arguments)
    assert ids == ["call_1"]
    assert names == ["Person"]
    assert len(fragments) > 1
    assert json.loads("".join(fragments)) == arguments
    assert finish[-1] == "tool_calls"
    assert len(server.requests) == 1


def test_stream_helper_final_completion(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    server.enqueue(tool_call_reply("Person", {"name": "Dan", "age": 5}), text_reply(TEXT))
    with client.chat.completions.stream(model="m", messages=USER) as stream:
        tool_completion = stream.get_final_completion()
    with client.chat.completions.stream(model="m", messages=USER) as stream:
        text_completion = stream.get_final_completion()
    calls = tool_completion.choices[0].message.tool_calls
    assert calls is not None
    assert calls[0].function.name == "Person"
    assert json.loads(calls[0].function.arguments) == {"name": "Dan", "age": 5}
    assert tool_completion.choices[0].finish_reason == "tool_calls"
    assert text_completion.choices[0].message.content == TEXT
    assert len(server.requests) == 2


async def test_stream_partial_instructor(server: FakeOpenAIServer, aclient: openai.AsyncOpenAI) -> None:
    server.enqueue(tool_call_reply("Person", {"name": "Eve", "age": 22}))
    extractor = instructor.from_openai(aclient, mode=instructor.Mode.TOOLS)
    partials = [
        p
        async for p in extractor.chat.completions.create_partial(
            model="m", response_model=Person, messages=USER, max_retries=0
        )
    ]
    assert len(partials) > 1
    assert (partials[-1].name, partials[-1].age) == ("Eve", 22)
    assert len(server.requests) == 1


def test_stream_empty_choices_and_length(server: FakeOpenAIServer, client: openai.OpenAI) -> None:
    server.enqueue(empty_choices_reply(), length_reply('{"name": "Al', "Person"))
    with client.chat.completions.create(model="m", messages=USER, stream=True) as stream:
        empty = list(stream)
    assert [c.choices for c in empty] == [[]]
    with client.chat.completions.create(model="m", messages=USER, stream=True) as stream:
        chunks = list(stream)
    arguments = "".join(
        d.function.arguments or ""
        for c in chunks
        for d in c.choices[0].delta.tool_calls or []
        if d.function is not None
    )
    assert arguments == '{"name": "Al'
    assert chunks[-1].choices[0].finish_reason == "length"
    assert len(server.requests) == 2


# -- concurrency -----------------------------------------------------------------------------------


async def test_latency_does_not_serialise_requests() -> None:
    with FakeOpenAIServer(latency=0.3) as srv:
        srv.responder = lambda request: text_reply(f"re: {request.messages[-1]['content']}")
        async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0) as aclient:

            async def ask(i: int) -> str | None:
                completion = await aclient.chat.completions.create(
                    model="m",
                    messages=[{"role": "user", "content": str(i)}],
                )
                return completion.choices[0].message.content

            started = time.monotonic()
            answers = await asyncio.gather(*(ask(i) for i in range(4)))
            elapsed = time.monotonic() - started
        assert answers == [f"re: {i}" for i in range(4)]
        assert 0.3 <= elapsed < 0.75, elapsed
        assert len(srv.requests) == 4
    assert _server_threads() == []


def test_stop_interrupts_sleeping_handlers() -> None:
    srv = FakeOpenAIServer().start()
    srv.enqueue(delay_reply(30.0, text_reply("never")))
    with openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=0, timeout=0.1) as client:
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="m", messages=USER)
        assert len(srv.requests) == 1
        started = time.monotonic()
        srv.stop()
    assert time.monotonic() - started < 1.0
    assert _server_threads() == []
