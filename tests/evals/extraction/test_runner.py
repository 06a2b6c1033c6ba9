"""The eval runner against a fake endpoint: scores, cache, replay, comparison and the gate."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from bub_semantic_memory._errors import GateError
from bub_semantic_memory.backends._transport import BackendTraits, OpenAIBackend, RetryPolicy
from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.evals.extraction import Report, RunOptions, check_gate, promote, run_eval
from bub_semantic_memory.extraction._candidates import candidate_names
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.tape._transcript import render_transcript
from bub_semantic_memory.testing import (
    FakeOpenAIServer,
    OracleResponder,
    RecordedRequest,
    Reply,
    length_reply,
    status_reply,
    tool_call_reply,
)
from tests.conftest import REPO

FIXTURES = REPO / "evals" / "fixtures"
FAST = RetryPolicy(backoff_initial_s=0.01, backoff_max_s=0.02, request_timeout_s=10)
QUICK = load_fixtures(FIXTURES, tags=["quick"])


def options(server: FakeOpenAIServer, tmp_path: Path, **overrides: object) -> RunOptions:
    config = ExtractorConfig(model="oracle", base_url=server.base_url, api_key="k", retry=FAST)
    extractor_fields = {
        k: overrides.pop(k) for k in list(overrides) if k in ExtractorConfig.__dataclass_fields__
    }
    fields: dict[str, object] = {
        "extractor": config.replace(**extractor_fields),
        "cache_dir": tmp_path / "cache",
        "progress": False,
        "concurrency": 4,
    }
    fields.update(overrides)
    return RunOptions(**fields)  # type: ignore[arg-type]


async def oracle_run(server: FakeOpenAIServer, tmp_path: Path, *refs: str) -> Report:
    """The quick fixtures run against ``server`` with the prompt versions ``refs``."""
    library = PromptLibrary()
    return await run_eval(QUICK, [library.load(ref) for ref in refs], options(server, tmp_path))


@pytest.fixture
def oracle_server():
    with FakeOpenAIServer(responder=OracleResponder.from_golds(f.gold for f in QUICK)) as server:
        yield server


async def test_an_oracle_endpoint_scores_high_and_the_report_has_the_documented_fields(
    oracle_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    report = await oracle_run(oracle_server, tmp_path, "extract@1", "extract@2")
    assert [r.prompt for r in report.runs] == ["extract@1", "extract@2"]
    data = report.model_dump(mode="json")
    run = data["runs"][0]
    for key in ("prompt", "prompt_sha256", "model", "mode", "fixtures"):
        assert key in run
    metrics = run["metrics"]
    for group in ("entities", "relations"):
        assert set(metrics[group]) >= {"precision", "recall", "f1"}
    for key in ("schema_valid_first_try", "success_rate", "prompt_tokens", "completion_tokens"):
        assert key in metrics
    assert metrics["success_rate"] == 1.0 and metrics["entities"]["recall"] == 1.0
    assert metrics["relations"]["f1"] > 0.9
    assert len(report.comparisons) == 1 and report.comparisons[0].fixtures_compared == len(QUICK)
    assert len(run["fixtures"]) == len(QUICK)


async def test_a_second_run_is_served_from_the_cache_with_zero_requests(
    oracle_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    prompt = PromptLibrary().load("extract@1")
    first = await run_eval(QUICK, [prompt], options(oracle_server, tmp_path))
    sent = len(oracle_server.requests)
    assert sent > 0 and first.runs[0].metrics.requests_made == sent
    second = await run_eval(QUICK, [prompt], options(oracle_server, tmp_path))
    assert len(oracle_server.requests) == sent  # zero new requests
    metrics = second.runs[0].metrics
    assert metrics.requests_made == 0 and metrics.cached_fixtures == len(QUICK)
    assert metrics.entities == first.runs[0].metrics.entities
    assert metrics.prompt_tokens == first.runs[0].metrics.prompt_tokens  # the original usage is reported


class FingerprintedBackend(OpenAIBackend):
    """A hosted endpoint posing as a local model: it declares a ``fingerprint`` (file, batch size)."""

    def __init__(self, server: FakeOpenAIServer, fingerprint: dict[str, object]) -> None:
        super().__init__(base_url=server.base_url, api_key="k", timeout_s=10)
        self.traits = BackendTraits(fingerprint=fingerprint)


async def test_a_local_models_file_and_batch_size_are_part_of_the_cache_key(
    oracle_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    prompt = PromptLibrary().load("extract@1")
    fixtures = QUICK[:2]

    async def run(fingerprint: dict[str, object]) -> int:
        backend = FingerprintedBackend(oracle_server, fingerprint)
        report = await run_eval(fixtures, [prompt], options(oracle_server, tmp_path, backend=backend))
        return report.runs[0].metrics.cached_fixtures

    small = {"file": "model.gguf", "n_batch": 64}
    assert await run(small) == 0
    assert await run(small) == len(fixtures)
    assert await run(small | {"n_batch": 512}) == 0  # other batches, other numbers, other answers
    assert await run(small | {"file": "other.gguf"}) == 0


def invalid_answer(request: RecordedRequest) -> Reply:
    """An answer the ontology rejects, every time (a model that cannot do the task)."""
    entity = {"name": "Nobody", "type": "spaceship", "evidence": [1]}
    return tool_call_reply(
        request.tool_schema_name() or "Extraction", {"entities": [entity], "relations": []}
    )


async def test_the_models_own_failure_is_cached_and_replayed_without_requests(tmp_path: Path) -> None:
    prompt = PromptLibrary().load("extract@1")
    with FakeOpenAIServer(responder=invalid_answer) as server:
        first = await run_eval(QUICK[:2], [prompt], options(server, tmp_path))
        sent = len(server.requests)
        second = await run_eval(QUICK[:2], [prompt], options(server, tmp_path))
        assert len(server.requests) == sent  # the failure was replayed, not asked again
        again = await run_eval(QUICK[:2], [prompt], options(server, tmp_path, cache="off"))
        assert len(server.requests) == 2 * sent  # --no-cache asks anew
    assert sent == 2 * (FAST.reasks + 1)
    before, after = first.runs[0], second.runs[0]
    assert {f.error_type for f in before.fixtures} == {"ValidationExhaustedError"}
    assert [(f.error_type, f.error, f.usage) for f in after.fixtures] == [
        (f.error_type, f.error, f.usage) for f in before.fixtures
    ]
    assert all(f.cached for f in after.fixtures) and after.metrics.requests_made == 0
    assert after.metrics.success_rate == 0.0 and not any(f.cached for f in again.runs[0].fixtures)


def cut_off_answer(request: RecordedRequest) -> Reply:
    """An answer stopped by the output limit, every time."""
    return length_reply('{"entities": [{"name": "Ali', request.tool_schema_name() or "Extraction")


@pytest.mark.parametrize(
    ("failing", "error_type"),
    [(invalid_answer, "ValidationExhaustedError"), (cut_off_answer, "OutputTruncatedError")],
)
async def test_windows_before_a_cached_failure_are_replayed_too(
    tmp_path: Path, failing: Callable[[RecordedRequest], Reply], error_type: str
) -> None:
    """The first window is answered, later ones fail: a re-run and a replay give the same result."""
    fixture = next(f for f in QUICK if f.id == "temporal-moved-berlin-to-lisbon")
    oracle = OracleResponder.from_golds([fixture.gold])

    def first_window_only(request: RecordedRequest) -> Reply:
        return oracle(request) if oracle.requests == 0 else failing(request)

    prompt = PromptLibrary().load("extract@1")
    small = {"chunk_tokens": 120}
    with FakeOpenAIServer(responder=first_window_only) as server:
        first = await run_eval([fixture], [prompt], options(server, tmp_path, **small))
        sent = len(server.requests)
        rerun = await run_eval([fixture], [prompt], options(server, tmp_path, **small))
        replay = await run_eval([fixture], [prompt], options(server, tmp_path, cache="replay", **small))
        assert len(server.requests) == sent
    original = first.runs[0].fixtures[0]
    assert original.error_type == error_type and original.prediction.entities  # window 1 was kept
    for run in (rerun, replay):
        result = run.runs[0].fixtures[0]
        assert result.cached and result.requests_made == 0
        assert (result.error_type, result.error, result.usage) == (error_type, original.error, original.usage)
        assert result.prediction == original.prediction and result.entities == original.entities


async def test_an_endpoint_failure_is_not_cached(tmp_path: Path) -> None:
    prompt = PromptLibrary().load("extract@1")
    policy = RetryPolicy(
        transport_attempts=2, backoff_initial_s=0.01, backoff_max_s=0.02, request_timeout_s=10
    )
    with FakeOpenAIServer(responder=lambda request: status_reply(503)) as server:
        first = await run_eval(QUICK[:1], [prompt], options(server, tmp_path, retry=policy))
        sent = len(server.requests)
        second = await run_eval(QUICK[:1], [prompt], options(server, tmp_path, retry=policy))
    assert first.runs[0].fixtures[0].error_type == "TransportError"
    assert sent == 2 and len(server.requests) == 2 * sent  # tried again on the next run
    assert not second.runs[0].fixtures[0].cached


async def test_no_cache_bypasses_the_cache(oracle_server: FakeOpenAIServer, tmp_path: Path) -> None:
    prompt = PromptLibrary().load("extract@1")
    await run_eval(QUICK, [prompt], options(oracle_server, tmp_path))
    sent = len(oracle_server.requests)
    await run_eval(QUICK, [prompt], options(oracle_server, tmp_path, cache="off"))
    assert len(oracle_server.requests) == 2 * sent


async def test_replay_fails_on_a_miss_without_calling_the_model(
    oracle_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    report = await run_eval(
        QUICK[:2], [PromptLibrary().load("extract@1")], options(oracle_server, tmp_path, cache="replay")
    )
    assert oracle_server.requests == []
    assert {r.error_type for r in report.runs[0].fixtures} == {"ReplayMissError"}
    assert report.runs[0].metrics.success_rate == 0.0


async def test_a_failing_fixture_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    failing = QUICK[0].id
    oracle = OracleResponder.from_golds(f.gold for f in QUICK)

    def respond(request):
        if failing in str(request.messages) or "Bob" in str(request.messages):
            return status_reply(500)
        return oracle(request)

    with FakeOpenAIServer(responder=respond) as server:
        report = await run_eval(QUICK, [PromptLibrary().load("extract@1")], options(server, tmp_path))
    failed = [r for r in report.runs[0].fixtures if not r.ok]
    assert failed and all(r.error_type == "TransportError" for r in failed)
    assert report.runs[0].metrics.failed_fixtures == len(failed)
    assert 0 < report.runs[0].metrics.success_rate < 1


def test_the_gate_refuses_a_regression_beyond_the_tolerance() -> None:
    from bub_semantic_memory.evals.extraction import PRF, Metrics, PromptRun

    def run(name: str, entity_tp: int, relation_tp: int) -> PromptRun:
        metrics = Metrics(
            fixtures=10,
            failed_fixtures=0,
            entities=PRF(tp=entity_tp, predicted=10, gold=10),
            entities_untyped=PRF(tp=entity_tp, predicted=10, gold=10),
            relations=PRF(tp=relation_tp, predicted=10, gold=10),
            schema_valid_first_try=1.0,
            success_rate=1.0,
            mean_attempts=1.0,
        )
        return PromptRun(
            prompt=name, prompt_sha256="x", model="m", mode="tools", metrics=metrics, fixtures=[]
        )

    assert check_gate(run("a@1", 8, 8), run("a@2", 8, 8), tolerance=0.02) == []
    reasons = check_gate(run("a@1", 8, 8), run("a@2", 8, 5), tolerance=0.02)
    assert len(reasons) == 1 and reasons[0].startswith("relation F1 dropped from 0.800 (a@1) to 0.500 (a@2)")
    assert check_gate(run("a@1", 8, 8), run("a@2", 8, 5), tolerance=0.5) == []


def test_the_gate_refuses_a_candidate_that_costs_much_more_without_a_clear_gain() -> None:
    from bub_semantic_memory.evals.extraction import PRF, Comparison, Metrics, PromptRun

    def run(name: str, prompt_tokens: int, entity_tp: int = 8) -> PromptRun:
        metrics = Metrics(
            fixtures=10,
            failed_fixtures=0,
            entities=PRF(tp=entity_tp, predicted=10, gold=10),
            entities_untyped=PRF(tp=entity_tp, predicted=10, gold=10),
            relations=PRF(tp=8, predicted=10, gold=10),
            schema_valid_first_try=1.0,
            success_rate=1.0,
            mean_attempts=1.0,
            prompt_tokens=prompt_tokens,
        )
        return PromptRun(
            prompt=name, prompt_sha256="x", model="m", mode="tools", metrics=metrics, fixtures=[]
        )

    def comparison(low: float) -> Comparison:
        return Comparison(
            baseline="a@1",
            candidate="a@2",
            fixtures_compared=10,
            entity_f1_delta=0.1,
            entity_f1_ci95=(low, 0.2),
            relation_f1_delta=0.0,
            relation_f1_ci95=(-0.1, 0.1),
            resamples=100,
        )

    # 16,000 against 10,000 tokens (1.6x), F1 no better: refused, with the growth named.
    [reason] = check_gate(
        run("a@1", 10_000), run("a@2", 16_000), tolerance=0.02, comparison=comparison(-0.05)
    )
    assert "1.60x the prompt tokens per fixture of a@1" in reason
    # The same cost with an entity F1 gain whose interval is above 0: accepted.
    assert (
        check_gate(run("a@1", 10_000), run("a@2", 16_000, 9), tolerance=0.02, comparison=comparison(0.01))
        == []
    )
    # 1.4x is within the allowance.
    assert (
        check_gate(run("a@1", 10_000), run("a@2", 14_000), tolerance=0.02, comparison=comparison(-0.05)) == []
    )


async def test_promote_refuses_a_worse_candidate_and_keeps_the_current_one(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    library = PromptLibrary(prompts)
    golds = [f.gold for f in QUICK]
    with FakeOpenAIServer(responder=OracleResponder.from_golds(golds)) as good:
        outcome = await promote(
            library, library.load("extract@1"), QUICK, options(good, tmp_path, cache="off"), budgets={}
        )
    assert library.manifest().promoted["extract"]["hosted"].version == 1
    assert outcome.promotion.model == "oracle" and outcome.promotion.scores["relation_f1"] > 0.9
    assert outcome.promotion.model_class == "hosted"

    worse = OracleResponder.from_golds(golds, drop_relations=True)

    def respond(request):
        system = str(request.messages[0]["content"])
        return worse(request) if "First write `reasoning`" in system else good_oracle(request)

    good_oracle = OracleResponder.from_golds(golds)
    with (
        FakeOpenAIServer(responder=respond) as server,
        pytest.raises(GateError, match=r"extract@2 was not promoted for hosted models: relation F1 dropped"),
    ):
        await promote(
            library, library.load("extract@2"), QUICK, options(server, tmp_path, cache="off"), budgets={}
        )
    assert library.manifest().promoted["extract"]["hosted"].version == 1
    assert library.load("extract", model_class="hosted").version == 1  # the plugin keeps the promoted one


async def test_the_classify_strategy_against_an_oracle_finds_every_gold_entity_named_by_a_candidate(
    oracle_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    report = await oracle_run(oracle_server, tmp_path, "extract@6")
    run = report.runs[0]
    assert run.metrics.success_rate == 1.0
    first_steps = [str(r.tool_schema_name()) for r in oracle_server.requests]
    first_steps = [name for name in first_steps if name != "Relations"]
    assert sorted(first_steps) == ["Classification"] * 5 + ["Entities"]  # small talk: no candidate names
    aliases = {a for f in QUICK for e in f.gold.entities for a in e.aliases}
    by_id = {f.id: f for f in QUICK}
    for fixture in run.fixtures:
        candidates = candidate_names(render_transcript(by_id[fixture.fixture].entries()).lines) or []
        missed = {name.split(":", 1)[1] for name in fixture.missed_entities}
        assert not missed & set(candidates), fixture.fixture  # only names that are no candidate are missed
        # a classification cannot say that "Bob" is Robert Castillo: such aliases stand alone
        assert {name.split(":", 1)[1] for name in fixture.spurious_entities} <= aliases


async def test_phrase_types_against_an_oracle_find_the_lower_case_tasks_and_events(
    oracle_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """extract@4 can only pick capitalised names; extract@7 (in its entities call) and extract@8
    (in a call of its own) also name 'lease renewal' by a phrase."""
    report = await oracle_run(oracle_server, tmp_path, "extract@4", "extract@7", "extract@8")
    missed = {run.prompt: {m for f in run.fixtures for m in f.missed_entities} for run in report.runs}
    lower_case = {
        m
        for m in missed["extract@4"]
        if m.split(":")[0] in ("task", "event") and m.split(":", 1)[1][0].islower()
    }
    assert "task:lease renewal" in lower_case
    for phrased in ("extract@7", "extract@8"):
        assert not lower_case & missed[phrased]
        assert missed[phrased] < missed["extract@4"]


async def test_the_candidate_names_of_a_candidates_prompt_are_part_of_the_cache_key(
    oracle_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = PromptLibrary().load("extract@6")
    fixtures = QUICK[:1]
    first = await run_eval(fixtures, [prompt], options(oracle_server, tmp_path))
    again = await run_eval(fixtures, [prompt], options(oracle_server, tmp_path))
    assert first.runs[0].metrics.cached_fixtures == 0 and again.runs[0].metrics.cached_fixtures == 1
    monkeypatch.setattr(
        "bub_semantic_memory.evals.extraction._runner.candidate_names", lambda lines: ["Someone Else"]
    )
    changed = await run_eval(fixtures, [prompt], options(oracle_server, tmp_path))
    assert changed.runs[0].metrics.cached_fixtures == 0  # another heuristic, other schemas: asked again


async def test_a_change_in_the_extraction_code_is_asked_again_not_replayed(
    oracle_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = PromptLibrary().load("extract@4")
    fixtures = QUICK[:1]
    await run_eval(fixtures, [prompt], options(oracle_server, tmp_path))
    again = await run_eval(fixtures, [prompt], options(oracle_server, tmp_path))
    assert again.runs[0].metrics.cached_fixtures == 1
    monkeypatch.setattr(
        "bub_semantic_memory.evals.extraction._runner.extraction_code_sha256", lambda: "0" * 64
    )
    edited = await run_eval(fixtures, [prompt], options(oracle_server, tmp_path))
    assert edited.runs[0].metrics.cached_fixtures == 0  # validators changed: the old snapshots may be wrong
    replay = await run_eval(fixtures, [prompt], options(oracle_server, tmp_path, cache="replay"))
    assert replay.runs[0].metrics.cached_fixtures == 1  # the new answer is the one kept


async def test_a_sweep_after_a_complete_entities_answer_adds_nothing_and_loses_nothing(
    oracle_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The oracle lists every gold entity, so the sweep only meets names that are none."""
    report = await oracle_run(oracle_server, tmp_path, "extract@4", "extract@9")
    swept = [r for r in oracle_server.requests if r.tool_schema_name() == "Classification"]
    assert swept  # windows with candidate names the entities answer left out
    plain, sweep = report.runs
    assert sweep.metrics.success_rate == 1.0
    assert [f.missed_entities for f in sweep.fixtures] == [f.missed_entities for f in plain.fixtures]
    assert [f.spurious_entities for f in sweep.fixtures] == [f.spurious_entities for f in plain.fixtures]


async def test_a_cached_run_reports_the_latencies_of_the_run_that_filled_the_cache(
    oracle_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """A cache hit takes no time; the report keeps the measured latency instead of a p50 of zero."""
    oracle_server.latency = 0.05
    prompt = PromptLibrary().load("extract@1")
    first = await run_eval(QUICK[:3], [prompt], options(oracle_server, tmp_path))
    second = await run_eval(QUICK[:3], [prompt], options(oracle_server, tmp_path))
    filled, cached = first.runs[0].metrics, second.runs[0].metrics
    assert cached.cached_fixtures == 3 and cached.requests_made == 0
    assert filled.latency_p50_s is not None and filled.latency_p50_s >= 0.05
    assert (cached.latency_p50_s, cached.latency_p95_s) == (filled.latency_p50_s, filled.latency_p95_s)
