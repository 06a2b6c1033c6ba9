"""Several bub workers on one PostgreSQL or Redis database, and a database that goes away and comes back."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from bub.hooks import hookimpl

from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores._store import SnapshotStore, fetch_tape, session_tape_name
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, RecordedRequest, Reply
from tests.conftest import REPO
from tests.helpers.bub_env import use_fake_extractor
from tests.helpers.bub_worker import city, fact, person
from tests.reliability._bub import BubRig
from tests.reliability._support import PROMPT
from tests.stores.conftest import Backend
from tests.stores.test_checkpoints import ONTOLOGY, state_of

SESSIONS = ("cli:w1", "cli:w2", "cli:w3")
TURNS = 30


def worker(backend: Backend, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.bub_worker", *args],
        cwd=REPO,
        env=backend.process_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> dict[str, int]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    return dict(json.loads(out.strip().splitlines()[-1]))


def oracle() -> OracleResponder:
    people = [{"name": person(s, t), "type": "person"} for s in SESSIONS for t in range(TURNS)]
    cities = [{"name": city(t), "type": "location"} for t in range(5)]
    relations = [
        {"source": person(s, t), "type": "lives_in", "target": city(t)}
        for s in SESSIONS
        for t in range(TURNS)
    ]
    return OracleResponder(entities=[*people, *cities], relations=relations)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql", "redis"], indirect=True)
async def test_workers_sharing_one_database_lose_and_duplicate_nothing(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer
) -> None:
    use_fake_extractor(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_CHECKPOINT_EVERY", "8")  # checkpoints race with the writers too
    fake_openai.responder = oracle()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with backend.open():
        pass  # the first client creates the SQL schema; workers started on an empty database race to (README)
    workers = [worker(backend, "turns", session, str(TURNS), str(workspace)) for session in SESSIONS]
    await asyncio.sleep(3)  # two more processes extract the first session's tape while its worker writes
    extractors = [worker(backend, "extract", SESSIONS[0], str(workspace)) for _ in range(2)]
    stats = [finish(p) for p in [*workers, *extractors]]
    assert all(s.get("extraction_failures", 0) == 0 and s.get("checkpoint_failures", 0) == 0 for s in stats)
    assert all(
        s.get("checkpoints", 0) >= 1 for s in stats[: len(SESSIONS)]
    )  # every 8 snapshots, amid the race

    async with backend.open() as store:
        for session in SESSIONS:
            tape = session_tape_name(session, workspace)
            entries = await fetch_tape(store, tape)
            assert [e.id for e in entries] == list(range(1, len(entries) + 1))  # no entry lost or doubled
            said = [str(e.payload.get("content", "")) for e in entries if e.payload.get("role") == "user"]
            assert len(said) == TURNS
            assert [sum(fact(session, t) in text for text in said) for t in range(TURNS)] == [1] * TURNS

            memory = SnapshotStore(store)
            loaded = await memory.load_graph(tape, ONTOLOGY)
            snapshots, report = await memory.load(tape)
            assert report.issues == [] and loaded.report.issues == []
            assert loaded.checkpoint_through > 0 and loaded.tail_snapshots < len(snapshots)
            single = [s for i, s in enumerate(snapshots) if s.id not in {x.id for x in snapshots[:i]}]
            assert state_of(loaded.graph) == state_of(MemoryGraph.fold(single, ONTOLOGY, tape=tape))
            graph = loaded.graph
            assert graph.watermark == entries[-1].id or graph.watermark >= max(
                e.id for e in entries if e.payload.get("role") == "user"
            )
            people = {e.name for e in graph.entities() if e.type == "person"}
            assert people == {person(session, t) for t in range(TURNS)}  # every fact, once
            lives = {(r.source, r.target) for r in graph.relations(current_only=True) if r.type == "lives_in"}
            assert len(lives) == TURNS


class StoreProvider:
    """Gives the bub rig the matrix store (what the store plugin's hook does in a bub process)."""

    def __init__(self, store: object) -> None:
        self.store = store

    @hookimpl
    def provide_tape_store(self) -> object:
        return self.store


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql", "redis"], indirect=True)
async def test_a_database_that_goes_away_mid_turn_costs_no_turn_and_the_backlog_is_extracted_once(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer
) -> None:
    use_fake_extractor(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PROMPT", PROMPT)
    facts = OracleResponder(
        entities=[
            {"name": "Maya Lin", "type": "person"},
            {"name": "Lisbon", "type": "location"},
            {"name": "Tom Ruiz", "type": "person"},
            {"name": "Porto", "type": "location"},
        ],
        relations=[
            {"source": "Maya Lin", "type": "lives_in", "target": "Lisbon"},
            {"source": "Tom Ruiz", "type": "lives_in", "target": "Porto"},
        ],
    )
    server = backend.server
    assert server is not None
    outage = {"armed": False, "stopped": 0}

    def respond(request: RecordedRequest) -> Reply:
        if outage["armed"]:  # the database goes away while this extraction is in flight
            outage["armed"] = False
            server.stop()
            outage["stopped"] += 1
        return facts(request)

    fake_openai.responder = respond
    rig = BubRig(tmp_path, fake_openai, tmp_path / "workspace")
    async with backend.open() as store:
        rig.framework.plugin_manager.register(StoreProvider(store), name="matrix-store")
        async with rig.framework.running():
            await rig.turn("Hi, I'm Maya Lin and I live in Lisbon.")
            await rig.idle()
            outage["armed"] = True
            result = await rig.turn("My friend Tom Ruiz lives in Porto.")
            await rig.idle()
            assert outage["stopped"] == 1 and rig.plugin.stats["extraction_failures"] == 1
            server.start()
            await rig.turn("Where does Tom live?")
            await rig.idle()
        snapshots, report = await SnapshotStore(store).load(rig.tape())
        entries = await fetch_tape(store, rig.tape())
    assert result is not None and rig.observer.errors == []  # the agent's turns all completed
    assert report.issues == [] and len(snapshots) == 2
    ranges = sorted((s.first_entry_id, s.last_entry_id) for s in snapshots)
    assert ranges[0][1] + 1 == ranges[1][0]  # the backlog extracted once: no overlap, no gap
    graph = MemoryGraph.fold(snapshots, ONTOLOGY)
    assert {e.name for e in graph.entities()} == {"Maya Lin", "Lisbon", "Tom Ruiz", "Porto"}
    user_ids = [e.id for e in entries if e.payload.get("role") == "user"]
    assert graph.watermark >= user_ids[-1]
