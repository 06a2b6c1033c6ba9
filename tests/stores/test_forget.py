"""Forget, purge, export and import on every store of the matrix; two workers on one tape.

What a person forgets is gone after a restart of the database and from a checkpointed load;
``--purge`` leaves no trace of the name in the sidecar's rows, keys or files (searched raw), its
archives or the eval cache of the tape; a forget made while another process extracts the tape
ends with the entity forgotten and nothing else lost. The counts go to ``docs/reliability.md``
("Forget and erasure").
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from bub.store import AsyncTapeStore, AsyncTapeStoreAdapter, TapeQuery, TapeStore, is_async_tape_store
from bub.tape import Tape, TapeContext, TapeEntry

from bub_semantic_memory._models import Entity, Fact, Relation, Snapshot
from bub_semantic_memory.agent._editor import MemoryEditor
from bub_semantic_memory.evals.extraction import ResponseCache
from bub_semantic_memory.memory._export import GRAPHML_NS, MemoryExport, export_memory, read_export
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores._store import (
    MemorySidecar,
    SnapshotStore,
    memory_tape_name,
    session_tape_name,
)
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, RecordedRequest, Reply
from tests.conftest import REPO, make_snapshot
from tests.helpers.bub_env import use_fake_extractor
from tests.helpers.bub_worker import city, person
from tests.reliability._report import Outcomes
from tests.stores.conftest import Backend
from tests.stores.test_checkpoints import ONTOLOGY

TAPE = "0123456789abcdef__abcdabcdabcdabcd"
SECTION = "forget"
ALICE = Entity.create(
    "Alice Chen",
    "person",
    aliases=["Ali"],
    attributes={"role": "designer", "email": "alice.chen@example.com"},
    evidence=[2],
)
LISBON = Entity.create("Lisbon", "location", evidence=[2])
BOB = Entity.create("Bob Stone", "person", attributes={"manager": "Alice Chen"}, evidence=[3])
CAROL = Entity.create("Carol Diaz", "person", evidence=[9])
PORTO = Entity.create("Porto", "location", evidence=[9])
TRACES = [re.compile(p) for p in (r"(?i)alice", r"\bAli\b", r"(?i)designer")]
"""What the forgotten entity leaves in text: her name and key (any case), her alias, her role."""


def rel(source: Entity, rel_type: str, target: Entity, *evidence: int) -> Relation:
    return Relation(source=source.key, type=rel_type, target=target.key, evidence=evidence)


def snapshots(sha: str = "0" * 64) -> list[Snapshot]:
    first = make_snapshot(
        [ALICE, LISBON, BOB],
        [rel(ALICE, "lives_in", LISBON, 2), rel(BOB, "lives_in", LISBON, 3), rel(BOB, "knows", ALICE, 3)],
        tape=TAPE,
        first=1,
        last=4,
        sha=sha,
    ).model_copy(
        update={
            "facts": (
                Fact(statement="Alice Chen moved to Lisbon", kind="event", about=(ALICE.key,), evidence=(2,)),
                Fact(statement="Bob Stone plays the piano", kind="event", about=(BOB.key,), evidence=(3,)),
            ),
            "dropped": ("entity 'Alice Chen's cat': not mentioned in its evidence lines",),
        }
    )
    second = make_snapshot(
        [Entity.create("Ali", "person", evidence=[6]), BOB], tape=TAPE, first=5, last=8, sha=sha
    ).model_copy(
        update={
            "facts": (
                Fact(
                    statement="Bob Stone met Alice Chen for lunch",
                    kind="event",
                    about=(BOB.key,),
                    evidence=(7,),
                ),
            )
        }
    )
    third = make_snapshot(
        [CAROL, PORTO], [rel(CAROL, "lives_in", PORTO, 9)], tape=TAPE, first=9, last=10, sha=sha
    )
    return [first, second, third]


async def append_entry(store: TapeStore | AsyncTapeStore, tape: str, entry: TapeEntry) -> None:
    if is_async_tape_store(store):
        await store.append(tape, entry)
    else:
        await asyncio.to_thread(store.append, tape, entry)


async def seed(store: TapeStore | AsyncTapeStore) -> None:
    """Ten conversation entries (none names her: the conversation is bub's, not the memory's),
    three snapshots, a checkpoint between them."""
    for number in range(10):
        await append_entry(store, TAPE, TapeEntry.message({"role": "user", "content": f"entry {number}"}))
    memory = SnapshotStore(store)
    first, second, third = snapshots()
    await memory.append(first)
    await memory.append(second)
    assert await memory.checkpoint(TAPE, ONTOLOGY)
    await memory.append(third)


def names(graph: MemoryGraph) -> set[str]:
    return {e.name for e in graph.entities()}


async def test_a_forget_survives_a_restart_and_a_checkpointed_load(
    backend: Backend, outcomes: Outcomes
) -> None:
    async with backend.open() as store:
        await seed(store)
        before = (await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)).graph
        result = await MemoryEditor(store, TAPE, ONTOLOGY, by="test").forget("Alice Chen")
    assert result.changes.entities_removed == [ALICE.key]
    backend.restart()
    async with backend.open() as store:
        memory = SnapshotStore(store)
        loaded = await memory.load_graph(TAPE, ONTOLOGY)
        await memory.append(snapshots(sha="1" * 64)[0])  # her old entries, extracted again
        again = (await memory.load_graph(TAPE, ONTOLOGY)).graph
        later = make_snapshot(
            [Entity.create("Alice Chen", "person", evidence=[12])], tape=TAPE, first=11, last=12
        )
        await memory.append(later)  # a new mention, after the forget
        back = (await memory.load_graph(TAPE, ONTOLOGY)).graph
    assert loaded.report.issues == [] and loaded.checkpoint_through > 0 and not loaded.refolded
    assert names(loaded.graph) == {"Lisbon", "Bob Stone", "Carol Diaz", "Porto"}
    assert "Alice Chen moved to Lisbon" not in {f.statement for f in loaded.graph.facts()}
    assert "Alice Chen" not in names(again)
    alice = back.entity(ALICE.key)
    assert alice is not None and alice.evidence == (12,) and alice.attributes == {}
    outcomes.table(
        SECTION,
        "Forget, restart of the database, checkpointed load",
        [
            "store",
            "entities before / after",
            "checkpoint used (sidecar entry)",
            "back after her old entries were extracted again",
            "back after a later mention",
        ],
    ).add(
        backend.name,
        f"{len(before)} / {len(loaded.graph)}",
        loaded.checkpoint_through,
        "no" if "Alice Chen" not in names(again) else "yes",
        "yes (entry 12 only)" if alice.evidence == (12,) else "no",
    )


async def test_an_edit_after_the_newest_checkpoint_folds_everything_again(backend: Backend) -> None:
    async with backend.open() as store:
        await seed(store)
        graph = (await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)).graph
        from bub_semantic_memory.memory._edit_builder import find_entity, forget_entity

        await SnapshotStore(store).append_edit(
            forget_entity(graph, find_entity(graph, "Ali"), at=10, by="test")
        )
        loaded = await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)
        assert await SnapshotStore(store).checkpoint(TAPE, ONTOLOGY)  # due: the newest one predates the edit
        short = await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)
    assert loaded.refolded and loaded.checkpoint_through == 0 and "Alice Chen" not in names(loaded.graph)
    assert not short.refolded and short.checkpoint_through > 0 and names(short.graph) == names(loaded.graph)


# -- erasure -------------------------------------------------------------------------------------


def files_of(directory: Path, sidecar: str, label: str = "") -> dict[str, str]:
    """The text of every file of the sidecar in ``directory`` (the sidecar, its ``.torn``, archives)."""
    return {
        f"{label}{path.name}": path.read_bytes().decode("utf-8", errors="replace")
        for path in sorted(directory.glob(f"{sidecar}*"))
    }


async def raw_storage(backend: Backend, store: Any, archive: Path) -> dict[str, str]:
    """Everything the store keeps for the tape's memory, as raw text, by where it is."""
    sidecar = memory_tape_name(TAPE)
    found = files_of(archive, sidecar, "archive ")
    if backend.name == "file":
        found |= files_of(backend.home / "tapes", sidecar)
    elif backend.name == "redis":
        client = store._client
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
            found[key.decode()] = "\n".join(v.decode("utf-8", errors="replace") for v in values)
    else:
        with store._engine.connect() as connection:
            rows = connection.exec_driver_sql(
                "SELECT e.payload, e.meta FROM tape_entries e JOIN tapes t ON t.id = e.tape_id WHERE t.name = ?"
                if backend.name == "sqlite"
                else "SELECT e.payload::text, e.meta::text FROM tape_entries e JOIN tapes t ON t.id = e.tape_id "
                "WHERE t.name = %s",
                (sidecar,),
            ).all()
        found["tape_entries rows"] = "\n".join(f"{p} {m}" for p, m in rows)
        if backend.name == "sqlite":  # the database file itself, free pages included
            found["tapes.db"] = (backend.home / "tapes.db").read_bytes().decode("utf-8", errors="replace")
    return found


def traces(raw: dict[str, str]) -> int:
    return sum(len(p.findall(text)) for text in raw.values() for p in TRACES)


def seed_eval_cache(directory: Path) -> ResponseCache:
    cache = ResponseCache(directory)
    first, _, third = snapshots()
    cache.put("a" * 64, {"fixture": TAPE}, [first])  # her tape, names her: deleted
    cache.put("b" * 64, {"fixture": TAPE}, [third])  # her tape, does not name her: kept
    cache.put(
        "c" * 64, {"fixture": "other"}, [first.model_copy(update={"tape": "other"})]
    )  # another tape: kept
    return cache


async def test_a_purge_leaves_no_trace_of_the_name_in_raw_storage(
    backend: Backend, tmp_path: Path, outcomes: Outcomes
) -> None:
    archive = tmp_path / "archive"
    cache = seed_eval_cache(tmp_path / "eval-cache")
    async with backend.open() as store:
        await seed(store)
        editor = MemoryEditor(store, TAPE, ONTOLOGY, by="test", archive_dir=archive)
        await editor.set("Alice Chen", "role", "lead designer")
        async_store = store if is_async_tape_store(store) else AsyncTapeStoreAdapter(store)
        tape = Tape(archive, async_store, TapeContext(), sidecars=(MemorySidecar(),)).scoped(TAPE)
        await tape.archive_sidecar(MemorySidecar().name)
        if backend.name == "file":  # the bytes a torn-tail repair cut off and kept
            torn = backend.home / "tapes" / f"{memory_tape_name(TAPE)}.jsonl.torn"
            torn.write_text('{"id": 99, "kind": "event", "payload": {"data": {"name": "Alice Chen"\n')
        found_before = traces(await raw_storage(backend, store, archive))
        result = await MemoryEditor(store, TAPE, ONTOLOGY, by="test", archive_dir=archive).forget(
            "Alice Chen", purge=True
        )
        assert result.purge is not None
        result.purge.eval_cache = cache.purge(TAPE, result.edit.named_in)
        raw = await raw_storage(backend, store, archive)
        loaded = await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)
        await SnapshotStore(store).append(snapshots(sha="2" * 64)[0])  # extracted again after the purge
        again = (await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)).graph
    left = {where: [m.group(0) for p in TRACES for m in p.finditer(text)] for where, text in raw.items()}
    assert found_before >= 20 and {where: hits for where, hits in left.items() if hits} == {}
    report = result.purge
    assert report.snapshots == 2 and report.items >= 5 and report.checkpoints >= 2
    assert report.edits == 1  # the set edit: the forget itself was stored as digests from the start
    assert report.archives == 1 and report.eval_cache == 1 and report.left == 0
    assert report.torn == (1 if backend.name == "file" else 0)
    assert sorted(p.stem for p in (tmp_path / "eval-cache").glob("*/*.json")) == ["b" * 64, "c" * 64]
    assert loaded.report.issues == [] and names(loaded.graph) == {
        "Lisbon",
        "Bob Stone",
        "Carol Diaz",
        "Porto",
    }
    assert [f.statement for f in loaded.graph.facts()] == ["Bob Stone plays the piano"]
    assert "Alice Chen" not in names(again)  # the digests still recognise her
    table = outcomes.table(
        SECTION,
        "forget --purge, then the raw storage searched for her name, alias and role",
        [
            "store",
            "where searched",
            "traces before / after",
            "snapshots rewritten (items out)",
            "checkpoints invalidated",
            "edits reduced to digests",
            "archives rewritten",
            "torn chunks removed",
            "eval cache files deleted / kept",
            "after the rewrite",
        ],
    )
    table.add(
        backend.name,
        {"file": "sidecar, .torn, archive", "redis": "every key of the prefix, archive"}.get(
            backend.name,
            "sidecar rows, database file, archive" if backend.name == "sqlite" else "sidecar rows, archive",
        ),
        f"{found_before} / {traces(raw)}",
        f"{report.snapshots} ({report.items})",
        report.checkpoints,
        report.edits,
        report.archives,
        report.torn,
        f"{report.eval_cache} / 2",
        report.compacted or "in place, padded",
    )
    table.notes[:] = [
        "Traces are matches of `alice` in any case (her name, her key, her e-mail address), of `Ali` as a "
        "word (her alias) and of `designer` (her role), in snapshots, checkpoints, a `set` edit, an archived "
        "copy of the sidecar and, on the file store, the bytes a torn-tail repair kept. The conversation is "
        "bub's and is not rewritten; here it does not name her, so on SQLite the whole database file is "
        "searched. Every checkpoint stored before the purge becomes a stub and a new one is stored."
    ]


# -- two workers -----------------------------------------------------------------------------------

SESSION = "cli:forget"
TURNS = 24
MAYA = "Maya Lin"
FILLER = (
    " We talked about the weather, the garden, the neighbours and the plans for the long weekend at length."
)


def turn_text(number: int) -> str:
    text = f"Note: {person(SESSION, number)} lives in {city(number)}.{FILLER}"
    if number in (1, 18):
        text += f" My friend {MAYA} lives in {city(1)} too."
    return text


def oracle() -> OracleResponder:
    people = [{"name": person(SESSION, t), "type": "person"} for t in range(TURNS)]
    cities = [{"name": city(t), "type": "location"} for t in range(5)]
    relations = [{"source": person(SESSION, t), "type": "lives_in", "target": city(t)} for t in range(TURNS)]
    relations.append({"source": MAYA, "type": "lives_in", "target": city(1)})
    return OracleResponder(entities=[*people, *cities, {"name": MAYA, "type": "person"}], relations=relations)


def start_extractor(backend: Backend, workspace: Path) -> subprocess.Popen[str]:
    """A bub process extracting the session's tape once (``tests/helpers/bub_worker.py``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.bub_worker", "extract", SESSION, str(workspace)],
        cwd=REPO,
        env=backend.process_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
async def test_a_forget_made_while_another_process_extracts_loses_nothing_else(
    backend: Backend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_openai: FakeOpenAIServer,
    outcomes: Outcomes,
) -> None:
    use_fake_extractor(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_CHUNK_TOKENS", "200")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_CHECKPOINT_EVERY", "3")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    tape = session_tape_name(SESSION, workspace)
    facts = oracle()
    forgotten = threading.Event()

    def respond(request: RecordedRequest) -> Reply:
        if 1 not in request.transcript_entry_ids():  # every window after the first waits for the forget
            forgotten.wait(120)
        return facts(request)

    fake_openai.responder = respond
    async with backend.open() as store:
        for number in range(TURNS):
            await append_entry(store, tape, TapeEntry.message({"role": "user", "content": turn_text(number)}))
    extractor = start_extractor(backend, workspace)
    try:
        async with backend.open() as store:
            deadline = time.monotonic() + 120
            while not (await SnapshotStore(store).load(tape))[0]:
                assert time.monotonic() < deadline and extractor.poll() is None, "no first snapshot"
                await asyncio.sleep(0.2)
            first_window = len((await SnapshotStore(store).load(tape))[0])
        cli = await asyncio.to_thread(
            subprocess.run,
            [str(Path(sys.executable).parent / "semantic-memory"), "memory", "forget", MAYA, "--tape", tape],
            cwd=tmp_path,
            env=backend.process_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        forgotten.set()
    out, err = await asyncio.to_thread(extractor.communicate, timeout=600)
    assert cli.returncode == 0, cli.stderr[-3000:]
    assert extractor.returncode == 0, err[-3000:]
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats.get("extraction_failures", 0) == 0 and stats.get("checkpoint_failures", 0) == 0
    assert cli.stdout.startswith(f"forget {MAYA}: 1 entity removed, 1 relation removed")

    async with backend.open() as store:
        memory = SnapshotStore(store)
        loaded = await memory.load_graph(tape, ONTOLOGY)
        stored, report = await memory.load(tape)
        edits = await memory.edits(tape)
        query: TapeQuery[Any] = TapeQuery(tape=memory_tape_name(tape), store=store)
        raw = await store.fetch_all(query) if is_async_tape_store(store) else store.fetch_all(query)
    order = [e.payload.get("name") for e in raw if e.kind == "event"]
    after_forget = order[order.index("memory.edit") + 1 :].count("memory.snapshot")
    mentioned_after = sum(
        MAYA in json.dumps(e.payload)
        for e in raw
        if e.kind == "event" and e.id > next(x.id for x in raw if x.payload.get("name") == "memory.edit")
    )
    graph = loaded.graph
    people = {e.name for e in graph.entities() if e.type == "person"}
    lives = {r.source for r in graph.relations(current_only=True) if r.type == "lives_in"}
    assert report.issues == [] and loaded.report.issues == [] and len(edits) == 1
    assert after_forget >= 1 and mentioned_after >= 1  # the race: her later entries were extracted after it
    assert MAYA not in people and people == {person(SESSION, t) for t in range(TURNS)}
    assert len(lives) == TURNS
    full = MemoryGraph.fold(stored, ONTOLOGY, tape=tape, edits=edits)
    assert graph.entities() == full.entities() and graph.relations() == full.relations()
    table = outcomes.table(
        SECTION,
        "Two processes on one tape: one extracts, a CLI forgets Maya Lin after its first window",
        [
            "store",
            "snapshots stored (after the forget)",
            "snapshots naming her stored after the forget",
            "checkpoint used (sidecar entry)",
            "Maya Lin in memory",
            "other people kept",
            "their relations kept",
        ],
    )
    table.add(
        backend.name,
        f"{len(stored)} ({after_forget})",
        mentioned_after,
        loaded.checkpoint_through,
        "no" if MAYA not in people else "yes",
        f"{len(people)}/{TURNS}",
        f"{len(lives)}/{TURNS}",
    )
    table.notes[:] = [
        f"A tape of {TURNS} turns, each naming one person and where they live; Maya Lin is named in "
        "turns 1 and 18. A bub process extracts it in windows of 200 tokens (a checkpoint every 3 "
        "snapshots); after its first window every extraction request waits until `semantic-memory memory "
        "forget` has run in another process. The forget is placed at the tape's last entry, so her later "
        "turn, extracted after it, stays forgotten; a mention after that entry would bring her back."
    ]
    assert first_window >= 1


# -- export and import -----------------------------------------------------------------------------


def graphml_read(text: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, dict[str, str]]]]:
    """Nodes and edges of a GraphML document, read with the standard library's XML parser."""
    root = ElementTree.fromstring(text)
    ns = {"g": GRAPHML_NS}
    keys = {k.get("id"): k.get("attr.name") for k in root.findall("g:key", ns)}

    def data(element: ElementTree.Element) -> dict[str, str]:
        return {str(keys[d.get("key")]): d.text or "" for d in element.findall("g:data", ns)}

    graph = root.find("g:graph", ns)
    assert graph is not None
    nodes = {str(n.get("id")): data(n) for n in graph.findall("g:node", ns)}
    edges = [(str(e.get("source")), str(e.get("target")), data(e)) for e in graph.findall("g:edge", ns)]
    return nodes, edges


async def test_exports_read_back_and_an_import_round_trips(backend: Backend, outcomes: Outcomes) -> None:
    copy = "0123456789abcdef__feedfeedfeedfeed"
    async with backend.open() as store:
        await seed(store)
        graph = await MemoryEditor(store, TAPE, ONTOLOGY, by="test").graph()
        exported = export_memory(graph, format="json")
        nodes, edges = graphml_read(export_memory(graph, format="graphml"))
        linked = json.loads(export_memory(graph, format="jsonld"))
        result = await MemoryEditor(store, copy, ONTOLOGY, by="test").import_memory(read_export(exported))
        imported = await MemoryEditor(store, copy, ONTOLOGY, by="test").graph()
        same = MemoryEditor(store, "0123456789abcdef__0000000000000000", ONTOLOGY, by="test")
        await same.import_memory(read_export(exported.replace(TAPE, "0123456789abcdef__0000000000000000")))
        into_same = json.loads(export_memory(await same.graph()))
    entity_nodes = {k: v for k, v in nodes.items() if v["kind"] == "entity"}
    relation_edges = {(s, v["type"], t) for s, t, v in edges if v["kind"] == "relation"}
    assert set(entity_nodes) == {e.key for e in graph.entities()}
    assert {k: v["name"] for k, v in entity_nodes.items()} == {e.key: e.name for e in graph.entities()}
    assert json.loads(entity_nodes[ALICE.key]["attributes"]) == graph.entity(ALICE.key).attributes  # type: ignore[union-attr]
    assert relation_edges == {r.key for r in graph.relations(current_only=True)}
    assert sum(v["kind"] == "fact" for v in nodes.values()) == graph.fact_count
    ids = {n["@id"] for n in linked["@graph"]}
    assert all(
        n["source"] in ids and n["target"] in ids for n in linked["@graph"] if n["@type"] == "sm:Relation"
    )
    assert result.changes.entities_added == sorted(e.key for e in graph.entities())
    original, copied = json.loads(exported), json.loads(export_memory(imported))
    assert copied["tape"] == copy and [e["evidence"] for e in copied["entities"]] == [[]] * len(graph)

    def without_positions(data: dict[str, Any]) -> dict[str, Any]:
        strip = {"evidence", "tape"}
        return {
            part: [{k: v for k, v in item.items() if k not in strip} for item in data[part]]
            for part in ("entities", "relations", "facts")
        }

    assert without_positions(copied) == without_positions(original)
    assert {k: v for k, v in into_same.items() if k != "tape"} == {
        k: v for k, v in original.items() if k != "tape"
    }
    outcomes.table(
        SECTION,
        "Export read back, export then import",
        [
            "store",
            "entities / relations / facts",
            "GraphML nodes / edges read back",
            "JSON-LD references resolved",
            "import into another tape (positions dropped)",
            "import into the tape the export names (all kept)",
        ],
    ).add(
        backend.name,
        f"{len(graph)} / {graph.relation_count} / {graph.fact_count}",
        f"{len(nodes)} / {len(edges)}",
        "all",
        "equal" if without_positions(copied) == without_positions(original) else "differs",
        "equal",
    )
    assert isinstance(MemoryExport.model_validate(original), MemoryExport)


# -- the erasure rule's write lock ------------------------------------------------------------------


def hold_the_lock(backend: Backend) -> subprocess.Popen[str]:
    """A process holding the tape's sidecar write lock until it reads a line (``tests/helpers/hold_lock.py``)."""
    command = [sys.executable, "-m", "tests.helpers.hold_lock", TAPE]
    if backend.name == "file":
        command.append(str(backend.home / "tapes"))
        (backend.home / "tapes").mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=backend.process_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
async def test_a_memory_write_waits_while_another_process_holds_the_sidecars_write_lock(
    backend: Backend,
) -> None:
    """A purge holds this lock while it records its erasure and rewrites: a write that read the
    erasures before it could otherwise store what the purge erased."""
    holder = hold_the_lock(backend)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        line = await asyncio.to_thread(holder.stdout.readline)
        assert line.strip() == "held", holder.stderr.read() if holder.stderr else ""
        async with backend.open() as store:
            write = asyncio.ensure_future(SnapshotStore(store).append(snapshots()[2]))
            await asyncio.sleep(1.0)
            waited = not write.done()
            holder.stdin.write("release\n")
            holder.stdin.flush()
            await asyncio.wait_for(write, 60)
            stored, _ = await SnapshotStore(store).load(TAPE)
    finally:
        holder.kill() if holder.poll() is None else None
        await asyncio.to_thread(holder.wait)
    assert waited and [s.id for s in stored] == [snapshots()[2].id]
