"""Bad tapes: every kind of broken line is read with a counted warning, never a crash."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from bub.store import FileTapeStore
from bub.tape import TapeEntry

from bub_semantic_memory._models import entity_key
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores._store import SnapshotStore, memory_tape_name
from bub_semantic_memory.tape._transcript import coerce_entries, read_tape_file
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder
from tests.helpers.injection import injected_memory
from tests.reliability._bub import BubRig
from tests.reliability._report import Outcomes
from tests.reliability._support import FAST, PROMPT, fact_tape, person

BIG = 5 * 1024 * 1024


def line(entry_id: Any, kind: Any, payload: Any, **extra: Any) -> bytes:
    return json.dumps({"id": entry_id, "kind": kind, "payload": payload, "meta": {}, **extra}).encode()


def message(entry_id: int, role: str, content: str) -> bytes:
    return line(entry_id, "message", {"role": role, "content": content})


# (defect, reason counted, lines): every line of a defect is skipped or repaired with one warning.
DEFECTS: list[tuple[str, str, list[bytes]]] = [
    (
        "malformed JSON",
        "malformed_json",
        [
            b'{"id": 7, "kind": "message", "payload": {"role": "user", "content": "cut',
            b"not json at all",
            b'{"id": 8,,}',
        ],
    ),
    (
        "unknown kind",
        "unknown_kind",
        [line(9, "telepathy", {"content": "hi"}), line(10, "MESSAGE", {"role": "user", "content": "hi"})],
    ),
    (
        "missing or mistyped field",
        "missing_field",
        [
            json.dumps({"kind": "message", "payload": {}}).encode(),
            line("11", "message", {"role": "user", "content": "id is a string"}),
            line(True, "message", {"role": "user", "content": "id is a bool"}),
            json.dumps({"id": 12, "payload": {"role": "user", "content": "no kind"}}).encode(),
        ],
    ),
    (
        "payload not an object",
        "bad_payload",
        [line(13, "message", ["role", "user"]), line(14, "message", "user: hi"), line(15, "message", None)],
    ),
    ("line not an object", "not_an_object", [b"[1, 2, 3]", b"42", b'"just a string"', b"null"]),
    (
        "invalid UTF-8",
        "invalid_utf8",
        [
            message(16, "user", "Invalid bytes follow: XX and the line is still read.").replace(
                b"XX", b"\xff\xfe"
            ),
            b"\x80\x81\x82 garbage that is not JSON either",
        ],
    ),
]


def bad_tape(tmp_path: Path) -> tuple[Path, list[str]]:
    """A tape with valid facts between the defects, a 5 MB message and a torn last line."""
    facts_text = []
    lines: list[bytes] = [line(1, "anchor", {"name": "session/start", "state": {"owner": "human"}})]
    entry_id = 100
    for index in range(len(DEFECTS)):
        entries, _ = fact_tape(index)
        text = f"{entries[0].payload['content']} {entries[2].payload['content']}"
        facts_text.append(text)
        lines.extend([message(entry_id, "user", text), message(entry_id + 1, "assistant", "Noted.")])
        lines.extend(DEFECTS[index][2])
        lines.append(b"")  # blank lines are not defects
        entry_id += 2
    big_fact = fact_tape(len(DEFECTS))[0][0].payload["content"]
    lines.append(message(entry_id, "user", f"{big_fact} " + "lorem ipsum " * (BIG // 12)))
    lines.append(message(entry_id + 1, "assistant", "That was long."))
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b'\n{"id": 999, "kind": "message", "payload": {"ro')  # torn
    return path, facts_text


async def test_a_bad_tape_is_read_with_counted_warnings_and_extracted(
    tmp_path: Path, fake_openai: FakeOpenAIServer, outcomes: Outcomes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bub_semantic_memory.tape._transcript")
    path, _ = bad_tape(tmp_path)
    started = time.monotonic()
    entries, report = read_tape_file(path)
    read_s = time.monotonic() - started
    counts = report.counts
    expected = {reason: len(lines) for _, reason, lines in DEFECTS}
    expected["malformed_json"] += 2  # the torn last line, and the garbage line once decoded
    assert dict(counts) == expected
    assert len(caplog.records) == sum(expected.values())  # each one logged
    valid = 1 + 2 * len(DEFECTS) + 2 + 1  # anchor, fact turns, the 5 MB turn, the repaired UTF-8 line
    assert len(entries) == valid and report.entries == valid
    repaired = next(e for e in entries if e.id == 16)
    assert "\ufffd" in repaired.payload["content"]  # undecodable bytes replaced, the rest kept

    facts = [fact_tape(i)[1] for i in range(len(DEFECTS) + 1)]
    fake_openai.responder = OracleResponder.from_golds(facts)
    async with Extractor(
        ExtractorConfig(
            model="fake-extractor", prompt=PROMPT, base_url=fake_openai.base_url, api_key="k", retry=FAST
        )
    ) as extractor:
        snapshots = await extractor.extract(entries, tape="bad")
    graph = MemoryGraph.fold(snapshots)
    people = {e.key for e in graph.entities() if e.type == "person"}
    assert people == {entity_key("person", person(i)) for i in range(len(DEFECTS) + 1)}
    largest = max(len(r.raw) for r in fake_openai.requests)
    assert largest < 64_000  # the 5 MB message was cut to the line limit before it was sent

    table = outcomes.table(
        "bad_tapes", "A tape file with planted defects", ["defect", "lines planted", "counted as"]
    )
    for name, reason, lines in DEFECTS:
        table.add(name, len(lines), reason)
    table.add("torn last line (no newline)", 1, "malformed_json")
    table.add("(the undecodable line is not JSON once repaired)", "-", "malformed_json")
    table.add("5 MB message", 1, "read whole; cut to 4,000 characters when rendered")
    table.add("warnings counted, by reason", "-", ", ".join(f"{r} {n}" for r, n in sorted(counts.items())))
    table.notes.append(
        f"{sum(counts.values())} warnings counted and logged, {len(entries)} entries kept, 0 crashes; "
        f"the {path.stat().st_size / 1e6:.1f} MB file was read in {read_s:.2f} s. "
        f"Extraction of the kept entries found all {len(people)} people; the largest request body was "
        f"{largest / 1000:.1f} kB."
    )


def test_in_memory_entries_of_any_shape_are_counted_not_fatal() -> None:
    class Opaque:
        pass

    items: list[Any] = [
        TapeEntry(1, "message", {"role": "user", "content": "a bub entry"}, {}, ""),
        {"id": 2, "kind": "message", "payload": {"role": "user", "content": "a dict"}},
        None,
        42,
        "text",
        Opaque(),
        {"id": 3, "kind": "message", "payload": "not a dict"},
        {"id": 4, "kind": "nonsense", "payload": {}},
    ]
    entries, report = coerce_entries(items)
    assert [e.id for e in entries] == [1, 2]
    assert dict(report.counts) == {"not_an_object": 4, "bad_payload": 1, "unknown_kind": 1}


async def test_a_corrupt_memory_sidecar_still_yields_its_good_snapshots(
    bub_rig: BubRig, outcomes: Outcomes
) -> None:
    facts = [fact_tape(i)[1] for i in range(2)]
    bub_rig.server.responder = OracleResponder.from_golds(facts)
    async with bub_rig.framework.running():
        await bub_rig.turn(fact_tape(0)[0][0].payload["content"])
        await bub_rig.idle()
    path = bub_rig.tapes_dir / f"{memory_tape_name(bub_rig.tape())}.jsonl"
    good = path.read_bytes()
    broken_snapshot = json.loads(good.splitlines()[0])
    broken_snapshot["payload"]["data"]["first_entry_id"] = "not a number"
    planted = [
        b'{"id": 50, "kind": "event", "payload": {"name": "memory.snap',
        b"\xff\xfe\xfd",
        json.dumps(broken_snapshot).encode(),
        b'{"id": 51, "kind": "event", "payload": []}',
    ]
    path.write_bytes(good + b"\n".join(planted) + b"\n")
    snapshots, report = await SnapshotStore(FileTapeStore(bub_rig.tapes_dir)).load(bub_rig.tape())
    assert len(snapshots) == 1
    assert dict(report.counts) == {
        "malformed_json": 2,
        "invalid_utf8": 1,
        "bad_snapshot": 1,
        "bad_payload": 1,
    }

    rig = BubRig(bub_rig.tmp_path, bub_rig.server, bub_rig.workspace)  # a new process reads it
    async with rig.framework.running():
        rig.watch_the_loop()
        result = await rig.turn(f"What does {person(0)} do?")
        await rig.idle()
    assert result.model_output == "ok" and rig.observer.errors == [] and rig.unhandled == []
    assert rig.plugin.stats["unreadable_snapshots"] == 5
    assert person(0) in injected_memory(rig.stub.requests[0].messages)  # the good snapshot's memory
    table = outcomes.table(
        "bad_tapes", "A corrupt memory sidecar read by the plugin in a new process", ["", "value"]
    )
    table.add("planted lines (torn, invalid UTF-8, invalid snapshot, non-object payload)", len(planted))
    table.add("unreadable lines counted by the plugin", rig.plugin.stats["unreadable_snapshots"])
    table.add("good snapshots still injected / turn completed", "yes / yes")
