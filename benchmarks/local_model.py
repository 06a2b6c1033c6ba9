"""6. Local model: seconds per extraction call and per fixture with the in-process llama.cpp backend.

``--model local`` runs the packaged Gemma 3 270M (Q4_K_M) through llama-cpp-python in this
process. It is slow on small machines, so only a few calls are measured: the 3 smallest
fixtures tagged ``quick`` with prompt ``extract@1``, concurrency 1, cache off, through the
same :func:`run_eval` the CLI uses, one fixture at a time (after 2 fixtures no new one is
started once 4 minutes have passed, so a busy machine cannot stretch the run without bound).
The model is loaded (and answers a 1-token request) before timing, so load time is reported
separately. Skipped with a note when ``llama_cpp``
is not importable, and in ``--quick`` runs.
"""

from __future__ import annotations

import importlib.util
import time

from rich.console import Console

from benchmarks.common import FIXTURES, BenchConfig, Section, Table, temp_dir
from bub_semantic_memory.evals.dataset import load_fixtures
from bub_semantic_memory.evals.report import FixtureResult
from bub_semantic_memory.evals.runner import RunOptions, run_eval
from bub_semantic_memory.models import Usage
from bub_semantic_memory.prompts import PromptLibrary

__all__ = ["run"]

FIXTURE_COUNT = 3
MIN_FIXTURES = 2
TIME_BUDGET_S = 240.0
PROMPT = "extract@1"


async def run(config: BenchConfig) -> Section:
    section = Section(
        6,
        "Local model",
        method=(
            f"`run_eval` with `--model local` (llama.cpp, packaged Gemma 3 270M Q4_K_M) on the "
            f"{FIXTURE_COUNT} smallest fixtures tagged `quick`, prompt {PROMPT}, concurrency 1, cache off; "
            "model loaded before timing."
        ),
    )
    if config.quick:
        section.skipped = "not part of --quick runs (the local model takes seconds per call)"
        return section
    if importlib.util.find_spec("llama_cpp") is None:
        section.skipped = "llama_cpp is not importable (install the 'local' extra: make setup-local)"
        return section

    from bub_semantic_memory.local import LocalBackend
    from bub_semantic_memory.local_models import model_note

    fixtures = sorted(load_fixtures(FIXTURES, tags=["quick"]), key=lambda f: f.tape_path.stat().st_size)
    backend = LocalBackend.from_model_spec("local")
    prompt = PromptLibrary().load(PROMPT)
    results: list[FixtureResult] = []
    walls: list[float] = []
    try:
        start = time.perf_counter()
        await backend.create(messages=[{"role": "user", "content": "Hi"}], max_tokens=1)
        load_s = time.perf_counter() - start
        with temp_dir("local-cache") as cache:
            options = RunOptions(
                model="local", backend=backend, concurrency=1, cache="off", cache_dir=cache, progress=False
            )
            began = time.perf_counter()
            for fixture in fixtures[:FIXTURE_COUNT]:
                if len(results) >= MIN_FIXTURES and time.perf_counter() - began > TIME_BUDGET_S:
                    break  # enough calls measured; the model is slow on a busy machine
                start = time.perf_counter()
                report = await run_eval(
                    [fixture], [prompt], options, console=Console(stderr=True, quiet=True)
                )
                walls.append(time.perf_counter() - start)
                results.extend(report.runs[0].fixtures)
    finally:
        await backend.aclose()

    usage = sum((r.usage for r in results), Usage())
    calls = sum(r.calls for r in results)
    table = Table(
        f"{model_note('local')}, {PROMPT}, {backend.n_threads} threads",
        [
            "fixture",
            "tape bytes",
            "calls",
            "requests",
            "seconds",
            "seconds / request",
            "ok",
            "entity F1",
            "error",
        ],
    )
    for r, wall in zip(results, walls, strict=True):
        fixture = next(f for f in fixtures if f.id == r.fixture)
        table.rows.append(
            [
                r.fixture,
                f"{fixture.tape_path.stat().st_size:,}",
                r.calls,
                r.usage.requests,
                f"{wall:.1f}",
                f"{r.usage.latency_s / r.usage.requests:.1f}" if r.usage.requests else "—",
                "yes" if r.ok else "no",
                "–" if r.entities.f1 is None else f"{r.entities.f1:.2f}",
                (r.error_type or "")[:40],
            ]
        )
    per_request = usage.latency_s / usage.requests if usage.requests else 0.0
    per_call = usage.latency_s / calls if calls else 0.0
    succeeded = sum(1 for r in results if r.ok)
    section.row(
        "local model: seconds per extraction call",
        f"{per_call:.1f} s",
        "",
        None,
        f"{calls} calls over {len(results)} fixtures; {usage.requests} model requests (re-asks included), "
        f"{per_request:.1f} s each; {usage.prompt_tokens:,} prompt tokens read and "
        f"{usage.completion_tokens:,} completion tokens written in all; "
        f"model load {load_s:.1f} s, once per process",
        kind="time",
    )
    section.row(
        "local model: seconds per fixture",
        f"{sum(walls) / len(walls):.1f} s" if walls else "—",
        "",
        None,
        f"{len(results)} fixtures in {sum(walls):.1f} s; {succeeded} of {len(results)} extracted "
        "without error (a 270M smoke-test model: not a quality figure)",
        kind="time",
    )
    section.tables.append(table)
    section.notes.append(
        "llama.cpp decodes under a JSON-schema grammar on the CPU threads of this machine, which other "
        "processes may share; treat these times as order-of-magnitude figures."
    )
    return section
