"""What a prompt version costs on a hosted endpoint, as billed, over a whole session.

A hosted provider bills every request's prompt: the tool definitions (the JSON schema
Instructor sends) as well as the messages. It bills the part of a prompt that repeats the
start of an earlier request at a lower price (prefix caching). A local model, whose schema
is a grammar and never enters the prompt, is billed nothing, which is how a version tuned
on the local model made hosted extraction eight times dearer without any report saying so.

:func:`measure_cost` replays a session tape turn by turn through the agent layer's
:class:`~bub_semantic_memory.agent.MemoryService` with the plugin's default cadence, against
a fake OpenAI-compatible endpoint that answers from the session's facts (the hosted code
path: requests go over HTTP with their tool schemas), and counts each request's billed
prompt: the JSON of its tools and messages, tools first (as providers place them), with
:func:`~bub_semantic_memory._tokens.estimate_tokens`. The cached part of a request is its
longest common prefix with any earlier request of the session (providers keep many cached
prefixes for minutes; this is the best a provider's cache can do, without its block
granularity). Effective cost = uncached tokens + :data:`CACHED_PRICE` x cached tokens.

:data:`BUDGETS` is the ratchet the promotion gate cannot walk around: billed prompt
tokens per tape token, on :data:`BUDGET_TAPE` (the benchmarks' 200-turn session), for
each model class that is billed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bub_semantic_memory._errors import EvalError
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.backends import ModelClass
from bub_semantic_memory.evals._dataset import Fixture
from bub_semantic_memory.extraction import Extractor, ExtractorConfig, PromptTemplate
from bub_semantic_memory.tape import render_transcript
from bub_semantic_memory.testing import (
    FakeOpenAIServer,
    OracleResponder,
    RecordedRequest,
    SchemaFollowingOracle,
)

__all__ = [
    "BUDGETS",
    "BUDGET_TAPE",
    "CACHED_PRICE",
    "Cost",
    "billed_prompt",
    "cached_prefix_tokens",
    "common_prefix_length",
    "load_budget_session",
    "measure_cost",
    "over_budget",
]

CACHED_PRICE = 0.1
"""Price of a cached prompt token relative to an uncached one (OpenAI and DeepSeek bill 0.1-0.5)."""
BUDGETS: Mapping[ModelClass, float] = {"hosted": 4.0}
"""Billed prompt tokens (tool schemas included) per token of the tape, at most, per billed class."""
BUDGET_TAPE = Path("evals/budget/session-200")
"""The session the budget is measured on: the benchmarks' 200-turn synthetic tape and its facts."""


def load_budget_session(evals_dir: Path = BUDGET_TAPE.parents[1]) -> Fixture:
    """The budget session under ``evals_dir`` (the repository's ``evals/``).

    Raises:
        FixtureError: it is missing or malformed.
    """
    from bub_semantic_memory.evals._dataset import load_fixtures

    directory = evals_dir / BUDGET_TAPE.relative_to(BUDGET_TAPE.parents[1])
    return load_fixtures(directory.parent, ids=[directory.name])[0]


@dataclass(frozen=True)
class Cost:
    """Billed prompt tokens of one session's extraction.

    Attributes:
        tape_tokens: tokens of the tape's transcript (what the model has to read at least once).
        requests: extraction requests sent.
        prompt_tokens: billed prompt tokens: tool definitions and messages.
        message_tokens: the messages' content alone (what a local model is shown).
        cached_tokens: the part of ``prompt_tokens`` a prefix cache can serve.
    """

    tape_tokens: int
    requests: int
    prompt_tokens: int
    message_tokens: int
    cached_tokens: int

    @property
    def ratio(self) -> float:
        """Billed prompt tokens per tape token."""
        return self.prompt_tokens / self.tape_tokens

    @property
    def message_ratio(self) -> float:
        """Message tokens per tape token (schemas left out)."""
        return self.message_tokens / self.tape_tokens

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def effective_ratio(self) -> float:
        """Effective cost per tape token: uncached tokens plus cached ones at :data:`CACHED_PRICE`."""
        uncached = self.prompt_tokens - self.cached_tokens
        return (uncached + CACHED_PRICE * self.cached_tokens) / self.tape_tokens

    def summary(self) -> str:
        return (
            f"{self.requests} requests, {self.ratio:.2f}x the tape's {self.tape_tokens:,} tokens with "
            f"the tool schemas ({self.message_ratio:.2f}x without), {self.cached_share:.1%} cached, "
            f"effective {self.effective_ratio:.2f}x at cached price {CACHED_PRICE}"
        )


def over_budget(
    cost: Cost, model_class: ModelClass, budgets: Mapping[ModelClass, float] = BUDGETS
) -> str | None:
    """Why ``cost`` is over its class's budget, or None (within it, or the class is not billed)."""
    budget = budgets.get(model_class)
    if budget is None or cost.ratio <= budget:
        return None
    return (
        f"it sends {cost.ratio:.2f}x the session's tokens with the tool schemas, over the {model_class} "
        f"budget of {budget:g}x ({cost.summary()})"
    )


def billed_prompt(request: RecordedRequest) -> str:
    """What a provider bills of a request's prompt: its tools, then its messages, as JSON."""
    return json.dumps({"tools": request.body.get("tools"), "messages": request.messages}, ensure_ascii=False)


def cached_prefix_tokens(prompts: Sequence[str]) -> list[int]:
    """For each prompt, the tokens of its longest common prefix with any earlier prompt."""
    cached = []
    for index, prompt in enumerate(prompts):
        shared = max((common_prefix_length(earlier, prompt) for earlier in prompts[:index]), default=0)
        cached.append(estimate_tokens(prompt[:shared]))
    return cached


def common_prefix_length(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` share from their start (binary search on slices: fast on long prompts)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


async def measure_cost(
    prompt: PromptTemplate, session: Fixture, *, config: ExtractorConfig | None = None
) -> Cost:
    """Replay ``session`` through the plugin's cadence on the hosted code path and count what is billed.

    Raises:
        EvalError: an extraction of the session failed (its cost would be understated).

    Args:
        prompt: the version to extract with.
        session: a tape with gold facts; the fake endpoint answers from them, trimmed to
            each request's schema (a model of cost, not of quality).
        config: the extractor settings to replay with (model, endpoint and prompt are
            replaced); when None, the defaults, built as the plugin builds its configuration
            (:meth:`ExtractorConfig.from_settings` with no setting given).
    """
    from bub_semantic_memory.evals.extraction._replay import replay_as_plugin

    entries = session.entries()
    oracle = SchemaFollowingOracle(OracleResponder.from_golds([session.gold]))
    with FakeOpenAIServer(responder=oracle) as server:
        probe = {"model": "cost-probe", "base_url": server.base_url, "api_key": "k", "prompt": prompt}
        extractor = Extractor(
            config.replace(**probe) if config is not None else ExtractorConfig.from_settings({}, **probe)
        )
        try:
            replayed = await replay_as_plugin(entries, extractor, prompt.ontology, tape=f"cost-{session.id}")
        finally:
            await extractor.aclose()
        if replayed.failures or replayed.uncovered_after is not None:
            raise EvalError(
                f"the cost of {prompt} cannot be measured: {replayed.failures} "
                "extraction(s) of the session failed (see the log)"
            )
        requests = [r for r in server.requests if r.tool_schema_name() is not None]
    prompts = [billed_prompt(r) for r in requests]
    return Cost(
        tape_tokens=estimate_tokens(render_transcript(entries).text()),
        requests=len(requests),
        prompt_tokens=sum(estimate_tokens(p) for p in prompts),
        message_tokens=sum(estimate_tokens(str(m.get("content", ""))) for r in requests for m in r.messages),
        cached_tokens=sum(cached_prefix_tokens(prompts)),
    )
