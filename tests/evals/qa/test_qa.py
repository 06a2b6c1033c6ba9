"""The memory-QA eval: each condition's context, the scorer, the judge, the runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bub_semantic_memory._models import Entity, Fact, PromptRef, Relation, Snapshot
from bub_semantic_memory.evals import Fixture, Gold, GoldEntity, GoldRelation, Question, load_fixtures
from bub_semantic_memory.evals.qa import LONG, QAOptions, Rate, contains_answer, judge, run_qa
from bub_semantic_memory.evals.qa._contexts import (
    bm25_context,
    full_context,
    memory_context,
    pack,
    search_words,
    snapshots_of,
    tape_search_context,
)
from bub_semantic_memory.evals.reports._qa import _pct_with_interval, to_markdown
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.tape._transcript import Entry, render_transcript
from bub_semantic_memory.testing import FakeOpenAIServer, RecordedRequest, Reply, text_reply
from tests.conftest import REPO

ONTOLOGY = PromptLibrary().load("extract@9").ontology


def q(answer: str, *accepted: str, category: str = "single-hop") -> Question:
    return Question(question="?", answer=answer, accepted=list(accepted), category=category)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("context", "question", "expected"),
    [
        ("Jonas moved to Lisbon in May.", q("Lisbon"), True),
        ("jonas moved to LISBON, finally", q("Lisbon"), True),  # case and punctuation folded
        ("Call Bob on Monday", q("Robert Castillo", "Bob"), True),  # an accepted form
        ("Call Bobby on Monday", q("Bob"), False),  # whole words only
        ("The office is in Zurich", q("Zürich"), True),  # accents folded
        ("The offsite is in Porto", q("Lisbon"), False),
        ("due on December 12", q("December 12"), True),  # a phrase as consecutive words
        ("due December, on the 12", q("December 12"), False),
    ],
)
def test_context_recall_is_the_answer_as_whole_words(
    context: str, question: Question, expected: bool
) -> None:
    assert contains_answer(context, question) is expected


@pytest.mark.parametrize(
    ("answer", "question", "expected"),
    [
        ("Lisbon", q("Lisbon"), True),
        ("He lives in Lisbon now.", q("Lisbon"), True),
        ("unknown", q("Lisbon"), False),
        ("Unknown, maybe Lisbon", q("Lisbon"), False),  # hedging with "unknown" is not an answer
        ("Berlin", q("Lisbon"), False),
        ("unknown", q("unknown", category="unanswerable"), True),
        ("Unknown.", q("unknown", category="unanswerable"), True),
        ("Lisbon", q("unknown", category="unanswerable"), False),
        ("It is unknown but probably Lisbon", q("unknown", category="unanswerable"), False),
    ],
)
def test_the_judge_is_a_fixed_rule(answer: str, question: Question, expected: bool) -> None:
    assert judge(answer, question) is expected


def test_packing_keeps_whole_pieces_in_order_within_the_budget() -> None:
    pieces = ["a" * 40, "b" * 400, "c" * 40]  # about 10, 100 and 10 tokens
    packed = pack(pieces, budget=30)
    assert packed.split("\n") == ["a" * 40, "c" * 40]  # the one too long is skipped, later ones still fit


def test_search_words_are_the_content_words_names_first() -> None:
    assert search_words("Where did my sister Mia move to after Berlin?") == [
        "Berlin",
        "Mia",
        "sister",
        "move",
    ]
    assert search_words("Who is it?") == []


def entries(*texts: str) -> list[Entry]:
    return [
        Entry(i, "message", {"role": "user" if i % 2 else "assistant", "content": text}, date=f"2026-01-0{i}")
        for i, text in enumerate(texts, start=1)
    ]


TAPE = entries(
    "My friend Jonas Weber lives in Berlin.",
    "Noted.",
    "The Orion migration is due on Friday.",
    "Got it.",
    "Jonas moved to Lisbon last month.",
)


async def test_tape_search_is_bubs_search_per_content_word_in_tape_order() -> None:
    context = await tape_search_context(TAPE, "Where does Jonas live now?", budget=800)
    lines = [json.loads(line) for line in context.text.split("\n")]
    assert [line["content"]["content"] for line in lines] == [
        "My friend Jonas Weber lives in Berlin.",  # "Jonas" and the fuzzy "live"
        "Jonas moved to Lisbon last month.",
    ]
    assert lines[0]["date"] == "2026-01-01"  # as the tool renders a match: date and payload
    assert context.tokens <= 800


def test_bm25_ranks_the_line_that_shares_the_questions_words_first() -> None:
    context = bm25_context(render_transcript(TAPE), "When is the Orion migration due?", budget=800)
    assert context.text.split("\n")[0].endswith("The Orion migration is due on Friday.")


def test_the_full_transcript_says_when_it_does_not_fit_the_model_and_nothing_without_one() -> None:
    transcript = render_transcript(TAPE)
    assert full_context(transcript, context_tokens=None).fits is None  # no model: not known, not "fits"
    assert full_context(transcript, context_tokens=100_000).fits is True
    assert full_context(transcript, context_tokens=10).fits is False


def gold() -> Gold:
    return Gold(
        entities=[
            GoldEntity(name="Jonas Weber", type="person", aliases=["Jonas"]),
            GoldEntity(name="Lisbon", type="location"),
        ],
        relations=[GoldRelation(source="Jonas", target="Lisbon", type="lives_in")],
    )


async def test_memory_is_what_the_plugins_memory_service_injects(tmp_path: Path) -> None:
    """The same snapshots in a real plugin's store render the same note, with the plugin's budget."""
    from bub.framework import BubFramework
    from bub.store import FileTapeStore

    from bub_semantic_memory.agent._policy import MemoryPolicy
    from bub_semantic_memory.plugin import SemanticMemoryPlugin
    from bub_semantic_memory.plugin._settings import SemanticMemorySettings, memory_setup
    from bub_semantic_memory.stores._store import SnapshotStore

    snapshots, dropped = snapshots_of("t", gold(), ONTOLOGY, last_entry_id=5, source="gold")
    assert dropped == []
    budget = memory_setup(SemanticMemorySettings()).policy.budget
    assert budget == MemoryPolicy().budget == QAOptions(ontology=ONTOLOGY).budget  # the plugin's config
    ours = await memory_context("memory", "t", snapshots, ONTOLOGY, "Where does Jonas live?", budget=budget)
    store = FileTapeStore(tmp_path / "tapes")
    for snapshot in snapshots:
        await SnapshotStore(store).append(snapshot)
    plugin = SemanticMemoryPlugin(BubFramework())
    await plugin.memory.load("t", store)
    assert ours.text == plugin.memory.block("t", "Where does Jonas live?")
    assert "Jonas Weber lives in Lisbon" in ours.text


def test_a_relation_to_a_name_the_facts_lack_is_dropped_with_its_reason() -> None:
    facts = gold().model_copy(
        update={"relations": [GoldRelation(source="Jonas", target="Porto", type="lives_in")]}
    )
    _, dropped = snapshots_of("t", facts, ONTOLOGY, last_entry_id=5, source="gold")
    assert dropped == ["relation (Jonas lives_in Porto): an end or the type is unknown"]


def answering(request: RecordedRequest) -> Reply:
    """A model that reads the context: Lisbon when the context says so, else unknown."""
    user = str(request.messages[-1]["content"])
    return text_reply("Lisbon" if "Lisbon" in user.split("Question:")[0] else "unknown")


@pytest.fixture
def fixture(tmp_path: Path) -> Fixture:
    directory = tmp_path / "fx" / "jonas"
    directory.mkdir(parents=True)
    (directory / "tape.jsonl").write_text(
        "".join(
            json.dumps({"id": e.id, "kind": e.kind, "payload": e.payload, "date": e.date}) + "\n"
            for e in TAPE
        ),
        encoding="utf-8",
    )
    questions = [
        {
            "question": "Where does Jonas live now?",
            "answer": "Lisbon",
            "category": "temporal",
            "evidence": [5],
        },
        {"question": "What is Jonas's blood type?", "answer": "unknown", "category": "unanswerable"},
    ]
    (directory / "gold.json").write_text(
        json.dumps({**gold().model_dump(), "questions": questions}), encoding="utf-8"
    )
    return load_fixtures(tmp_path / "fx")[0]


async def test_the_runner_scores_every_condition_and_answers_from_the_cache_the_second_time(
    fixture: Fixture, tmp_path: Path
) -> None:
    from bub_semantic_memory.backends._transport import OpenAIBackend

    options = {"ontology": ONTOLOGY, "memory": {}, "cache_dir": tmp_path / "cache", "answer_model_name": "m"}
    with FakeOpenAIServer(responder=answering) as server:
        backend = OpenAIBackend(base_url=server.base_url, api_key="k")
        report = await run_qa([fixture], QAOptions(**options, answer_model=backend))  # type: ignore[arg-type]
        asked = len(server.requests)
        again = await run_qa([fixture], QAOptions(**options, answer_model=backend))  # type: ignore[arg-type]
        await backend.aclose()
        assert len(server.requests) == asked  # every answer replayed
    # six conditions for two questions, but one request per distinct context: none and memory (none
    # given) are both empty, and so is tape-search for the blood type nobody mentions
    assert asked == 5 + 4
    assert report.recall("none").value == 0.0 and report.recall("gold-memory").value == 1.0
    assert report.recall("memory").n == 1 and report.recall("memory").value == 0.0  # no memory given
    assert report.accuracy("bm25", "temporal").value == 1.0
    assert report.accuracy("none", "unanswerable").value == 1.0  # nothing in context: "unknown" is right
    # this model names any place its context holds: answering an unanswerable question is wrong
    assert report.accuracy("full", "unanswerable").value == 0.0
    assert again.model_dump(exclude={"created_at", "items"}) == report.model_dump(
        exclude={"created_at", "items"}
    )
    assert all(o.cached for item in again.items for o in item.outcomes)


def gold_holds(fixture: Fixture, question: Question) -> bool:
    """Whether the gold states the answer: as a name, alias or attribute value, or in a gold fact."""
    said = [
        value
        for entity in fixture.gold.entities
        for value in (entity.name, *entity.aliases, *entity.attributes.values())
    ] + [fact.statement for fact in fixture.facts or ()]
    return any(contains_answer(text, question) for text in said)


def test_the_committed_fixtures_questions_are_scored_without_a_model() -> None:
    import asyncio

    fixtures = [f for f in load_fixtures(REPO / "evals" / "fixtures", tags=["quick"]) if f.gold.questions]
    report = asyncio.run(
        run_qa(
            fixtures,
            # the facts alone, without the tape's lines: what the gold itself holds
            QAOptions(ontology=ONTOLOGY, conditions=("none", "gold-memory", "bm25"), passage_share=0.0),
        )
    )
    # every answer the gold holds (a name, alias, attribute value or gold fact) is in the rendered
    # gold memory: rendering at the budget loses none of them
    by_question = {(q.question, f.id): (f, q) for f in fixtures for q in f.gold.questions}
    held = [
        item
        for item in report.items
        if item.category != "unanswerable" and gold_holds(*by_question[(item.question, item.fixture)])
    ]
    assert len(held) >= 20
    assert all(item.outcome("gold-memory").contains for item in held), [  # type: ignore[union-attr]
        item.question
        for item in held
        if not item.outcome("gold-memory").contains  # type: ignore[union-attr]
    ]
    gold_recall = report.recall("gold-memory")
    assert gold_recall.hits < gold_recall.n  # some answers are only in the tape's words
    assert report.recall("none").value == 0.0
    assert all(o.answer is None for item in report.items for o in item.outcomes)


def test_snapshot_helpers_make_a_valid_snapshot() -> None:
    snapshots, _ = snapshots_of("t", gold(), ONTOLOGY, last_entry_id=5, source="gold")
    [snapshot] = snapshots
    assert isinstance(snapshot, Snapshot) and snapshot.prompt == PromptRef(
        name="gold", version=1, sha256="0" * 64
    )
    assert {e.key for e in snapshot.entities} == {
        Entity.create("Jonas Weber", "person").key,
        "location:lisbon",
    }
    assert snapshot.relations == (
        Relation(source="person:jonas-weber", type="lives_in", target="location:lisbon"),
    )


JONAS = Entity.create("Jonas Weber", "person", aliases=["Jonas"])


def jonas_memory(fixture: Fixture, *facts: Fact) -> Snapshot:
    """The fixture's tape as a memory of Jonas alone (and ``facts``), extracted up to entry 5."""
    return Snapshot(
        tape=fixture.id,
        first_entry_id=1,
        last_entry_id=5,
        prompt=PromptRef(name="extract", version=14, sha256="0" * 64),
        model="m",
        mode="tools",
        entities=(JONAS,),
        facts=facts,
    )


async def test_memory_without_facts_leaves_out_only_the_stated_facts(fixture: Fixture) -> None:
    moved = Fact(statement="Jonas moved to Lisbon in May", kind="event", about=(JONAS.key,), evidence=(5,))
    options = QAOptions(
        ontology=ONTOLOGY,
        memory={fixture.id: [jonas_memory(fixture, moved)]},
        conditions=("memory", "memory-no-facts"),
        passage_share=0.0,  # the tape's lines say it too: leave them out to see what the facts hold
    )
    report = await run_qa([fixture], options)
    where = next(item for item in report.items if item.category == "temporal")
    with_facts, without = where.outcome("memory"), where.outcome("memory-no-facts")
    assert with_facts is not None and with_facts.contains is True
    assert without is not None and without.contains is False and without.tokens > 0  # Jonas is still there
    assert "memory-no-facts" in to_markdown(report)


async def test_memory_without_lines_leaves_out_only_the_lines_of_the_tape(fixture: Fixture) -> None:
    options = QAOptions(
        ontology=ONTOLOGY,
        memory={fixture.id: [jonas_memory(fixture)]},
        conditions=("memory", "memory-no-lines"),
    )
    report = await run_qa([fixture], options)
    where = next(item for item in report.items if item.category == "temporal")
    with_lines, without = where.outcome("memory"), where.outcome("memory-no-lines")
    assert with_lines is not None and with_lines.contains is True  # the line that says Lisbon
    assert without is not None and without.contains is False and without.tokens > 0  # Jonas alone
    assert "memory-no-lines" in to_markdown(report)


def test_questions_about_long_tapes_are_their_own_row() -> None:
    import asyncio

    fixtures = load_fixtures(
        REPO / "evals" / "fixtures", ids=["long-tape-family-year", "temporal-moved-berlin-to-lisbon"]
    )
    report = asyncio.run(run_qa(fixtures, QAOptions(ontology=ONTOLOGY, conditions=("bm25",))))
    by_fixture = {item.fixture: item.long_tape for item in report.items}
    assert by_fixture == {"long-tape-family-year": True, "temporal-moved-berlin-to-lisbon": False}
    long_rows = report.recall("bm25", LONG)
    assert long_rows.n == sum(
        1 for i in report.items if i.fixture.startswith("long-") and i.category != "unanswerable"
    )


def test_eval_qa_writes_json_markdown_and_a_page_with_a_chart(fixture: Fixture, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from bub_semantic_memory.cli import app

    out = tmp_path / "qa"
    args = ["eval", "qa", "-f", str(fixture.path.parent), "--condition", "none", "--condition", "bm25"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "qa.html").read_text(encoding="utf-8")
    assert '<svg class="chart" id="chart-conditions"' in page and "200+ turns" in page
    assert json.loads((out / "qa.json").read_text(encoding="utf-8"))["conditions"] == ["none", "bm25"]
    refused = CliRunner().invoke(app, [*args[:4], "--condition", "memory-no-facts"])
    assert refused.exit_code == 2 and "needs --memory" in refused.output


async def test_a_replay_reads_cached_answers_opens_no_model_and_counts_what_is_missing(
    fixture: Fixture, tmp_path: Path
) -> None:
    from bub_semantic_memory.backends._transport import OpenAIBackend

    options = {"ontology": ONTOLOGY, "cache_dir": tmp_path / "cache", "answer_model_name": "m"}
    conditions = ("none", "bm25")
    with FakeOpenAIServer(responder=answering) as server:
        backend = OpenAIBackend(base_url=server.base_url, api_key="k")
        answered = await run_qa(
            [fixture],
            QAOptions(**options, conditions=("bm25",), answer_model=backend),  # type: ignore[arg-type]
        )
        await backend.aclose()
    replayed = await run_qa([fixture], QAOptions(**options, conditions=conditions, replay=True))  # type: ignore[arg-type]
    assert replayed.accuracy("bm25") == answered.accuracy("bm25") and replayed.accuracy("bm25").n == 2
    # 'none' was never answered: its two contexts are missing, not scored as wrong
    assert replayed.accuracy("none").n == 0 and replayed.unanswered() == 2
    assert "2 context(s) had no cached answer" in to_markdown(replayed)


async def test_answers_to_another_answering_prompt_are_asked_anew_and_cached_apart(
    fixture: Fixture, tmp_path: Path
) -> None:
    from bub_semantic_memory.backends._transport import OpenAIBackend

    other = "Answer in capitals."

    def by_prompt(request: RecordedRequest) -> Reply:
        reply = answering(request)
        return text_reply("LISBON") if request.messages[0]["content"] == other else reply

    options = {"ontology": ONTOLOGY, "cache_dir": tmp_path / "cache", "answer_model_name": "m"}
    conditions = ("bm25",)
    with FakeOpenAIServer(responder=by_prompt) as server:
        backend = OpenAIBackend(base_url=server.base_url, api_key="k")
        try:
            first = await run_qa([fixture], QAOptions(**options, conditions=conditions, answer_model=backend))  # type: ignore[arg-type]
            asked = len(server.requests)
            await run_qa(
                [fixture],
                QAOptions(**options, conditions=conditions, answer_model=backend, answer_prompt=other),  # type: ignore[arg-type]
            )
        finally:
            await backend.aclose()
        assert len(server.requests) == 2 * asked  # nothing answered under the first prompt was reused
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2 * asked
    replayed = await run_qa(
        [fixture],
        QAOptions(**options, conditions=conditions, replay=True, answer_prompt=other),  # type: ignore[arg-type]
    )
    assert replayed.unanswered() == 0 and replayed.answer_prompt == other
    answers = {o.answer for item in replayed.items for o in item.outcomes}
    assert answers == {"LISBON"} and {o.answer for item in first.items for o in item.outcomes} != answers


def test_eval_qa_replay_exits_1_when_an_answer_is_not_cached(fixture: Fixture, tmp_path: Path) -> None:
    """As ``eval run --replay`` does on a cache miss: the report is written, then one error line."""
    from typer.testing import CliRunner

    from bub_semantic_memory.cli import app

    args = ["eval", "qa", "-f", str(fixture.path.parent), "--cache-dir", str(tmp_path / "cache")]
    args += ["--condition", "bm25", "--model", "m", "--out", str(tmp_path / "qa")]
    with FakeOpenAIServer(responder=answering) as server:
        answered = CliRunner().invoke(app, [*args, "--base-url", server.base_url])
    assert answered.exit_code == 0, answered.output
    replayed = CliRunner().invoke(app, [*args, "--replay"])
    assert (replayed.exit_code, replayed.stderr.splitlines()[-1:]) == (
        0,
        [f"Wrote {tmp_path / 'qa'}/qa.json, {tmp_path / 'qa'}/qa.md, {tmp_path / 'qa'}/qa.html"],
    )
    missing = CliRunner().invoke(app, [*args, "--replay", "--condition", "none"])
    assert missing.exit_code == 1
    assert missing.stderr.splitlines()[-1] == (
        "Error: --replay: 2 of 4 context(s) had no cached answer of m and are not scored (none 2)"
    )
    assert (tmp_path / "qa" / "qa.json").is_file()


def test_an_accuracy_comes_with_its_wilson_interval() -> None:
    # by hand: p = 20/57 = 0.3509, z^2/n = 0.0674; centre (p + z^2/2n) / (1 + z^2/n) = 0.3603,
    # half-width z * sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n) = 0.1203
    low, high = Rate(hits=20, n=57).interval() or (0.0, 0.0)
    assert (round(low, 3), round(high, 3)) == (0.240, 0.481)
    assert _pct_with_interval(Rate(hits=20, n=57)) == "0.351 (20/57) [0.240, 0.481]"  # the reports' cell
    assert Rate(hits=0, n=0).interval() is None
    every = Rate(hits=12, n=12).interval()
    assert every is not None and every[1] == 1.0 and 0.7 < every[0] < 0.8  # not the normal's [1, 1]


async def test_a_question_cancelled_while_its_memory_loads_leaves_the_load_to_the_others() -> None:
    import asyncio

    from bub_semantic_memory.evals.qa._run import _FixtureParts

    fixture = next(f for f in load_fixtures(REPO / "evals" / "fixtures", tags=["quick"]) if f.gold.questions)
    parts = _FixtureParts(fixture, QAOptions(ontology=ONTOLOGY, memory={fixture.id: []}))
    first = asyncio.ensure_future(parts.memory("memory"))
    second = asyncio.ensure_future(parts.memory("memory"))
    await asyncio.sleep(0)
    first.cancel()
    loaded = await second
    assert loaded.tape == fixture.id and first.cancelled()
