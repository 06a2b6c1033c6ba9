"""Transport retries: ``send_with_retries`` against the fake endpoint, the ``CallLedger`` usage
it keeps (cached prompt tokens included), the request cap and deadline, and ``Retry-After``
parsing (``_retry_after_seconds``)."""

from __future__ import annotations

import dataclasses
import email.utils
import re
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion

from bub_semantic_memory._errors import ConfigurationError
from bub_semantic_memory.backends._transport import (
    CallLedger,
    EndpointFailure,
    OpenAIBackend,
    RetryPolicy,
    _RequestBudgetExceeded,
    _retry_after_seconds,
    send_with_retries,
)
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.testing import (
    FakeOpenAIServer,
    closed_port_url,
    empty_choices_reply,
    raw_reply,
    status_reply,
    text_reply,
)
from bub_semantic_memory.testing._fake_openai import CompletionReply, RecordedRequest, Reply
from tests.conftest import FAST

MESSAGES = [{"role": "user", "content": "hello"}]


def ledger(**policy: Any) -> CallLedger:
    return CallLedger(dataclasses.replace(FAST, **policy))


@asynccontextmanager
async def backend(base_url: str) -> AsyncIterator[OpenAIBackend]:
    client = OpenAIBackend(base_url=base_url, api_key="test", timeout_s=5.0)
    try:
        yield client
    finally:
        await client.aclose()


async def send(base_url: str, call: CallLedger) -> ChatCompletion:
    """One request through ``send_with_retries``, as the extractor makes it."""
    async with backend(base_url) as client:
        return await send_with_retries(call, lambda: client.create(model="fake-model", messages=MESSAGES))


async def failure(base_url: str, call: CallLedger) -> EndpointFailure:
    with pytest.raises(EndpointFailure) as info:
        await send(base_url, call)
    return info.value


def always(reply: Reply) -> Any:
    def respond(_request: RecordedRequest) -> Reply:
        return reply

    return respond


# --- success and usage ---------------------------------------------------------------------------


async def test_a_good_answer_is_returned_and_counted(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(text_reply("hi there", usage=(100, 20)))
    call = ledger()
    response = await send(fake_openai.base_url, call)
    assert response.choices[0].message.content == "hi there"
    assert (call.usage.requests, call.usage.attempts) == (1, 1)
    assert (call.usage.prompt_tokens, call.usage.completion_tokens, call.usage.cached_tokens) == (100, 20, 0)
    assert call.last_output == "hi there"
    assert call.last_error is None


async def test_cached_prompt_tokens_are_counted_and_add_up_over_calls(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(
        CompletionReply(content="one", usage=(300, 10), cached_tokens=256),
        CompletionReply(content="two", usage=(310, 12), cached_tokens=300),
        CompletionReply(content="three", usage=(50, 5)),  # a provider that does not say
    )
    call = ledger()
    for _ in range(3):
        await send(fake_openai.base_url, call)
    assert call.usage.prompt_tokens == 660
    assert call.usage.completion_tokens == 27
    assert call.usage.cached_tokens == 556
    assert (call.usage.requests, call.usage.attempts) == (3, 3)


async def test_an_answer_without_choices_is_retried_and_its_tokens_still_billed(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.enqueue(empty_choices_reply(usage=(40, 3)), text_reply("ok", usage=(100, 20)))
    call = ledger()
    await send(fake_openai.base_url, call)
    assert (call.usage.requests, call.usage.attempts) == (2, 1)
    assert (call.usage.prompt_tokens, call.usage.completion_tokens) == (140, 23)


async def test_a_body_that_is_not_a_completion_is_retried(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(raw_reply(b"<html>Bad gateway</html>", content_type="text/html"), text_reply("ok"))
    call = ledger()
    response = await send(fake_openai.base_url, call)
    assert response.choices[0].message.content == "ok"
    assert len(fake_openai.requests) == 2


# --- which failures are retried -------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
async def test_transient_statuses_are_retried(fake_openai: FakeOpenAIServer, status: int) -> None:
    fake_openai.enqueue(status_reply(status), status_reply(status), text_reply("ok"))
    call = ledger()
    response = await send(fake_openai.base_url, call)
    assert response.choices[0].message.content == "ok"
    assert len(fake_openai.requests) == 3
    assert (call.usage.requests, call.usage.attempts) == (3, 1)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retried(fake_openai: FakeOpenAIServer, status: int) -> None:
    fake_openai.enqueue(status_reply(status), text_reply("never sent"))
    call = ledger()
    error = await failure(fake_openai.base_url, call)
    assert not error.transient
    assert error.reason.startswith(f"HTTP {status} from the endpoint")
    assert "gave up" not in error.reason
    assert len(fake_openai.requests) == 1
    assert fake_openai.pending == 1
    assert call.last_error == error.reason


async def test_an_endpoint_that_keeps_failing_gets_exactly_the_transport_attempts(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.responder = always(status_reply(503))
    call = ledger()
    error = await failure(fake_openai.base_url, call)
    assert error.transient
    assert len(fake_openai.requests) == FAST.transport_attempts == 5
    assert call.usage.requests == 5
    assert call.usage.attempts == 0
    assert (
        error.reason
        == "HTTP 503 from the endpoint: fake-openai: simulated HTTP 503 error (gave up after 5 requests)"
    )


async def test_the_policy_sets_the_number_of_transport_attempts(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.responder = always(status_reply(500))
    await failure(fake_openai.base_url, ledger(transport_attempts=2))
    assert len(fake_openai.requests) == 2


async def test_a_refused_connection_is_transient() -> None:
    call = ledger(transport_attempts=3)
    error = await failure(closed_port_url(), call)
    assert error.transient
    assert error.reason.startswith("connection failed")
    assert call.usage.requests == 3


def unresolvable(request: httpx.Request) -> httpx.Response:
    """What the network stack raises for a host name that does not exist."""
    raise httpx.ConnectError("[Errno -2] Name or service not known", request=request) from socket.gaierror(
        socket.EAI_NONAME, "Name or service not known"
    )


async def test_a_host_that_does_not_resolve_fails_on_the_first_request_naming_it() -> None:
    call = ledger(transport_attempts=5)
    client = OpenAIBackend(
        base_url="http://llm.example.internal/v1",
        api_key="k",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(unresolvable)),
    )
    with pytest.raises(EndpointFailure) as info:
        await send_with_retries(call, lambda: client.create(model="m", messages=MESSAGES))
    await client.aclose()
    assert not info.value.transient and call.usage.requests == 1
    assert (
        "'llm.example.internal' does not resolve" in info.value.reason and "--base-url" in info.value.reason
    )


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"model": "http://127.0.0.1:1/v1"}, "is a URL: pass the endpoint as --base-url"),
        (
            {"model": "m", "base_url": "not-a-url"},
            "is no http:// or https:// URL with a host: fix --base-url",
        ),
        ({"model": "m", "base_url": "ftp://host/v1"}, "is no http:// or https:// URL with a host"),
    ],
)
def test_an_endpoint_that_cannot_work_is_refused_before_any_request(
    settings: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(named)):
        ExtractorConfig(**settings)  # type: ignore[arg-type]


# --- Retry-After -----------------------------------------------------------------------------------


@pytest.mark.parametrize("header", [{"Retry-After": "0.08"}, {"retry-after-ms": "80"}])
async def test_retry_after_is_waited_for_instead_of_the_backoff(
    fake_openai: FakeOpenAIServer, header: dict[str, str]
) -> None:
    fake_openai.enqueue(status_reply(429, headers=header), text_reply("ok"))
    await send(fake_openai.base_url, ledger())
    first, second = fake_openai.requests
    # FAST backs off 0.01-0.03 s; only the header explains a gap of 0.08 s.
    assert second.received_at - first.received_at >= 0.075


async def test_a_retry_after_longer_than_allowed_ends_the_call_at_once(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(status_reply(429, headers={"Retry-After": "5"}), text_reply("never sent"))
    started = time.monotonic()
    error = await failure(fake_openai.base_url, ledger(retry_after_max_s=1.0))
    assert time.monotonic() - started < 1.0
    assert error.transient
    assert error.reason.startswith("HTTP 429")
    assert len(fake_openai.requests) == 1


# --- the request cap and the deadline --------------------------------------------------------------


async def test_the_request_cap_counts_requests_already_made_by_the_call(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.responder = always(status_reply(503))
    call = ledger(max_requests=8)
    call.usage.requests = 6  # earlier turns of the same extraction call (re-asks)
    error = await failure(fake_openai.base_url, call)
    assert isinstance(error, _RequestBudgetExceeded)
    assert not error.transient
    assert error.reason.startswith("request cap reached (8 requests); last failure: HTTP 503")
    assert len(fake_openai.requests) == 2
    assert call.usage.requests == 8


async def test_a_cap_below_the_transport_attempts_wins(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.responder = always(status_reply(502))
    error = await failure(fake_openai.base_url, ledger(max_requests=3, transport_attempts=5))
    assert isinstance(error, _RequestBudgetExceeded)
    assert len(fake_openai.requests) == 3


async def test_a_call_past_its_deadline_sends_nothing(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(text_reply("never sent"))
    call = CallLedger(dataclasses.replace(FAST, deadline_s=30.0), started=time.monotonic() - 31.0)
    error = await failure(fake_openai.base_url, call)
    assert isinstance(error, _RequestBudgetExceeded)
    assert error.reason == "deadline of 30s reached"
    assert fake_openai.requests == []
    assert call.usage.requests == 0


def test_the_default_policy_has_the_documented_bounds() -> None:
    policy = RetryPolicy()
    assert (policy.transport_attempts, policy.max_requests, policy.reasks) == (5, 8, 2)


# --- _retry_after_seconds --------------------------------------------------------------------------


def rate_limited(headers: dict[str, str]) -> openai.RateLimitError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(429, headers=headers, request=request)
    return openai.RateLimitError("rate limited", response=response, body=None)


def http_date(offset: timedelta) -> str:
    return email.utils.format_datetime(datetime.now(UTC) + offset, usegmt=True)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2", 2.0),
        ("0.5", 0.5),
        (" 7 ", 7.0),
        ("0", 0.0),
        ("-3", 0.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: retry now
        ("Wed, 21 Oct 2015 07:28:00 -0000", 0.0),  # no time zone: read as UTC
        ("soon", None),
        ("", None),
        ("Wed, 99 Foo 2015 07:28:00 GMT", None),
    ],
)
def test_retry_after_values(value: str, expected: float | None) -> None:
    assert _retry_after_seconds(rate_limited({"Retry-After": value})) == expected


def test_retry_after_as_a_future_http_date_is_the_seconds_until_then() -> None:
    seconds = _retry_after_seconds(rate_limited({"Retry-After": http_date(timedelta(seconds=120))}))
    assert seconds is not None
    assert 118.0 <= seconds <= 120.0


def test_retry_after_ms_wins_over_retry_after() -> None:
    assert _retry_after_seconds(rate_limited({"retry-after-ms": "1500", "Retry-After": "9"})) == 1.5


def test_a_garbage_retry_after_ms_falls_back_to_retry_after() -> None:
    assert _retry_after_seconds(rate_limited({"retry-after-ms": "later", "Retry-After": "4"})) == 4.0


def test_no_header_no_hint() -> None:
    assert _retry_after_seconds(rate_limited({})) is None


@pytest.mark.parametrize(
    "exc", [None, ValueError("boom"), openai.APIConnectionError(request=httpx2.Request("GET", "http://x"))]
)
def test_errors_without_a_response_give_no_hint(exc: BaseException | None) -> None:
    assert _retry_after_seconds(exc) is None
