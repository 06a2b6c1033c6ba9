from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bub_semantic_memory._errors import FixtureError
from bub_semantic_memory.evals import Gold, load_fixtures
from bub_semantic_memory.evals import import_conversations as _import_conversations
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.tape._transcript import read_tape_file, render_transcript
from tests.conftest import REPO

# The gold here uses the promoted prompt's types; the importer checks against what it is given.
import_conversations = functools.partial(
    _import_conversations, ontology=PromptLibrary().load("extract").ontology
)

SOURCES = REPO / "evals" / "sources"
FIXTURES = REPO / "evals" / "fixtures"


def write_source(path: Path, *conversations: dict[str, Any] | str) -> Path:
    lines = [c if isinstance(c, str) else json.dumps(c, ensure_ascii=False) for c in conversations]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


MINIMAL: dict[str, Any] = {
    "id": "minimal",
    "turns": [
        {"speaker": "user", "text": "I'm Maya Lin and I work at Globex."},
        {"speaker": "assistant", "text": "Nice to meet you, Maya!"},
    ],
    "gold": {
        "entities": [
            {"name": "Maya Lin", "type": "person", "aliases": ["Maya"]},
            {"name": "Globex", "type": "organization", "aliases": []},
        ],
        "relations": [{"source": "Maya Lin", "target": "Globex", "type": "works_for"}],
    },
}

TOOLS: dict[str, Any] = {
    "id": "tools",
    "description": "a group chat with tools",
    "tags": ["tool-facts", "group-chat"],
    "turns": [
        {"speaker": "user", "text": "Who owns Orion?"},
        {
            "speaker": "assistant",
            "text": "Let me check.",
            "tool_calls": [
                {"name": "fs_read", "arguments": {"path": "notes.txt"}},
                {"name": "crm.lookup", "arguments": {"query": "Orion"}},
            ],
        },
        {"speaker": "tool", "name": "fs_read", "text": "Dana owns Orion."},
        {"speaker": "tool", "name": "crm.lookup", "text": '{"owner": "Dana Whitfield"}'},
        {"speaker": "assistant", "text": "Dana Whitfield owns Orion."},
        {"speaker": "Priya", "text": "Thanks!"},
        {"speaker": "bot", "text": "Anytime."},
    ],
    "gold": {
        "entities": [
            {"name": "Dana Whitfield", "type": "person", "aliases": ["Dana"]},
            {"name": "Orion", "type": "project"},
        ],
        "relations": [{"source": "Dana Whitfield", "target": "Orion", "type": "works_on"}],
        "questions": [{"question": "Who owns Orion?", "answer": "Dana Whitfield"}],
    },
}


def test_minimal_format_becomes_a_readable_fixture(tmp_path: Path) -> None:
    out = tmp_path / "fixtures"
    report = import_conversations(write_source(tmp_path / "src.jsonl", MINIMAL), out)
    assert report.fixtures == ["minimal"]
    assert report.warnings == []
    assert report.issues == {}
    gold = Gold.model_validate_json((out / "minimal" / "gold.json").read_bytes())
    assert gold.id == "minimal"
    assert [e.name for e in gold.entities] == ["Maya Lin", "Globex"]
    assert gold.relations[0].type == "works_for"
    entries, read_report = read_tape_file(out / "minimal" / "tape.jsonl")
    assert read_report.issues == []
    assert render_transcript(entries).text().splitlines() == [
        "[5] user: I'm Maya Lin and I work at Globex.",
        "[6] assistant: Nice to meet you, Maya!",
    ]
    [fixture] = load_fixtures(out)
    assert fixture.id == "minimal"


def test_tape_has_the_shape_of_a_bub_tape(tmp_path: Path) -> None:
    out = tmp_path / "fixtures"
    import_conversations(write_source(tmp_path / "src.jsonl", TOOLS), out)
    lines = (out / "tools" / "tape.jsonl").read_text(encoding="utf-8").splitlines()
    raw = [json.loads(line) for line in lines]
    assert [list(entry) for entry in raw] == [["id", "kind", "payload", "meta", "date"]] * len(raw)
    assert [e["id"] for e in raw] == list(range(1, len(raw) + 1))
    assert all(e["meta"] == {} for e in raw)
    assert raw[0]["date"] == "2026-01-05T09:00:00+00:00"
    assert raw[1]["date"] == "2026-01-05T09:01:00+00:00"
    kinds = [(e["kind"], e["payload"].get("name") or e["payload"].get("role")) for e in raw]
    assert kinds == [
        ("anchor", "session/start"),
        ("event", "handoff"),
        ("event", "loop.start"),
        ("system", None),
        ("message", "user"),
        ("tool_call", None),
        ("tool_result", None),
        ("message", "assistant"),
        ("event", "run"),
        ("event", "loop.start"),
        ("system", None),
        ("message", "user"),
        ("message", "assistant"),
        ("event", "run"),
    ]
    assert lines[0] == (
        '{"id": 1, "kind": "anchor", "payload": {"name": "session/start", "state": {"owner": "human"}}, '
        '"meta": {}, "date": "2026-01-05T09:00:00+00:00"}'
    )
    assert raw[1]["payload"] == {
        "name": "handoff",
        "data": {"name": "session/start", "state": {"owner": "human"}},
    }
    user = raw[4]["payload"]["content"]
    assert (
        user
        == "sender_id=human|channel=$cli|chat_id=fixture\n---Date: 2026-01-05T09:04:00+00:00---\nWho owns Orion?"
    )
    assert raw[2]["payload"]["data"] == {"model": "fixture", "prompt": user}
    assert raw[11]["payload"]["content"].startswith("sender_id=Priya|channel=$cli|chat_id=fixture\n")
    assert raw[5]["payload"] == {
        "calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "fs_read", "arguments": '{"path": "notes.txt"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "crm.lookup", "arguments": '{"query": "Orion"}'},
            },
        ],
        "content": "Let me check.",
    }
    assert raw[6]["payload"] == {"results": ["Dana owns Orion.", '{"owner": "Dana Whitfield"}']}
    assert raw[8]["payload"] == {"name": "run", "data": {"status": "ok"}}

    entries, report = read_tape_file(out / "tools" / "tape.jsonl")
    assert report.issues == []
    assert render_transcript(entries).text().splitlines() == [
        "[5] user: Who owns Orion?",
        '[6] assistant: Let me check. ⏎ called fs_read({"path": "notes.txt"}); crm.lookup({"query": "Orion"})',
        '[7] tool: fs_read returned: Dana owns Orion. ⏎ crm.lookup returned: {"owner": "Dana Whitfield"}',
        "[8] assistant: Dana Whitfield owns Orion.",
        "[12] user (Priya): Thanks!",
        "[13] assistant: Anytime.",
    ]
    gold = json.loads((out / "tools" / "gold.json").read_text(encoding="utf-8"))
    assert gold["description"] == "a group chat with tools"
    assert gold["tags"] == ["tool-facts", "group-chat"]
    assert gold["questions"] == [{"question": "Who owns Orion?", "answer": "Dana Whitfield"}]


def test_tool_results_follow_call_order_and_unanswered_runs_are_closed(tmp_path: Path) -> None:
    conversation = {
        "id": "order",
        "turns": [
            {"speaker": "user", "text": "Check both."},
            {
                "speaker": "assistant",
                "tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}],
            },
            {"speaker": "tool", "name": "b", "text": "from b"},
            {"speaker": "tool", "name": "a", "text": "from a"},
            {"speaker": "user", "text": "And?"},
        ],
        "gold": {"entities": [], "relations": []},
    }
    out = tmp_path / "fixtures"
    import_conversations(write_source(tmp_path / "src.jsonl", conversation), out)
    raw = [json.loads(line) for line in (out / "order" / "tape.jsonl").read_text().splitlines()]
    assert raw[5]["payload"] == {
        "calls": [
            {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "b", "arguments": "{}"}},
        ]
    }
    assert raw[6]["payload"] == {"results": ["from a", "from b"]}
    assert [e["kind"] for e in raw[7:]] == ["event", "event", "system", "message", "event"]
    assert raw[-1]["payload"]["name"] == "run"


def test_gold_problems_are_kept_and_reported(tmp_path: Path) -> None:
    conversation = {
        "id": "odd",
        "turns": [{"speaker": "user", "text": "Zara flies the Nimbus out of Oslo."}],
        "gold": {
            "entities": [
                {"name": "Zara", "type": "person", "aliases": ["Captain Z"]},
                {"name": "Nimbus", "type": "spaceship"},
                {"name": "Oslo", "type": "location"},
            ],
            "relations": [
                {"source": "Zara", "target": "Nimbus", "type": "pilots"},
                {"source": "Nimbus", "target": "Bergen", "type": "located_in"},
            ],
        },
    }
    out = tmp_path / "fixtures"
    report = import_conversations(write_source(tmp_path / "src.jsonl", conversation), out)
    gold = Gold.model_validate_json((out / "odd" / "gold.json").read_bytes())
    assert [e.type for e in gold.entities] == ["person", "spaceship", "location"]
    assert [r.type for r in gold.relations] == ["pilots", "located_in"]
    issues = report.issues["odd"]
    assert issues.unknown_entity_types == ["spaceship"]
    assert issues.unknown_relation_types == ["pilots"]
    assert issues.dangling_endpoints == ["Bergen"]
    assert issues.unmentioned_names == ["Captain Z"]
    assert len(report.warnings) == 4
    assert all(w.startswith("odd: ") for w in report.warnings)
    assert any("'spaceship'" in w for w in report.warnings)
    assert any("'Captain Z'" in w and "does not occur" in w for w in report.warnings)


def test_names_in_unspaced_scripts_are_found_as_substrings(tmp_path: Path) -> None:
    conversation = {
        "id": "zh",
        "turns": [{"speaker": "user", "text": "我们在讨论星火计划。王芳负责数据迁移。"}],
        "gold": {
            "entities": [{"name": "星火计划", "type": "project"}, {"name": "王芳", "type": "person"}],
            "relations": [],
        },
    }
    report = import_conversations(write_source(tmp_path / "src.jsonl", conversation), tmp_path / "out")
    assert report.warnings == []
    gold_text = (tmp_path / "out" / "zh" / "gold.json").read_text(encoding="utf-8")
    assert "星火计划" in gold_text  # ensure_ascii=False


def test_an_alias_used_as_an_endpoint_is_reported_with_a_hint(tmp_path: Path) -> None:
    relations = [{"source": "Maya", "target": "Globex", "type": "works_for"}]
    conversation = {**MINIMAL, "gold": {**MINIMAL["gold"], "relations": relations}}
    report = import_conversations(write_source(tmp_path / "src.jsonl", conversation), tmp_path / "out")
    assert report.warnings == [
        "minimal: relation 'Maya -works_for-> Globex': 'Maya' is not a gold entity name (an alias of 'Maya Lin')"
    ]


DAY_1, DAY_2 = "2026-03-02T18:30:00+00:00", "2026-03-05T09:15:00+02:00"


def tool_turn(name: str = "fs_read") -> dict[str, Any]:
    return {"speaker": "tool", "name": name, "text": "result"}


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        (
            [{"speaker": "user", "text": "hi"}, tool_turn()],
            "turn 2: tool result without a preceding tool call",
        ),
        (
            [
                {"speaker": "user", "text": "hi"},
                {"speaker": "assistant", "tool_calls": [{"name": "fs_read", "arguments": {}}]},
                tool_turn(),
                tool_turn(),
            ],
            "turn 4: tool result without a preceding tool call",
        ),
        (
            [
                {"speaker": "user", "text": "hi"},
                {"speaker": "assistant", "tool_calls": [{"name": "fs_read", "arguments": {}}]},
                tool_turn("web.fetch"),
            ],
            "turn 3: tool result named 'web.fetch' matches no pending call",
        ),
        (
            [
                {"speaker": "user", "text": "hi"},
                {"speaker": "assistant", "tool_calls": [{"name": "fs_read", "arguments": {}}]},
                {"speaker": "assistant", "text": "done"},
            ],
            "turn 3: tool call(s) never answered",
        ),
        (
            [{"speaker": "user", "text": "hi"}, {"speaker": "assistant", "tool_calls": [{"name": "x"}]}],
            "end of conversation: tool call(s) never answered",
        ),
        ([{"speaker": "user", "text": "  "}], "turn 1: empty user message"),
        ([{"speaker": "a|b", "text": "hi"}], "turn 1: speaker 'a|b' cannot contain"),
        ([{"speaker": "user", "text": "hi", "tool_calls": [{"name": "x"}]}], "turn 1: only assistant turns"),
        (
            [{"speaker": "user", "text": "hi"}, {"speaker": "assistant", "text": "ok", "date": DAY_2}],
            "turn 2: only user turns can have a date",
        ),
        (
            [
                {"speaker": "user", "text": "hi", "date": DAY_2},
                {"speaker": "user", "text": "hi", "date": DAY_1},
            ],
            "turn 2: date 2026-03-02T18:30:00+00:00 is earlier than the entry before it",
        ),
    ],
)
def test_malformed_conversations_name_the_file_and_line(
    tmp_path: Path, turns: list[dict[str, Any]], message: str
) -> None:
    source = write_source(
        tmp_path / "src.jsonl",
        MINIMAL,
        {"id": "bad", "turns": turns, "gold": {"entities": [], "relations": []}},
    )
    out = tmp_path / "out"
    with pytest.raises(FixtureError) as caught:
        import_conversations(source, out, strict=True)
    assert f"{source}:2: conversation 'bad': {message}" in str(caught.value)
    assert not out.exists()  # strict: nothing is written when any line is malformed
    # By default the bad conversation is skipped, named with its reason, and the rest written.
    report = import_conversations(source, out)
    assert report.fixtures == ["minimal"] and (out / "minimal" / "tape.jsonl").is_file()
    [skipped] = report.skipped
    assert (skipped.where, skipped.id) == (f"{source}:2", "bad") and message in skipped.reason
    assert report.warnings == [f"skipped {skipped.reason}"]
    assert report.summary() == "1 imported, 1 skipped"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "malformed conversation"),
        (json.dumps({"id": "x", "turns": []}), "malformed conversation"),
        (
            json.dumps({"id": "../escape", "turns": [{"speaker": "user", "text": "hi"}], "gold": {}}),
            "conversation id",
        ),
        (json.dumps(MINIMAL), "duplicate conversation id 'minimal'"),
    ],
)
def test_malformed_lines_are_fixture_errors(tmp_path: Path, line: str, message: str) -> None:
    source = write_source(tmp_path / "src.jsonl", MINIMAL, "", line)
    with pytest.raises(FixtureError, match=rf"src\.jsonl:3: .*{message}") as caught:
        import_conversations(source, tmp_path / "out", strict=True)
    assert "\n" not in str(caught.value)  # one human line, not pydantic's report
    report = import_conversations(source, tmp_path / "out")
    assert report.fixtures == ["minimal"] and len(report.skipped) == 1


def test_missing_source_is_a_fixture_error(tmp_path: Path) -> None:
    with pytest.raises(FixtureError, match="does not exist"):
        import_conversations(tmp_path / "nope.jsonl", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FixtureError, match=r"no \*\.jsonl files"):
        import_conversations(tmp_path / "empty", tmp_path / "out")


def test_real_sources_regenerate_the_committed_fixtures_byte_for_byte(tmp_path: Path) -> None:
    first = import_conversations(SOURCES, tmp_path / "one")
    second = import_conversations(SOURCES, tmp_path / "two")
    assert first == second
    assert len(first.fixtures) == len(set(first.fixtures))
    # evals/fixtures/CHANGES.md, the log of gold edits, is written by hand beside the fixtures
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_file()) == ["CHANGES.md"]
    committed = sorted(
        p.relative_to(FIXTURES) for p in FIXTURES.rglob("*") if p.is_file() and p.parent != FIXTURES
    )
    for root in (tmp_path / "one", tmp_path / "two"):
        generated = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
        assert generated == committed
        for relative in generated:
            assert (root / relative).read_bytes() == (FIXTURES / relative).read_bytes(), relative


@pytest.mark.parametrize(
    ("script", "written"),
    [("make_long.py", "long-tape.jsonl"), ("make_long_scenarios.py", "long-scenarios.jsonl")],
)
def test_the_generated_sources_are_what_their_scripts_write(
    tmp_path: Path, script: str, written: str
) -> None:
    # Two hash seeds: output that depended on set or dict-of-set order would differ between them.
    for seed in ("0", "1"):
        out = tmp_path / seed
        out.mkdir()
        subprocess.run(
            [sys.executable, str(SOURCES / script), "--out", str(out)],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert sorted(p.name for p in out.iterdir()) == [written]
        assert (out / written).read_bytes() == (SOURCES / written).read_bytes(), f"rerun {script}"


def test_every_committed_tape_reads_cleanly() -> None:
    for fixture in load_fixtures(FIXTURES):
        entries, report = read_tape_file(fixture.tape_path)
        assert report.issues == [], fixture.id
        assert entries[0].kind == "anchor"
        assert render_transcript(entries), fixture.id


def test_evidence_turns_become_the_ids_of_the_entries_that_hold_those_turns(tmp_path: Path) -> None:
    questions = [
        # turns 2 and 3 are two results of one tool round: one tool_result entry holds both
        {"question": "Who owns Orion?", "answer": "Dana Whitfield", "evidence_turns": [4, 3, 2]},
        {
            "question": "Who thanked the bot?",
            "answer": "Priya",
            "category": "single-hop",
            "evidence_turns": [5],
        },
        {"question": "What did the assistant call?", "answer": "crm.lookup", "evidence_turns": [1, 0]},
        {"question": "How old is Dana?", "answer": "unknown", "category": "unanswerable"},
    ]
    conversation = {**TOOLS, "gold": {**TOOLS["gold"], "questions": questions}}
    out = tmp_path / "fixtures"
    import_conversations(write_source(tmp_path / "src.jsonl", conversation), out)
    gold = json.loads((out / "tools" / "gold.json").read_text(encoding="utf-8"))
    assert [q.get("evidence") for q in gold["questions"]] == [[7, 8], [12], [5, 6], None]
    assert "evidence_turns" not in json.dumps(gold)
    assert gold["questions"][1] == {
        "question": "Who thanked the bot?",
        "answer": "Priya",
        "category": "single-hop",
        "evidence": [12],
    }
    lines = {line.entry_id: line.text for line in render_transcript(load_fixtures(out)[0].entries()).lines}
    assert "Dana Whitfield" in lines[7] and "Dana Whitfield" in lines[8]
    assert lines[12] == "[12] user (Priya): Thanks!"


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (
            {"question": "Who?", "answer": "Dana", "evidence_turns": [7]},
            "question 'Who?': evidence turn 7 is not a turn (the conversation has turns 0-6)",
        ),
        ({"question": "Who?", "answer": "Dana", "evidence_turns": [-1]}, "evidence turn -1 is not a turn"),
        (
            {"question": "Who?", "answer": "Dana", "evidence": [5]},
            "give evidence_turns (0-based turn indices): entry ids are assigned by the importer",
        ),
        (
            {"question": "Who?", "answer": "unknown", "category": "unanswerable", "evidence_turns": [0]},
            "an unanswerable question has no evidence_turns",
        ),
    ],
)
def test_bad_evidence_turns_skip_the_conversation_with_a_reason(
    tmp_path: Path, question: dict[str, Any], message: str
) -> None:
    conversation = {**TOOLS, "gold": {**TOOLS["gold"], "questions": [question]}}
    source = write_source(tmp_path / "src.jsonl", MINIMAL, conversation)
    with pytest.raises(FixtureError, match=re.escape(message)):
        import_conversations(source, tmp_path / "strict", strict=True)
    report = import_conversations(source, tmp_path / "out")
    assert report.fixtures == ["minimal"]
    [skipped] = report.skipped
    assert skipped.where == f"{source}:2" and message in skipped.reason


def test_gold_facts_become_a_facts_file_with_the_ids_of_their_evidence_entries(tmp_path: Path) -> None:
    facts = [
        {
            "statement": "Dana Whitfield owns Orion",
            "kind": "state",
            "about": ["Dana", "Orion"],
            "topic": "owner",
            "evidence_turns": [3, 4],  # the second tool result (its round's one entry) and the answer
        },
        {
            "statement": "Priya thanked the bot today",
            "kind": "event",
            "about": ["Priya"],
            "when": "2026-01-05",
            "said_when": "today",
            "evidence_turns": [5],
        },
    ]
    conversation = {**TOOLS, "gold": {**TOOLS["gold"], "facts": facts}}
    out = tmp_path / "fixtures"
    report = import_conversations(write_source(tmp_path / "src.jsonl", conversation, MINIMAL), out)
    written = json.loads((out / "tools" / "facts.json").read_text(encoding="utf-8"))
    assert written == {
        "facts": [
            {
                "statement": "Dana Whitfield owns Orion",
                "kind": "state",
                "about": ["Dana", "Orion"],
                "topic": "owner",
                "evidence": [7, 8],
            },
            {
                "statement": "Priya thanked the bot today",
                "kind": "event",
                "about": ["Priya"],
                "when": "2026-01-05",
                "said_when": "today",
                "evidence": [12],
            },
        ]
    }
    gold = (out / "tools" / "gold.json").read_text(encoding="utf-8")
    assert "facts" not in json.loads(gold) and "Priya thanked" not in gold
    assert not (out / "minimal" / "facts.json").exists()  # no facts, no file: its facts are not scored
    # Priya is no gold entity: the fact is kept and the problem reported.
    assert report.issues["tools"].dangling_fact_entities == ["Priya"]
    assert "tools: fact 'Priya thanked the bot today' is about 'Priya': no gold entity" in report.warnings
    [_, tools] = load_fixtures(out)  # in id order
    assert tools.facts is not None and [f.evidence for f in tools.facts] == [[7, 8], [12]]


def test_a_conversation_that_loses_its_facts_loses_its_facts_file(tmp_path: Path) -> None:
    fact = {
        "statement": "Maya Lin works at Globex",
        "kind": "state",
        "about": ["Maya Lin"],
        "evidence_turns": [0],
    }
    out = tmp_path / "fixtures"
    import_conversations(
        write_source(tmp_path / "a.jsonl", {**MINIMAL, "gold": {**MINIMAL["gold"], "facts": [fact]}}), out
    )
    assert (out / "minimal" / "facts.json").is_file()
    import_conversations(write_source(tmp_path / "b.jsonl", MINIMAL), out)
    assert not (out / "minimal" / "facts.json").exists()  # a stale file would be scored against the new tape
    assert load_fixtures(out)[0].facts is None


@pytest.mark.parametrize(
    ("fact", "message"),
    [
        (
            {"statement": "Dana owns Orion", "kind": "state", "about": ["Dana"], "evidence_turns": [9]},
            "fact 'Dana owns Orion': evidence turn 9 is not a turn (the conversation has turns 0-6)",
        ),
        (
            {"statement": "Dana owns Orion", "kind": "state", "about": ["Dana"], "evidence": [8]},
            "give evidence_turns (0-based turn indices): entry ids are assigned by the importer",
        ),
        (
            {"statement": "Dana owns Orion", "kind": "state", "about": ["Dana"]},
            "a fact names the turns that state it in evidence_turns",
        ),
        (
            {"statement": "Dana owns Orion", "kind": "rumour", "about": ["Dana"], "evidence_turns": [4]},
            "kind",
        ),
    ],
)
def test_a_fact_without_turns_of_its_conversation_skips_the_conversation(
    tmp_path: Path, fact: dict[str, Any], message: str
) -> None:
    conversation = {**TOOLS, "gold": {**TOOLS["gold"], "facts": [fact]}}
    source = write_source(tmp_path / "src.jsonl", MINIMAL, conversation)
    report = import_conversations(source, tmp_path / "out")
    assert report.fixtures == ["minimal"]
    [skipped] = report.skipped
    assert skipped.where == f"{source}:2" and message in skipped.reason


def test_a_dated_user_turn_starts_a_session_and_later_entries_follow_it(tmp_path: Path) -> None:
    conversation: dict[str, Any] = {
        "id": "sessions",
        "turns": [
            {"speaker": "user", "text": "Day one."},
            {"speaker": "assistant", "text": "Noted."},
            {"speaker": "user", "text": "Three days later.", "date": DAY_2},
            {"speaker": "assistant", "text": "Welcome back."},
        ],
        "gold": {"entities": [], "relations": []},
    }
    out = tmp_path / "fixtures"
    import_conversations(write_source(tmp_path / "src.jsonl", conversation), out)
    raw = [json.loads(line) for line in (out / "sessions" / "tape.jsonl").read_text().splitlines()]
    dates = [(e["id"], e["kind"], e["date"]) for e in raw]
    assert dates[5:] == [
        (6, "message", "2026-01-05T09:05:00+00:00"),
        (7, "event", "2026-01-05T09:06:00+00:00"),  # the first session's run ends in that session
        (8, "event", "2026-03-05T07:15:00+00:00"),  # written in UTC
        (9, "system", "2026-03-05T07:16:00+00:00"),
        (10, "message", "2026-03-05T07:17:00+00:00"),
        (11, "message", "2026-03-05T07:18:00+00:00"),
        (12, "event", "2026-03-05T07:19:00+00:00"),
    ]
    assert raw[9]["payload"]["content"].split("\n")[1] == "---Date: 2026-03-05T07:17:00+00:00---"
    entries, report = read_tape_file(out / "sessions" / "tape.jsonl")
    assert report.issues == [] and [e.date for e in entries] == [e["date"] for e in raw]
    # When the first turn is dated, bub's bootstrap entries come right before it.
    dated_first = {
        **conversation,
        "id": "dated-first",
        "turns": [{**conversation["turns"][0], "date": DAY_1}],
    }
    import_conversations(write_source(tmp_path / "first.jsonl", dated_first), out)
    raw = [json.loads(line) for line in (out / "dated-first" / "tape.jsonl").read_text().splitlines()]
    assert [e["date"] for e in raw[:5]] == [
        "2026-03-02T18:28:00+00:00",
        "2026-03-02T18:29:00+00:00",
        "2026-03-02T18:30:00+00:00",
        "2026-03-02T18:31:00+00:00",
        "2026-03-02T18:32:00+00:00",
    ]
