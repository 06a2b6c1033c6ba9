"""What extraction is billed on a hosted endpoint, and the budget the gate holds a hosted candidate to."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from benchmarks.budget_tape import budget_fixture_files

from bub_semantic_memory._errors import GateError
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.evals import Fixture, load_fixtures
from bub_semantic_memory.evals.extraction import (
    BUDGET_TAPE,
    BUDGETS,
    Cost,
    RunOptions,
    billed_prompt,
    cached_prefix_tokens,
    load_budget_session,
    measure_cost,
    over_budget,
    promote,
)
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, RecordedRequest
from tests.conftest import REPO

FIXTURES = REPO / "evals" / "fixtures"


def test_a_prompt_is_cached_up_to_its_longest_prefix_shared_with_any_earlier_one() -> None:
    first, second, third = "abcdefgh" * 4, "abcdefgh" * 2 + "x" * 16, "abcdefgh" * 3 + "y" * 8
    # 32 characters are 8 tokens; the second shares 16 characters with the first, the third 24 with it
    assert cached_prefix_tokens([first, second, third]) == [
        0,
        estimate_tokens(first[:16]),
        estimate_tokens(first[:24]),
    ]


def test_the_billed_prompt_is_the_tools_then_the_messages() -> None:
    request = RecordedRequest(
        method="POST",
        path="/v1/chat/completions",
        headers={},
        raw=b"",
        received_at=0.0,
        body={
            "tools": [{"type": "function", "function": {"name": "T"}}],
            "messages": [{"role": "user", "content": "hi"}],
        },
    )
    billed = json.loads(billed_prompt(request))
    assert list(billed) == ["tools", "messages"] and billed["tools"][0]["function"]["name"] == "T"


def test_cost_ratios_are_per_token_of_the_tape() -> None:
    cost = Cost(tape_tokens=1000, requests=10, prompt_tokens=3000, message_tokens=2000, cached_tokens=1800)
    assert (cost.ratio, cost.message_ratio, cost.cached_share) == (3.0, 2.0, 0.6)
    assert cost.effective_ratio == pytest.approx((1200 + 0.1 * 1800) / 1000)
    assert over_budget(cost, "hosted") is None and over_budget(cost, "local") is None
    dear = Cost(tape_tokens=1000, requests=10, prompt_tokens=4100, message_tokens=2000, cached_tokens=0)
    assert "over the hosted budget of 4x" in str(over_budget(dear, "hosted"))
    assert over_budget(dear, "local") is None  # a local model is billed nothing


def test_the_committed_budget_session_is_the_benchmarks_200_turn_tape() -> None:
    directory = REPO / BUDGET_TAPE
    for name, text in budget_fixture_files().items():
        assert (directory / name).read_text(encoding="utf-8") == text, (
            "regenerate: python -m benchmarks.budget_tape"
        )


@pytest.fixture(scope="module")
def session() -> Fixture:
    return load_budget_session(REPO / "evals")


@pytest.mark.slow
async def test_a_hosted_request_is_billed_its_tool_schema(session: Fixture) -> None:
    cost = await measure_cost(PromptLibrary().load("extract@1"), session)
    assert cost.requests > 20  # the plugin's cadence over 200 turns
    assert cost.prompt_tokens > cost.message_tokens * 1.2  # the schema rides along with every request
    assert 0 < cost.cached_share < 1


@pytest.mark.slow
async def test_a_version_tuned_on_the_local_model_is_over_the_hosted_budget(session: Fixture) -> None:
    cost = await measure_cost(PromptLibrary().load("extract@9"), session)
    assert cost.ratio > BUDGETS["hosted"] * 2 and cost.cached_share < 0.2
    assert over_budget(cost, "hosted") is not None


@pytest.mark.slow
async def test_the_gate_refuses_an_expensive_hosted_candidate_before_running_any_fixture(
    tmp_path: Path,
) -> None:
    """A deliberately expensive candidate: extract@9 (three calls a window, per-window schemas)."""
    shutil.copytree(REPO / "prompts", tmp_path / "prompts")
    library = PromptLibrary(tmp_path / "prompts")
    quick = load_fixtures(FIXTURES, tags=["quick"])
    before = library.manifest()
    with FakeOpenAIServer(responder=OracleResponder.from_golds([f.gold for f in quick])) as server:
        options = RunOptions(
            extractor=ExtractorConfig(
                model="oracle", base_url=server.base_url, api_key="k", prompts_dir=library.root
            ),
            cache="off",
            progress=False,
        )
        with pytest.raises(
            GateError, match=r"extract@9 was not promoted for hosted models: .* over the hosted budget"
        ):
            await promote(library, library.load("extract@9"), quick, options, fixtures_dir=FIXTURES)
        assert server.requests == []  # refused on cost alone: no fixture was paid for
    assert library.manifest() == before
