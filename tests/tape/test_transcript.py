from __future__ import annotations

import json
from pathlib import Path

from bub.tape import TapeEntry

from bub_semantic_memory.tape._transcript import (
    Entry,
    LineLimits,
    coerce_entries,
    read_tape_file,
    render_transcript,
    strip_bub_header,
)
from tests.conftest import DATA

BUB_TAPE = DATA / "bub_run_tape.jsonl"


def test_a_real_bub_tape_renders_as_numbered_conversation_lines() -> None:
    entries, report = read_tape_file(BUB_TAPE)
    assert report.issues == []
    assert len(entries) == 29
    text = render_transcript(entries).text()
    assert text.splitlines() == [
        "[6] user: Hi! I'm Maya Lin, I lead the platform team at Globex. We're based in Lisbon.",
        "[7] assistant: Nice to meet you, Maya!",
        "[13] user: Can you read notes.txt and tell me who owns the Orion migration?",
        '[14] assistant called fs_read({"path": "notes.txt"})',
        "[15] tool: fs_read returned: Team notes: Dana Whitfield owns the Orion migration; the deadline is December 12.",
        "[20] assistant: Dana Whitfield owns the Orion migration; it is due December 12.",
        "[26] user: Actually Dana handed it over: Tom Becker owns Orion now.",
        "[27] assistant: Got it, Tom Becker owns Orion now.",
    ]


def test_system_prompts_events_and_bootstrap_anchor_are_dropped() -> None:
    entries, _ = read_tape_file(BUB_TAPE)
    rendered_ids = set(render_transcript(entries).entry_ids)
    dropped = {e.id for e in entries if e.kind in ("system", "event")}
    assert rendered_ids.isdisjoint(dropped)
    assert 1 not in rendered_ids  # session/start


def test_in_memory_bub_entries_and_dicts_read_alike() -> None:
    entries, _ = read_tape_file(BUB_TAPE)
    as_bub = [TapeEntry(e.id, e.kind, e.payload, e.meta, e.date) for e in entries]
    as_dicts = [json.loads(line) for line in BUB_TAPE.read_text().splitlines()]
    assert coerce_entries(as_bub)[0] == entries
    assert coerce_entries(as_dicts)[0] == entries


def test_strip_bub_header_returns_text_and_sender() -> None:
    content = (
        "sender_id=Priya|channel=$telegram|chat_id=42\n---Date: 2026-11-30T10:00:00+00:00---\nHello team"
    )
    assert strip_bub_header(content) == ("Hello team", "Priya")
    assert strip_bub_header("just text = fine") == ("just text = fine", None)


def test_a_named_sender_is_kept_in_the_line() -> None:
    entry = Entry(3, "message", {"role": "user", "content": "sender_id=Priya|channel=$cli\nI moved to Oslo"})
    assert render_transcript([entry]).text() == "[3] user (Priya): I moved to Oslo"


def test_bad_lines_are_skipped_counted_and_named(tmp_path: Path) -> None:
    good = {"id": 1, "kind": "message", "payload": {"role": "user", "content": "hi"}, "meta": {}, "date": ""}
    lines = [
        json.dumps(good).encode(),
        b'{"id": 2, "kind": "message", "payload": {"role": "user"',  # torn / malformed
        json.dumps({"id": 3, "kind": "mystery", "payload": {}}).encode(),
        json.dumps({"id": 4, "kind": "message", "payload": "not a dict"}).encode(),
        json.dumps({"kind": "message", "payload": {}}).encode(),
        json.dumps([1, 2, 3]).encode(),
        json.dumps({"id": 7, "kind": "message", "payload": {"role": "user", "content": "caf"}}).encode()[:-3]
        + b'\xff"}}',
    ]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    entries, report = read_tape_file(path)
    assert [e.id for e in entries] == [1, 7]
    assert dict(report.counts) == {
        "malformed_json": 1,
        "unknown_kind": 1,
        "bad_payload": 1,
        "missing_field": 1,
        "not_an_object": 1,
        "invalid_utf8": 1,
    }
    assert str(report.issues[0]).startswith("line 2:")


def test_a_huge_entry_is_truncated_with_a_note() -> None:
    huge = "word " * 1_000_000  # 5 MB
    entry = Entry(9, "message", {"role": "user", "content": huge})
    from bub_semantic_memory.tape._transcript import ReadReport

    report = ReadReport()
    line = render_transcript([entry], limits=LineLimits(message=1000), report=report).lines[0].text
    assert len(line) < 1100 and "characters truncated" in line
    assert report.counts["truncated"] == 1


def test_tool_results_are_labelled_with_their_call_names() -> None:
    entries = [
        Entry(
            1,
            "tool_call",
            {
                "calls": [
                    {"id": "a", "function": {"name": "crm.lookup", "arguments": '{"q": "Acme"}'}},
                    {"id": "b", "function": {"name": "calendar.find", "arguments": {"day": "mon"}}},
                ]
            },
        ),
        Entry(2, "tool_result", {"results": ["Acme: owner Dana", {"event": "standup"}]}),
    ]
    lines = render_transcript(entries).text().splitlines()
    assert lines[0] == '[1] assistant called crm.lookup({"q": "Acme"}); calendar.find({"day": "mon"})'
    assert (
        lines[1]
        == '[2] tool: crm.lookup returned: Acme: owner Dana ⏎ calendar.find returned: {"event": "standup"}'
    )


def test_redaction_applies_to_every_rendered_line() -> None:
    entry = Entry(
        1, "message", {"role": "user", "content": "my key is sk-proj-abcdefghijklmnopqrstuvwxyz123456"}
    )
    text = render_transcript([entry], redact=lambda s: s.replace("sk-proj", "XX")).text()
    assert "sk-proj" not in text


def test_a_line_break_marker_typed_by_the_user_does_not_split_a_paragraph() -> None:
    entry = Entry(1, "message", {"role": "user", "content": "Press ⏎ then type Lisbon"})
    (line,) = render_transcript([entry]).lines
    assert line.text == "[1] user: Press ⏎ then type Lisbon"
    assert line.paragraphs == ("Press ⏎ then type Lisbon",)


def test_paragraphs_are_the_entrys_own_lines_and_the_text_joins_them() -> None:
    entries = [
        Entry(1, "message", {"role": "user", "content": "Notes ⏎ draft\nMaya Lin moved to Lisbon.\n\nDone."}),
        Entry(
            2,
            "tool_call",
            {"content": "Looking ⏎ up", "calls": [{"function": {"name": "f", "arguments": "{}"}}]},
        ),
        Entry(3, "tool_result", {"results": ["one\ntwo", "three ⏎ four"]}),
    ]
    lines = render_transcript(entries).lines
    assert [line.paragraphs for line in lines] == [
        ("Notes ⏎ draft", "Maya Lin moved to Lisbon.", "Done."),
        ("Looking ⏎ up", "called f({})"),
        ("f returned: one", "two", "tool returned: three ⏎ four"),
    ]
    assert [line.text for line in lines] == [
        "[1] user: Notes ⏎ draft ⏎ Maya Lin moved to Lisbon. ⏎ Done.",
        "[2] assistant: Looking ⏎ up ⏎ called f({})",
        "[3] tool: f returned: one ⏎ two ⏎ tool returned: three ⏎ four",
    ]


def test_paragraphs_follow_a_redaction_across_them_and_a_cut() -> None:
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    entry = Entry(1, "message", {"role": "user", "content": f"Here ⏎ it is\n{key}\nThanks, Maya"})
    from bub_semantic_memory.tape._redact import Redactor

    (line,) = render_transcript([entry], redact=Redactor()).lines
    assert "MIIE" not in line.text
    assert line.paragraphs[0] == "Here ⏎ it is" and line.paragraphs[-1] == "Thanks, Maya"
    assert " ⏎ ".join(line.paragraphs) == line.body
    long = Entry(2, "message", {"role": "user", "content": "first ⏎ part\n" + "word " * 50})
    (cut,) = render_transcript([long], limits=LineLimits(message=30)).lines
    assert cut.paragraphs[0] == "first ⏎ part" and "characters truncated" in cut.paragraphs[-1]
    assert " ⏎ ".join(cut.paragraphs) == cut.body
