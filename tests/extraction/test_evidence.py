"""Every entity and relation a small model's extraction stores carries the lines that state it.

A grammar-constrained model skips an optional list, so the 1.5B model answered every relation
without evidence (0 of 198 on a 187-turn conversation): a relation then has no date, no line a
note or ``memory.search`` can quote, and no line for a forget to hide. The stand-in model here
answers as such a model does: the gold items, with no evidence at all.
"""

from __future__ import annotations

import pytest

from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory.backends._local_models import REGISTRY
from bub_semantic_memory.backends._transport import BackendTraits, OpenAIBackend
from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.tape._transcript import render_transcript
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, SchemaFollowingOracle
from tests.conftest import REPO

LOCAL = BackendTraits(
    in_process=True, grammar_constrained=True, context_tokens=REGISTRY["qwen2.5-coder-1.5b"].context_tokens
)


class GrammarConstrained(OpenAIBackend):
    """The fake endpoint behind the traits of the embedded model (a grammar-constrained local model)."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        super().__init__(base_url=server.base_url, api_key="k", timeout_s=10)
        self.traits = LOCAL


@pytest.mark.parametrize("fixture_id", ["aliases-robert-goes-by-bob", "temporal-moved-berlin-to-lisbon"])
async def test_a_local_class_extraction_stores_evidence_for_every_entity_and_relation(
    fixture_id: str,
) -> None:
    (fixture,) = load_fixtures(REPO / "evals" / "fixtures", ids=[fixture_id])
    oracle = SchemaFollowingOracle(OracleResponder.from_golds([fixture.gold]))  # answers carry no evidence
    with FakeOpenAIServer(responder=oracle) as server:
        async with Extractor(ExtractorConfig(model="local"), backend=GrammarConstrained(server)) as extractor:
            assert extractor.prompt.version == 9  # the local class's promoted version
            snapshots = await extractor.extract(fixture.entries(), tape=fixture.id)
    lines = {line.entry_id: fold_text(line.speech) for line in render_transcript(fixture.entries()).lines}
    entities = {e.key: e for s in snapshots for e in s.entities}
    relations = [r for s in snapshots for r in s.relations]
    assert entities and relations
    assert all(entity.evidence for entity in entities.values())
    for relation in relations:
        assert relation.evidence, relation
        ends = [entities[key] for key in (relation.source, relation.target) if key in entities]
        for turn in relation.evidence:  # each line names one end at least (both, where one line does)
            assert any(is_mentioned(name, lines[turn]) for end in ends for name in end.names())
