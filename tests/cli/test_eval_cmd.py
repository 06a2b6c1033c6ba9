"""The eval commands as a user runs them: exit codes, stdout, report files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bub_semantic_memory.cli import app
from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.evals.extraction import PRF, load_report
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.tape import render_transcript
from bub_semantic_memory.testing import (
    FakeOpenAIServer,
    OracleResponder,
    RecordedRequest,
    Reply,
    tool_call_reply,
)
from tests.conftest import REPO

runner = CliRunner()
FIXTURES = REPO / "evals" / "fixtures"
QUICK = load_fixtures(FIXTURES, tags=["quick"])


def test_score_of_gold_against_itself_is_perfect(tmp_path: Path) -> None:
    predictions = tmp_path / "gold.jsonl"
    fixtures = load_fixtures(FIXTURES)
    predictions.write_text(
        "".join(
            json.dumps(
                {
                    "fixture": f.id,
                    "entities": [e.model_dump() for e in f.gold.entities],
                    "relations": [r.model_dump() for r in f.gold.relations],
                }
            )
            + "\n"
            for f in fixtures
        ),
        encoding="utf-8",
    )
    result = runner.invoke(
        app, ["eval", "score", "--fixtures", str(FIXTURES), "--predictions", str(predictions), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for group in ("entities", "entities_untyped", "relations"):
        assert (data[group]["precision"], data[group]["recall"], data[group]["f1"]) == (1.0, 1.0, 1.0)
    assert len(data["fixtures"]) == len(fixtures) >= 30


def test_score_shows_the_fact_score_of_the_fixtures_with_gold_facts(tmp_path: Path) -> None:
    fixtures = [f for f in load_fixtures(FIXTURES) if f.facts]
    kept, dropped = fixtures[0], fixtures[1]
    assert kept.facts is not None and dropped.facts is not None
    predictions = tmp_path / "facts.jsonl"
    predictions.write_text(
        json.dumps(
            {
                "fixture": kept.id,
                "entities": [e.model_dump() for e in kept.gold.entities],
                "facts": [f.model_dump() for f in kept.facts],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    ids = ["--fixture", kept.id, "--fixture", dropped.id]
    args = ["eval", "score", "--fixtures", str(FIXTURES), "--predictions", str(predictions), *ids]
    table = runner.invoke(app, args)
    assert table.exit_code == 1, table.output  # no prediction for the dropped fixture: see below
    gold = len(kept.facts) + len(dropped.facts)
    rows = [[c.strip() for c in line.strip().strip("│").split("│")] for line in table.stdout.splitlines()]
    assert next(row for row in rows if row[0] == "facts") == [
        "facts",
        "1.000",
        f"{len(kept.facts) / gold:.3f}",
        f"{2 * len(kept.facts) / (len(kept.facts) + gold):.3f}",
        str(len(kept.facts)),
        str(len(kept.facts)),
        str(gold),
    ]
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert (data["facts"]["tp"], data["facts"]["gold"]) == (len(kept.facts), gold)
    dated = sum(1 for f in kept.facts if f.when)
    assert (data["fact_dates"]["tp"], data["fact_dates"]["gold"]) == (dated, dated)


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_score_exits_1_when_a_selected_fixture_has_no_prediction(tmp_path: Path, as_json: bool) -> None:
    """As ``eval run`` does when a fixture failed: the scores are printed, then one error line."""
    fixtures = load_fixtures(FIXTURES, tags=["quick"])
    predicted, *missing = fixtures
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"fixture": predicted.id}) + "\n", encoding="utf-8")
    args = ["eval", "score", "--fixtures", str(FIXTURES), "--tag", "quick", "--predictions", str(predictions)]
    result = runner.invoke(app, [*args, *(["--json"] if as_json else [])])
    assert result.exit_code == 1
    ids = ", ".join(f.id for f in missing[:5])
    assert result.stderr.splitlines() == [
        f"Error: no prediction for 5 of 6 fixture(s), scored as predicting nothing: {ids} "
        '(a fixture with nothing to predict takes a line {"fixture": "<id>"})'
    ]
    if as_json:
        assert len(json.loads(result.stdout)["fixtures"]) == 6
    else:
        assert "Missed relations: " in result.stdout
    every = tmp_path / "every.jsonl"
    every.write_text("".join(json.dumps({"fixture": f.id}) + "\n" for f in fixtures), encoding="utf-8")
    complete = runner.invoke(app, [*args[:-1], str(every)])
    assert (complete.exit_code, complete.stderr) == (0, "")


def test_score_names_a_malformed_predictions_line(tmp_path: Path) -> None:
    predictions = tmp_path / "p.jsonl"
    predictions.write_text('{"fixture": "x", "entities": []}\nnot json\n', encoding="utf-8")
    result = runner.invoke(
        app, ["eval", "score", "--fixtures", str(FIXTURES), "--predictions", str(predictions)]
    )
    assert result.exit_code == 1 and result.stderr.startswith("Error:") and "p.jsonl:2:" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    # A human sentence, not pydantic's report ("1 validation error for Prediction ... [type=...]").
    assert "malformed prediction: not valid JSON" in result.stderr
    assert "validation error for" not in result.stderr and "type=" not in result.stderr


def test_eval_run_writes_reports_and_a_rerun_is_cached(tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    with FakeOpenAIServer(responder=OracleResponder.from_golds(f.gold for f in QUICK)) as server:
        args = [
            "eval",
            "run",
            "--fixtures",
            str(FIXTURES),
            "--tag",
            "quick",
            "--prompt",
            "extract@1",
            "--prompt",
            "extract@2",
            "--model",
            "oracle",
            "--base-url",
            server.base_url,
            "--api-key",
            "k",
            "--out",
            str(out),
            "--cache-dir",
            str(cache),
        ]
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        sent = len(server.requests)
        second = runner.invoke(app, args)
        assert second.exit_code == 0 and len(server.requests) == sent
        replay = runner.invoke(app, [*args, "--replay"])
        assert replay.exit_code == 0 and len(server.requests) == sent
    assert {p.name for p in out.iterdir()} >= {"report.json", "report.md", "report.html"}
    report = load_report(out / "report.json")
    assert [r.prompt for r in report.runs] == ["extract@1", "extract@2"] and report.runs[
        0
    ].metrics.requests_made == 0
    assert "Entity F1" in first.stdout and "extract@2" in first.stdout
    # The quick fixtures with gold facts are scored for facts; these prompt versions state none,
    # so the counts are kept (every gold fact missed) but the scores read "–", and a note says why.
    quick_facts = sum(len(f.facts or ()) for f in QUICK)
    assert quick_facts > 0
    assert [run.metrics.facts for run in report.runs] == [PRF(tp=0, predicted=0, gold=quick_facts)] * 2
    assert [run.states_facts for run in report.runs] == [False, False]
    rows = [[c.strip() for c in line.strip().strip("│").split("│")] for line in first.stdout.splitlines()]
    assert next(row for row in rows if row[0] == "Fact F1") == ["Fact F1", "–", "–", "–"]
    note = "Fact rows: – where the prompt version states no facts (extract@1, extract@2)."
    assert note in " ".join(first.stdout.split())
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "| Fact R | – | – | – |" in markdown and "- Missed facts:" in markdown
    assert "\n".join(["", note]) in markdown
    assert f'<p class="note">{note}</p>' in (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("reasks", [0, 3])
def test_eval_run_reasks_bounds_the_re_asks_and_is_part_of_the_cache_key(tmp_path: Path, reasks: int) -> None:
    def breaks_a_rule(request: RecordedRequest) -> Reply:
        entity = {"name": "Nobody", "type": "spaceship", "evidence": [1]}
        return tool_call_reply(
            request.tool_schema_name() or "Extraction", {"entities": [entity], "relations": []}
        )

    args = ["eval", "run", "--fixtures", str(FIXTURES), "--fixture", QUICK[0].id, "--model", "m"]
    with FakeOpenAIServer(responder=breaks_a_rule) as server:
        common = [*args, "--base-url", server.base_url, "--api-key", "k", "--cache-dir", str(tmp_path / "c")]
        common += ["--out", str(tmp_path / "o"), "--prompt", "extract@1"]
        first = runner.invoke(app, [*common, "--reasks", str(reasks)])
        assert first.exit_code == 1, first.output  # the fixture failed: see the test below
        assert len(server.requests) == reasks + 1
        default = runner.invoke(
            app, common
        )  # two re-asks by default for a hosted model: not the cached answer
        assert default.exit_code == 1, default.output
        assert len(server.requests) == reasks + 1 + 3


def last_line(stderr: str) -> str:
    """The one ``Error:`` line an eval command ends with (progress lines come before it)."""
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and stderr.splitlines()[-1] == errors[0], stderr
    return errors[0]


def test_eval_run_exits_1_when_every_fixture_failed_and_still_writes_the_report(tmp_path: Path) -> None:
    """A refused endpoint: every fixture fails, the table and the report are still written."""
    args = [
        "eval",
        "run",
        "--fixtures",
        str(FIXTURES),
        "--tag",
        "quick",
        "--model",
        "m",
        "--prompt",
        "extract@1",
    ]
    args += ["--base-url", "http://127.0.0.1:9/v1", "--api-key", "k", "--deadline", "1", "--no-cache"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    ids = sorted(f.id for f in QUICK)
    line = last_line(result.stderr)
    assert line.startswith(
        f"Error: 6 of 6 extraction(s) failed (6 fixture(s) in 1 run(s)): {', '.join(ids[:5])}, ...; "
        f"{ids[0]}: TransportError: connection failed ("
    ), line
    assert "Failed fixtures" in result.stdout
    assert load_report(tmp_path / "o" / "report.json").runs[0].metrics.failed_fixtures == 6


def test_eval_run_exits_1_when_one_fixture_of_several_failed(tmp_path: Path) -> None:
    """One fixture the model cannot answer validly, the others answered by the oracle."""
    oracle = OracleResponder.from_golds(f.gold for f in QUICK)
    broken = QUICK[0]
    words = {f.id: set(render_transcript(f.entries()).text().split()) for f in QUICK}
    marker = min(words[broken.id] - set().union(*(w for i, w in words.items() if i != broken.id)))

    def one_breaks_a_rule(request: RecordedRequest) -> Reply:
        if any(marker in str(message.get("content", "")).split() for message in request.messages):
            entity = {"name": "Nobody", "type": "spaceship", "evidence": [1]}
            reply = {"entities": [entity], "relations": []}
            return tool_call_reply(request.tool_schema_name() or "Extraction", reply)
        return oracle(request)

    with FakeOpenAIServer(responder=one_breaks_a_rule) as server:
        args = [
            "eval",
            "run",
            "--fixtures",
            str(FIXTURES),
            "--tag",
            "quick",
            "--model",
            "oracle",
            "--reasks",
            "0",
        ]
        args += ["--base-url", server.base_url, "--prompt", "extract@1", "--cache-dir", str(tmp_path / "c")]
        result = runner.invoke(app, [*args, "--out", str(tmp_path / "o")])
    assert result.exit_code == 1, result.output
    assert last_line(result.stderr).startswith(
        f"Error: 1 of 6 extraction(s) failed (1 fixture(s) in 1 run(s)): {broken.id}; "
        f"{broken.id}: ValidationExhaustedError: no valid extraction after 1 attempt(s)"
    )


def test_eval_run_replay_with_an_empty_cache_fails(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "eval",
            "run",
            "--fixtures",
            str(FIXTURES),
            "--tag",
            "quick",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--prompt",
            "extract@1",
            "--prompt",
            "extract@2",
            "--replay",
            "--cache-dir",
            str(tmp_path),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    error = " ".join(result.stderr.split())
    assert result.exit_code == 1
    assert "--replay: 12 extraction(s) had no cached response (6 fixture(s) in 2 run(s))" in error
    assert error.endswith(", ...")  # five of the six fixture ids are named


def test_eval_compare_two_saved_reports(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=OracleResponder.from_golds(f.gold for f in QUICK)) as server:
        for prompt in ("extract@1", "extract@2"):
            result = runner.invoke(
                app,
                [
                    "eval",
                    "run",
                    "--fixtures",
                    str(FIXTURES),
                    "--tag",
                    "quick",
                    "--prompt",
                    prompt,
                    "--model",
                    "oracle",
                    "--base-url",
                    server.base_url,
                    "--out",
                    str(tmp_path / prompt),
                    "--cache-dir",
                    str(tmp_path / "c"),
                ],
            )
            assert result.exit_code == 0, result.output
    compared = runner.invoke(
        app,
        [
            "eval",
            "compare",
            str(tmp_path / "extract@1" / "report.json"),
            str(tmp_path / "extract@2" / "report.json"),
        ],
    )
    assert compared.exit_code == 0, compared.output
    assert "extract@1" in compared.stdout and "extract@2" in compared.stdout


def test_fixtures_import_keeps_and_reports_unknown_types(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(
        json.dumps(
            {
                "id": "tiny",
                "turns": [{"speaker": "user", "text": "Zorg the dragon guards Castle Grim."}],
                "gold": {
                    "entities": [
                        {"name": "Zorg", "type": "dragon", "aliases": []},
                        {"name": "Castle Grim", "type": "location", "aliases": []},
                    ],
                    "relations": [{"source": "Zorg", "target": "Castle Grim", "type": "guards"}],
                },
            }
        )
        + "\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["fixtures", "import", str(source), "--out", str(tmp_path / "fx")])
    assert result.exit_code == 0, result.output
    assert f"Imported into {tmp_path / 'fx'}: 1 imported, 1 with gold problems" in result.stdout
    assert "dragon" in result.stderr and "guards" in result.stderr
    gold = json.loads((tmp_path / "fx" / "tiny" / "gold.json").read_text())
    assert gold["entities"][0]["type"] == "dragon" and gold["relations"][0]["type"] == "guards"


@pytest.mark.slow
def test_prompts_promote_exits_non_zero_when_the_gate_refuses(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    library = PromptLibrary(prompts)
    manifest = library.manifest()
    manifest.promoted.clear()  # start from nothing promoted
    library.save_manifest(manifest)
    golds = [f.gold for f in QUICK]
    good, worse = OracleResponder.from_golds(golds), OracleResponder.from_golds(golds, drop_relations=True)
    base = [
        "--fixtures",
        str(FIXTURES),
        "--tag",
        "quick",
        "--model",
        "oracle",
        "--prompts-dir",
        str(prompts),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / "gate"),
    ]
    with FakeOpenAIServer(responder=good) as server:
        first = runner.invoke(
            app,
            [
                "prompts",
                "promote",
                "extract@1",
                "--base-url",
                server.base_url,
                *base,
            ],
        )
    assert first.exit_code == 0, first.output
    assert "Promoted extract@1" in first.stdout

    # A candidate within the hosted budget that the model answers worse: extract@1 with a note.
    draft = library.new_version("extract", base="extract@1")
    draft.write_text(draft.read_text(encoding="utf-8").replace("Rules:", "Rules (draft):"), encoding="utf-8")

    def respond(request):
        return worse(request) if "Rules (draft):" in str(request.messages[0]["content"]) else good(request)

    with FakeOpenAIServer(responder=respond) as server:
        refused = runner.invoke(
            app, ["prompts", "promote", f"extract@{draft.stem[1:]}", "--base-url", server.base_url, *base]
        )
    assert refused.exit_code == 1
    *progress, wrote, error = refused.stderr.splitlines()  # a line per fixture, the report, the error
    assert error.startswith(
        f"Error: extract@{draft.stem[1:]} was not promoted for hosted models: relation F1 dropped"
    )
    assert len(progress) == 12 and all(line.startswith("[") for line in progress)
    assert wrote.startswith("Wrote ") and "report.json" in wrote
    kept = json.loads((tmp_path / "gate" / "report.json").read_text(encoding="utf-8"))
    assert [run["prompt"] for run in kept["runs"]] == ["extract@1", f"extract@{draft.stem[1:]}"]  # it is kept
    listed = json.loads(
        runner.invoke(app, ["prompts", "list", "--json", "--prompts-dir", str(prompts)]).stdout
    )
    assert {r["prompt"]: (r["status"], r["promoted_for"]) for r in listed}["extract@1"] == (
        "promoted",
        ["hosted"],
    )


@pytest.mark.slow
def test_prompts_promote_runs_only_the_named_fixtures_of_the_tag(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    library = PromptLibrary(prompts)
    manifest = library.manifest()
    manifest.promoted.clear()
    library.save_manifest(manifest)
    named, other = sorted(f.id for f in QUICK)[:2]
    with FakeOpenAIServer(responder=OracleResponder.from_golds([f.gold for f in QUICK])) as server:
        result = runner.invoke(
            app,
            [
                "prompts",
                "promote",
                "extract@1",
                "--base-url",
                server.base_url,
                "--fixtures",
                str(FIXTURES),
                "--tag",
                "quick",
                "--fixture",
                named,
                "--fixture",
                "work-wedding-planning",  # not tagged quick: left out
                "--model",
                "oracle",
                "--prompts-dir",
                str(prompts),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--out",
                str(tmp_path / "gate"),
            ],
        )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "gate" / "report.json").read_text(encoding="utf-8"))
    assert report["fixture_ids"] == [named] != [other]
    assert [f["fixture"] for f in report["runs"][0]["fixtures"]] == [named]


def _one_fixture(tmp_path: Path, relations: list[dict[str, str]]) -> Path:
    """A fixture directory holding one fixture: a committed tape, and gold written here."""
    folder = tmp_path / "fixtures" / "ticket"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "temporal-ticket-reassigned" / "tape.jsonl", folder / "tape.jsonl")
    entities = [
        {"name": "WEB-311", "type": "task"},
        {"name": "Priyanka Das", "type": "person"},
        {"name": "Owen Hartley", "type": "person"},
        {"name": "Storefront", "type": "project"},
    ]
    (folder / "gold.json").write_text(json.dumps({"entities": entities, "relations": relations}))
    return folder.parent


PREDICTED = {
    "fixture": "ticket",
    "entities": [
        {"name": "WEB-311", "type": "task"},
        {"name": "Priyanka Das", "type": "person"},
        {"name": "Storefront", "type": "project"},
    ],
    "relations": [
        {"source": "Priyanka Das", "target": "WEB-311", "type": "works_on"},
        {"source": "Storefront", "target": "WEB-311", "type": "part_of"},
    ],
}
TICKET_GOLD = [
    {"source": "WEB-311", "target": "Priyanka Das", "type": "assigned_to"},
    {"source": "WEB-311", "target": "Storefront", "type": "part_of"},
    {"source": "WEB-311", "target": "Owen Hartley", "type": "assigned_to"},
]


def test_score_prints_the_relation_diagnostics_beside_the_strict_scores(tmp_path: Path) -> None:
    fixtures = _one_fixture(tmp_path, TICKET_GOLD)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps(PREDICTED) + "\n")
    args = ["eval", "score", "--fixtures", str(fixtures), "--predictions", str(predictions)]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = {
        cells[0]: cells[1:]
        for line in result.stdout.splitlines()
        if len(cells := [c.strip() for c in line.strip().strip("│").split("│")]) > 2
    }
    # works_on states the gold assigned_to; part_of is the wrong way round; Owen was never extracted
    assert rows["relations"] == ["0.500", "0.333", "0.400", "1", "2", "3"]
    assert rows["relations (lenient)"] == ["1.000", "0.667", "0.800", "2", "2", "3"]
    assert rows["relations given endpoints"] == ["", "0.500", "", "1", "", "2"]
    assert "Missed relations: 1 no endpoint, 0 unrelated, 1 mislabelled" in result.stdout
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert data["relation_misses"] == {"no_endpoint": 1, "unrelated": 0, "mislabelled": 1}
    assert data["relations_given_endpoints"] == {"tp": 1, "gold": 2, "recall": 0.5}


def test_rescore_scores_a_saved_report_on_the_current_gold_and_keeps_its_predictions(tmp_path: Path) -> None:
    from bub_semantic_memory.evals import Prediction
    from bub_semantic_memory.evals.extraction import PRF, FixtureResult, Metrics, PromptRun, Report
    from bub_semantic_memory.evals.reports import write_report_files

    fixtures = _one_fixture(tmp_path, TICKET_GOLD)
    stale = PRF(tp=0, predicted=2, gold=5)  # what the report said on the gold of its day
    result = FixtureResult(
        fixture="ticket", prediction=Prediction.model_validate(PREDICTED), relations=stale, calls=1
    )
    metrics = Metrics(
        fixtures=1,
        failed_fixtures=0,
        entities=PRF(),
        entities_untyped=PRF(),
        relations=stale,
        schema_valid_first_try=1.0,
        success_rate=1.0,
        mean_attempts=1.0,
    )
    run = PromptRun(
        prompt="extract@9", prompt_sha256="a" * 64, model="m", mode="json", metrics=metrics, fixtures=[result]
    )
    saved = tmp_path / "report"
    write_report_files(
        Report(fixtures_dir="old", dataset_sha256="0" * 64, fixture_ids=["ticket"], runs=[run, run]), saved
    )
    out = runner.invoke(app, ["eval", "rescore", str(saved / "report.json"), "--fixtures", str(fixtures)])
    assert out.exit_code == 0, out.output
    report = load_report(saved / "report.json")
    assert report.rescored_at is not None and report.fixtures_dir == str(fixtures)
    assert report.dataset_sha256 != "0" * 64
    first = report.runs[0]
    assert first.metrics.relations == PRF(tp=1, predicted=2, gold=3)
    assert first.metrics.relation_misses is not None and first.metrics.relation_misses.no_endpoint == 1
    assert first.fixtures[0].prediction == Prediction.model_validate(PREDICTED)
    assert first.fixtures[0].calls == 1  # what the run recorded stays
    assert len(report.comparisons) == 0
    assert "Re-scored:" in (saved / "report.md").read_text()
    assert "Relation R given endpoints" in out.stdout


def test_rescore_refuses_a_report_whose_fixtures_are_gone(tmp_path: Path) -> None:
    report = QUICK[0].path.parents[1] / "reports" / "qwen-quick-extract2-vs-4" / "report.json"
    fixtures = _one_fixture(tmp_path, TICKET_GOLD)
    out = runner.invoke(
        app, ["eval", "rescore", str(report), "--fixtures", str(fixtures), "-o", str(tmp_path)]
    )
    assert out.exit_code == 1 and out.stderr.startswith(
        "Error: the report holds fixtures the fixture directory"
    )


def test_eval_run_replays_at_the_plugins_cadence_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=OracleResponder.from_golds(f.gold for f in QUICK)) as server:
        base = ["eval", "run", "--fixtures", str(FIXTURES), "--fixture", QUICK[0].id, "--prompt", "extract@2"]
        endpoint = ["--model", "oracle", "--base-url", server.base_url, "--api-key", "k"]
        files = ["--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
        unknown = runner.invoke(app, [*base, *endpoint, *files, "--cadence", "weekly"])
        assert unknown.exit_code == 2 and "--cadence must be tape or plugin" in unknown.output
        assert server.requests == []
        replayed = runner.invoke(app, [*base, *endpoint, *files, "--cadence", "plugin"])
    assert replayed.exit_code == 0, replayed.output
    assert load_report(tmp_path / "out" / "report.json").runs[0].cadence == "plugin"
    assert "Cadence of `extract@2 (oracle)`" in (tmp_path / "out" / "report.md").read_text()
