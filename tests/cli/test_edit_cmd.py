"""The ``memory`` edit verbs on a file store, as a user runs them: output, exit codes, what is stored."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
import typer.main
from bub.store import FileTapeStore
from bub.tape import TapeEntry
from typer.testing import CliRunner

from bub_semantic_memory.cli import app, bub_app
from bub_semantic_memory.evals.extraction import ResponseCache
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores._store import SnapshotStore, memory_tape_name
from tests.stores.test_forget import TAPE, snapshots

runner = CliRunner()
ONTOLOGY = PromptLibrary().load("extract").ontology


@pytest.fixture
def tapes(tmp_path: Path) -> Path:
    directory = tmp_path / "tapes"
    store = FileTapeStore(directory)
    for number in range(10):
        store.append(TAPE, TapeEntry.message({"role": "user", "content": f"entry {number}"}))

    async def seed() -> None:
        for snapshot in snapshots():
            await SnapshotStore(store).append(snapshot)

    asyncio.run(seed())
    return directory


def memory(directory: Path, tape: str = TAPE) -> MemoryGraph:
    async def load() -> MemoryGraph:
        return (await SnapshotStore(FileTapeStore(directory)).load_graph(tape, ONTOLOGY)).graph

    return asyncio.run(load())


def run(directory: Path, *args: str, tape: str = TAPE) -> Any:
    return runner.invoke(app, ["memory", *args, "--tape", tape, "--tapes-dir", str(directory)])


def test_inside_bub_the_verbs_need_no_second_memory(tapes: Path) -> None:
    """``bub memory forget`` (the verbs at the top of bub's mount) and the old ``bub memory memory
    forget`` make the same edit; the console script keeps ``semantic-memory memory forget``."""
    mounted = bub_app()
    top = runner.invoke(mounted, ["forget", "Ali", "--tape", TAPE, "--tapes-dir", str(tapes), "--json"])
    assert top.exit_code == 0, top.output
    assert json.loads(top.stdout)["edit"]["op"] == "forget" and memory(tapes).lookup("Alice Chen") == []
    edit_id = json.loads(top.stdout)["edit"]["id"]
    old = runner.invoke(mounted, ["memory", "undo", edit_id, "--tape", TAPE, "--tapes-dir", str(tapes)])
    assert old.exit_code == 0, old.output
    assert memory(tapes).lookup("Alice Chen") != []
    assert runner.invoke(app, ["forget", "--help"]).exit_code == 2  # not a command of semantic-memory
    groups = {name: typer.main.get_command(each) for name, each in (("bub", mounted), ("script", app))}
    verbs = set(groups["script"].commands["memory"].commands)  # type: ignore[attr-defined]
    assert verbs <= set(groups["bub"].commands) and groups["bub"].commands["memory"].hidden  # type: ignore[attr-defined]


def test_forget_prints_what_it_removed_and_undo_brings_it_back(tapes: Path) -> None:
    forgot = run(tapes, "forget", "Ali", "--by", "tester")
    assert forgot.exit_code == 0, forgot.output
    lines = forgot.stdout.splitlines()
    assert (
        lines[0]
        == "forget Alice Chen: 1 entity removed, 2 relations removed, 2 facts removed, 1 attribute changed."
    )
    assert "  entities removed: person:alice-chen" in lines
    assert "  facts removed: Bob Stone met Alice Chen for lunch" in lines
    edit_id = lines[-1].split()[1].rstrip(";")
    assert lines[-1] == f"Edit {edit_id}; undo with: semantic-memory memory undo {edit_id} --tape {TAPE}"
    assert memory(tapes).lookup("Alice Chen") == []
    shown = runner.invoke(app, ["show", TAPE, "--tapes-dir", str(tapes)])
    assert "Alice" not in shown.stdout and "Bob Stone" in shown.stdout
    listed = run(tapes, "edits")
    assert listed.stdout.strip().endswith("tester  forget Alice Chen")
    undone = run(tapes, "undo", edit_id[:6])
    assert undone.exit_code == 0 and undone.stdout.startswith(f"undo {edit_id}: 1 entity added")
    assert memory(tapes).lookup("Alice Chen") == ["person:alice-chen"]
    assert "(does not apply" in run(tapes, "edits").stdout


def test_forget_json_has_the_edit_and_its_changes(tapes: Path) -> None:
    result = run(tapes, "forget", "--relation", "Carol Diaz", "lives_in", "Porto", "--json")
    data = json.loads(result.stdout)
    assert set(data) == {"edit", "changes", "purge", "notes"} and data["purge"] is None
    assert data["edit"]["op"] == "forget" and data["edit"]["relation"] == [
        "person:carol-diaz",
        "lives_in",
        "location:porto",
    ]
    assert data["changes"]["relations_removed"] == ["person:carol-diaz lives_in location:porto"]
    assert data["changes"]["entities_removed"] == []


def test_forget_a_fact_by_its_words(tapes: Path) -> None:
    result = run(tapes, "forget", "--fact", "bob stone plays the piano")
    assert result.exit_code == 0 and result.stdout.startswith(
        "forget fact 'Bob Stone plays the piano': 1 fact removed."
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["forget", "Nobody Here"], 1, "Error: no entity named 'Nobody Here' in the memory of"),
        (["forget"], 2, "Error: give one of NAME, --relation SRC TYPE DST or --fact STATEMENT"),
        (["forget", "Ali", "--fact", "x"], 2, "Error: give one of NAME"),
        (["unset", "Bob Stone", "age"], 1, "Error: Bob Stone has no attribute 'age'"),
        (["undo", "zzzz"], 1, "Error: no edit of the memory of"),
        (["split", "Bob Stone", "Lisbon"], 1, "Error: no merge of 'Lisbon' into person:bob-stone"),
        (["end", "Bob Stone", "works_for", "Lisbon"], 1, "Error: no relation person:bob-stone works_for"),
    ],
)
def test_a_bad_edit_is_one_error_line(tapes: Path, args: list[str], code: int, message: str) -> None:
    result = run(tapes, *args)
    assert result.exit_code == code and result.stdout == ""
    assert result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1


def test_set_unset_merge_split_and_end(tapes: Path) -> None:
    assert run(tapes, "set", "Bob Stone", "role", "pianist").stdout.startswith(
        "set Bob Stone role = 'pianist': 1 attribute changed."
    )
    assert memory(tapes).entity("person:bob-stone").attributes["role"] == "pianist"  # type: ignore[union-attr]
    assert run(tapes, "unset", "Bob Stone", "role").exit_code == 0
    assert "role" not in memory(tapes).entity("person:bob-stone").attributes  # type: ignore[union-attr]
    merged = run(tapes, "merge", "Bob Stone", "Carol Diaz")
    assert merged.stdout.startswith("merge Carol Diaz into Bob Stone: 1 entity removed")
    graph = memory(tapes)
    assert graph.lookup("Carol Diaz") == ["person:bob-stone"]
    assert ("person:bob-stone", "lives_in", "location:porto") in {r.key for r in graph.relations()}
    assert run(tapes, "split", "Bob Stone", "Carol Diaz").stdout.startswith("undo ")
    assert memory(tapes).lookup("Carol Diaz") == ["person:carol-diaz"]
    ended = run(tapes, "end", "Carol Diaz", "lives_in", "Porto", "--at", "9")
    assert ended.stdout.startswith(
        "end person:carol-diaz lives_in location:porto at entry 9: 1 relation ended."
    )
    [porto] = [r for r in memory(tapes).relations() if r.target == "location:porto"]
    assert porto.valid_until == 9


def test_forget_purge_erases_the_name_from_the_files_and_the_eval_cache(tapes: Path, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    cache.put("a" * 64, {}, [snapshots()[0]])
    result = run(tapes, "forget", "Alice Chen", "--purge", "--eval-cache", str(tmp_path / "cache"))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    purged = next(line for line in lines if line.startswith("Purged from"))
    assert purged.startswith(
        "Purged from the file store: 2 snapshot(s) rewritten (6 item(s) taken out), 0 checkpoint(s) invalidated, "
        "0 edit(s) reduced to digests, 0 archive(s) rewritten, 0 unreadable line(s) blanked, 0 torn chunk(s) "
        "removed, 1 eval cache file(s) deleted"
    )  # the forget was stored as digests: no checkpoint or edit ever held her name
    assert "It cannot be undone. Not touched by the purge:" in lines
    assert any("the conversation itself, bub's tape, is not rewritten" in line for line in lines)
    assert any("export files" in line for line in lines)
    sidecar = (tapes / f"{memory_tape_name(TAPE)}.jsonl").read_text(encoding="utf-8")
    assert "alice" not in sidecar.lower() and list((tmp_path / "cache").glob("*/*.json")) == []
    assert "forget (purged: names erased)" in run(tapes, "edits").stdout
    again = run(tapes, "forget", "Alice Chen", "--purge")  # run again: it says what was left
    assert again.exit_code == 0, again.output
    assert "Purged before: 0 trace(s) were left (it was complete)." in again.stdout.splitlines()


def test_export_writes_three_formats_and_import_adds_it_to_another_tape(tapes: Path, tmp_path: Path) -> None:
    out = tmp_path / "memory.json"
    written = run(tapes, "export", "--out", str(out), "--history")
    assert written.exit_code == 0 and written.stdout == ""
    assert written.stderr.startswith(
        f"Wrote 5 entities, 4 relations and 3 facts of {TAPE} to {out} (json, with history)"
    )
    graphml = ElementTree.fromstring(run(tapes, "export", "--format", "graphml").stdout)
    nodes = graphml.findall(".//{http://graphml.graphdrawing.org/xmlns}node")
    assert len(nodes) == 5 + 3
    linked = json.loads(run(tapes, "export", "--format", "jsonld").stdout)
    assert "@context" in linked and len(linked["@graph"]) == 5 + 4 + 3
    bad = run(tapes, "export", "--format", "csv")
    assert bad.exit_code == 2 and bad.stderr.startswith(
        "Error: --format must be one of json, graphml, jsonld"
    )

    other = "0123456789abcdef__9999999999999999"
    imported = run(tapes, "import", str(out), tape=other)
    assert imported.exit_code == 0 and imported.stdout.startswith("import snapshot ")
    assert {e.key for e in memory(tapes, other).entities()} == {e.key for e in memory(tapes).entities()}
    undo_id = run(tapes, "edits", "--json", tape=other)
    [edit] = json.loads(undo_id.stdout)
    assert edit["op"] == "import" and edit["applies"] is True
    assert run(tapes, "undo", edit["id"], tape=other).exit_code == 0
    assert len(memory(tapes, other)) == 0  # the import is taken out again

    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "something else"}', encoding="utf-8")
    refused = run(tapes, "import", str(broken), tape=other)
    assert refused.exit_code == 1 and refused.stderr.startswith("Error: not a memory export (format:")


def test_purging_a_relation_erases_it_from_snapshots_checkpoints_and_edits(tapes: Path) -> None:
    assert (
        run(tapes, "end", "Carol Diaz", "lives_in", "Porto").exit_code == 0
    )  # an edit about it, and a checkpoint
    result = run(tapes, "forget", "--relation", "Carol Diaz", "lives_in", "Porto", "--purge")
    assert result.exit_code == 0, result.output
    lines = [
        json.loads(line) for line in (tapes / f"{memory_tape_name(TAPE)}.jsonl").read_text().splitlines()
    ]
    key = ["person:carol-diaz", "lives_in", "location:porto"]
    relations = [
        [r["source"], r["type"], r["target"]]
        for line in lines
        if line["payload"].get("name") == "memory.snapshot"
        for r in line["payload"]["data"].get("relations", [])
    ]
    edits = [line["payload"]["data"] for line in lines if line["payload"].get("name") == "memory.edit"]
    checkpoints = [
        line["payload"]["state"] for line in lines if line["payload"]["name"] == "memory.checkpoint"
    ]
    [erasure] = [line["payload"]["state"] for line in lines if line["payload"]["name"] == "memory.erasure"]
    assert erasure["edit"]["purged"] and "porto" not in json.dumps(erasure)
    assert key not in relations and len(relations) == 3
    assert [(e["op"], e.get("purged", False), "relation" in e) for e in edits] == [
        ("end", True, False),
        ("forget", True, False),
    ]
    assert all(c.get("purged") for c in checkpoints[:-1]) and "graph" in checkpoints[-1]
    assert 'location:porto","lives_in' not in checkpoints[-1]["graph"]
    assert ["person:carol-diaz", "lives_in", "location:porto"] not in [
        e[:3] for e in json.loads(checkpoints[-1]["graph"])["edges"]
    ]
    assert memory(tapes).lookup("Carol Diaz") == ["person:carol-diaz"]  # the entities stay


def test_an_export_file_is_readable_by_the_user_only(tapes: Path, tmp_path: Path) -> None:
    out = tmp_path / "memory.json"
    out.write_text("old", encoding="utf-8")
    out.chmod(0o644)  # an existing file is made private too
    previous = os.umask(0)
    try:
        written = run(tapes, "export", "--out", str(out))
        fresh = run(tapes, "export", "--out", str(tmp_path / "fresh.graphml"), "--format", "graphml")
    finally:
        os.umask(previous)
    assert written.exit_code == 0 and fresh.exit_code == 0, written.output + fresh.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "fresh.graphml").stat().st_mode) == 0o600


def test_an_export_written_before_a_purge_imports_without_her_and_says_so(
    tapes: Path, tmp_path: Path
) -> None:
    out = tmp_path / "before.json"
    assert run(tapes, "export", "--out", str(out)).exit_code == 0
    assert run(tapes, "forget", "Alice Chen", "--purge").exit_code == 0
    back = run(tapes, "import", str(out))  # into the tape it was exported from
    other = "0123456789abcdef__0000111100001111"
    elsewhere = run(tapes, "import", str(out), tape=other)  # into another tape of the store
    assert back.exit_code == 0 and elsewhere.exit_code == 0, back.output + elsewhere.output
    assert "item(s) of the export were left out: a purge erased them" in back.stdout
    assert "item(s) of the export were left out: a purge erased them" in elsewhere.stdout
    for tape in (TAPE, other):
        raw = (tapes / f"{memory_tape_name(tape)}.jsonl").read_text(encoding="utf-8")
        assert "alice" not in raw.lower() and memory(tapes, tape).lookup("Carol Diaz") == [
            "person:carol-diaz"
        ]
