"""The token-economy benchmark's per-call overhead cap holds for every strategy's requests."""

from __future__ import annotations

import pytest
from benchmarks.synthetic import make_tape
from benchmarks.token_economy import compare

from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.tape._transcript import Entry
from bub_semantic_memory.testing import FakeOpenAIServer


def every_turn(entries: list[Entry], watermark: int) -> bool:
    return True


# one released version of each strategy: single, two_step, classify, three_step, sweep
@pytest.mark.slow
@pytest.mark.parametrize("ref", ["extract@2", "extract@4", "extract@6", "extract@8", "extract@9"])
async def test_no_request_carries_more_fixed_overhead_than_the_cap_c(ref: str) -> None:
    """C is the largest step of the prompt's own strategy, so every request's overhead is within it."""
    prompt = PromptLibrary().load(ref)
    with FakeOpenAIServer() as server:
        result = await compare(make_tape(12), prompt, server, every_turn)
    assert result.ours.requests >= len(prompt.steps)
    assert result.ours.overhead_max <= result.cap, (
        f"{prompt} ({prompt.strategy}): a request carried {result.ours.overhead_max} tokens besides "
        f"its transcript, over C = {result.cap}"
    )
