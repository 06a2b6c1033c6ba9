"""`eval run --cadence plugin`: a tape replayed turn by turn, extracted when the plugin would extract it."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bub_semantic_memory._models import Snapshot
from bub_semantic_memory.agent import MemoryPolicy
from bub_semantic_memory.evals import Fixture, load_fixtures
from bub_semantic_memory.evals.extraction import RunOptions, run_eval
from bub_semantic_memory.evals.reports import to_markdown
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.testing import (
    FakeOpenAIServer,
    OracleResponder,
    RecordedRequest,
    Reply,
    status_reply,
    tool_call_reply,
)
from tests.evals.extraction.test_runner import FAST

PEOPLE = ["Ana Lima", "Bruno Costa", "Carla Dias", "Davi Rocha", "Elisa Melo", "Fabio Nunes", "Gina Pires"]
TURNS = 14  # the plugin extracts after the 6th and 12th user turn, and the last 2 at shutdown


def _tape(turns: int) -> list[dict[str, object]]:
    entries: list[dict[str, object]] = [
        {"id": 1, "kind": "anchor", "payload": {"name": "session/start", "state": {}}, "meta": {}}
    ]
    for turn in range(turns):
        person = PEOPLE[turn % len(PEOPLE)]
        for role, content in (("user", f"I had lunch with {person} today."), ("assistant", "Nice!")):
            entries.append(
                {
                    "id": len(entries) + 1,
                    "kind": "message",
                    "payload": {"role": role, "content": content},
                    "meta": {},
                    "date": f"2026-01-05T09:{len(entries):02d}:00+00:00",
                }
            )
    return entries


@pytest.fixture
def lunch_fixture(tmp_path: Path) -> Fixture:
    directory = tmp_path / "fixtures" / "lunches"
    directory.mkdir(parents=True)
    directory.joinpath("tape.jsonl").write_text("\n".join(json.dumps(e) for e in _tape(TURNS)) + "\n")
    gold = {
        "id": "lunches",
        "description": "Lunch with seven people, one each turn.",
        "tags": ["test"],
        "entities": [{"name": name, "type": "person"} for name in PEOPLE],
        "relations": [],
    }
    directory.joinpath("gold.json").write_text(json.dumps(gold))
    return load_fixtures(tmp_path / "fixtures")[0]


def _options(server: FakeOpenAIServer, tmp_path: Path, cadence: str) -> RunOptions:
    config = ExtractorConfig(model="oracle", base_url=server.base_url, api_key="k", retry=FAST)
    return RunOptions(
        extractor=config,
        cache_dir=tmp_path / "cache",
        progress=False,
        cadence=cadence,  # type: ignore[arg-type]
    )


def _extracted(snapshots: Sequence[Snapshot]) -> list[tuple[object, ...]]:
    """What each snapshot says about the tape (not its id, time or latency)."""
    return [(s.first_entry_id, s.last_entry_id, s.entities, s.relations) for s in snapshots]


def _fails_after_the_first_window(oracle: OracleResponder) -> Callable[[RecordedRequest], Reply]:
    """The oracle's answers, but an HTTP 400 for every window from turn 7 on (the first to name Gina)."""

    def respond(request: RecordedRequest) -> Reply:
        return status_reply(400) if "Gina Pires" in (request.transcript() or "") else oracle(request)

    return respond


def _user_message_ids(fixture: Fixture) -> list[int]:
    return [e.id for e in fixture.entries() if e.kind == "message" and e.payload.get("role") == "user"]


async def test_the_plugin_cadence_extracts_every_sixth_turn_and_the_rest_at_shutdown(
    lunch_fixture: Fixture, tmp_path: Path
) -> None:
    prompt = PromptLibrary().load("extract@2")
    with FakeOpenAIServer(responder=OracleResponder.from_golds([lunch_fixture.gold])) as server:
        whole = await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "tape"))
        sent_whole = len(server.requests)
        replayed = await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "plugin"))
        sent_replayed = len(server.requests) - sent_whole

    assert sent_whole == 1 and sent_replayed == 3
    run = replayed.runs[0]
    result = run.fixtures[0]
    assert result.ok and not result.cached and run.cadence == "plugin"
    users = _user_message_ids(lunch_fixture)
    last = max(e.id for e in lunch_fixture.entries())
    ranges = [(s.first_entry_id, s.last_entry_id) for s in result.snapshots]
    # Each turn ends where the next user message starts: after turns 6 and 12, then the rest.
    assert ranges == [(1, users[6] - 1), (users[6], users[12] - 1), (users[12], last)]
    assert run.metrics.entities.recall == whole.runs[0].metrics.entities.recall == 1.0
    assert "Cadence of `extract@2 (oracle)`: the plugin's" in to_markdown(replayed)
    assert "Cadence of" not in to_markdown(whole)


async def test_a_replayed_tape_is_cached_apart_from_the_whole_tape(
    lunch_fixture: Fixture, tmp_path: Path
) -> None:
    prompt = PromptLibrary().load("extract@2")
    with FakeOpenAIServer(responder=OracleResponder.from_golds([lunch_fixture.gold])) as server:
        await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "plugin"))
        sent = len(server.requests)
        again = await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "plugin"))
        assert len(server.requests) == sent and again.runs[0].metrics.cached_fixtures == 1
        whole = await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "tape"))
        assert whole.runs[0].metrics.cached_fixtures == 0 and len(server.requests) == sent + 1


async def test_a_tape_the_plugin_cannot_finish_fails_its_fixture_with_what_was_extracted(
    lunch_fixture: Fixture, tmp_path: Path
) -> None:
    prompt = PromptLibrary().load("extract@2")
    users = _user_message_ids(lunch_fixture)
    oracle = OracleResponder.from_golds([lunch_fixture.gold])

    with FakeOpenAIServer(responder=_fails_after_the_first_window(oracle)) as server:
        report = await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "plugin"))
    result = report.runs[0].fixtures[0]
    assert not result.ok and "unextracted" in (result.error or "")
    assert [(s.first_entry_id, s.last_entry_id) for s in result.snapshots] == [(1, users[6] - 1)]
    assert report.runs[0].metrics.entities.recall == pytest.approx(6 / 7)


@pytest.mark.parametrize("tries", [1, 2])
async def test_a_last_window_whose_answers_keep_breaking_the_rules_is_given_up_as_the_plugin_would(
    lunch_fixture: Fixture, tmp_path: Path, tries: int
) -> None:
    prompt = PromptLibrary().load("extract@2")
    users = _user_message_ids(lunch_fixture)
    oracle = OracleResponder.from_golds([lunch_fixture.gold])

    def breaks_the_rules_on_the_last_window(request: RecordedRequest) -> Reply:
        if users[12] in request.transcript_entry_ids():  # the window the shutdown extracts
            return tool_call_reply("Extraction", '{"entities": "none"}')  # nothing in it can be kept
        return oracle(request)

    with FakeOpenAIServer(responder=breaks_the_rules_on_the_last_window) as server:
        options = dataclasses.replace(
            _options(server, tmp_path, "plugin"), policy=MemoryPolicy(failed_window_tries=tries)
        )
        report = await run_eval([lunch_fixture], [prompt], options)
        asked_last = sum(users[12] in r.transcript_entry_ids() for r in server.requests)
    result = report.runs[0].fixtures[0]
    last = max(e.id for e in lunch_fixture.entries())
    assert result.ok, result.error  # the tape is covered to its end
    assert asked_last == 3 * tries  # an answer and two re-asks each run: runs after shutdown until given up
    *extracted, given_up = result.snapshots
    assert (given_up.first_entry_id, given_up.last_entry_id, given_up.entities) == (users[12], last, ())
    assert given_up.dropped[0].startswith("given up, nothing kept")
    assert [(s.first_entry_id, s.last_entry_id) for s in extracted] == [
        (1, users[6] - 1),
        (users[6], users[12] - 1),
    ]


async def test_a_replay_cut_short_resumes_where_it_stood_and_sends_only_the_windows_after_it(
    lunch_fixture: Fixture, tmp_path: Path
) -> None:
    prompt = PromptLibrary().load("extract@2")
    users = _user_message_ids(lunch_fixture)
    oracle = OracleResponder.from_golds([lunch_fixture.gold])

    with FakeOpenAIServer(responder=_fails_after_the_first_window(oracle)) as server:
        cut = await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "plugin"))
    assert not cut.runs[0].fixtures[0].ok
    with FakeOpenAIServer(responder=oracle) as server:
        resumed = await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "plugin"))
        asked = [r.transcript_entry_ids() for r in server.requests]
    with FakeOpenAIServer(responder=oracle) as server:
        uncut = await run_eval([lunch_fixture], [prompt], _options(server, tmp_path / "fresh", "plugin"))

    result = resumed.runs[0].fixtures[0]
    assert result.ok and not result.cached
    assert len(asked) == 2 and all(min(ids) >= users[6] for ids in asked)  # not the first window again
    assert result.requests_made == 2
    assert _extracted(result.snapshots) == _extracted(uncut.runs[0].fixtures[0].snapshots)  # as if uncut
    assert result.snapshots[0].id == cut.runs[0].fixtures[0].snapshots[0].id  # the cached one, kept
    assert not list((tmp_path / "cache").glob("*/*.partial.json"))  # the complete entry replaced it


async def test_a_replay_is_cached_turn_by_turn_only_under_the_use_policy(
    lunch_fixture: Fixture, tmp_path: Path
) -> None:
    prompt = PromptLibrary().load("extract@2")
    oracle = OracleResponder.from_golds([lunch_fixture.gold])

    with FakeOpenAIServer(responder=_fails_after_the_first_window(oracle)) as server:
        off = dataclasses.replace(_options(server, tmp_path, "plugin"), cache="off")
        await run_eval([lunch_fixture], [prompt], off)
        assert not list((tmp_path / "cache").glob("*/*.json"))
        await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "plugin"))
    partial = list((tmp_path / "cache").glob("*/*.partial.json"))
    assert len(partial) == 1 and '"replayed_entries"' in partial[0].read_text()


async def test_a_replay_cut_short_by_other_replay_code_is_started_over_and_says_why(
    lunch_fixture: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    prompt = PromptLibrary().load("extract@2")
    oracle = OracleResponder.from_golds([lunch_fixture.gold])
    with FakeOpenAIServer(responder=_fails_after_the_first_window(oracle)) as server:
        await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "plugin"))
    monkeypatch.setattr(
        "bub_semantic_memory.evals.extraction._runner.replay_code_sha256", lambda: "0" * 64
    )  # the scheduler, the cadence or the service changed since the partial was stored
    with FakeOpenAIServer(responder=oracle) as server:
        again = await run_eval([lunch_fixture], [prompt], _options(server, tmp_path, "plugin"))
        sent = len(server.requests)
    assert again.runs[0].fixtures[0].ok and sent == 3  # every window again, the first one too
    assert "started over: the replay's code changed since" in caplog.text


async def test_the_turn_a_replay_is_at_is_reported_with_the_extractions_that_failed(
    lunch_fixture: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from bub_semantic_memory.evals.extraction._progress import RunProgress

    said: list[str] = []
    monkeypatch.setattr(RunProgress, "fixture_progress", lambda self, fixture, where: said.append(where))
    prompt = PromptLibrary().load("extract@2")
    oracle = OracleResponder.from_golds([lunch_fixture.gold])
    with FakeOpenAIServer(responder=_fails_after_the_first_window(oracle)) as server:
        options = dataclasses.replace(_options(server, tmp_path, "plugin"), progress=True)
        await run_eval([lunch_fixture], [prompt], options, console=Console(file=io.StringIO()))
    assert said[0] == f"turn 1 of {TURNS}" and len(said) == TURNS
    assert said[6] == f"turn 7 of {TURNS}"  # the first window, extracted after turn 6, did not fail
    assert "failed" not in " ".join(said[:11])
    assert (
        said[-1] == f"turn {TURNS} of {TURNS}, 3 extraction(s) failed"
    )  # turn 12's, tried again at 13 and 14
