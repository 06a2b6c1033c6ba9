"""Hosted extraction requests keep a provider's prefix cache: what repeats comes first, byte for byte."""

from __future__ import annotations

import json

import pytest

from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, SchemaFollowingOracle
from tests.conftest import REPO


@pytest.mark.parametrize("ref", ["extract@12", "extract@14"])
async def test_a_compact_hosted_version_sends_the_same_tools_and_system_message_with_every_window(
    ref: str,
) -> None:
    (fixture,) = load_fixtures(REPO / "evals" / "fixtures", ids=["long-tape-account-desk"])
    entries = fixture.entries()
    oracle = SchemaFollowingOracle(OracleResponder.from_golds([fixture.gold]))
    with FakeOpenAIServer(responder=oracle) as server:
        config = ExtractorConfig(
            model="hosted-model", base_url=server.base_url, api_key="k", prompt=ref, chunk_tokens=300
        )
        async with Extractor(config) as extractor:
            snapshots = await extractor.extract(entries, tape=fixture.id)
        requests = [r for r in server.requests if r.tool_schema_name() is not None]
    assert len(snapshots) >= 4 and len(requests) == len(snapshots), "one request per window"
    assert any(s.entities for s in snapshots[:-1]), "later windows list entities already known"
    tools = {json.dumps(r.body["tools"], ensure_ascii=False) for r in requests}
    assert len(tools) == 1, "the tool schema (billed with every request) changed between windows"
    roles = {tuple(m["role"] for m in r.messages) for r in requests}
    assert roles == {("system", "user")}
    systems = {r.messages[0]["content"] for r in requests}
    assert len(systems) == 1, "the system message changed between windows"
    users = [r.messages[1]["content"] for r in requests]
    assert len(set(users)) == len(users), "each window's own data is in its user message"
    for request in requests:
        transcript = request.transcript()
        assert transcript and transcript in request.messages[1]["content"]
        assert "<transcript>" not in request.messages[0]["content"]
