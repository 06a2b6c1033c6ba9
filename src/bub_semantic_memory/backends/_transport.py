"""Sending chat-completion requests: backends, transport retries and usage accounting.

One retry layer per kind of failure, never multiplied:

* Transport failures (HTTP 429 honouring ``Retry-After``, 408/409/5xx, timeouts,
  refused or reset connections, bodies that do not parse, empty ``choices``) are
  retried here, per request, with tenacity: exponential back-off with jitter, a
  bounded number of attempts, and a deadline shared by the whole extraction call.
  The OpenAI client's own retries are switched off (``max_retries=0``).
* Validation failures are re-asked by Instructor (see :mod:`.extractor`); they never
  reach this layer.
* A hard cap on requests per extraction call (:attr:`RetryPolicy.max_requests`)
  bounds the product of the two. Against an endpoint that always fails, one call
  makes exactly :attr:`RetryPolicy.transport_attempts` requests (default 5).

Every request and every response is counted in a :class:`CallLedger`, failed ones
included, so a snapshot (or an error) can say what the call cost.

``openai`` is imported when an endpoint is opened or a failure is classified, never when this
module is: importing it takes about a second, which every command (``--help`` included) and
every bub start would pay.
"""

from __future__ import annotations

import email.utils
import json
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential_jitter,
)

from bub_semantic_memory._models import Usage

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

__all__ = [
    "BILLED_CLASSES",
    "HOSTED",
    "MODEL_CLASSES",
    "BackendTraits",
    "CallLedger",
    "ChatBackend",
    "EndpointFailure",
    "ModelClass",
    "OpenAIBackend",
    "RetryPolicy",
    "send_with_retries",
]

_TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def clock() -> float:
    """Seconds on the clock an extraction call's deadline and latency are measured with.

    The monotonic clock, read through this one function so that a test can run a call that
    takes minutes on a scaled clock.
    """
    return time.monotonic()


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds for one extraction call.

    Attributes:
        reasks: validation re-asks after the first answer (Instructor ``max_retries``).
        transport_attempts: requests per model turn when the endpoint keeps failing.
        max_requests: hard cap on requests for the whole call (re-asks and retries together).
        deadline_s: wall-time budget for the whole call, back-off included.
        request_timeout_s: timeout of one HTTP request.
        backoff_initial_s / backoff_max_s: exponential back-off with jitter between retries.
        retry_after_max_s: the longest ``Retry-After`` honoured; longer ones end the call.
    """

    reasks: int = 2
    transport_attempts: int = 5
    max_requests: int = 8
    deadline_s: float = 180.0
    request_timeout_s: float = 60.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 8.0
    retry_after_max_s: float = 30.0


@dataclass
class CallLedger:
    """What one extraction call has spent so far (mutable, owned by that call)."""

    policy: RetryPolicy
    started: float = field(default_factory=lambda: clock())  # looked up when called: see clock()
    usage: Usage = field(default_factory=Usage)
    last_output: str | None = None
    last_error: str | None = None
    dropped: list[str] = field(default_factory=list)
    """Answer items left out (a rule broken after the re-asks, or one with a single right fix)."""

    def remaining_s(self) -> float:
        return self.policy.deadline_s - (clock() - self.started)

    def has_room_for(self, requests: int) -> bool:
        """Whether the request cap and the deadline cover ``requests`` more requests (each given
        its full timeout): a caller with optional requests stops short rather than fail the call
        and lose what it found."""
        policy = self.policy
        return (
            self.usage.requests + requests <= policy.max_requests
            and self.remaining_s() > requests * policy.request_timeout_s
        )

    def finish(self) -> Usage:
        """Usage with the call's wall time filled in."""
        self.usage.latency_s = round(clock() - self.started, 4)
        return self.usage.model_copy()

    def record_tokens(self, response: ChatCompletion) -> None:
        """Count the tokens a response reports, also for one that is then rejected (empty choices)."""
        if response.usage is not None:
            self.usage.prompt_tokens += response.usage.prompt_tokens or 0
            self.usage.completion_tokens += response.usage.completion_tokens or 0
            details = response.usage.prompt_tokens_details
            self.usage.cached_tokens += (details.cached_tokens or 0) if details is not None else 0

    def record_response(self, response: ChatCompletion) -> None:
        self.usage.attempts += 1
        self.record_tokens(response)
        self.last_output = _raw_output(response)


def _raw_output(response: ChatCompletion) -> str | None:
    if not response.choices:
        return None
    message = response.choices[0].message
    if message.tool_calls:
        call = message.tool_calls[0]
        return getattr(getattr(call, "function", None), "arguments", None)
    return message.content


type ModelClass = Literal["local", "hosted"]
"""How a backend's requests cost: ``local`` runs in this process (compute, no bill), ``hosted``
sends each request, tool schemas included, to an endpoint that bills its tokens."""

MODEL_CLASSES: tuple[ModelClass, ...] = ("local", "hosted")
BILLED_CLASSES: frozenset[ModelClass] = frozenset({"hosted"})
"""The classes whose requests are billed: a prompt version runs on them only when chosen for them
(promoted for the class, or named), never because another class's promotion exists."""


@dataclass(frozen=True, kw_only=True)
class BackendTraits:
    """What a backend declares about itself; an extraction's defaults are decided from it.

    Attributes:
        in_process: the model runs in this process (seconds of CPU per request, no bill).
        grammar_constrained: tool arguments are decoded under a grammar built from the
            schema, so enums in the schema (turn numbers, candidate names) hold by construction.
        context_tokens: the context the model is opened with (None: not known, a hosted model).
        fingerprint: what decides an answer besides the request (a local model's file and
            batch size); part of eval cache keys.
    """

    in_process: bool = False
    grammar_constrained: bool = False
    context_tokens: int | None = None
    fingerprint: Mapping[str, Any] = field(default_factory=dict)

    @property
    def model_class(self) -> ModelClass:
        """``local`` for a model in this process, else ``hosted``."""
        return "local" if self.in_process else "hosted"


HOSTED = BackendTraits()
"""The traits of an OpenAI-compatible endpoint: nothing known beyond the API."""


class ChatBackend(Protocol):
    """Something that answers OpenAI chat-completion requests (remote endpoint or local model)."""

    @property
    def traits(self) -> BackendTraits:
        """What the backend declares about itself (see :class:`BackendTraits`)."""
        ...

    async def create(self, **kwargs: Any) -> ChatCompletion: ...

    async def aclose(self) -> None: ...


class OpenAIBackend:
    """Any OpenAI-compatible endpoint (OpenAI, DeepSeek, vLLM, llama.cpp server, Ollama).

    Args:
        http_client: an ``httpx.AsyncClient`` (or ``httpx2``) to send through; tests
            pass an ``httpx`` client so respx can intercept (openai 3 defaults to httpx2).
    """

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout_s: float = 60.0,
        http_client: Any = None,
    ) -> None:
        import openai

        self.client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            max_retries=0,  # Transport retries live in send_with_retries; never two layers.
            timeout=timeout_s,
            http_client=http_client,
        )

    traits = HOSTED

    async def create(self, **kwargs: Any) -> ChatCompletion:
        response = await self.client.chat.completions.create(**kwargs)
        return cast("ChatCompletion", response)

    async def aclose(self) -> None:
        await self.client.close()


class EndpointFailure(Exception):
    """Internal: the endpoint failed for good (retries exhausted or not retryable)."""

    def __init__(self, reason: str, *, transient: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


class _RequestBudgetExceeded(EndpointFailure):
    """The call reached :attr:`RetryPolicy.max_requests` or its deadline."""


class _EmptyChoices(Exception):
    """A 200 response without choices: treated as a transient endpoint fault."""


class _NotACompletion(Exception):
    """A 200 response whose body is not a chat completion (an HTML page from a proxy): transient."""


def _is_transient(exc: BaseException) -> bool:
    """Whether a retry can fix ``exc``: 429, 408/409/5xx, timeouts, connection and body faults.

    A host name that does not resolve, or a URL that is no HTTP URL, is a configuration
    error: asking again gives the same answer.
    """
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _TRANSIENT_STATUS
    if _unresolved_host(exc) is not None or _unsupported_protocol(exc):
        return False
    if isinstance(
        exc, openai.APIConnectionError | openai.APIResponseValidationError | _EmptyChoices | _NotACompletion
    ):
        return True
    return isinstance(exc, json.JSONDecodeError | UnicodeDecodeError)


def _retry_after_seconds(exc: BaseException | None) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header on an HTTP error, if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


_SETTING = "check the endpoint URL (--base-url, or BUB_SEMANTIC_MEMORY_BASE_URL for the plugin)"
_NO_SUCH_NAME = frozenset(
    code
    for code in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None))
    if code is not None
)


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _unresolved_host(exc: BaseException) -> str | None:
    """The host of a request whose name does not resolve (not a passing DNS fault), if ``exc`` is one."""
    import openai

    if not isinstance(exc, openai.APIConnectionError):
        return None
    if not any(isinstance(c, socket.gaierror) and c.errno in _NO_SUCH_NAME for c in _causes(exc)):
        return None
    request = getattr(exc, "request", None)
    return str(getattr(getattr(request, "url", None), "host", "") or "") or "?"


def _unsupported_protocol(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, openai.APIConnectionError) and any(
        type(c).__name__ == "UnsupportedProtocol" for c in _causes(exc)
    )


def _describe(exc: BaseException) -> str:
    import openai

    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        detail = body.get("message") if isinstance(body, dict) else None
        text = str(detail or exc.message).replace("\n", " ")
        return f"HTTP {exc.status_code} from the endpoint: {text[:300]}"
    if isinstance(exc, openai.APITimeoutError):
        return "the request timed out"
    if (host := _unresolved_host(exc)) is not None:
        return f"the endpoint's host {host!r} does not resolve (no such name): {_SETTING}"
    if _unsupported_protocol(exc):
        return f"the endpoint URL is no http:// or https:// URL: {_SETTING}"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return f"connection failed ({type(cause).__name__ if cause else 'connection error'}: {cause or exc})"
    if isinstance(exc, _EmptyChoices):
        return "the endpoint answered without any choices"
    if isinstance(exc, _NotACompletion):
        return f"the endpoint answered with a body that is not a chat completion ({exc})"
    return f"{type(exc).__name__}: {exc}"


async def send_with_retries(
    ledger: CallLedger, send: Callable[[], Awaitable[ChatCompletion]]
) -> ChatCompletion:
    """Send one model request, retrying transient failures within the ledger's bounds.

    Raises:
        EndpointFailure: a non-transient failure, or transient ones until the bounds ran out.
    """
    policy = ledger.policy
    backoff = wait_exponential_jitter(
        multiplier=policy.backoff_initial_s, max=policy.backoff_max_s, jitter=policy.backoff_initial_s
    )

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hinted = _retry_after_seconds(exc)
        if hinted is not None:
            # A server asking for longer than we may wait ends the call now, not later.
            return hinted if hinted <= policy.retry_after_max_s else ledger.remaining_s() + 1
        return float(backoff(state))

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.transport_attempts)
        | stop_before_delay(max(0.0, ledger.remaining_s())),
        wait=wait,
        retry=retry_if_exception(_is_transient),
        reraise=True,
    )
    try:
        async for attempt in retrying:
            with attempt:
                if ledger.usage.requests >= policy.max_requests:
                    raise _RequestBudgetExceeded(
                        f"request cap reached ({policy.max_requests} requests){_after(ledger)}",
                        transient=False,
                    )
                if ledger.remaining_s() <= 0:
                    raise _RequestBudgetExceeded(
                        f"deadline of {policy.deadline_s:g}s reached{_after(ledger)}", transient=False
                    )
                ledger.usage.requests += 1
                try:
                    response = await send()
                except Exception as exc:
                    ledger.last_error = _describe(exc)  # kept for the budget error, if one follows
                    raise
                if not isinstance(getattr(response, "choices", None), list):
                    # The client hands back the raw text of a non-JSON content type (text/html).
                    raise _NotACompletion(type(response).__name__)
                if not response.choices:
                    ledger.record_tokens(response)  # billed even though there is nothing to use
                    raise _EmptyChoices
                ledger.record_response(response)
                return response
    except EndpointFailure:
        raise
    except Exception as exc:
        ledger.last_error = _describe(exc)
        transient = _is_transient(exc)
        reason = _describe(exc)
        if transient:
            reason = f"{reason} (gave up after {ledger.usage.requests} requests)"
        raise EndpointFailure(reason, transient=transient) from exc
    raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover


def _after(ledger: CallLedger) -> str:
    return f"; last failure: {ledger.last_error}" if ledger.last_error else ""
