"""``eval qa``: what the agent receives for each fixture question, under each condition, scored."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.table import Table

import bub_semantic_memory.cli._options as opt
from bub_semantic_memory.cli._common import fail, handle_errors, print_table, stderr, stdout

__all__ = ["qa"]


@handle_errors
def qa(
    fixtures: Path = opt.FIXTURES,
    tags: list[str] = opt.TAGS,
    ids: list[str] = typer.Option([], "--fixture", help="Only this fixture id (repeatable)."),
    memory: Path | None = typer.Option(
        None,
        "--memory",
        help="An eval report (report.json): its run's predictions are the memory (else no memory condition).",
    ),
    run: str | None = typer.Option(
        None,
        "--run",
        help="The run of --memory to use, e.g. extract@9, folded with that version's ontology "
        "(default: its last run, folded with the promoted version's).",
    ),
    conditions: list[str] = typer.Option(
        [],
        "--condition",
        help="Only this condition (repeatable): none, memory, memory-no-lines (the note without the "
        "transcript lines it quotes), memory-no-facts (the memory without its stated facts; both only "
        "when asked for), gold-memory, tape-search, bm25, full.",
    ),
    budget: int | None = typer.Option(
        None,
        "--budget",
        min=50,
        help="Tokens per context (default: the plugin's memory budget).",
        show_default=False,
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        "-m",
        help="An answering model (a model at --base-url, or local): adds answer accuracy.",
        show_default=False,
    ),
    base_url: str | None = opt.BASE_URL,
    api_key: str | None = opt.API_KEY,
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, help="Questions answered at once."),
    distractors: int = typer.Option(
        0, "--distractors", min=0, help="Made-up entities planted in every memory beside the fixture's own."
    ),
    passage_share: float | None = typer.Option(
        None,
        "--passage-share",
        min=0.0,
        max=1.0,
        help="Share of the budget a memory block keeps for the transcript lines that match the "
        "question best (default: the plugin's).",
    ),
    cache_dir: Path = typer.Option(Path("evals/qa-cache"), "--cache-dir", help="Where answers are cached."),
    replay: bool = typer.Option(
        False,
        "--replay",
        help="Read --model's answers from --cache-dir only, opening no model (a fresh clone needs no "
        "model for the committed answers); a context with no cached answer is counted, not scored.",
    ),
    out: Path | None = typer.Option(
        Path("reports/qa"), "--out", "-o", help="Where qa.json, qa.md and qa.html go."
    ),
    locomo: Path | None = opt.LOCOMO,
    split: str | None = opt.SPLIT,
    samples: list[str] = opt.SAMPLES,
    sessions: int | None = opt.SESSIONS,
) -> None:
    """Score the context an agent receives for each fixture question, under each condition.

    Context recall (the answer is in the context) needs no model; with --model the model also
    answers, judged by a fixed rule. Answers are cached in --cache-dir.
    """
    from bub_semantic_memory.agent import MemoryPolicy
    from bub_semantic_memory.evals.qa import (
        ALL_CONDITIONS,
        CONDITIONS,
        MEMORY_WITHOUT_FACTS,
        MEMORY_WITHOUT_LINES,
        QAOptions,
        QuestionProgress,
        memory_from_report,
        run_qa,
    )
    from bub_semantic_memory.evals.reports import qa_columns, write_qa_report
    from bub_semantic_memory.extraction import PromptLibrary

    chosen = tuple(conditions) or tuple(c for c in CONDITIONS if c != "memory" or memory is not None)
    unknown = [c for c in chosen if c not in ALL_CONDITIONS]
    if unknown:
        fail(f"unknown condition {', '.join(unknown)}; choose from: {', '.join(ALL_CONDITIONS)}", 2)
    needs_memory = [c for c in chosen if c in ("memory", MEMORY_WITHOUT_FACTS, MEMORY_WITHOUT_LINES)]
    if needs_memory and memory is None:
        fail(
            f"the {needs_memory[0]} condition needs --memory REPORT.json (an eval report: its snapshots or "
            "predictions are the memory)",
            2,
        )
    selected = opt.load_selected(
        fixtures, tags, ids, locomo=locomo, split=split, samples=samples, sessions=sessions
    )
    selected = [f for f in selected if f.gold.questions]
    if not selected:
        fail("no selected fixture has questions")
    # memory is folded with the ontology of the version that extracted it (named by --run)
    ontology = PromptLibrary().load(run if memory is not None and run else "extract").ontology
    snapshots, source = (
        memory_from_report(memory, run, selected, ontology) if memory is not None else ({}, "")
    )
    if replay and model is None:
        fail("--replay needs --model: the model whose cached answers to read", 2)
    backend = None
    context_tokens = None
    if model is not None and replay:
        context_tokens = _known_context(model)
    if model is not None and not replay:
        config = opt.extractor_config(
            model=model, base_url=base_url, api_key=api_key, mode="tools", prompts_dir=None
        )
        backend = config.open_backend()
        context_tokens = backend.traits.context_tokens
    options = QAOptions(
        ontology=ontology,
        budget=budget or MemoryPolicy().budget,
        conditions=chosen,
        memory=snapshots,
        memory_source=source,
        answer_model=backend,
        answer_model_name=model or "",
        answer_context_tokens=context_tokens,
        cache_dir=cache_dir,
        replay=replay,
        concurrency=concurrency,
        distractors=distractors,
        passage_share=passage_share,
        progress=QuestionProgress(stderr),
    )

    async def go() -> object:
        try:
            return await run_qa(selected, options)
        finally:
            if backend is not None:
                await backend.aclose()

    report = asyncio.run(go())
    from bub_semantic_memory.evals.qa import QAReport

    assert isinstance(report, QAReport)
    table = Table(title=f"Memory QA: {len(report.items)} questions, {report.budget} tokens per context")
    table.add_column("condition")
    columns = qa_columns(report)
    for name, _ in columns:
        table.add_column(name, justify="right")
    for condition in report.conditions:
        table.add_row(condition, *(cell(condition) for _, cell in columns))
    print_table(stdout, table)
    if out is not None:
        paths = write_qa_report(report, out)
        stderr.print("Wrote " + ", ".join(str(p) for p in paths.values()), markup=False)
    missing = {condition: n for condition in report.conditions if (n := report.unanswered(condition))}
    if missing:  # as in 'eval run --replay': what the cache lacks is a failure, not a silent gap
        contexts = sum(len(item.outcomes) for item in report.items)
        per_condition = ", ".join(f"{condition} {n}" for condition, n in missing.items())
        fail(
            f"--replay: {sum(missing.values())} of {contexts} context(s) had no cached answer of {model} "
            f"and are not scored ({per_condition})"
        )


def _known_context(model: str) -> int | None:
    """A packaged local model's context size, known without opening it (None otherwise)."""
    from bub_semantic_memory.backends import REGISTRY, parse_local_spec

    local = parse_local_spec(model)
    return REGISTRY[local.name].context_tokens if local is not None and local.name else None
