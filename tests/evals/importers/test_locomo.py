"""LoCoMo-layout samples imported as fixtures: dated sessions, named senders, questions with evidence.

The sample file (tests/data/locomo_sample.json) is written by hand in LoCoMo's layout: two
samples, three and two sessions (the second sample lists session_2 before session_1), 25 turns,
13 questions in all five categories, one photo turn, one evidence id that names no turn, two
adversarial questions, a numeric answer and the summaries LoCoMo ships beside the conversation.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bub_semantic_memory._errors import FixtureError
from bub_semantic_memory.cli import app
from bub_semantic_memory.evals import Gold, import_locomo, load_fixtures
from bub_semantic_memory.tape._transcript import read_tape_file, render_transcript, strip_bub_header
from tests.conftest import DATA

SAMPLE = DATA / "locomo_sample.json"
runner = CliRunner()


def samples() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return data


def source_turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The sample's turns in session order (session numbers, not key order)."""
    conversation = sample["conversation"]
    numbers = sorted(int(m[1]) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key)))
    return [turn for n in numbers for turn in conversation[f"session_{n}"]]


def turn_text(turn: dict[str, Any]) -> str:
    caption = turn.get("blip_caption")
    return f"{turn['text']} [shares a photo: {caption}]" if caption else turn["text"]


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    out = tmp_path / "fixtures"
    import_locomo(SAMPLE, out)
    return out


def raw_entries(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "tape.jsonl").read_text(encoding="utf-8").splitlines()]


def test_locomo_samples_become_fixtures_with_their_issues_reported(tmp_path: Path) -> None:
    report = import_locomo(SAMPLE, tmp_path / "out")
    assert report.fixtures == ["locomo-demo-1", "locomo-demo-2"]
    assert report.skipped == []
    assert list(report.issues) == ["locomo-demo-1"]
    assert report.issues["locomo-demo-1"].unknown_evidence == ["D2:99"]
    assert report.warnings == [
        "locomo-demo-1: qa[5] (\"What does Tomas's beach photo show?\"): evidence 'D2:99' names no turn"
    ]
    assert report.summary() == "2 imported, 1 with gold problems"


def test_locomo_tape_entries_carry_their_session_dates_in_order(imported: Path) -> None:
    entries = raw_entries(imported / "locomo-demo-1")
    dates = [datetime.fromisoformat(e["date"]) for e in entries]
    # One second apart within a session; where the step is not one second, a new session starts.
    starts = [dates[0]] + [b for a, b in itertools.pairwise(dates) if b - a != timedelta(seconds=1)]
    assert [d.isoformat() for d in starts] == [
        "2023-05-08T13:56:00+00:00",  # "1:56 pm on 8 May, 2023", the bootstrap entries included
        "2023-05-20T10:14:00+00:00",
        "2023-06-02T19:30:00+00:00",
    ]
    assert dates == sorted(dates)
    # The message header's date is the entry's own date, so the date reaches what the agent sees.
    messages = [e for e in entries if e["kind"] == "message"]
    for message in messages:
        header = message["payload"]["content"].split("\n")[1]
        assert header == f"---Date: {message['date']}---"
    # Each session's turns carry that session's date; the run closing a session's last turn too.
    by_text = {strip_bub_header(m["payload"]["content"])[0]: m["date"][:10] for m in messages}
    conversation = samples()[0]["conversation"]
    for number, day in ((1, "2023-05-08"), (2, "2023-05-20"), (3, "2023-06-02")):
        assert {by_text[turn_text(t)] for t in conversation[f"session_{number}"]} == {day}
    run_after_last_turn = entries[entries.index(messages[5]) + 1]
    assert run_after_last_turn["payload"]["name"] == "run"
    assert run_after_last_turn["date"] == "2023-05-08T13:56:25+00:00"


def test_locomo_sessions_follow_their_numbers_not_the_key_order(imported: Path) -> None:
    entries = raw_entries(imported / "locomo-demo-2")
    assert entries[0]["date"] == "2024-03-03T09:05:00+00:00"  # session_1, listed second in the file
    messages = [strip_bub_header(e["payload"]["content"])[0] for e in entries if e["kind"] == "message"]
    assert messages[0] == "Morning Omar! What smells so good in your kitchen every Sunday?"
    assert messages[5] == "I ran along the river again on Saturday, faster than last time."
    # Session 2 (4 turns: loop.start, system prompt, message, run each) is "17 Mar, 2024": a short month.
    assert entries[-16]["date"] == "2024-03-17T16:40:00+00:00"
    assert {e["date"][:10] for e in entries[-16:]} == {"2024-03-17"}


def test_locomo_senders_are_the_speakers_and_both_are_users(imported: Path) -> None:
    for sample in samples():
        entries, read_report = read_tape_file(imported / f"locomo-{sample['sample_id']}" / "tape.jsonl")
        assert read_report.issues == []
        lines = render_transcript(entries).lines
        turns = source_turns(sample)
        assert [line.sender for line in lines] == [t["speaker"] for t in turns]
        assert [line.body for line in lines] == [turn_text(t) for t in turns]
        assert all(line.text.startswith(f"[{line.entry_id}] user ({line.sender}): ") for line in lines)
        assert not any(e.kind == "message" and e.payload["role"] != "user" for e in entries)


def test_locomo_photo_turn_keeps_its_caption_as_text(imported: Path) -> None:
    entries, _ = read_tape_file(imported / "locomo-demo-1" / "tape.jsonl")
    bodies = [line.body for line in render_transcript(entries).lines]
    assert (
        "Here he is on his first trip to the beach. [shares a photo: a beagle puppy sitting on a sandy beach]"
        in bodies
    )
    assert "example.invalid" not in (imported / "locomo-demo-1" / "tape.jsonl").read_text(encoding="utf-8")


def test_locomo_questions_keep_their_categories_and_point_at_the_turns(imported: Path) -> None:
    expected = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "unanswerable"}
    named = {1: "1 multi-hop", 2: "2 temporal", 3: "3 open-domain", 4: "4 single-hop", 5: "5 adversarial"}
    seen: set[int] = set()
    for sample in samples():
        [fixture] = load_fixtures(imported, ids=[f"locomo-{sample['sample_id']}"])
        entries, _ = read_tape_file(fixture.tape_path)
        body_of = {line.entry_id: line.body for line in render_transcript(entries).lines}
        text_of = {t["dia_id"]: turn_text(t) for t in source_turns(sample)}
        assert len(fixture.gold.questions) == len(sample["qa"])
        for source, question in zip(sample["qa"], fixture.gold.questions, strict=True):
            seen.add(source["category"])
            assert question.question == source["question"]
            assert question.category == expected[source["category"]]
            assert question.source_category == named[source["category"]]  # LoCoMo's own, for its tables
            assert question.accepted == [] or source["category"] == 3
            if source["category"] == 5:
                assert (question.answer, question.evidence) == ("unknown", [])
                assert source["adversarial_answer"] not in question.answers
                continue
            assert question.answer == str(source["answer"])
            refs = [r.strip() for value in source["evidence"] for r in value.split(";")]
            known = [r for r in refs if r in text_of]
            assert [body_of[i] for i in question.evidence] == [text_of[r] for r in known]
    assert seen == {1, 2, 3, 4, 5}


def test_locomo_specific_questions_convert_as_documented(imported: Path) -> None:
    gold = Gold.model_validate_json((imported / "locomo-demo-1" / "gold.json").read_bytes())
    assert gold.entities == [] and gold.relations == []
    assert gold.tags == ["locomo", "foreign", "questions-only"]
    assert "no entities or relations" in gold.description
    by_question = {q.question: q for q in gold.questions}
    entries, _ = read_tape_file(imported / "locomo-demo-1" / "tape.jsonl")
    body_of = {line.entry_id: line.body for line in render_transcript(entries).lines}
    photo = by_question["What does Tomas's beach photo show?"]
    assert [body_of[i] for i in photo.evidence] == [  # D2:99 names no turn: dropped, the question kept
        "Here he is on his first trip to the beach. [shares a photo: a beagle puppy sitting on a sandy beach]"
    ]
    assert by_question["In what year did Nadia start at the Leeds central library?"].answer == "2019"
    pico = by_question["What is the name of Tomas's dog?"]  # evidence "D2:2; D2:5" names two turns
    assert [body_of[i] for i in pico.evidence] == [
        "I adopted a beagle puppy yesterday. His name is Pico.",
        "He comes when I call him Pico, but only if I have a treat.",
    ]
    assert by_question["What breed is Nadia's dog?"].category == "unanswerable"


def _without(key: str) -> Any:
    def edit(sample: dict[str, Any]) -> None:
        del sample["conversation"][key]

    return edit


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def edit(sample: dict[str, Any]) -> None:
        target = sample
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_without("speaker_a"), "malformed sample: conversation.speaker_a: Field required"),
        (_without("session_2_date_time"), "session_2 has turns but no session_2_date_time"),
        (
            _set(("conversation", "session_1_date_time"), "yesterday"),
            "session_1_date_time 'yesterday' is not a date",
        ),
        (
            _set(("conversation", "session_1", 0, "speaker"), "Mallory"),
            "turn D1:1: speaker 'Mallory' is neither",
        ),
        (_set(("conversation", "session_1", 1, "dia_id"), "D1:1"), "dia_id 'D1:1' names two turns"),
        (_set(("conversation", "session_1", 0, "text"), "  "), "turn D1:1: empty user message"),
        (
            _set(("conversation", "session_1", 0, "text"), 7),
            "conversation.session_1: 0.text: Input should be",
        ),
        (_set(("conversation", "session_3_date_time"), "9:00 am on 1 May, 2023"), "session_3 (2023-05-01"),
        (_set(("sample_id",), "../escape"), "fixture id 'locomo-../escape' must be"),
        (_set(("qa",), {"question": "?"}), "malformed sample: qa: Input should be a valid list"),
    ],
)
def test_locomo_malformed_sample_is_skipped_and_reported(tmp_path: Path, edit: Any, reason: str) -> None:
    data = samples()
    bad = copy.deepcopy(data[0])
    bad["sample_id"] = "bad"
    edit(bad)
    source = write(tmp_path / "locomo.json", [data[0], data[1], bad])
    report = import_locomo(source, tmp_path / "out")
    assert report.fixtures == ["locomo-demo-1", "locomo-demo-2"]
    [skipped] = report.skipped
    assert skipped.where == f"{source}[2]"
    assert skipped.id == bad["sample_id"]
    assert reason in skipped.reason, skipped.reason
    assert f"skipped {skipped.reason}" in report.warnings
    assert report.summary() == "2 imported, 1 skipped, 1 with gold problems"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["locomo-demo-1", "locomo-demo-2"]
    # Strict fails on the bad sample (the clean one before it is not written either).
    clean_first = write(tmp_path / "clean-first.json", [data[1], bad])
    with pytest.raises(FixtureError, match=r"clean-first\.json\[1\]: ") as caught:
        import_locomo(clean_first, tmp_path / "strict", strict=True)
    assert reason in str(caught.value)
    assert not (tmp_path / "strict").exists()


def test_locomo_sample_that_is_not_an_object_or_repeats_an_id_is_skipped(tmp_path: Path) -> None:
    data = samples()
    source = write(tmp_path / "locomo.json", [data[1], "conv-9", data[1]])
    report = import_locomo(source, tmp_path / "out")
    assert report.fixtures == ["locomo-demo-2"]
    assert [(s.where, s.id) for s in report.skipped] == [(f"{source}[1]", None), (f"{source}[2]", "demo-2")]
    assert "a sample must be a JSON object, not a string" in report.skipped[0].reason
    assert f"duplicate sample_id (first at {source}[0])" in report.skipped[1].reason


def test_locomo_question_that_cannot_be_converted_is_dropped_and_counted(tmp_path: Path) -> None:
    sample = samples()[1]
    sample["qa"] += [
        {"question": "What is Omar's job?", "evidence": ["D1:2"], "category": 4},
        {"question": "Why?", "answer": "because", "evidence": [], "category": 7},
        {"question": "Where does Lena live?", "answer": "Unknown", "evidence": [], "category": 4},
    ]
    report = import_locomo(write(tmp_path / "locomo.json", [sample]), tmp_path / "out")
    assert report.fixtures == ["locomo-demo-2"]
    dropped = report.issues["locomo-demo-2"].dropped_questions
    assert len(dropped) == 3
    assert dropped[0] == "qa[5]: no answer (category 4)"
    assert dropped[1].startswith("qa[6]: category: Input should be 1, 2, 3, 4 or 5")
    assert dropped[2].startswith("qa[7]: Value error, an unanswerable question has the answer 'unknown'")
    [fixture] = load_fixtures(tmp_path / "out")
    assert len(fixture.gold.questions) == 5
    assert all(w.startswith("locomo-demo-2: qa[") and "question dropped" in w for w in report.warnings)
    with pytest.raises(FixtureError, match=r"qa\[5\]: question dropped: no answer"):
        import_locomo(write(tmp_path / "locomo.json", [sample]), tmp_path / "strict", strict=True)
    assert not (tmp_path / "strict").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[{", "is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 3)"),
        (b'{"sample_id": "x"}', "must hold a JSON array of samples, not an object"),
        (b"\xff\xfe\x00[", "is not"),
    ],
)
def test_locomo_unreadable_file_is_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    source = tmp_path / "locomo.json"
    source.write_bytes(content)
    with pytest.raises(FixtureError, match="LoCoMo file") as caught:
        import_locomo(source, tmp_path / "out")
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()
    with pytest.raises(FixtureError, match=f"cannot read LoCoMo file {tmp_path}"):
        import_locomo(tmp_path, tmp_path / "out")  # a directory


def test_locomo_reimport_is_byte_identical(tmp_path: Path) -> None:
    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    first = import_locomo(SAMPLE, tmp_path / "one")
    snapshot = files(tmp_path / "one")
    assert len(snapshot) == 4
    second = import_locomo(SAMPLE, tmp_path / "two")
    assert first == second
    assert files(tmp_path / "two") == snapshot
    import_locomo(SAMPLE, tmp_path / "one")  # over the earlier output
    assert files(tmp_path / "one") == snapshot


def test_cli_import_locomo_writes_fixtures_that_load(tmp_path: Path) -> None:
    out = tmp_path / "fx"
    result = runner.invoke(app, ["fixtures", "import-locomo", str(SAMPLE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["locomo-demo-1", "locomo-demo-2"]
    assert result.stderr.splitlines() == [
        "Warning: locomo-demo-1: qa[5] (\"What does Tomas's beach photo show?\"): evidence 'D2:99' names no turn",
        f"Imported into {out}: 2 imported, 1 with gold problems",
    ]
    fixtures = load_fixtures(out, tags=["locomo"])
    assert [f.id for f in fixtures] == ["locomo-demo-1", "locomo-demo-2"]
    assert [len(f.gold.questions) for f in fixtures] == [8, 5]
    assert all(f.entries() for f in fixtures)


def test_cli_import_locomo_counts_skipped_samples_and_strict_fails(tmp_path: Path) -> None:
    data = samples()
    source = write(tmp_path / "locomo.json", [data[1], {"sample_id": "broken"}])
    result = runner.invoke(app, ["fixtures", "import-locomo", str(source), "--out", str(tmp_path / "fx")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["locomo-demo-2"]
    assert result.stderr.splitlines()[-1] == f"Imported into {tmp_path / 'fx'}: 1 imported, 1 skipped"
    assert "Warning: skipped" in result.stderr and "conversation: Field required" in result.stderr
    strict = runner.invoke(
        app, ["fixtures", "import-locomo", str(SAMPLE), "--out", str(tmp_path / "s"), "--strict"]
    )
    assert strict.exit_code == 1
    assert strict.stderr.splitlines() == [
        "Error: locomo-demo-1: qa[5] (\"What does Tomas's beach photo show?\"): evidence 'D2:99' names no turn"
    ]
    assert not (tmp_path / "s").exists()
    source.write_text("not json", encoding="utf-8")
    broken = runner.invoke(app, ["fixtures", "import-locomo", str(source), "--out", str(tmp_path / "b")])
    assert broken.exit_code == 1
    assert broken.stderr.splitlines() == [
        f"Error: LoCoMo file {source} is not valid JSON: Expecting value (line 1, column 1)"
    ]


def test_a_cut_keeps_the_first_sessions_and_only_the_questions_they_answer(tmp_path: Path) -> None:
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    import_locomo(SAMPLE, whole)
    report = import_locomo(SAMPLE, cut, sessions=1)
    [sample] = [s for s in samples() if s["sample_id"] == "demo-1"]
    first = {t["dia_id"] for t in sample["conversation"]["session_1"]}
    entries, _ = read_tape_file(cut / "locomo-demo-1" / "tape.jsonl")
    said = {line.body for line in render_transcript(entries).lines}
    assert said == {turn_text(t) for t in sample["conversation"]["session_1"]}  # the tape ends with session 1
    gold = Gold.model_validate_json((cut / "locomo-demo-1" / "gold.json").read_bytes())
    kept = {q.question for q in gold.questions}
    for source in sample["qa"]:
        refs = {r.strip() for value in source["evidence"] for r in value.split(";")}
        later = bool(refs - first) and bool(refs & {t["dia_id"] for t in source_turns(sample)} - first)
        assert (source["question"] in kept) is not later, source["question"]
    issues = report.issues["locomo-demo-1"]
    assert len(issues.beyond_cut) == len(sample["qa"]) - len(gold.questions) > 0
    assert issues.dropped_questions == []  # left out by the cut, not dropped as broken
    assert "the first 1 session of" in gold.description


def test_only_the_named_samples_are_imported_and_an_unknown_one_is_an_error(tmp_path: Path) -> None:
    report = import_locomo(SAMPLE, tmp_path / "one", samples=["demo-2"])
    assert report.fixtures == ["locomo-demo-2"]
    with pytest.raises(FixtureError, match="has no sample conv-99"):
        import_locomo(SAMPLE, tmp_path / "none", samples=["demo-2", "conv-99"])


def test_an_open_domain_answer_with_alternatives_accepts_each(tmp_path: Path) -> None:
    data = samples()
    for question in data[0]["qa"]:
        if question["category"] == 3:
            question["answer"] = "Likely yes; yes, he hikes every weekend"
    source = tmp_path / "locomo.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    import_locomo(source, tmp_path / "out")
    gold = Gold.model_validate_json((tmp_path / "out" / "locomo-demo-1" / "gold.json").read_bytes())
    [question] = [q for q in gold.questions if q.category == "open-domain"]
    assert (question.answer, question.accepted) == ("Likely yes", ["yes, he hikes every weekend"])


def test_the_split_is_fixed_by_name_four_conversations_each() -> None:
    from bub_semantic_memory.evals.importers import LOCOMO_SPLITS

    assert {name: len(ids) for name, ids in LOCOMO_SPLITS.items()} == {"tune": 4, "test": 4}
    assert not set(LOCOMO_SPLITS["tune"]) & set(LOCOMO_SPLITS["test"])


def test_eval_qa_reads_locomo_where_it_lies_and_reports_its_own_categories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the import goes under ./.cache/locomo
    out = tmp_path / "qa"
    result = runner.invoke(
        app,
        ["eval", "qa", "--locomo", str(SAMPLE), "--sample", "demo-1", "--condition", "bm25",
         "--condition", "tape-search", "--condition", "full", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert list((tmp_path / ".cache" / "locomo").glob("*-all/locomo-demo-1/tape.jsonl"))
    report = json.loads((out / "qa.json").read_text())
    assert {item["fixture"] for item in report["items"]} == {"locomo-demo-1"}
    assert {item["source_category"] for item in report["items"]} == {
        "1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop", "5 adversarial",
    }  # fmt: skip
    assert all(item["names_entity"] is None for item in report["items"])  # LoCoMo names no gold entity
    markdown = (out / "qa.md").read_text()
    assert "## Word-level context recall, by the dataset's own category" in markdown
    assert "fits the model" not in markdown  # no model: whether the whole tape fits is not known
    assert "| `bm25` | " in markdown


def test_eval_run_on_a_locomo_cut_says_extraction_is_not_scored_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, SchemaFollowingOracle

    monkeypatch.chdir(tmp_path)
    oracle = SchemaFollowingOracle(OracleResponder(entities=[{"name": "Nadia", "type": "person"}]))
    with FakeOpenAIServer(responder=oracle) as server:
        result = runner.invoke(
            app,
            ["eval", "run", "--locomo", str(SAMPLE), "--sessions", "1", "--model", "m", "--base-url",
             server.base_url, "--prompt", "extract@1", "--concurrency", "1", "--out", str(tmp_path / "run")],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert list((tmp_path / ".cache" / "locomo").glob("*-first-1-sessions/locomo-demo-2"))
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    [run] = report["runs"]
    assert [f["fixture"] for f in run["fixtures"]] == ["locomo-demo-1", "locomo-demo-2"]
    assert run["metrics"]["entities"]["f1"] is None and run["metrics"]["relations"]["f1"] is None
    assert report["fixtures_dir"] == str(SAMPLE)  # the conversations' file, not the fixtures directory


def test_locomo_options_without_locomo_are_a_usage_error() -> None:
    result = runner.invoke(app, ["eval", "qa", "--split", "test", "--condition", "bm25"])
    assert result.exit_code == 2 and "--split, --sample and --sessions need --locomo FILE" in result.stderr
