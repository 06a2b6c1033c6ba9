"""Erasure that holds (issue 45): a purged person leaves no trace in any store's raw storage or output.

The matrix runs the scenario of :mod:`tests.reliability._erasure` on bub's file store, SQLite with a
rollback journal, SQLite in WAL mode with a second connection open, PostgreSQL and Redis. After
``forget --purge``, and after every path that writes memory (an extraction in flight during the
purge, her old entries extracted again under every form of her name, a checkpoint folded before
the purge, an import of an export written before it, an undo attempt), the raw bytes of every
file and table the store keeps, and every output (notes, ``memory search``, ``memory.search`` and
``memory.recall``, export, ``show``, ``edits``), are searched for her names, alias and private value.
Where the conversation shares a file with the memory (SQLite, PostgreSQL's heap, Redis's
append-only file), the traces found must be exactly those of the conversation's own rows: the
conversation is bub's and is not rewritten. The counts go to ``docs/reliability.md`` ("Erasure").

The other tests here are the issue's points 1-5 one by one, each on the store where it showed
(point 6, who may write, is in ``tests/plugin/test_forget_tool.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from bub import configure as bub_configure
from bub.store import AsyncTapeStore, FileTapeStore, TapeStore
from typer.testing import CliRunner

from bub_semantic_memory._errors import EditError
from bub_semantic_memory._models import Snapshot
from bub_semantic_memory.agent._editor import MemoryEditor
from bub_semantic_memory.agent._policy import MemoryPolicy
from bub_semantic_memory.agent._search import recall_entity, search_memory
from bub_semantic_memory.agent._service import MemoryService
from bub_semantic_memory.agent._setup import MemorySetup
from bub_semantic_memory.backends import HOSTED
from bub_semantic_memory.cli import app
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory._export import export_memory
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores._store import SnapshotStore, memory_tape_name
from tests.reliability import _erasure as scenario
from tests.reliability._erasure import TAPE, found, traces
from tests.reliability._report import Outcomes
from tests.stores.conftest import Backend, make_backend
from tests.stores.servers import PostgresServer, RedisServer, Server
from tests.stores.test_forget import append_entry

SECTION = "erasure"
ONTOLOGY = PromptLibrary().load("extract").ontology
VARIANTS = ("file", "sqlite", "sqlite-wal", "postgresql", "redis")
QUERIES = ("Alice", "Ali", "Ms. Chen", "who is allergic to penicillin?", "Bob Stone piano", "Chen offsite")
runner = CliRunner()


@pytest.fixture(params=VARIANTS)
def variant(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    postgres_server: Server[PostgresServer],
    redis_server: Server[RedisServer],
    file_store_only: Path,
) -> Iterator[tuple[str, Backend]]:
    """Each store of the matrix (as ``tests/stores``'s ``backend`` sets it up); ``sqlite-wal`` is SQLite
    in WAL mode with a second connection left open, as a running bub would."""
    name = str(request.param)
    chosen = make_backend(name.removesuffix("-wal"), tmp_path, postgres_server, redis_server)
    for key, value in chosen.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(sys, "path", [str(chosen.masks), *(p for p in sys.path if p != str(file_store_only))])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(chosen.masks), str(Path(sys.path[-1]))]))
    if name == "redis":
        _start_with_an_empty_redis(redis_server.get().url)
    other = None
    if name == "sqlite-wal":
        other = sqlite3.connect(chosen.home / "tapes.db", isolation_level=None)
        other.execute("PRAGMA journal_mode=WAL")
    yield name, chosen
    if other is not None:
        other.close()


def _start_with_an_empty_redis(url: str) -> None:
    """The server is shared with the store tests, whose own people (an Alice among them) are in its
    append-only files: emptied and rewritten, the files hold this test's data only."""
    import redis

    client = redis.Redis.from_url(url)
    client.flushall()
    client.bgrewriteaof()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        info = client.info("persistence")
        if not int(info.get("aof_rewrite_in_progress", 0)) and not int(info.get("aof_rewrite_scheduled", 0)):
            break
        time.sleep(0.1)
    client.close()


# -- the store's raw storage -----------------------------------------------------------------------

SHARED = ("tapes.db", "heap ", "AOF ")
"""Files the conversation shares with the memory: their traces are compared with the conversation's rows."""


async def raw_storage(backend: Backend, store: Any) -> tuple[dict[str, bytes], bytes]:
    """Every file, table or key of ``backend`` that holds the tape's memory, as bytes, by where; and the
    conversation's own rows as stored, for the files it shares with the memory."""
    sidecar = memory_tape_name(TAPE)
    raw: dict[str, bytes] = {}
    if backend.name == "file":
        for path in sorted((backend.home / "tapes").glob(f"{sidecar}*")):
            raw[path.name] = path.read_bytes()
        return raw, b""
    if backend.name == "redis":
        return await _redis_storage(backend, store)
    query = "SELECT t.name, e.payload, e.meta FROM tape_entries e JOIN tapes t ON t.id = e.tape_id"
    if backend.name == "postgresql":
        query = query.replace("e.payload, e.meta", "e.payload::text, e.meta::text")
    relations = (
        "'tape_entries'",
        "(SELECT reltoastrelid FROM pg_class WHERE relname = 'tape_entries')::regclass",
    )
    with store._engine.connect() as connection:
        rows = connection.exec_driver_sql(query).all()
        if backend.name == "postgresql":
            connection.exec_driver_sql("CHECKPOINT")  # the heap's pages are written to its files
            paths = [
                connection.exec_driver_sql(f"SELECT pg_relation_filepath({r})").scalar() for r in relations
            ]
    raw["sidecar rows"] = "\n".join(f"{p} {m}" for n, p, m in rows if n == sidecar).encode()
    conversation = "\n".join(f"{p} {m}" for n, p, m in rows if n != sidecar).encode()
    if backend.name == "sqlite":
        for suffix in ("", "-wal", "-journal"):
            path = backend.home / f"tapes.db{suffix}"
            if path.exists():
                raw[path.name] = path.read_bytes()
    else:
        assert isinstance(backend.server, PostgresServer)
        for relative in paths:  # the main fork and its segments (tape_entries, its TOAST table)
            heap = backend.server.data / str(relative)
            for path in sorted(heap.parent.glob(f"{heap.name}*")):
                if not path.name.endswith(("_fsm", "_vm")):
                    raw[f"heap {path.name}"] = path.read_bytes()
    return raw, conversation


async def _redis_storage(backend: Backend, store: Any) -> tuple[dict[str, bytes], bytes]:
    client = store._client
    raw: dict[str, bytes] = {}
    conversation = b""
    async for key in client.scan_iter(match=f"*{backend.env['BUB_TAPESTORE_REDIS_KEY_PREFIX']}*"):
        kind = (await client.type(key)).decode()
        if kind == "list":
            values = await client.lrange(key, 0, -1)
        elif kind == "zset":
            values = await client.zrange(key, 0, -1)
        elif kind == "set":
            values = list(await client.smembers(key))
        else:
            values = [await client.get(key)]
        joined = b"\n".join(v if isinstance(v, bytes) else str(v).encode() for v in values if v is not None)
        if key.decode() == store._keys.entries(TAPE):
            conversation = joined
        else:
            raw[f"key {key.decode()}"] = joined
    assert isinstance(backend.server, RedisServer)
    for path in sorted((backend.server.root / "appendonlydir").glob("*")):
        raw[f"AOF {path.name}"] = path.read_bytes()
    return raw, conversation


def leftovers(raw: dict[str, bytes], conversation: bytes) -> dict[str, int]:
    """The traces of her in ``raw``, by where: all of them, and in files shared with the conversation
    those that are not the conversation's own (see :func:`scenario.unaccounted`)."""
    counted = {
        where: scenario.unaccounted(data, conversation) if where.startswith(SHARED) else traces(data)
        for where, data in raw.items()
    }
    return {where: count for where, count in counted.items() if count}


# -- the paths that write memory -------------------------------------------------------------------


class HeldExtractor:
    """An extraction that started before the purge and ends after it: it yields entries 1-11 again,
    her included, once released."""

    traits = HOSTED
    chunk_tokens = 3000

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def iter_extract(
        self, entries: Sequence[Any], *, tape: str, memory: MemoryGraph | None = None
    ) -> AsyncIterator[Snapshot]:
        self.started.set()
        await self.release.wait()
        yield scenario.later()

    async def aclose(self) -> None:
        return None


async def seed(store: TapeStore | AsyncTapeStore, backend: Backend) -> None:
    """The conversation, what extraction stored of it (a checkpoint between the two windows), and a
    person's ``set`` of one of her attributes."""
    if backend.name == "postgresql":  # stored uncompressed, so the heap's bytes can be searched
        with store._engine.begin() as connection:  # type: ignore[union-attr]
            connection.exec_driver_sql("ALTER TABLE tape_entries ALTER COLUMN payload SET STORAGE EXTERNAL")
    for entry in scenario.entries():
        await append_entry(store, TAPE, entry)
    memory = SnapshotStore(store)
    first, second = scenario.extracted()
    await memory.append(first)
    assert await memory.checkpoint(TAPE, ONTOLOGY)
    await memory.append(second)
    await MemoryEditor(store, TAPE, ONTOLOGY, by="cli:owner").set("Alice Chen", "desk", "B-12")


async def settle(service: MemoryService) -> None:
    while tasks := service.running():
        await asyncio.gather(*tasks)


def outputs_of(service: MemoryService) -> dict[str, str]:
    """What the agent sees: notes, ``memory.search`` and ``memory.recall`` (a query echoed back is the
    asker's own words, left out)."""
    found = {f"note {q!r}": service.block(TAPE, q) for q in QUERIES}
    for q in QUERIES:
        answer = search_memory(service, TAPE, q)
        found[f"memory.search {q!r}"] = json.dumps({k: v for k, v in answer.items() if k != "query"})
    for name in ("Alice Chen", "Ali", "Ms. Chen", "Bob Stone"):
        answer = recall_entity(service, TAPE, name)
        found[f"memory.recall {name!r}"] = json.dumps(answer).replace(json.dumps(name)[1:-1], "")
    return found


def cli(backend: Backend, *args: str) -> Any:
    """Run a command in this process, on the store the environment names, as a new process would: bub's
    store plugins keep one store per process (an ``lru_cache``, whose Redis client is bound to the
    event loop that made it) and bub keeps the settings it read."""
    for module in ("bub_tapestore_sqlalchemy.plugin", "bub_tapestore_redis.plugin"):
        plugin = sys.modules.get(module)
        if plugin is not None:
            plugin._store.cache_clear()
    bub_configure._global_config.clear()
    extra = ["--tapes-dir", str(backend.home / "tapes")] if backend.name == "file" else []
    return runner.invoke(app, [*args, *extra])


def cli_outputs(backend: Backend) -> dict[str, str]:
    """What a person sees: ``show``, ``memory search --json``, ``memory export`` (JSON and GraphML),
    ``memory edits`` (a query echoed back left out)."""
    found: dict[str, str] = {}
    for q in QUERIES:
        shown = cli(backend, "show", TAPE, "--query", q)
        searched = cli(backend, "memory", "search", q, "--tape", TAPE, "--json")
        assert shown.exit_code == 0 and searched.exit_code == 0, shown.output + searched.output
        found[f"show {q!r}"] = shown.stdout
        found[f"memory search --json {q!r}"] = json.dumps(
            {k: v for k, v in json.loads(searched.stdout).items() if k != "query"}
        )
    for fmt in ("json", "graphml", "jsonld"):
        exported = cli(backend, "memory", "export", "--tape", TAPE, "--format", fmt, "--history")
        assert exported.exit_code == 0, exported.output
        found[f"memory export --format {fmt}"] = exported.stdout
    edits = cli(backend, "memory", "edits", "--tape", TAPE, "--json")
    assert edits.exit_code == 0, edits.output
    found["memory edits --json"] = edits.stdout
    return found


async def paths(backend: Backend) -> dict[str, Any]:
    """Seed, purge while an extraction is in flight, then take every other path that writes memory."""
    async with backend.open() as store:
        await seed(store, backend)
        raw_before, conversation_before = await raw_storage(backend, store)
        loaded_before = await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)
        exported = export_memory(loaded_before.graph, format="json")  # written before the purge
        held = HeldExtractor()
        setup = MemorySetup(folds_with=ONTOLOGY, policy=MemoryPolicy(every_turns=1, min_new_tokens=0))
        service = MemoryService.from_setup(setup, extractor=lambda: held)  # type: ignore[arg-type,return-value]
        await service.load(TAPE, store)
        from bub.tape import TapeEntry

        await append_entry(store, TAPE, TapeEntry.message({"role": "user", "content": scenario.LATER}))
        service.schedule(TAPE, store)
        await asyncio.wait_for(held.started.wait(), 30)
        result = await MemoryEditor(store, TAPE, ONTOLOGY, by="cli:owner").forget("Alice Chen", purge=True)
        held.release.set()  # the extraction in flight stores its snapshot now
        await settle(service)
        replay = await SnapshotStore(store).append(scenario.replayed())  # another worker, her old entries
        stale = await SnapshotStore(store).checkpoint(TAPE, ONTOLOGY, loaded=loaded_before)
        from bub_semantic_memory.memory._export import read_export

        imported = await MemoryEditor(store, TAPE, ONTOLOGY, by="cli:owner").import_memory(
            read_export(exported)
        )
        with pytest.raises(EditError, match="cannot be undone"):
            await MemoryEditor(store, TAPE, ONTOLOGY, by="cli:owner").undo(result.edit.id)
        graph = (await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)).graph
        raw_after, conversation = await raw_storage(backend, store)
        return {
            "before": leftovers(raw_before, conversation_before),
            "after": leftovers(raw_after, conversation),
            "purge": result.purge,
            "edit": result.edit,
            "replay": replay,
            "stale": stale,
            "imported": imported,
            "graph": graph,
            "outputs": outputs_of(service),
            "stats": dict(service.stats),
        }


def test_a_purged_person_leaves_no_trace_in_any_store_or_output_on_any_path(
    variant: tuple[str, Backend], outcomes: Outcomes
) -> None:
    name, backend = variant
    done = asyncio.run(paths(backend))
    outputs = done["outputs"] | cli_outputs(backend)
    undo = cli(backend, "memory", "undo", done["edit"].id[:10], "--tape", TAPE)
    again = cli(backend, "memory", "forget", "Alice Chen", "--purge", "--tape", TAPE)
    purge = done["purge"]
    assert sum(done["before"].values()) >= 20  # the search finds her where she was
    files = {"sqlite": "tapes.db", "sqlite-wal": "tapes.db", "postgresql": "heap ", "redis": "AOF "}.get(name)
    assert files is None or any(where.startswith(files) for where in done["before"])  # files were read
    assert done["after"] == {}, done["after"]
    assert found(outputs) == {}, {k: outputs[k] for k in found(outputs)}
    assert undo.exit_code == 1 and "an erasure cannot be undone" in undo.stderr
    assert again.exit_code == 0, again.output
    assert "Purged before: 0 trace(s) were left (it was complete)." in again.stdout.splitlines()
    assert traces(again.stdout) == 0
    graph = done["graph"]
    assert {e.name for e in graph.entities()} == scenario.KEPT | {"Carol Diaz"}
    assert [f.statement for f in graph.facts()] == [scenario.PIANO.statement]
    assert [e.name for e in done["replay"].entities] == ["Bob Stone"] and done["replay"].facts == ()
    assert done["stale"] is False and done["stats"].get("snapshots") == 1
    assert any("were left out: a purge erased them" in note for note in done["imported"].notes)
    assert purge.residue in (None, 0) and not purge.compacted.startswith("not compacted")
    table = outcomes.table(
        SECTION,
        "The matrix: her names, alias and private value searched after the purge and after every path",
        [
            "store",
            "where searched (raw)",
            "forms tried",
            "paths",
            "traces before / after (raw)",
            "outputs searched / with a trace",
            "compaction",
            "purged again: left",
        ],
    )
    table.add(
        name,
        WHERE[name],
        len(scenario.FORMS),
        len(PATHS),
        f"{sum(done['before'].values())} / {sum(done['after'].values())}",
        f"{len(outputs)} / {len(found(outputs))}",
        purge.compacted.split(" (")[0].split(";")[0],
        0,
    )
    stores = sorted({row[0] for row in table.rows}, key=VARIANTS.index)
    table.notes[:] = [
        f"{len(stores)} store setups ({', '.join(map(str, stores))}); {len(scenario.FORMS)} forms of her name tried "
        f"({', '.join(repr(f) for f in scenario.FORMS)}); {len(PATHS)} paths ({'; '.join(PATHS)}); "
        f"{len(outputs)} outputs per store (notes, `memory.search`, `memory.recall`, `show`, `memory search --json`, "
        "export as JSON, GraphML and JSON-LD, `memory edits --json`). Traces found after the purge and the "
        f"paths: {sum(int(str(row[4]).split(' / ')[1]) for row in table.rows)} in raw storage, "
        f"{sum(int(str(row[5]).split(' / ')[1]) for row in table.rows)} in outputs."
    ]


WHERE = {
    "file": "the sidecar file, its lock",
    "sqlite": "the sidecar's rows, tapes.db",
    "sqlite-wal": "the sidecar's rows, tapes.db, tapes.db-wal",
    "postgresql": "the sidecar's rows, the heap and TOAST files of tape_entries",
    "redis": "every key of the prefix, the append-only files",
}
PATHS = (
    "forget --purge",
    "an extraction in flight during the purge",
    "her old entries extracted again under every form",
    "a checkpoint folded before the purge",
    "an import of an export written before the purge",
    "an undo of the purge (API and CLI)",
    "the purge run again",
)


# -- the points, one by one ------------------------------------------------------------------

POINTS_TITLE = "Each point of the issue, as a test that failed before the change"
POINTS_COLUMNS = ["point", "what is checked", "test", "result"]


def point(outcomes: Outcomes, number: int, what: str, test: str) -> None:
    """A row of the points table (added once the test's assertions held)."""
    outcomes.table(SECTION, POINTS_TITLE, POINTS_COLUMNS).add(number, what, f"`{test}`", "holds")


@pytest.fixture
def file_store(tmp_path: Path) -> FileTapeStore:
    """bub's file store holding the scenario, as extraction left it."""
    store = FileTapeStore(tmp_path / "tapes")
    backend = Backend("file", tmp_path, {}, tmp_path)
    asyncio.run(seed(store, backend))
    return store


async def loaded_service(store: FileTapeStore) -> MemoryService:
    service = MemoryService.from_setup(MemorySetup(folds_with=ONTOLOGY), extractor=lambda: None)
    await service.load(TAPE, store)
    return service


def test_point_1_a_purge_hides_every_line_the_plain_forget_hid(
    file_store: FileTapeStore, outcomes: Outcomes
) -> None:
    async def notes() -> tuple[dict[str, str], dict[str, str]]:
        await MemoryEditor(file_store, TAPE, ONTOLOGY, by="cli:owner").forget("Alice Chen")
        forgot = (await loaded_service(file_store)).block
        after_forget = {q: forgot(TAPE, q) for q in QUERIES}
        await MemoryEditor(file_store, TAPE, ONTOLOGY, by="cli:owner").forget("Alice Chen", purge=True)
        purged = (await loaded_service(file_store)).block
        return after_forget, {q: purged(TAPE, q) for q in QUERIES}

    after_forget, after_purge = asyncio.run(notes())
    assert found(after_forget) == {}
    assert found(after_purge) == {}  # was: the note for "Alice" quoted "[4] user: alice's allergy: ..."
    assert "penicillin" not in after_purge["who is allergic to penicillin?"]
    point(
        outcomes,
        1,
        f"notes for {len(QUERIES)} questions after forget, then after purge: no line about her",
        "test_point_1",
    )


def test_point_2_a_purge_cannot_be_undone_runs_again_and_holds_against_later_writes(
    file_store: FileTapeStore, tmp_path: Path, outcomes: Outcomes
) -> None:
    async def run() -> tuple[Any, Any, MemoryGraph, Snapshot]:
        editor = MemoryEditor(file_store, TAPE, ONTOLOGY, by="cli:owner")
        first = await editor.forget("Alice Chen", purge=True)
        with pytest.raises(EditError, match="an erasure cannot be undone"):
            await editor.undo(first.edit.id)
        from bub_semantic_memory._edits import Edit

        old_client = Edit(tape=TAPE, op="undo", at=12, by="old-client", undoes=first.edit.id)
        with pytest.raises(EditError, match="an erasure cannot be undone"):
            await SnapshotStore(file_store).append_edit(old_client)  # the store refuses it too
        again = await MemoryEditor(file_store, TAPE, ONTOLOGY, by="cli:owner").forget(
            "Alice Chen", purge=True
        )
        stored = await SnapshotStore(file_store).append(scenario.later())  # folded before, stored after
        graph = (await SnapshotStore(file_store).load_graph(TAPE, ONTOLOGY)).graph
        return first, again, graph, stored

    first, again, graph, stored = asyncio.run(run())
    assert first.purge is not None and first.purge.found > 0 and not first.purge.again
    assert again.purge is not None and again.purge.again and again.purge.found == 0
    assert [e.name for e in stored.entities] == ["Carol Diaz"] and stored.facts == ()
    assert graph.lookup("Alice Chen") == [] and graph.lookup("Ms. Chen") == []
    raw = (tmp_path / "tapes" / f"{memory_tape_name(TAPE)}.jsonl").read_bytes()
    assert traces(raw) == 0
    point(
        outcomes,
        2,
        "undo refused (editor and store), purge run again finds 0, a late snapshot stored without her",
        "test_point_2",
    )


@pytest.mark.parametrize("purged", [False, True], ids=["forget", "purge"])
def test_point_3_her_old_entries_extracted_again_under_any_form_never_bring_her_back(
    purged: bool, outcomes: Outcomes
) -> None:
    from bub_semantic_memory.memory import _edit_builder as build

    graph = MemoryGraph.fold(scenario.extracted(), ONTOLOGY, tape=TAPE)
    edit = build.forget_entity(graph, build.find_entity(graph, "Alice Chen"), at=10, by="cli:owner")
    edit = edit.redacted() if purged else edit
    again = MemoryGraph.fold([*scenario.extracted(), scenario.replayed()], ONTOLOGY, tape=TAPE, edits=[edit])
    assert {e.name for e in again.entities()} == scenario.KEPT
    assert [f.statement for f in again.facts()] == [scenario.PIANO.statement]
    assert all(scenario.PRIVATE not in value for e in again.entities() for value in e.attributes.values())
    if purged:
        point(
            outcomes,
            3,
            f"her old entries extracted again under {len(scenario.FORMS)} forms, after forget and purge",
            "test_point_3_her_old_entries",
        )


def test_point_3_a_form_another_person_has_is_kept_and_the_output_says_why(
    tmp_path: Path, outcomes: Outcomes
) -> None:
    from bub_semantic_memory._models import Entity, Fact

    wong = Entity.create("Alice Wong", "person", evidence=[3])
    wong_fact = Fact(statement="Alice Wong leads the audit", kind="event", about=(wong.key,), evidence=(3,))
    first, second = scenario.extracted()
    shared = first.model_copy(
        update={"entities": (*first.entities, wong), "facts": (*first.facts, wong_fact)}
    )
    store = FileTapeStore(tmp_path / "tapes")

    async def run() -> tuple[Any, MemoryGraph]:
        for snapshot in (shared, second):
            await SnapshotStore(store).append(snapshot)
        result = await MemoryEditor(store, TAPE, ONTOLOGY, by="cli:owner").forget("Alice Chen", purge=True)
        return result, (await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)).graph

    result, graph = asyncio.run(run())
    assert result.notes == ("kept the first name 'alice': Alice Wong in the memory has it too",)
    assert {e.name for e in graph.entities()} == scenario.KEPT | {"Alice Wong"}
    assert "Alice Wong leads the audit" in [f.statement for f in graph.facts()]
    assert graph.lookup("Alice Chen") == [] and graph.lookup("Ms. Chen") == []
    point(
        outcomes,
        3,
        "a first name another person has (Alice Wong) is kept, and the output says so",
        "test_point_3_a_form",
    )


def test_point_4_her_lines_and_values_do_not_leak_through_other_items(
    file_store: FileTapeStore, outcomes: Outcomes
) -> None:
    async def run() -> tuple[MemoryService, MemoryGraph]:
        await MemoryEditor(file_store, TAPE, ONTOLOGY, by="cli:owner").forget("Alice Chen", purge=True)
        service = await loaded_service(file_store)
        return service, service.graph(TAPE)  # type: ignore[return-value]

    service, graph = asyncio.run(run())
    facts = search_memory(service, TAPE, "Bob Stone piano Friday")["facts"]
    [piano] = [f for f in facts if f["fact"] == scenario.PIANO.statement]
    assert piano["evidence"] == [5] and piano["said"] == []  # line 5 named Ali: not quoted
    assert "[5]" not in service.block(TAPE, "Bob Stone piano Friday")
    assert scenario.OFFSITE.statement not in [f.statement for f in graph.facts()]  # her surname only
    point(
        outcomes,
        4,
        "a line naming her is not another fact's evidence; a fact naming her by surname goes",
        "test_point_4_her_lines",
    )


def test_point_4_forgetting_her_fact_with_purge_takes_the_same_value_as_her_attribute(
    file_store: FileTapeStore, tmp_path: Path, outcomes: Outcomes
) -> None:
    async def run() -> tuple[MemoryGraph, str]:
        editor = MemoryEditor(file_store, TAPE, ONTOLOGY, by="cli:owner")
        await editor.forget_fact(scenario.ALLERGY.statement, purge=True)
        service = await loaded_service(file_store)
        return service.graph(TAPE), service.block(TAPE, "what is Alice allergic to?")  # type: ignore[return-value]

    graph, note = asyncio.run(run())
    alice = graph.entity(scenario.ALICE.key)
    assert alice is not None and "allergy" not in alice.attributes and alice.attributes["badge"] == "4411"
    assert "penicillin" not in note and "zx9" not in note
    raw = (tmp_path / "tapes" / f"{memory_tape_name(TAPE)}.jsonl").read_text(encoding="utf-8")
    assert "zx9" not in raw and "penicillin" not in raw
    point(
        outcomes,
        4,
        "forget --fact ... --purge takes her attribute with the same value (notes, raw)",
        "test_point_4_forgetting",
    )


@pytest.mark.slow
def test_point_5_sqlite_says_when_another_connection_keeps_the_old_pages_and_a_second_purge_clears_them(
    tmp_path: Path, outcomes: Outcomes
) -> None:
    pytest.importorskip("bub_tapestore_sqlalchemy")
    from bub_tapestore_sqlalchemy.store import SQLAlchemyTapeStore

    database = tmp_path / "tapes.db"
    with sqlite3.connect(database) as setup:
        setup.execute("PRAGMA journal_mode=WAL")
    store = SQLAlchemyTapeStore(f"sqlite+pysqlite:///{database}")
    backend = Backend("sqlite", tmp_path, {}, tmp_path)
    asyncio.run(seed(store, backend))
    reader = sqlite3.connect(database, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM tape_entries").fetchone()  # a read transaction: an old snapshot

    async def purge() -> Any:
        return await MemoryEditor(store, TAPE, ONTOLOGY, by="cli:owner").forget("Alice Chen", purge=True)

    try:
        blocked = asyncio.run(purge()).purge
    finally:
        reader.execute("COMMIT")
        reader.close()
    cleared = asyncio.run(purge()).purge
    raw, conversation = asyncio.run(raw_storage(backend, store))
    store._engine.dispose()
    assert blocked is not None and cleared is not None
    assert blocked.compacted.startswith("not compacted: the write-ahead log could not be checkpointed")
    assert blocked.residue is not None and blocked.residue > 0
    assert cleared.again and not cleared.compacted.startswith("not compacted") and cleared.residue == 0
    assert cleared.found == 0  # the second purge found nothing left to rewrite once the old pages were gone
    assert "tapes.db" in raw and leftovers(raw, conversation) == {}
    point(
        outcomes,
        5,
        "SQLite, a reader holding old pages: 'not compacted' and the residue said; a second purge clears it",
        "test_point_5",
    )
    point(
        outcomes,
        5,
        "PostgreSQL heap and TOAST files after VACUUM FULL (the matrix's postgresql row)",
        "test_a_purged_person...[postgresql]",
    )
