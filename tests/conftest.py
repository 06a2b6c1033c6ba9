"""Shared fixtures: an isolated home for every test, a fake OpenAI endpoint, sample data."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bub_semantic_memory._models import Entity, PromptRef, Relation, Snapshot
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.backends._transport import RetryPolicy
from bub_semantic_memory.extraction._prompts import PromptLibrary, PromptTemplate
from bub_semantic_memory.tape._transcript import Entry, TranscriptLine, render_transcript
from bub_semantic_memory.testing import FakeOpenAIServer
from tests.helpers.store_plugins import mask_store_plugins
from tests.reliability._report import Outcomes
from tests.stores.servers import PostgresServer, RedisServer, Server

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parents[1]
STORE_PLUGINS = REPO / ".stores"
"""bub's SQL and Redis tape-store plugins, installed here by ``make stores`` (not into the environment:
there bub would pick a store no server backs). The tests put it on the path; the masks in
:mod:`tests.helpers.store_plugins` decide which store a bub process sees."""
if STORE_PLUGINS.is_dir() and str(STORE_PLUGINS) not in sys.path:
    sys.path.append(str(STORE_PLUGINS))
FAST = RetryPolicy(backoff_initial_s=0.01, backoff_max_s=0.02, request_timeout_s=5.0)
"""Short back-offs with the documented attempt bounds (5 transport attempts, 8 requests, 2 re-asks)."""


_COLLECTED: list[Outcomes] = []
"""The reliability report's collectors (``RELIABILITY_REPORT=docs/reliability.md``, see
``tests/reliability/_report.py``): any test may count outcomes by asking for ``outcomes``."""


@pytest.fixture(scope="session", autouse=True)
def outcomes() -> Iterator[Outcomes]:
    """Counted outcomes of this session; written to ``$RELIABILITY_REPORT`` at the end, if set."""
    target = os.environ.get("RELIABILITY_REPORT")
    path = Path(target).resolve() if target else None  # resolved now: tests may chdir
    collected = Outcomes()
    _COLLECTED.append(collected)
    started = time.monotonic()
    yield collected
    _COLLECTED.remove(collected)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        previous = path.read_text(encoding="utf-8") if path.exists() else ""
        path.write_text(
            collected.render(wall_s=time.monotonic() - started, previous=previous), encoding="utf-8"
        )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count the suite's passes and failures for the report header."""
    for collected in _COLLECTED:
        if hasattr(report, "wasxfail"):
            if report.when == "call":
                collected.xfailed.append((report.nodeid.split("::")[-1], str(report.wasxfail)))
        elif report.when == "call" or (report.when == "setup" and report.failed):
            collected.passed += report.passed
            collected.failed += report.failed


@pytest.fixture(scope="session")
def file_store_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``PYTHONPATH`` entry hiding bub's SQL and Redis store plugins (see ``tests/helpers/store_plugins``)."""
    return mask_store_plugins(tmp_path_factory.mktemp("file-store-only"))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_store_only: Path) -> Path:
    """Each test gets its own HOME and BUB_HOME, and no BUB_* or OPENAI_* settings leak in.

    bub runs on its file store, as with no store plugin installed, in this process and in
    the bub processes tests start (the store matrix in ``tests/stores`` picks other stores).
    """
    for name in list(os.environ):
        if name.startswith(("BUB_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.syspath_prepend(str(file_store_only))
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(
            filter(None, [str(file_store_only), os.environ.get("PYTHONPATH"), str(STORE_PLUGINS)])
        ),
    )
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BUB_HOME", str(home / ".bub"))
    return home


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server[PostgresServer]]:
    """A PostgreSQL server for the session, started on first use (the store matrix, the erasure matrix)."""
    server = Server(PostgresServer, "PostgreSQL")
    yield server
    if server.instance is not None:
        server.instance.close()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Server[RedisServer]]:
    """A Redis server for the session, started on first use."""
    server = Server(RedisServer, "Redis")
    yield server
    if server.instance is not None:
        server.instance.close()


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


def rendered_lines(*turns: tuple[int, str, str]) -> tuple[TranscriptLine, ...]:
    """Transcript lines as the renderer makes them, from ``(entry id, speaker, text)``.

    ``speaker`` is ``user``, ``assistant`` or a named sender (a user message whose bub
    header carries ``sender_id``).
    """
    entries = []
    for entry_id, speaker, text in turns:
        role = "assistant" if speaker == "assistant" else "user"
        content = text if speaker in ("user", "assistant") else f"sender_id={speaker}|channel=cli\n{text}"
        entries.append(Entry(entry_id, "message", {"role": role, "content": content}))
    return render_transcript(entries).lines
