"""Shared fixtures: an isolated home for every test, a fake OpenAI endpoint, sample data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bub_semantic_memory.models import Entity, PromptRef, Relation, Snapshot
from bub_semantic_memory.ontology import Ontology
from bub_semantic_memory.prompts import PromptLibrary, PromptTemplate
from bub_semantic_memory.testing import FakeOpenAIServer
from bub_semantic_memory.transport import RetryPolicy

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parents[1]
FAST = RetryPolicy(backoff_initial_s=0.01, backoff_max_s=0.02, request_timeout_s=5.0)
"""Short back-offs with the documented attempt bounds (5 transport attempts, 8 requests, 2 re-asks)."""


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own HOME and BUB_HOME, and no BUB_* or OPENAI_* settings leak in."""
    for name in list(os.environ):
        if name.startswith(("BUB_", "OPENAI_")):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BUB_HOME", str(home / ".bub"))
    return home


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def prompt_v1() -> PromptTemplate:
    return PromptLibrary().load("extract@1")


@pytest.fixture(scope="session")
def ontology(prompt_v1: PromptTemplate) -> Ontology:
    return prompt_v1.ontology


def make_snapshot(
    entities: list[Entity],
    relations: list[Relation] = (),  # type: ignore[assignment]
    *,
    tape: str = "tape",
    first: int = 1,
    last: int = 10,
    sha: str = "0" * 64,
) -> Snapshot:
    """A snapshot with the given content (helper for graph and store tests)."""
    return Snapshot(
        tape=tape,
        first_entry_id=first,
        last_entry_id=last,
        prompt=PromptRef(name="extract", version=1, sha256=sha),
        model="test-model",
        mode="tools",
        entities=tuple(entities),
        relations=tuple(relations),
    )
