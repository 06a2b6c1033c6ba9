"""Shared machinery of the reliability suite: fault kinds, a fault-scheduling client, tapes.

A *call plan* says which fault each request of one extraction call meets (by the
request's number within the call). The client side (:class:`FaultRouter`, an
``httpx2`` transport under the OpenAI client) numbers every request of the call that
is current in the running task (a context variable), tags it with headers and, for
"connection refused", sends it to a closed port. The server side
(:meth:`FaultLab.respond`, the fake server's responder) answers with the scheduled
fault or, when there is none, with the oracle's correct answer. Both sides count
what they saw, so a test can compare what went over the wire with what the
extractor reports.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2

from bub_semantic_memory.backends._transport import RetryPolicy
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.tape._transcript import Entry
from bub_semantic_memory.testing import (
    CompletionReply,
    FakeOpenAIServer,
    OracleResponder,
    RecordedRequest,
    Reply,
    closed_port_url,
    delay_reply,
    empty_choices_reply,
    length_reply,
    raw_reply,
    refusal_reply,
    reset_reply,
    status_reply,
    tool_call_reply,
)
from tests.conftest import FAST

__all__ = [
    "FAST",
    "FAULTS",
    "PROMPT",
    "RETRY_AFTER_S",
    "TIMEOUT_POLICY",
    "CallPlan",
    "Facts",
    "FaultKind",
    "FaultLab",
    "fact_tape",
    "person",
    "recording_oracle",
]

PROMPT = "extract@2"
"""The prompt the suite pins (the one promoted for the plugin when the suite was written): released,
single-step (one model turn per window, so request counts are exact), free-text names (the oracle's and
the echo model's answers fit it). ``test_plugin_faults`` also runs the two-step ``extract@3``."""
TIMEOUT_POLICY = dataclasses.replace(FAST, request_timeout_s=0.5)
"""For read-timeout faults: the server holds the answer for 2 s, the client gives up after 0.5 s."""
RETRY_AFTER_S = 0.2
"""The ``Retry-After`` the 429 fault sends (longer than any back-off, so honouring it shows)."""
HELD_S = 2.0

type Facts = dict[str, list[dict[str, str]]]


# -- fault kinds ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultContext:
    request: RecordedRequest
    oracle: OracleResponder
    usage: tuple[int, int]
    attempt: int

    @property
    def tool(self) -> str:
        return self.request.tool_schema_name() or "Extraction"

    def correct(self) -> CompletionReply:
        reply = self.oracle(self.request)
        assert isinstance(reply, CompletionReply)
        return dataclasses.replace(reply, usage=self.usage)


@dataclass(frozen=True)
class FaultKind:
    """One way an endpoint can fail.

    ``layer`` says which retry layer owns it: ``transport`` (retried per request),
    ``validation`` (re-asked by Instructor), ``truncation`` (the window is split).
    ``reply`` is None for faults made on the client side (connection refused).
    """

    name: str
    layer: str
    reply: Callable[[FaultContext], Reply] | None


def _dangling(ctx: FaultContext) -> Reply:
    arguments = json.loads(ctx.correct().tool_calls[0].arguments)
    names = [e["name"] for e in arguments.get("entities", [])] or ["Zed Nowhere"]
    arguments["relations"] = [
        *arguments.get("relations", []),
        {"source": names[0], "type": "knows", "target": "Nadia Elsewhere"},
    ]
    return tool_call_reply(ctx.tool, arguments, usage=ctx.usage)


def _not_json(ctx: FaultContext) -> Reply:
    # A proxy's error page with status 200: half of them even claim to be JSON.
    content_type = "application/json" if ctx.attempt % 2 == 0 else "text/html; charset=utf-8"
    return raw_reply(b"<html><body><h1>Bad Gateway</h1></body></html>", content_type=content_type)


FAULTS: dict[str, FaultKind] = {
    kind.name: kind
    for kind in (
        FaultKind(
            "429 + Retry-After",
            "transport",
            lambda ctx: status_reply(429, headers={"Retry-After": f"{RETRY_AFTER_S:g}"}),
        ),
        FaultKind("429, no Retry-After", "transport", lambda ctx: status_reply(429)),
        FaultKind("500", "transport", lambda ctx: status_reply(500)),
        FaultKind("502", "transport", lambda ctx: status_reply(502)),
        FaultKind("503", "transport", lambda ctx: status_reply(503)),
        FaultKind("connection refused", "transport", None),
        FaultKind("reset mid-body", "transport", lambda ctx: reset_reply()),
        FaultKind("read timeout", "transport", lambda ctx: delay_reply(HELD_S, status_reply(500))),
        FaultKind("body not JSON", "transport", _not_json),
        FaultKind("empty choices", "transport", lambda ctx: empty_choices_reply(usage=ctx.usage)),
        FaultKind(
            "tool arguments not JSON",
            "validation",
            # Broken, not cut short (JSON that ends mid-way is truncation, and is split instead).
            lambda ctx: tool_call_reply(
                ctx.tool, '{"entities": [{"name": "A" "type": "person"}]}', usage=ctx.usage
            ),
        ),
        FaultKind(
            "schema-invalid arguments",
            "validation",
            lambda ctx: tool_call_reply(
                ctx.tool, {"entities": [{"name": 42, "type": "wizard"}], "relations": "none"}, usage=ctx.usage
            ),
        ),
        FaultKind("dangling relation endpoint", "validation", _dangling),
        FaultKind(
            "refusal in plain text",
            "validation",
            lambda ctx: refusal_reply("I'm sorry, but I can't help with that.", usage=ctx.usage),
        ),
        FaultKind(
            "finish_reason length",
            "truncation",
            lambda ctx: length_reply('{"entities": [{"name": "', ctx.tool, usage=ctx.usage),
        ),
    )
}


# -- call plans and the lab ----------------------------------------------------------------------


@dataclass
class CallPlan:
    """What each request of one extraction call meets, and what was seen of the call."""

    call_id: str
    oracle: OracleResponder
    fault_for: Callable[[int], str | None]
    number: int = 0
    sent: int = 0
    served_prompt: int = 0
    served_completion: int = 0
    faults_met: Counter[str] = field(default_factory=Counter)
    received_at: list[float] = field(default_factory=list)

    def usage_for(self, attempt: int) -> tuple[int, int]:
        """Distinct token counts per answer, so the accounting cannot pass by accident."""
        return 100 + 7 * attempt + self.number % 11, 20 + 3 * attempt + self.number % 5


_CURRENT: ContextVar[CallPlan | None] = ContextVar("reliability_call_plan", default=None)


class FaultRouter(httpx2.AsyncBaseTransport):
    """Numbers and tags each request of the current call; sends refused ones to a closed port."""

    def __init__(self, lab: FaultLab) -> None:
        self.lab = lab
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        plan = _CURRENT.get()
        if plan is None:
            raise RuntimeError("an extraction request outside a scheduled call")
        attempt = plan.sent
        plan.sent += 1
        request.headers["x-reliability-call"] = plan.call_id
        request.headers["x-reliability-attempt"] = str(attempt)
        if plan.fault_for(attempt) == "connection refused":
            plan.faults_met["connection refused"] += 1
            request.url = request.url.copy_with(port=self.lab.refused_port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class FaultLab:
    """The fake endpoint, its fault-scheduling clients, and the call plans they share."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self.server = server
        self.plans: dict[str, CallPlan] = {}
        self.refused_port = int(urlsplit(closed_port_url()).port or 9)
        self._lock = threading.Lock()
        self._numbers = iter(range(10**9))
        server.responder = self.respond

    def plan(self, call_id: str, oracle: OracleResponder, fault_for: Callable[[int], str | None]) -> CallPlan:
        with self._lock:
            plan = CallPlan(call_id, oracle, fault_for, number=next(self._numbers))
            self.plans[call_id] = plan
        return plan

    @staticmethod
    @contextlib.contextmanager
    def calling(plan: CallPlan) -> Iterator[CallPlan]:
        """Make ``plan`` the current call of this task (requests sent inside are scheduled by it)."""
        token = _CURRENT.set(plan)
        try:
            yield plan
        finally:
            _CURRENT.reset(token)

    def extractor(self, retry: RetryPolicy = FAST, **kwargs: Any) -> Extractor:
        client = httpx2.AsyncClient(transport=FaultRouter(self))
        config = ExtractorConfig(
            model="fake-extractor",
            base_url=self.server.base_url,
            api_key="test-key",
            prompt=PROMPT,
            retry=retry,
            **kwargs,
        )
        return Extractor(config, backend=config.open_backend(http_client=client))

    def respond(self, request: RecordedRequest) -> Reply:
        plan = self.plans[request.headers["x-reliability-call"]]
        attempt = int(request.headers["x-reliability-attempt"])
        plan.received_at.append(request.received_at)
        usage = plan.usage_for(attempt)
        fault = plan.fault_for(attempt)
        context = FaultContext(request, plan.oracle, usage, attempt)
        if fault is None or fault == "connection refused":
            reply: Reply = context.correct()
        else:
            plan.faults_met[fault] += 1
            make = FAULTS[fault].reply
            assert make is not None
            reply = make(context)
        if isinstance(reply, CompletionReply) and reply.usage is not None:
            plan.served_prompt += reply.usage[0]
            plan.served_completion += reply.usage[1]
        return reply


# -- tapes ---------------------------------------------------------------------------------------

_FIRST = [
    "Maya",
    "Omar",
    "Ines",
    "Kenji",
    "Priya",
    "Tomas",
    "Aiko",
    "Bruno",
    "Dalia",
    "Emeka",
    "Freya",
    "Goran",
    "Hana",
    "Ivo",
    "Jonas",
]
_LAST = [
    "Lindqvist",
    "Okafor",
    "Moreau",
    "Tanaka",
    "Rahman",
    "Novak",
    "Silva",
    "Keller",
    "Haddad",
    "Brennan",
    "Quispe",
    "Varga",
]
_ORGS = ("Globex", "Initech", "Hooli", "Vandelay Industries", "Cyberdyne", "Tyrell Labs", "Soylent Works")
_PROJECTS = (
    "Project Apollo",
    "Project Borealis",
    "Project Cobalt",
    "Project Dynamo",
    "Project Ember",
    "Project Falcon",
    "Project Granite",
)


def person(index: int) -> str:
    """A distinct full name per index (180 of them before repeating)."""
    return f"{_FIRST[index % len(_FIRST)]} {_LAST[(index // len(_FIRST)) % len(_LAST)]}"


def fact_tape(index: int, *, first_id: int = 1) -> tuple[list[Entry], Facts]:
    """A four-line conversation stating who works for which organisation and on which project."""
    who, org, project = person(index), _ORGS[index % len(_ORGS)], _PROJECTS[index % len(_PROJECTS)]
    n = first_id
    entries = [
        Entry(n, "message", {"role": "user", "content": f"{who} joined {org} last spring."}),
        Entry(n + 1, "message", {"role": "assistant", "content": "Noted."}),
        Entry(n + 2, "message", {"role": "user", "content": f"These days {who} works on {project}."}),
        Entry(n + 3, "message", {"role": "assistant", "content": "Got it, thanks."}),
        Entry(n + 4, "event", {"name": "run", "data": {"status": "ok"}}),
    ]
    facts: Facts = {
        "entities": [
            {"name": who, "type": "person"},
            {"name": org, "type": "organization"},
            {"name": project, "type": "project"},
        ],
        "relations": [
            {"source": who, "type": "works_for", "target": org},
            {"source": who, "type": "works_on", "target": project},
        ],
    }
    return entries, facts


def recording_oracle(
    facts: Sequence[Mapping[str, Any]], answered: list[list[int]]
) -> Callable[[RecordedRequest], Reply]:
    """The oracle for ``facts``, recording the transcript entry ids of every request in ``answered``."""
    oracle = OracleResponder.from_golds(facts)

    def respond(request: RecordedRequest) -> Reply:
        answered.append(request.transcript_entry_ids())
        return oracle(request)

    return respond
