"""Running prompt versions over fixtures: bounded concurrency, the response cache, scoring.

For each prompt version and each fixture, the fixture's tape is extracted from the
start (an empty memory), the snapshots are folded into a graph, and the graph is
scored against the gold. A fixture whose extraction fails is recorded as a failure
with its error (its partial result still scored) and the run goes on.

Cache policies: ``use`` (read, then write what was missing), ``off`` (no reads, no
writes) and ``replay`` (read only; a miss is a recorded :class:`ReplayMissError`). Under
``use``, a replay at the plugin's cadence is also cached turn by turn, and a run cut short
resumes where it stood (see :mod:`._cache`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Console

from bub_semantic_memory._errors import ExtractionError, ReplayMissError
from bub_semantic_memory._models import Snapshot, Usage
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.agent import MemoryPolicy
from bub_semantic_memory.backends import ChatBackend, model_note
from bub_semantic_memory.evals._dataset import (
    Fixture,
    GoldEntity,
    GoldFact,
    GoldRelation,
    Prediction,
    dataset_hash,
)
from bub_semantic_memory.evals.extraction._cache import (
    CachedFailure,
    PartialReplay,
    ResponseCache,
    cache_key,
    extraction_code_sha256,
    replay_code_sha256,
)
from bub_semantic_memory.evals.extraction._labels import LabelMap, ontology_sha256, scoring_config
from bub_semantic_memory.evals.extraction._progress import RunProgress
from bub_semantic_memory.evals.extraction._report import (
    FixtureResult,
    PromptRun,
    Report,
    compare_runs,
    run_metrics,
)
from bub_semantic_memory.evals.extraction._scoring import FixtureScore, ScoringConfig, score_fixture
from bub_semantic_memory.extraction import Extractor, ExtractorConfig, PromptTemplate, candidate_names
from bub_semantic_memory.memory import MemoryGraph
from bub_semantic_memory.tape import Entry, render_transcript

if TYPE_CHECKING:
    from bub_semantic_memory.evals.extraction._replay import ReplayCheckpoint

logger = logging.getLogger(__name__)

__all__ = ["CachePolicy", "Cadence", "RunOptions", "prediction_from_snapshots", "run_eval"]

type CachePolicy = Literal["use", "off", "replay"]
type Cadence = Literal["tape", "plugin"]


@dataclass(frozen=True)
class RunOptions:
    """How to run an eval.

    Attributes:
        extractor: the model, mode and bounds every prompt version is run with (its
            ``prompt`` is replaced by each version under evaluation).
        concurrency: fixtures extracted at once (per run; runs go one after another).
        cache: ``use``, ``off`` or ``replay`` (see the module docstring).
        cache_dir: where cached extractions live.
        relation_synonyms: relation type -> canonical type, for scoring (``--synonyms``).
        label_map: gold labels -> ontology types, for scoring (``--label-map``).
        ontology: a dataset's ontology, shown to the model instead of each prompt's own
            (recorded on snapshots, in the report and in the cache key).
        backend: a ready backend to use instead of the one the model spec selects (tests).
        http_client: an ``httpx.AsyncClient`` for a hosted endpoint (tests, proxies).
        progress: show progress on the console.
        cadence: ``tape`` sends each fixture's whole tape in windows of ``chunk_tokens`` (as
            ``semantic-memory extract`` reads a finished tape); ``plugin`` replays it turn by
            turn through the plugin's memory service, which extracts at its cadence (see
            :mod:`._replay`): the windows an agent's memory is made of.
        policy: the plugin's cadence a ``plugin`` replay runs (``every_turns``,
            ``min_new_tokens``); the plugin's defaults when None.
    """

    extractor: ExtractorConfig
    concurrency: int = 4
    cache: CachePolicy = "use"
    cache_dir: Path = Path(".cache/eval")
    relation_synonyms: dict[str, str] = field(default_factory=dict)
    label_map: LabelMap | None = None
    ontology: Ontology | None = None
    backend: ChatBackend | None = None
    http_client: Any = None
    progress: bool = True
    cadence: Cadence = "tape"
    policy: MemoryPolicy | None = None

    @property
    def model(self) -> str:
        return self.extractor.model


def prediction_from_snapshots(
    fixture_id: str, snapshots: Sequence[Snapshot], ontology: Ontology
) -> Prediction:
    """Fold snapshots and express the graph in gold's shape (names instead of keys, facts included)."""
    graph = MemoryGraph.fold(snapshots, ontology, tape=fixture_id)
    entities = graph.entities()
    names = {e.key: e.name for e in entities}
    return Prediction(
        fixture=fixture_id,
        entities=[
            GoldEntity(name=e.name, type=e.type, aliases=list(e.aliases), attributes=dict(e.attributes))
            for e in entities
        ],
        relations=[
            GoldRelation(
                source=names.get(r.source, r.source), target=names.get(r.target, r.target), type=r.type
            )
            for r in graph.relations()
        ],
        facts=[
            GoldFact(
                statement=f.statement,
                kind=f.kind,
                about=[names.get(k, k) for k in f.about],
                topic=f.topic,
                when=f.when,
                evidence=list(f.evidence),
            )
            for f in graph.facts()
        ],
    )


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class _Outcome:
    snapshots: list[Snapshot]
    cached: bool = False
    error: ExtractionError | None = None
    requests_made: int = 0


class _PromptRunner:
    """Runs one prompt version over the fixtures."""

    def __init__(
        self,
        prompt: PromptTemplate,
        options: RunOptions,
        backend: ChatBackend,
        progress: RunProgress | None = None,
    ) -> None:
        self.prompt = prompt
        self.options = options
        self.extractor = Extractor(options.extractor.replace(prompt=prompt), backend=backend)
        self.cache = ResponseCache(options.cache_dir)
        self.progress = progress

    def _key(self, entries: list[Entry]) -> tuple[str, dict[str, Any]]:
        """Everything that decides the answers: the prompt, what the model is shown, the settings
        and bounds the extractor runs with, the backend's traits and the extraction code."""
        ex = self.extractor
        substituted = {"ontology_sha256": self.prompt.ontology_sha256} if self.prompt.ontology_sha256 else {}
        # What the model is shown: a change in rendering or redaction invalidates the cache.
        transcript = render_transcript(entries, redact=ex.redactor)
        extra: dict[str, Any] = {}
        if self.prompt.candidates:  # the names the schema offers: a change in the heuristic changes them
            extra["candidates_sha256"] = _sha256(json.dumps(candidate_names(transcript.lines)))
        if self.options.cadence == "plugin":  # other windows, other answers
            policy = self.options.policy or MemoryPolicy()
            extra["cadence"] = dataclasses.asdict(policy.cadence(ex.traits, ex.chunk_tokens))
            extra["failed_window_tries"] = policy.failed_window_tries  # a window given up, or retried
        return cache_key(
            **substituted,
            **extra,
            prompt_sha256=self.prompt.sha256,
            transcript_sha256=_sha256(transcript.text()),
            config=ex.config.answer_inputs(),
            bounds=dataclasses.asdict(ex.bounds),
            traits=dataclasses.asdict(ex.traits),
            extraction_code_sha256=extraction_code_sha256(),
        )

    async def extract(self, fixture: Fixture) -> _Outcome:
        entries = fixture.entries()
        key, fields = self._key(entries) if self.options.cache != "off" else ("", {})
        if self.options.cache != "off":
            hit = self.cache.get(key)
            if hit is not None:
                error = hit.failure.error() if hit.failure is not None else None
                return _Outcome(snapshots=list(hit.snapshots), cached=True, error=error)
        if self.options.cache == "replay":
            miss = ReplayMissError(f"no cached extraction of {fixture.id} for {self.prompt} ({key[:12]})")
            return _Outcome(snapshots=[], error=miss)
        if self.options.cadence == "plugin":
            return await self._extract_at_plugin_cadence(fixture, entries, key, fields)
        snapshots: list[Snapshot] = []
        try:
            async for snapshot in self.extractor.iter_extract(entries, tape=fixture.id):
                snapshots.append(snapshot)
        except ExtractionError as exc:
            made = sum(s.usage.requests for s in snapshots) + exc.usage.requests
            failure = CachedFailure.of(exc)
            if self.options.cache == "use" and failure is not None:
                self.cache.put(key, fields, snapshots, failure)
            return _Outcome(snapshots=snapshots, error=exc, requests_made=made)
        if self.options.cache == "use":
            self.cache.put(key, fields, snapshots)
        return _Outcome(snapshots=snapshots, requests_made=sum(s.usage.requests for s in snapshots))

    async def _extract_at_plugin_cadence(
        self, fixture: Fixture, entries: list[Entry], key: str, fields: dict[str, Any]
    ) -> _Outcome:
        """The fixture's tape replayed through the plugin's service; entries it never extracted fail it.

        Under the ``use`` cache policy the replay resumes where a run cut short stood, and
        stores where it stands after each turn; ``requests_made`` counts this run's requests.
        """
        from bub_semantic_memory.evals.extraction._replay import replay_as_plugin

        caching = self.options.cache == "use"
        resume = self._resumable(fixture, entries, key) if caching else None

        def store(checkpoint: ReplayCheckpoint) -> None:
            self.cache.put_partial(
                PartialReplay(
                    key=key,
                    key_fields=fields,
                    snapshots=checkpoint.snapshots,
                    replayed_entries=checkpoint.replayed_entries,
                    failures=checkpoint.failures,
                    last_entry_id=entries[checkpoint.replayed_entries - 1].id,
                    code_sha256=replay_code_sha256(),
                )
            )

        def turn_done(turn: int, turns: int, failures: int) -> None:
            if self.progress is not None:  # failures too: a replay whose every extraction fails goes on
                failed = f", {failures} extraction(s) failed" if failures else ""
                self.progress.fixture_progress(fixture.id, f"turn {turn} of {turns}{failed}")

        replayed = await replay_as_plugin(
            entries,
            self.extractor,
            self.prompt.ontology,
            tape=fixture.id,
            policy=self.options.policy,
            resume=resume,
            on_checkpoint=store if caching else None,
            on_turn=turn_done,
        )
        made = sum(s.usage.requests for s in replayed.snapshots)
        made -= sum(s.usage.requests for s in resume.snapshots) if resume is not None else 0
        if replayed.uncovered_after is not None:
            error = ExtractionError(
                f"the plugin's cadence left the entries after {replayed.uncovered_after} unextracted: "
                f"{replayed.failures} extraction(s) failed (see the log)",
                model=self.extractor.config.model,
            )
            return _Outcome(snapshots=replayed.snapshots, error=error, requests_made=made)
        if caching:
            self.cache.put(key, fields, replayed.snapshots)
        return _Outcome(snapshots=replayed.snapshots, requests_made=made)

    def _resumable(self, fixture: Fixture, entries: list[Entry], key: str) -> ReplayCheckpoint | None:
        """Where a replay of ``fixture`` cut short stood, if it can be finished by this run: made by
        the same replay code, of the same tape, up to the end of one of its turns (else it is
        started over, and the log says why)."""
        from bub_semantic_memory.evals.extraction._replay import ReplayCheckpoint, turn_ends

        partial = self.cache.get_partial(key)
        if partial is None:
            return None
        count = partial.replayed_entries
        problem = None
        if partial.code_sha256 != replay_code_sha256():
            problem = "the replay's code changed since"
        elif count not in turn_ends(entries) or entries[count - 1].id != partial.last_entry_id:
            problem = f"its {count} entries are not whole turns of this tape"
        elif any(s.tape != fixture.id for s in partial.snapshots):
            problem = "its snapshots are of another tape"
        if problem is not None:
            logger.warning("eval cache: a replay of %s cut short is started over: %s", fixture.id, problem)
            return None
        if self.progress is not None:
            self.progress.note(
                f"{fixture.id}: resuming after entry {partial.last_entry_id} of {entries[-1].id} "
                f"({len(partial.snapshots)} snapshot(s) cached by an earlier run)"
            )
        return ReplayCheckpoint(list(partial.snapshots), count, partial.failures)

    def result(
        self, fixture: Fixture, outcome: _Outcome, config: ScoringConfig
    ) -> tuple[FixtureResult, FixtureScore]:
        prediction = prediction_from_snapshots(fixture.id, outcome.snapshots, self.prompt.ontology)
        score = score_fixture(fixture.gold, prediction, config, facts=fixture.facts)
        calls = [s for s in outcome.snapshots if s.usage.attempts or s.usage.requests]
        usage = sum((s.usage for s in outcome.snapshots), Usage())
        error = outcome.error
        if error is not None:
            usage = usage + error.usage
        failed_calls = 1 if error is not None and not isinstance(error, ReplayMissError) else 0
        result = FixtureResult(
            fixture=fixture.id,
            ok=error is None,
            error=str(error) if error is not None else None,
            error_type=type(error).__name__ if error is not None else None,
            cached=outcome.cached,
            calls=len(calls) + failed_calls,
            first_try_valid_calls=sum(1 for s in calls if s.usage.reasks == 0 and s.usage.attempts > 0),
            usage=usage,
            call_latencies_s=[s.usage.latency_s for s in calls],
            requests_made=outcome.requests_made,
            dropped=[reason for s in outcome.snapshots for reason in s.dropped],
            prediction=prediction,
            snapshots=list(outcome.snapshots),
            **score.diff_fields(),
        )
        return result, score


async def run_eval(
    fixtures: Sequence[Fixture],
    prompts: Sequence[PromptTemplate],
    options: RunOptions,
    *,
    fixtures_dir: Path | str = "",
    console: Console | None = None,
) -> Report:
    """Run every prompt version over every fixture and build the report.

    Runs go one after another (so their latencies are comparable); fixtures within
    a run go ``options.concurrency`` at a time.
    """
    runs: list[PromptRun] = []
    console = console or Console(stderr=True)
    progress = RunProgress(console, len(fixtures) * len(prompts), enabled=options.progress)
    heartbeat = asyncio.create_task(progress.heartbeat())
    backend = options.backend
    try:
        # One backend for every prompt version: a local model is loaded once. Opening a packaged
        # model the first time assembles it (1.1 GB, sha256-checked): the heartbeat says so.
        if backend is None:
            backend = await progress.phase(
                f"Opening {options.model} (a packaged local model is assembled from its packages "
                "and sha256-checked the first time: about 1 GB)",
                asyncio.to_thread(options.extractor.open_backend, http_client=options.http_client),
            )
        with progress:
            for prompt in prompts:
                runs.append(await _run_prompt(prompt, fixtures, options, backend, progress))
    finally:
        heartbeat.cancel()
        if options.backend is None and backend is not None:
            await backend.aclose()
    comparisons = [compare_runs(runs[0], run) for run in runs[1:]]
    return Report(
        fixtures_dir=str(fixtures_dir),
        dataset_sha256=dataset_hash(fixtures),
        fixture_ids=[f.id for f in fixtures],
        runs=runs,
        comparisons=comparisons,
    )


async def _run_prompt(
    prompt: PromptTemplate,
    fixtures: Sequence[Fixture],
    options: RunOptions,
    backend: ChatBackend,
    progress: RunProgress,
) -> PromptRun:
    if options.ontology is not None:
        prompt = prompt.with_ontology(options.ontology, ontology_sha256(options.ontology))
    runner = _PromptRunner(prompt, options, backend, progress)
    config = scoring_config(prompt.ontology, options.label_map, options.relation_synonyms)
    progress.start_run(f"{prompt} ({options.model})", len(fixtures))
    semaphore = asyncio.Semaphore(max(1, options.concurrency))

    async def one(fixture: Fixture) -> tuple[FixtureResult, FixtureScore]:
        async with semaphore:
            progress.fixture_started(fixture.id)
            outcome = await runner.extract(fixture)
        result, score = runner.result(fixture, outcome, config)
        progress.fixture_done(result)
        return result, score

    scored = list(await asyncio.gather(*(one(f) for f in fixtures)))
    progress.finish_run()
    return PromptRun(
        prompt=str(prompt),
        prompt_sha256=prompt.sha256,
        ontology_sha256=prompt.ontology_sha256,
        model=options.model,
        model_class=runner.extractor.traits.model_class,
        mode=runner.extractor.mode,
        metrics=run_metrics(
            [r for r, _ in scored],
            [s for _, s in scored],
            forbidden_checked=sum(1 for f in fixtures if f.gold.forbidden),
        ),
        fixtures=[r for r, _ in scored],
        model_note=model_note(options.model),
        cadence=options.cadence,
        states_facts=prompt.facts,
    )
