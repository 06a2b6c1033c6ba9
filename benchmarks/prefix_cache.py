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
* **Extraction requests**, as a hosted provider bills them, for the version promoted for
  each model class (and the run's ``--prompt``): the promotion gate's own measurement,
  :func:`bub_semantic_memory.evals.extraction._cost.measure_cost`, over the 200-turn session
  (``evals/budget/session-200``, the same synthetic tape), with the plugin's cadence. The
  hosted class's version must stay within the hosted budget (``--check`` fails CI when not).

An agent call's prompt is the JSON of its messages; its common prefix with the previous call
is taken character by character and counted with :func:`estimate_tokens`. Effective cost =
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

from benchmarks.common import REPO, BenchConfig, Row, Section, Table, isolated_env, temp_dir
from benchmarks.synthetic import SyntheticTape, make_tape
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.backends._transport import MODEL_CLASSES
from bub_semantic_memory.evals.extraction import (
    BUDGETS,
    CACHED_PRICE,
    Cost,
    common_prefix_length,
    load_budget_session,
    measure_cost,
    over_budget,
)
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.plugin import SemanticMemoryPlugin
from bub_semantic_memory.tape._transcript import strip_bub_header
from bub_semantic_memory.testing import (
    FakeOpenAIServer,
    OracleResponder,
    SchemaFollowingOracle,
)

__all__ = ["run"]

TARGET_POINTS = 5.0
EXTRACTOR_SHARE_TARGET = 0.6
EFFECTIVE_COST_TARGET = 2.0
SESSION = "bench:prefix"


@dataclass
class PrefixLedger:
    """Prompt tokens of a sequence of requests, and how many a prefix cache could serve."""

    total: list[int] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)

    def add(self, previous: str | None, prompt: str) -> None:
        self.total.append(estimate_tokens(prompt))
        shared = common_prefix_length(previous, prompt) if previous is not None else 0
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


async def _replay(
    tape: SyntheticTape, root: Path, *, plugin: bool, placement: str, config: BenchConfig
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
            **config.plugin_settings(),
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
    agent = PrefixLedger.of([json.dumps(call, ensure_ascii=False) for call in model.calls])
    notes = [sum("<memory>" in str(m.get("content")) for m in call) for call in model.calls]
    injected = sum(1 for before, now in zip([0, *notes], notes, strict=False) if now > before)
    return SessionRun(agent, injected)


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


async def extraction_costs(library: PromptLibrary, prompt: str) -> dict[str, tuple[str, Cost]]:
    """The billed cost of each class's own promotion (and of ``prompt``), by label.

    A class with no promotion of its own has no row: no version runs for it unless named
    (a hosted model never runs the version promoted for local models).
    """
    session = load_budget_session(REPO / "evals")
    manifest = library.manifest()
    versions: dict[str, str] = {}
    for model_class in MODEL_CLASSES:
        promotion = manifest.promotion("extract", model_class)
        if promotion is not None:
            versions[f"{model_class} class: extract@{promotion.version}"] = model_class
    if not any(label.endswith(prompt) for label in versions):
        versions[f"--prompt {prompt}"] = ""
    costs: dict[str, tuple[str, Cost]] = {}
    for label, billed_as in versions.items():
        ref = label.rsplit(" ", 1)[-1]
        costs[label] = (billed_as, await measure_cost(library.load(ref), session))
    return costs


def hosted_budget_rows(costs: dict[str, tuple[str, Cost]]) -> list[Row]:
    """The summary rows of the hosted class's promoted version: its budget (held by ``--check``)."""
    rows: list[Row] = []
    for label, (model_class, cost) in costs.items():
        if model_class != "hosted":
            continue
        version = label.split(": ")[-1]
        budget = BUDGETS["hosted"]
        rows += [
            Row(
                f"hosted class ({version}): extraction tokens with tool schemas / tape tokens",
                f"{cost.ratio:.2f}×",
                f"≤ {budget:g}× (the hosted budget)",
                over_budget(cost, "hosted") is None,
                f"{cost.summary()}; the promotion gate refuses a hosted candidate over this budget",
                kind="ratio",
                check=True,
            ),
            Row(
                f"hosted class ({version}): extraction requests' cached share",
                _pct(cost.cached_share),
                f"≥ {EXTRACTOR_SHARE_TARGET:.0%}",
                cost.cached_share >= EXTRACTOR_SHARE_TARGET,
                "the static part (tools, system message) over all billed prompt tokens",
                kind="share",
            ),
            Row(
                f"hosted class ({version}): extraction's effective cost / tape tokens",
                f"{cost.effective_ratio:.2f}×",
                f"≤ {EFFECTIVE_COST_TARGET:g}×",
                cost.effective_ratio <= EFFECTIVE_COST_TARGET,
                f"cached tokens at {CACHED_PRICE} of the price",
                kind="ratio",
            ),
        ]
    if not rows:
        rows.append(
            Row(
                "hosted class: extraction tokens with tool schemas / tape tokens",
                "no version promoted",
                f"≤ {BUDGETS['hosted']:g}× (the hosted budget)",
                None,
                "a hosted model extracts only with a version named (--prompt, the prompt setting) until "
                "one is promoted for hosted models by the gate, which holds it to the budget",
            )
        )
    return rows


async def run(config: BenchConfig) -> Section:
    section = Section(8, "Prefix cache")
    section.method = (
        "Synthetic sessions replayed turn by turn through a real `BubFramework` (builtin hooks, a "
        "recording agent model that answers the session's replies) without the plugin, with it (memory "
        "notes between turns, the default) and with the block in the system message (0.2.0's placement); "
        "extraction in the background against a fake endpoint answering from the session's facts. For "
        "every agent call, the tokens of its longest common prefix with the previous call over its prompt "
        "tokens; `estimate_tokens` over the JSON of the messages. Extraction as a hosted provider bills it "
        "(tool schemas included; cached: the longest prefix shared with any earlier request): the promotion "
        "gate's `measure_cost` over the 200-turn session `evals/budget/session-200` with the plugin's "
        "cadence, for the version promoted for each model class. Effective cost: uncached + "
        f"{CACHED_PRICE} × cached tokens."
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
    with temp_dir("prefix") as root:
        for turns in sizes:
            tape = make_tape(turns)
            runs = {
                name: await _replay(
                    tape,
                    root / f"{turns}-{name}",
                    plugin=name != "without",
                    placement=placement,
                    config=config,
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
    extractor_table = Table(
        "Extraction requests, billed as a hosted provider bills them (200-turn session, plugin's cadence)",
        [
            "prompt",
            "requests",
            "message tokens / tape",
            "with tool schemas / tape",
            "cached share",
            "effective cost / tape",
        ],
    )
    costs = await extraction_costs(config.library(), config.prompt)
    for label, (_, cost) in costs.items():
        extractor_table.rows.append(
            [
                label,
                cost.requests,
                f"{cost.message_ratio:.2f}×",
                f"{cost.ratio:.2f}×",
                _pct(cost.cached_share),
                f"{cost.effective_ratio:.2f}×",
            ]
        )
    section.rows += hosted_budget_rows(costs)
    section.tables.extend([agent_table, extractor_table])
    section.notes.append(
        "The memory block is rendered exactly as before (section 3's budget and answer survival apply "
        "unchanged); "
        "only its place in the request moved. A block in the system message changes the first message "
        "whenever "
        "the question or the memory changes, and with it the cache key of everything after it."
    )
    section.notes.append(
        "A local model is billed nothing (its schema is a grammar, never part of the prompt); its promoted "
        "version's row says what it would cost on a hosted endpoint, which is why each class has its own."
    )
    return section
