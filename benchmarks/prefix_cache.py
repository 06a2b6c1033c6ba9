"""8. Prefix cache: how much of each prompt a provider's prefix cache can serve.

Providers bill the part of a prompt that repeats the start of an earlier prompt at a
fraction of the price (automatic prefix caching on OpenAI, DeepSeek, vLLM, llama.cpp).
For each request this section measures the tokens of its longest common prefix with the
previous request of the same caller: what a prefix cache can serve at best.

* **Agent calls**: synthetic sessions of 50 and 200 turns (:mod:`benchmarks.synthetic`,
  their user messages and replies; no tool rounds) are replayed turn by turn through a real
  ``BubFramework`` with bub's builtin hooks, whose agent model is a recorder that answers the
  turn's reply and keeps the messages bub built for the call. Three runs side by side:
  without the plugin, with it (``placement = "message"``, the default), and with it placing
  the block in the system message (``placement = "system"``, 0.2.0's design). With the plugin,
  extraction runs in the background as in production, against a fake endpoint answering
  from the session's facts, so the memory grows during the session.
* **Extraction requests** of the same run, in the order they were sent (the tool schema
  first, then the messages, as providers place tools before the conversation).

A prompt is the JSON of its messages (and tools); its common prefix with the previous one is
taken character by character and counted with :func:`estimate_tokens`. Effective cost =
uncached tokens + ``CACHED_PRICE`` × cached tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bub.framework import BubFramework
from bub.hooks import hookimpl
from bub.hooks.interception import LlmCallDecision, LlmCallRequest

from benchmarks.common import BenchConfig, Section, Table, isolated_env, temp_dir
from benchmarks.synthetic import SyntheticTape, make_tape
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.plugin import SemanticMemoryPlugin
from bub_semantic_memory.tape._transcript import render_transcript, strip_bub_header
from bub_semantic_memory.testing import (
    FakeOpenAIServer,
    OracleResponder,
    RecordedRequest,
    SchemaFollowingOracle,
)

__all__ = ["run"]

CACHED_PRICE = 0.1
"""Price of a cached prompt token relative to an uncached one (OpenAI and DeepSeek bill 0.1-0.5)."""
TARGET_POINTS = 5.0
EXTRACTOR_SHARE_TARGET = 0.8
EXTRACTOR_TAPE_RATIO_TARGET = 4.0
SESSION = "bench:prefix"


@dataclass
class PrefixLedger:
    """Prompt tokens of a sequence of requests, and how many a prefix cache could serve."""

    total: list[int] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)

    def add(self, previous: str | None, prompt: str) -> None:
        self.total.append(estimate_tokens(prompt))
        shared = _common_prefix_length(previous, prompt) if previous is not None else 0
        self.cached.append(estimate_tokens(prompt[:shared]))

    @classmethod
    def of(cls, prompts: list[str]) -> PrefixLedger:
        ledger = cls()
        for previous, prompt in zip([None, *prompts], prompts, strict=False):
            ledger.add(previous, prompt)
        return ledger

    @property
    def share(self) -> float:
        """Cached tokens over all prompt tokens (the first request counts: nothing is cached for it)."""
        return sum(self.cached) / sum(self.total) if self.total else 0.0

    @property
    def effective_cost(self) -> float:
        return sum(t - c + CACHED_PRICE * c for t, c in zip(self.total, self.cached, strict=True))


def _common_prefix_length(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` share from their start (binary search on slices: fast on long prompts)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class RecordingModel:
    """The agent's model: answers each turn's reply and keeps the messages of every call."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.calls: list[list[dict[str, Any]]] = []

    @hookimpl
    def before_llm_call(self, request: LlmCallRequest, state: dict[str, Any]) -> LlmCallDecision:
        self.calls.append([dict(m) for m in request.messages])
        return LlmCallDecision.finish(self.replies[min(len(self.calls), len(self.replies)) - 1])


@dataclass
class SessionRun:
    agent: PrefixLedger
    extractor: PrefixLedger
    extraction_requests: int
    extraction_content_tokens: int
    """Tokens of the extraction messages' content alone, counted as section 1 counts them."""
    injected: int
    """Agent calls that carried a new memory note."""


def _turns(tape: SyntheticTape) -> tuple[list[str], list[str]]:
    users = [
        strip_bub_header(str(e.payload["content"]))[0]
        for e in tape.entries
        if e.kind == "message" and e.payload.get("role") == "user"
    ]
    replies = [
        str(e.payload["content"])
        for e in tape.entries
        if e.kind == "message" and e.payload.get("role") == "assistant"
    ]
    return users, replies


def _extraction_prompt(request: RecordedRequest) -> str:
    return json.dumps({"tools": request.body.get("tools"), "messages": request.messages}, ensure_ascii=False)


async def _replay(
    tape: SyntheticTape, root: Path, *, plugin: bool, placement: str, prompt: str
) -> SessionRun:
    from bub.channels.message import ChannelMessage

    users, replies = _turns(tape)
    oracle = SchemaFollowingOracle(
        OracleResponder.from_golds([{"entities": tape.entities, "relations": tape.relations}])
    )
    with FakeOpenAIServer(responder=oracle) as server:
        settings = {
            "BUB_MODEL": "openai:agent-model",
            "BUB_API_KEY": "agent-key",
            "BUB_SEMANTIC_MEMORY_MODEL": "bench-extractor",
            "BUB_SEMANTIC_MEMORY_BASE_URL": server.base_url,
            "BUB_SEMANTIC_MEMORY_API_KEY": "extractor-key",
            "BUB_SEMANTIC_MEMORY_PLACEMENT": placement,
            "BUB_SEMANTIC_MEMORY_PROMPT": prompt,
        }
        with isolated_env(root / "home", **settings):
            framework = BubFramework(config_file=root / "config.yml")
            framework.workspace = (root / "workspace").resolve()
            framework.workspace.mkdir(parents=True, exist_ok=True)
            framework.load_builtin_hooks()
            memory: SemanticMemoryPlugin | None = None
            if plugin:
                memory = SemanticMemoryPlugin(framework)
                framework.plugin_manager.register(memory, name="semantic-memory")
            model = RecordingModel(replies)
            framework.plugin_manager.register(model, name="recording-model")
            async with framework.running():
                for text in users:
                    await framework.process_inbound(
                        ChannelMessage(session_id=SESSION, channel="cli", chat_id="bench", content=text)
                    )
                    if memory is not None:  # let the background extraction land, as between real turns
                        for task in memory.memory.running():
                            await task
        extraction = [r for r in server.requests if r.tool_schema_name() is not None]
    agent = PrefixLedger.of([json.dumps(call, ensure_ascii=False) for call in model.calls])
    notes = [sum("<memory>" in str(m.get("content")) for m in call) for call in model.calls]
    injected = sum(1 for before, now in zip([0, *notes], notes, strict=False) if now > before)
    content = sum(estimate_tokens(str(m.get("content", ""))) for r in extraction for m in r.messages)
    extractor = PrefixLedger.of([_extraction_prompt(r) for r in extraction])
    return SessionRun(agent, extractor, len(extraction), content, injected)


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


async def run(config: BenchConfig) -> Section:
    section = Section(8, "Prefix cache")
    section.method = (
        "Synthetic sessions replayed turn by turn through a real `BubFramework` (builtin hooks, a "
        "recording agent model that answers the session's replies) without the plugin, with it (memory "
        "notes between turns, the default) and with the block in the system message (0.2.0's placement); "
        "extraction in the background against a fake endpoint answering from the session's facts. For "
        "every request, the tokens of its longest common prefix with the previous request of the same "
        "caller (agent calls; extraction requests, tool schema first) over its prompt tokens; "
        "`estimate_tokens` over the JSON of the messages. "
        f"Effective cost: uncached + {CACHED_PRICE} × cached tokens."
    )
    sizes = (12, 30) if config.quick else (50, 200)
    agent_table = Table(
        "Agent calls: prompt tokens a prefix cache can serve",
        [
            "turns",
            "calls",
            "without plugin: cached share",
            "plugin, memory notes: cached share",
            "plugin, memory in system message: cached share",
            "memory notes: Δ points",
            "effective cost, memory notes / without",
            "effective cost, system message / without",
            "calls with a new note",
        ],
    )
    extractor_table = Table(
        "Extraction requests of the same sessions (memory-notes run)",
        [
            "turns",
            "tape tokens",
            "requests",
            "message tokens (as section 1)",
            "message tokens / tape tokens",
            "with tool schema / tape tokens",
            "cached share",
            "effective cost / tape tokens",
        ],
    )
    with temp_dir("prefix") as root:
        for turns in sizes:
            tape = make_tape(turns)
            runs = {
                name: await _replay(
                    tape,
                    root / f"{turns}-{name}",
                    plugin=name != "without",
                    placement=placement,
                    prompt=config.prompt,
                )
                for name, placement in (("without", "message"), ("message", "message"), ("system", "system"))
            }
            without, message, system = runs["without"], runs["message"], runs["system"]
            delta = 100 * (without.agent.share - message.agent.share)
            agent_table.rows.append(
                [
                    turns,
                    len(message.agent.total),
                    _pct(without.agent.share),
                    _pct(message.agent.share),
                    _pct(system.agent.share),
                    f"{delta:+.1f}",
                    f"{message.agent.effective_cost / without.agent.effective_cost:.2f}×",
                    f"{system.agent.effective_cost / without.agent.effective_cost:.2f}×",
                    f"{message.injected} of {len(message.agent.total)}",
                ]
            )
            tape_tokens = estimate_tokens(render_transcript(tape.entries).text())
            extractor = message.extractor
            ratio = message.extraction_content_tokens / tape_tokens
            extractor_table.rows.append(
                [
                    turns,
                    f"{tape_tokens:,}",
                    message.extraction_requests,
                    f"{message.extraction_content_tokens:,}",
                    f"{ratio:.2f}×",
                    f"{sum(extractor.total) / tape_tokens:.2f}×",
                    _pct(extractor.share),
                    f"{extractor.effective_cost / tape_tokens:.2f}×",
                ]
            )
            section.row(
                f"{turns} turns: agent calls' cached share, with plugin vs without",
                f"{_pct(message.agent.share)} vs {_pct(without.agent.share)} ({delta:+.1f} points)",
                f"within {TARGET_POINTS:.0f} points" if turns == sizes[-1] else "",
                abs(delta) <= TARGET_POINTS if turns == sizes[-1] else None,
                f"memory in the system message instead: {_pct(system.agent.share)}; effective cost at "
                "cached price "
                f"{CACHED_PRICE}: {message.agent.effective_cost / without.agent.effective_cost:.2f}× "
                "(message) vs "
                f"{system.agent.effective_cost / without.agent.effective_cost:.2f}× (system) the run "
                "without plugin",
                kind="share",
            )
            if turns == sizes[-1]:
                section.row(
                    f"{turns} turns: extraction requests' cached share",
                    _pct(extractor.share),
                    f"≥ {EXTRACTOR_SHARE_TARGET:.0%}",
                    extractor.share >= EXTRACTOR_SHARE_TARGET,
                    f"{message.extraction_requests} requests with the plugin's default cadence",
                    kind="share",
                )
                section.row(
                    f"{turns} turns: extractor prompt tokens / tape tokens",
                    f"{ratio:.2f}×",
                    f"≤ {EXTRACTOR_TAPE_RATIO_TARGET:.0f}×",
                    ratio <= EXTRACTOR_TAPE_RATIO_TARGET,
                    f"{message.extraction_content_tokens:,} message tokens for a {tape_tokens:,}-token "
                    "tape, counted as "
                    f"section 1 counts them; {sum(extractor.total) / tape_tokens:.2f}× with the tool "
                    "schema's JSON; "
                    f"effective {extractor.effective_cost / tape_tokens:.2f}× at cached price {CACHED_PRICE}",
                    kind="ratio",
                )
    section.tables.extend([agent_table, extractor_table])
    section.notes.append(
        "The memory block is rendered exactly as before (section 3's budget and answer survival apply "
        "unchanged); "
        "only its place in the request moved. A block in the system message changes the first message "
        "whenever "
        "the question or the memory changes, and with it the cache key of everything after it."
    )
    return section
