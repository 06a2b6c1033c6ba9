"""6. Local model: the default Qwen2.5-Coder 1.5B on the CPU, a cold prompt against a warm prefix.

``--model local`` runs Qwen2.5-Coder 1.5B Instruct (Q4_K_M) through llama-cpp-python in
this process. Prompt processing dominates a request on a CPU, and llama.cpp re-evaluates
only what follows the longest prefix it already holds, so the prompts keep their static
part (instructions, types, example) first. Measured side by side in one run:

* the same extraction request (the promoted prompt's entity step for one quick fixture,
  with its grammar) answered **cold** (the backend reset first: the whole prompt is
  processed) and **warm** (reset, then another fixture's request first: only the shared
  static prefix is held), per fixture; the ratio of the medians is the speed-up;
* prompt-processing and generation tokens per second, from llama.cpp's own counters;
* the quick set end to end with the promoted prompt (``run_eval``, concurrency 1, cache off);
* what a conversation costs at the plugin's cadence (the first 150 entries, 30 user turns, of
  ``long-tape-friends-and-hobbies``, replayed turn by turn through the plugin's service), with
  the six-turn cadence (the local class's before, an endpoint's still) and the local class's own,
  a window's worth (1,500 tokens, turns uncounted): prompt tokens sent
  per tape token, tokens llama.cpp evaluated (sent less the KV prefix it reused), completion
  tokens per stored item, and wall time against the floor (the tape's tokens once at the
  measured prompt speed plus the completion at the measured generation speed).

Skipped with a note when ``llama_cpp`` is not importable, and in ``--quick`` runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import statistics
import time
from typing import Any

from rich.console import Console

from benchmarks.common import FIXTURES, BenchConfig, Section, Table, temp_dir
from bub_semantic_memory.agent import MemoryPolicy
from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.evals.extraction import RunOptions, run_eval
from bub_semantic_memory.extraction._candidates import candidate_names
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.extraction._responses import Constraints, build_entities_model
from bub_semantic_memory.extraction._window import plan_windows
from bub_semantic_memory.tape import render_transcript

__all__ = ["run"]

PAIRS = 4
CONVERSATION = "long-tape-friends-and-hobbies"
CONVERSATION_ENTRIES = 150
SIX_TURNS = MemoryPolicy(every_turns=6, min_new_tokens=1200)
"""An endpoint's default cadence, the local class's before issue 48."""
WINDOW = MemoryPolicy(every_turns=10_000, min_new_tokens=1500)
"""A window's worth of new transcript, turns uncounted: the local class's default since issue 48."""


def _perf(backend: Any) -> tuple[float, int, float, int]:
    """llama.cpp's counters since the last reset: prompt ms, prompt tokens, generation ms, tokens."""
    llama_cpp: Any = importlib.import_module("llama_cpp")
    data = llama_cpp.llama_perf_context(backend._llm._ctx.ctx)
    return data.t_p_eval_ms, data.n_p_eval, data.t_eval_ms, data.n_eval


def _reset_perf(backend: Any) -> None:
    llama_cpp: Any = importlib.import_module("llama_cpp")
    llama_cpp.llama_perf_context_reset(backend._llm._ctx.ctx)


def _entity_requests(library: PromptLibrary, prompt_ref: str) -> list[dict[str, Any]]:
    """The entity-step request of each quick fixture's first window, as the extractor shapes it."""
    prompt = library.load(prompt_ref)
    requests = []
    for fixture in load_fixtures(FIXTURES, tags=["quick"]):
        window = plan_windows(fixture.entries(), watermark=0, chunk_tokens=1500).windows[0]
        names = candidate_names(window.all_lines())
        turns = tuple(sorted({*window.context.entry_ids, *window.lines.entry_ids}))
        model = build_entities_model(
            prompt.ontology, constraints=Constraints(turns=turns, names=tuple(names) if names else None)
        )
        messages = prompt.render(
            transcript=window.lines.text(),
            context=window.context.text(),
            known_entities=[],
            first_entry_id=window.first_entry_id,
            last_entry_id=window.last_entry_id,
            step="entities",
            entities=[],
        )
        tool = {"type": "function", "function": {"name": "Entities", "parameters": model.model_json_schema()}}
        requests.append(
            {
                "messages": messages,
                "tools": [tool],
                "tool_choice": {"type": "function", "function": {"name": "Entities"}},
                "max_tokens": 512,
            }
        )
    return requests


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


async def _timed(backend: Any, request: dict[str, Any]) -> tuple[float, tuple[float, int, float, int]]:
    _reset_perf(backend)
    start = time.perf_counter()
    await backend.create(**request)
    return time.perf_counter() - start, _perf(backend)


async def _conversation(backend: Any, prompt: str, policy: MemoryPolicy) -> dict[str, Any]:
    """The conversation replayed through the plugin's service at ``policy``'s cadence, and its cost."""
    from bub_semantic_memory.evals.extraction._replay import replay_as_plugin
    from bub_semantic_memory.extraction import Extractor
    from bub_semantic_memory.extraction._config import ExtractorConfig

    [fixture] = load_fixtures(FIXTURES, ids=[CONVERSATION])
    entries = fixture.entries()[:CONVERSATION_ENTRIES]
    extractor = Extractor(ExtractorConfig(model="local", prompt=prompt), backend=backend)
    backend.reset()  # both cadences start from an empty KV cache
    began = time.perf_counter()
    replayed = await replay_as_plugin(
        entries, extractor, extractor.prompt.ontology, tape=CONVERSATION, policy=policy
    )
    wall = time.perf_counter() - began
    usage = [s.usage for s in replayed.snapshots]
    tape_tokens = len(backend._llm.tokenize(render_transcript(entries).text().encode("utf-8"), add_bos=False))
    items = sum(len(s.entities) + len(s.relations) + len(s.facts) for s in replayed.snapshots)
    return {
        "windows": len(replayed.snapshots),
        "requests": sum(u.requests for u in usage),
        "sent": sum(u.prompt_tokens for u in usage),
        "evaluated": sum(u.prompt_tokens - u.cached_tokens for u in usage),
        "completion": sum(u.completion_tokens for u in usage),
        "tape": tape_tokens,
        "entities": sum(len(s.entities) for s in replayed.snapshots),
        "relations": sum(len(s.relations) for s in replayed.snapshots),
        "items": items,
        "wall": wall,
        "failures": replayed.failures,
    }


def _conversation_rows(
    section: Section,
    before: dict[str, Any],
    after: dict[str, Any],
    prompt_rate: float,
    generation_rate: float,
) -> Table:
    """Rows and a table: the conversation's cost at the cadence before and now, side by side."""
    table = Table(
        f"{CONVERSATION}, first {CONVERSATION_ENTRIES} entries ({after['tape']:,} tape tokens), "
        "at the plugin's cadence",
        [
            "cadence",
            "windows",
            "requests",
            "sent / tape",
            "evaluated / tape",
            "completion / item",
            "entities, relations",
            "wall / floor",
        ],
    )
    for name, run in (("six turns (before)", before), ("a window's worth (now)", after)):
        floor = run["tape"] / prompt_rate + run["completion"] / generation_rate
        run["floor"] = floor
        table.rows.append(
            [
                name,
                run["windows"],
                run["requests"],
                f"{run['sent'] / run['tape']:.2f}",
                f"{run['evaluated'] / run['tape']:.2f}",
                f"{run['completion'] / max(run['items'], 1):.1f}",
                f"{run['entities']}, {run['relations']}",
                f"{run['wall'] / floor:.2f} ({run['wall']:.0f} s / {floor:.0f} s)",
            ]
        )
    ratio = before["evaluated"] / max(after["evaluated"], 1)
    section.row(
        "local model: tokens evaluated for a conversation, six-turn cadence / a window's worth",
        f"{ratio:.2f}×",
        "",
        None,  # fewer tokens are no gain without the memory's quality, which the fixtures decide
        f"{before['evaluated']:,} / {after['evaluated']:,} tokens evaluated of {before['sent']:,} / "
        f"{after['sent']:,} sent, for {after['tape']:,} tape tokens; relations {before['relations']} / "
        f"{after['relations']}, failed extractions {before['failures']} / {after['failures']}",
        kind="ratio",
    )
    speed = before["wall"] / max(after["wall"], 1e-9)
    section.row(
        "local model: wall time for a conversation, six-turn cadence / a window's worth",
        f"{speed:.2f}×",
        "",
        None,
        f"{before['wall']:.0f} s / {after['wall']:.0f} s; floor {after['floor']:.0f} s",
        kind="ratio",
    )
    return table


async def run(config: BenchConfig) -> Section:
    prompt_ref = config.library().manifest().promoted["extract"]["local"]
    promoted = f"extract@{prompt_ref.version}"
    section = Section(
        6,
        "Local model",
        method=(
            f"Qwen2.5-Coder 1.5B Instruct Q4_K_M in process (llama.cpp), prompt {promoted}. Cold and "
            f"warm runs of the same entity-step request for {PAIRS} quick fixtures, in one run; then the "
            "quick set end to end (run_eval, concurrency 1, cache off); then a conversation of "
            f"{CONVERSATION_ENTRIES} entries replayed through the plugin's service, six-turn cadence against "
            "a window's worth. Model loaded before timing."
        ),
    )
    if config.quick:
        section.skipped = "not part of --quick runs (the local model takes seconds per call)"
        return section
    if importlib.util.find_spec("llama_cpp") is None:
        section.skipped = "llama_cpp is not importable (install the 'local' extra: make setup-local)"
        return section

    from bub_semantic_memory.backends._local import LocalBackend
    from bub_semantic_memory.extraction._config import ExtractorConfig

    backend = ExtractorConfig(model="local").open_backend()
    assert isinstance(backend, LocalBackend)
    requests = _entity_requests(config.library(), promoted)[:PAIRS]
    cold: list[float] = []
    warm: list[float] = []
    table = Table(
        f"cold against warm prefix, {backend.n_threads} threads",
        ["fixture #", "prompt tokens", "cold s", "warm s", "ratio", "tokens evaluated warm"],
    )
    prompt_rate: list[float] = []
    generation_rate: list[float] = []
    try:
        start = time.perf_counter()
        await backend.create(messages=[{"role": "user", "content": "Hi"}], max_tokens=1)
        load_s = time.perf_counter() - start
        for index, request in enumerate(requests):
            other = requests[(index + 1) % len(requests)]
            backend.reset()
            cold_s, (p_ms, p_n, g_ms, g_n) = await _timed(backend, request)
            backend.reset()
            await backend.create(**other)  # holds the shared static prefix, not this request's tail
            warm_s, (_, warm_n, _, _) = await _timed(backend, request)
            cold.append(cold_s)
            warm.append(warm_s)
            if p_ms:
                prompt_rate.append(p_n / (p_ms / 1000))
            if g_ms:
                generation_rate.append(g_n / (g_ms / 1000))
            table.rows.append(
                [index + 1, p_n, f"{cold_s:.1f}", f"{warm_s:.1f}", f"{cold_s / warm_s:.2f}", warm_n]
            )
        with temp_dir("local-cache") as cache:
            options = RunOptions(
                ExtractorConfig(model="local"),
                backend=backend,
                concurrency=1,
                cache="off",
                cache_dir=cache,
                progress=False,
            )
            fixtures = load_fixtures(FIXTURES, tags=["quick"])
            began = time.perf_counter()
            report = await run_eval(
                fixtures, [config.library().load(promoted)], options, console=Console(stderr=True, quiet=True)
            )
            quick_s = time.perf_counter() - began
        before = await _conversation(backend, promoted, SIX_TURNS)
        after = await _conversation(backend, promoted, WINDOW)
    finally:
        await backend.aclose()

    ratio = statistics.median(cold) / statistics.median(warm)
    section.row(
        "local model: cold prompt / warm prefix, per request (median)",
        f"{ratio:.2f}×",
        "≥ 2×",
        ratio >= 2.0,
        f"cold {statistics.median(cold):.1f} s, warm {statistics.median(warm):.1f} s over "
        f"{len(cold)} requests; model load {load_s:.1f} s",
        kind="ratio",
    )
    section.row(
        "local model: prompt processing / generation speed",
        f"{statistics.median(prompt_rate):.0f} / {statistics.median(generation_rate):.1f} tok/s",
        "",
        None,
        "llama.cpp's counters on the cold requests (generation under the schema's grammar)",
        kind="time",
    )
    metrics = report.runs[0].metrics
    section.row(
        f"local model: quick set with {promoted}",
        f"{quick_s / 60:.1f} min",
        "≤ 6 min",
        quick_s <= 360,
        f"{metrics.fixtures} fixtures, {metrics.calls} calls, {metrics.requests_made} requests; "
        f"entity F1 {_score(metrics.entities.f1)}, success {metrics.success_rate:.0%}",
        kind="time",
    )
    section.tables.append(table)
    section.tables.append(
        _conversation_rows(
            section,
            before,
            after,
            prompt_rate=statistics.median(prompt_rate),
            generation_rate=statistics.median(generation_rate),
        )
    )
    section.notes.append(
        "The conversation's two cadences run the same prompt on the same loaded model, one after the "
        "other, each from an empty KV cache; the floor reads each tape token once at the prompt speed "
        "measured above and writes the same completion at the generation speed measured above."
    )
    section.notes.append(
        "Both sides of each ratio are the same request on the same loaded model, one after the other; the "
        "machine's 2 cores may be shared with other processes, so absolute seconds are indicative only."
    )
    return section
