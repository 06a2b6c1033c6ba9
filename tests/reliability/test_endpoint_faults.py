"""Endpoint faults: 15 fault kinds x 14 scheduled calls, exact request bounds, tokens, convergence."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest
from bub.store import FileTapeStore

from bub_semantic_memory import _errors as errors
from bub_semantic_memory._errors import ExtractionError, OutputTruncatedError, TransportError
from bub_semantic_memory._models import Snapshot, entity_key
from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores._store import SnapshotStore
from bub_semantic_memory.tape._transcript import Entry
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder
from tests.conftest import REPO
from tests.reliability._report import Outcomes
from tests.reliability._support import (
    FAST,
    FAULTS,
    RETRY_AFTER_S,
    TIMEOUT_POLICY,
    CallPlan,
    Facts,
    FaultLab,
    fact_tape,
)

NEVER = 10**6
PATTERN = (1, 2, 3, 4, 1, 2, 3, 4, 1, 2, NEVER, NEVER, NEVER, NEVER)
"""Per fault kind: how many leading requests of each call meet the fault (NEVER: it never stops)."""
CONCURRENCY = 8
TYPED_FAILURES = (errors.TransportError, errors.ValidationExhaustedError, errors.OutputTruncatedError)


def expected_outcome(kind: str, failing: int) -> tuple[str, int]:
    """(outcome, requests on the wire) the documented bounds give for one scheduled call."""
    policy = FAST
    match FAULTS[kind].layer:
        case "transport":
            if failing < policy.transport_attempts:
                return "ok", failing + 1
            return "TransportError", policy.transport_attempts
        case "validation":
            if failing <= policy.reasks:
                return "ok", failing + 1
            if kind == "dangling relation endpoint":
                # The answer is right but for one relation: after the re-asks the valid facts
                # are kept and that relation dropped; the call succeeds.
                return "ok", policy.reasks + 1
            return "ValidationExhaustedError", policy.reasks + 1
        case _:
            # Truncation halves the 4-line window (3 requests), then the first half again
            # (5 requests); a one-line window cannot be split: the call fails on its 3rd request.
            return {1: ("ok", 3), 2: ("ok", 5)}.get(failing, ("OutputTruncatedError", 3))


@dataclass
class CallResult:
    kind: str
    failing: int
    plan: CallPlan
    facts: Facts
    snapshots: list[Snapshot] = field(default_factory=list)
    error: BaseException | None = None

    @property
    def outcome(self) -> str:
        return "ok" if self.error is None else type(self.error).__name__

    @property
    def counted_requests(self) -> int:
        spent = sum(s.usage.requests for s in self.snapshots)
        return spent + (self.error.usage.requests if isinstance(self.error, ExtractionError) else 0)

    @property
    def counted_tokens(self) -> tuple[int, int]:
        usages = [s.usage for s in self.snapshots]
        if isinstance(self.error, ExtractionError):
            usages.append(self.error.usage)
        return sum(u.prompt_tokens for u in usages), sum(u.completion_tokens for u in usages)

    @property
    def served_tokens(self) -> tuple[int, int]:
        return self.plan.served_prompt, self.plan.served_completion


async def run_call(
    lab: FaultLab,
    extractor: Extractor,
    kind: str,
    failing: int,
    index: int,
    fault_for: Callable[[int], str | None] | None = None,
) -> CallResult:
    entries, facts = fact_tape(index)
    plan = lab.plan(
        f"{kind}#{index}",
        OracleResponder.from_golds([facts]),
        fault_for or (lambda attempt: kind if attempt < failing else None),
    )
    result = CallResult(kind, failing, plan, facts)
    with lab.calling(plan):
        try:
            async for snapshot in extractor.iter_extract(entries, tape=f"call-{index}"):
                result.snapshots.append(snapshot)
        except Exception as exc:  # anything but a typed failure fails the test below
            result.error = exc
    return result


def expected_keys(facts: Facts) -> tuple[list[str], list[tuple[str, str, str]]]:
    key_of = {e["name"]: entity_key(e["type"], e["name"]) for e in facts["entities"]}
    relations = sorted((key_of[r["source"]], r["type"], key_of[r["target"]]) for r in facts["relations"])
    return sorted(key_of.values()), relations


@pytest.mark.slow
async def test_scheduled_faults_stay_within_bounds_and_count_every_token(
    fake_openai: FakeOpenAIServer, outcomes: Outcomes
) -> None:
    lab = FaultLab(fake_openai)
    semaphore = asyncio.Semaphore(CONCURRENCY)
    async with lab.extractor(FAST) as fast, lab.extractor(TIMEOUT_POLICY) as patient:

        async def one(kind: str, failing: int, index: int) -> CallResult:
            async with semaphore:
                extractor = patient if kind == "read timeout" else fast
                return await run_call(lab, extractor, kind, failing, index)

        schedule = [(kind, failing) for kind in FAULTS for failing in PATTERN]
        results = await asyncio.gather(*(one(k, f, i) for i, (k, f) in enumerate(schedule)))

        def alternate(attempt: int) -> str:  # transport faults between validation faults
            return "tool arguments not JSON" if attempt % 5 == 4 else "500"

        mixed = [
            await run_call(lab, fast, "mixed: 500 x4, bad JSON", NEVER, len(results) + i, alternate)
            for i in range(4)
        ]

    assert len(results) == len(FAULTS) * len(PATTERN) >= 200
    assert fake_openai.errors == []
    problems: list[str] = []
    for r in results:
        outcome, requests = expected_outcome(r.kind, r.failing)
        label = f"{r.kind} (first {r.failing} failing)"
        if r.error is not None and not isinstance(r.error, TYPED_FAILURES):
            problems.append(f"{label}: untyped failure {r.error!r}")
        if (r.outcome, r.plan.sent) != (outcome, requests):
            problems.append(
                f"{label}: {r.outcome} after {r.plan.sent} requests, expected {outcome}/{requests}"
            )
        if r.plan.sent > FAST.max_requests:
            problems.append(f"{label}: {r.plan.sent} requests > max_requests")
        if r.counted_requests != r.plan.sent:
            problems.append(f"{label}: usage counts {r.counted_requests} requests, {r.plan.sent} were sent")
        if r.counted_tokens != r.served_tokens:
            problems.append(f"{label}: usage counts {r.counted_tokens} tokens, {r.served_tokens} were served")
        if r.error is None:
            graph = MemoryGraph.fold(r.snapshots)
            entities, relations = expected_keys(r.facts)
            if [e.key for e in graph.entities()] != entities or [
                x.key for x in graph.relations()
            ] != relations:
                problems.append(f"{label}: extracted {graph.entities()} {graph.relations()}")
            if FAULTS[r.kind].layer == "validation" and r.snapshots[0].usage.reasks != min(
                r.failing, FAST.reasks
            ):
                problems.append(f"{label}: {r.snapshots[0].usage.reasks} re-asks counted")
        if r.kind == "429 + Retry-After":
            gaps = [b - a for a, b in itertools.pairwise(r.plan.received_at)]
            if any(gap < RETRY_AFTER_S * 0.9 for gap in gaps):
                problems.append(f"{label}: Retry-After {RETRY_AFTER_S}s not honoured, gaps {gaps}")
    for m in mixed:
        if not (isinstance(m.error, TransportError) and "request cap" in m.error.reason):
            problems.append(f"mixed call: {m.outcome} {m.error}")
        if m.plan.sent != FAST.max_requests or m.counted_requests != m.plan.sent:
            problems.append(f"mixed call: {m.plan.sent} sent, {m.counted_requests} counted")
    assert problems == []

    table = outcomes.table(
        "endpoint",
        f"{len(results) + len(mixed)} extraction calls under scheduled faults",
        [
            "fault kind",
            "calls",
            "ok",
            "TransportError",
            "ValidationExhaustedError",
            "OutputTruncatedError",
            "other errors",
            "max requests/call",
            "mean requests/call",
            "requests counted / sent",
            "tokens served (prompt+completion)",
            "tokens counted",
        ],
    )
    for kind in [*FAULTS, mixed[0].kind]:
        rows = [r for r in [*results, *mixed] if r.kind == kind]
        outcome_counts = Counter(r.outcome for r in rows)
        sent = [r.plan.sent for r in rows]
        served = [sum(x) for x in zip(*(r.served_tokens for r in rows), strict=True)]
        counted = [sum(x) for x in zip(*(r.counted_tokens for r in rows), strict=True)]
        table.add(
            kind,
            len(rows),
            outcome_counts["ok"],
            outcome_counts["TransportError"],
            outcome_counts["ValidationExhaustedError"],
            outcome_counts["OutputTruncatedError"],
            sum(
                n
                for name, n in outcome_counts.items()
                if name not in ("ok", *(t.__name__ for t in TYPED_FAILURES))
            ),
            max(sent),
            round(sum(sent) / len(sent), 2),
            f"{sum(r.counted_requests for r in rows)} / {sum(sent)}",
            f"{served[0]:,}+{served[1]:,}",
            f"{counted[0]:,}+{counted[1]:,}",
        )
    table.notes.append(
        f"Schedule per kind: first *k* requests of a call fail, k = {', '.join('never stops' if k == NEVER else str(k) for k in PATTERN)}. "
        f"`429 + Retry-After` sends `Retry-After: {RETRY_AFTER_S:g}` (each retry waited at least that long); "
        f"read timeouts hold the answer for 2 s against a {TIMEOUT_POLICY.request_timeout_s:g} s request timeout; "
        "`body not JSON` alternates `application/json` and `text/html` bodies with status 200. "
        "The mixed row alternates four 500s and a tool call that is not JSON: transport retries and re-asks "
        f"together stop at the hard cap of {FAST.max_requests} requests. "
        "A truncated window is split in halves (up to 3 times); the error of a half that still fails carries "
        "the cost of the truncated attempts before it."
    )


async def test_a_failed_split_window_reports_the_cost_of_the_whole_call(
    fake_openai: FakeOpenAIServer,
) -> None:
    """Truncated, split, truncated again, split, truncated once more: the error counts all three requests."""
    lab = FaultLab(fake_openai)
    async with lab.extractor(FAST) as extractor:
        result = await run_call(lab, extractor, "finish_reason length", NEVER, 0)
    assert isinstance(result.error, OutputTruncatedError) and result.plan.sent == 3
    assert result.counted_requests == result.plan.sent
    assert result.counted_tokens == result.served_tokens


# -- convergence ---------------------------------------------------------------------------------

FAULT_PROBABILITY = 0.15
BURST_PROBABILITY = 0.9
BURST_LENGTHS = (2, 5, 8, NEVER, NEVER)
FAULT_ROUNDS = 3
SEED = 20260105


@dataclass
class Tape:
    name: str
    entries: list[Entry]
    oracle: OracleResponder

    @property
    def last_id(self) -> int:
        return max(e.id for e in self.entries)


def convergence_tapes() -> list[Tape]:
    tapes = [
        Tape(f.id, f.entries(), OracleResponder.from_golds([f.gold]))
        for f in load_fixtures(REPO / "evals" / "fixtures", tags=["quick"])
    ]
    for t in range(4):
        entries: list[Entry] = []
        facts: list[Facts] = []
        for turn in range(10):
            more, fact = fact_tape(40 * t + turn, first_id=len(entries) + 1)
            entries.extend(more)
            facts.append(fact)
        tapes.append(Tape(f"synthetic-{t}", entries, OracleResponder.from_golds(facts)))
    return tapes


@dataclass
class Campaign:
    rounds: int = 0
    partial: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)


async def extract_until_done(
    lab: FaultLab,
    extractor: Extractor,
    store: SnapshotStore,
    tapes: list[Tape],
    fault_for: Callable[[str, int, int], str | None],
    max_rounds: int,
) -> Campaign:
    """Extract every tape, re-running failed ones from the store's watermark, round after round."""
    campaign = Campaign()
    done: set[str] = set()

    async def one(tape: Tape, round_number: int) -> None:
        graph, _ = await store.graph(tape.name, extractor.prompt.ontology)  # what a restarted plugin sees
        plan = lab.plan(
            f"{tape.name}@{round_number}",
            tape.oracle,
            lambda attempt: fault_for(tape.name, round_number, attempt),
        )
        stored = 0
        with lab.calling(plan):
            try:
                async for snapshot in extractor.iter_extract(tape.entries, tape=tape.name, memory=graph):
                    await store.append(snapshot)
                    graph.add(snapshot)
                    stored += 1
            except ExtractionError as exc:
                campaign.failures[type(exc).__name__] += 1
                campaign.partial += stored > 0
        campaign.faults.update(plan.faults_met)
        if graph.watermark >= tape.last_id:
            done.add(tape.name)

    while len(done) < len(tapes) and campaign.rounds < max_rounds:
        pending = [t for t in tapes if t.name not in done]
        await asyncio.gather(*(one(t, campaign.rounds) for t in pending))
        campaign.rounds += 1
    assert len(done) == len(tapes), (
        f"not converged after {campaign.rounds} rounds: { {t.name for t in tapes} - done }"
    )
    return campaign


def random_faults(tapes: list[Tape], tape: str, round_number: int, attempt: int) -> str | None:
    """A burst of one fault kind early in the run (often lasting to its end), plus stray faults.

    Burst kinds go round-robin over tapes and rounds, so every kind gets its turn.
    """
    if round_number >= FAULT_ROUNDS:
        return None  # the faults have stopped
    run = random.Random(f"{SEED}|{tape}|{round_number}")
    if run.random() < BURST_PROBABILITY:
        slot = [t.name for t in tapes].index(tape) + len(tapes) * round_number
        kind = list(FAULTS)[slot % len(FAULTS)]
        start, length = run.randint(0, 2), run.choice(BURST_LENGTHS)
        if start <= attempt < start + length:
            return kind
    stray = random.Random(f"{SEED}|{tape}|{round_number}|{attempt}")
    return stray.choice(list(FAULTS)) if stray.random() < FAULT_PROBABILITY else None


@pytest.mark.slow
async def test_after_the_faults_stop_every_tape_converges_to_the_fault_free_graph(
    fake_openai: FakeOpenAIServer, tmp_path: Path, outcomes: Outcomes
) -> None:
    tapes = convergence_tapes()
    lab = FaultLab(fake_openai)
    clean_store = SnapshotStore(FileTapeStore(tmp_path / "clean"), fsync=False)
    faulted_store = SnapshotStore(FileTapeStore(tmp_path / "faulted"), fsync=False)
    async with lab.extractor(TIMEOUT_POLICY, chunk_tokens=120) as extractor:
        clean = await extract_until_done(lab, extractor, clean_store, tapes, lambda *_: None, max_rounds=1)
        faulted = await extract_until_done(
            lab, extractor, faulted_store, tapes, partial(random_faults, tapes), max_rounds=FAULT_ROUNDS + 1
        )
    assert clean.rounds == 1 and not clean.failures and not clean.faults
    # The faults did bite: runs failed, some after storing part of their windows, most kinds met.
    assert sum(faulted.failures.values()) >= 5 and faulted.partial >= 1 and len(faulted.faults) >= 10
    ontology = extractor.prompt.ontology
    equal = 0
    clean_snapshots = faulted_snapshots = 0
    for tape in tapes:
        expected, _ = await clean_store.graph(tape.name, ontology)
        got, _ = await faulted_store.graph(tape.name, ontology)
        assert len(expected) > 0 or tape.name.startswith("smalltalk")
        assert repr(got.entities()) == repr(expected.entities()), tape.name
        assert repr(got.relations()) == repr(expected.relations()), tape.name
        equal += 1
        stored, report = await faulted_store.load(tape.name)
        assert report.issues == []
        ranges = sorted((s.first_entry_id, s.last_entry_id) for s in stored)
        assert len({s.id for s in stored}) == len(stored), f"{tape.name}: a snapshot stored twice"
        assert ranges[0][0] == min(e.id for e in tape.entries) and ranges[-1][1] == tape.last_id
        gaps_or_overlaps = [(a, b) for a, b in itertools.pairwise(ranges) if b[0] != a[1] + 1]
        assert gaps_or_overlaps == [], f"{tape.name}: entries extracted twice or never: {gaps_or_overlaps}"
        faulted_snapshots += len(stored)
        clean_snapshots += len((await clean_store.load(tape.name))[0])

    table = outcomes.table(
        "convergence",
        "Fault-free run against a run under random faults",
        ["", "fault-free", "under faults"],
    )
    table.add("tapes (6 quick eval fixtures + 4 synthetic)", len(tapes), len(tapes))
    table.add("entries", sum(len(t.entries) for t in tapes), sum(len(t.entries) for t in tapes))
    table.add(
        "rounds with faults (burst per run / stray fault per request)",
        "0",
        f"{FAULT_ROUNDS} ({BURST_PROBABILITY} / {FAULT_PROBABILITY})",
    )
    table.add("faults met", 0, sum(faulted.faults.values()))
    table.add(
        "failed extraction runs",
        0,
        ", ".join(f"{n} {name}" for name, n in sorted(faulted.failures.items())) or "0",
    )
    table.add("failed runs that had stored some windows first", 0, faulted.partial)
    table.add("rounds until every tape was extracted", clean.rounds, faulted.rounds)
    table.add("snapshots stored", clean_snapshots, faulted_snapshots)
    table.add("entries extracted twice or never", 0, 0)
    table.add("graphs equal to the fault-free graph", "-", f"{equal}/{len(tapes)}")
    table.notes.append(
        "Faults met, by kind: "
        + ", ".join(f"{kind} {n}" for kind, n in sorted(faulted.faults.items()))
        + "."
        + (
            " More snapshots under faults: a truncated window is stored as halves."
            if faulted_snapshots > clean_snapshots
            else ""
        )
    )


async def test_a_window_with_more_facts_than_the_schema_allows_is_still_extracted(
    fake_openai: FakeOpenAIServer,
) -> None:
    """More facts than one answer may hold (30 entities, 40 relations): the window is split, not abandoned."""
    entries: list[Entry] = []
    facts: list[Facts] = []
    for turn in range(21):  # 21 people, 7 organisations, 7 projects, 42 relations: ~1,000 tokens
        more, fact = fact_tape(turn, first_id=len(entries) + 1)
        entries.extend(more)
        facts.append(fact)
    lab = FaultLab(fake_openai)
    plan = lab.plan("dense", OracleResponder.from_golds(facts), lambda attempt: None)
    async with lab.extractor(FAST) as extractor:
        with lab.calling(plan):
            snapshots = await extractor.extract(entries, tape="dense")
    graph = MemoryGraph.fold(snapshots)
    assert len(graph) == 35 and len(graph.relations()) == 42
