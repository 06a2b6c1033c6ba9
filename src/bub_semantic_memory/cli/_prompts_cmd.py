"""``prompts ...``: list, show, start, diff, release, verify and promote prompt versions."""

from __future__ import annotations

import asyncio
import difflib
import json
import re
from pathlib import Path

import typer
import yaml
from rich.table import Table
from rich.text import Text

import bub_semantic_memory.cli._options as opt
from bub_semantic_memory.backends import MODEL_CLASSES
from bub_semantic_memory.cli._app import new_app
from bub_semantic_memory.cli._common import fail, handle_errors, print_table, stderr, stdout
from bub_semantic_memory.extraction import (
    PromptLibrary,
    PromptTemplate,
    bundled_prompts_dir,
    writable_prompts_dir,
)

app = new_app("Versioned prompt files: list, show, new, diff, release, verify, promote.")


def _library(prompts_dir: Path | None) -> PromptLibrary:
    return PromptLibrary(prompts_dir)


def writable_library(prompts_dir: Path | None) -> PromptLibrary:
    """The library a writing command writes to (never the installed package; see
    :func:`~bub_semantic_memory.extraction._prompts.writable_prompts_dir`),
    named on stderr when not asked for."""
    root = writable_prompts_dir(prompts_dir)
    if prompts_dir is None and root != bundled_prompts_dir():
        stderr.print(
            f"Writing to {root} (set BUB_SEMANTIC_MEMORY_PROMPTS_DIR={root} for the plugin to read it).",
            markup=False,
        )
    return PromptLibrary(root)


@app.command("list")
@handle_errors
def list_prompts(
    prompts_dir: Path | None = opt.PROMPTS_DIR,
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array (with whole descriptions)."),
) -> None:
    """List every prompt version: its status (promoted for which model class, released, draft),
    sha256 and the first sentence of its description ('prompts show' has the rest)."""
    library = _library(prompts_dir)
    manifest = library.manifest()
    rows = []
    for name in library.names():
        promoted = manifest.promoted.get(name, {})
        for version in library.versions(name):
            template = PromptTemplate.from_file(library.root / name / f"v{version}.md")
            ref = str(template)
            classes = [c for c in MODEL_CLASSES if c in promoted and promoted[c].version == version]
            status = "promoted" if classes else ("released" if ref in manifest.released else "draft")
            rows.append(
                {
                    "prompt": ref,
                    "status": status,
                    "promoted_for": classes,
                    "strategy": template.strategy,
                    "sha256": template.sha256,
                    "description": template.description,
                }
            )
    if as_json:
        stdout.print(json.dumps(rows, indent=2), markup=False)
        return
    # The folder on a line of its own, folded: a table's title is never wider than the table.
    stdout.print(Text(f"Prompt versions in {library.root}", overflow="fold"), soft_wrap=False)
    table = Table(title="Prompt versions")
    table.add_column("Version", no_wrap=True)
    # Only the description wraps: rich shares a narrow width between two wrapping columns
    # without regard to their longest words, and would cut one.
    table.add_column("Status", no_wrap=True)
    table.add_column("sha256", no_wrap=True)
    table.add_column("Description")
    for row in rows:
        promoted_for = ", ".join(row["promoted_for"])
        shown = f"promoted ({promoted_for})" if promoted_for else str(row["status"])
        summary = _first_sentence(str(row["description"]))
        table.add_row(*(Text(str(cell)) for cell in (row["prompt"], shown, str(row["sha256"])[:12], summary)))
    print_table(stdout, table)


def _first_sentence(text: str) -> str:
    """Up to the first full stop that ends a sentence (the list's summary of a description)."""
    match = re.search(r"\.(\s|$)", text)
    return text[: match.start() + 1] if match else text


@app.command("show")
@handle_errors
def show_prompt(
    ref: str = typer.Argument(..., help="e.g. extract@2, extract@latest, extract@promoted"),
    prompts_dir: Path | None = opt.PROMPTS_DIR,
) -> None:
    """Print a prompt version's metadata and template."""
    library = _library(prompts_dir)
    template = library.load(ref)
    stdout.print(f"# {template}  sha256 {template.sha256}", markup=False)
    stdout.print(f"# {template.path}", markup=False)
    stdout.print(template.path.read_text(encoding="utf-8"), markup=False)


@app.command("new")
@handle_errors
def new_prompt(
    name: str = typer.Argument(..., help="Prompt name, e.g. extract"),
    base: str = typer.Option(..., "--from", help="The version to copy, e.g. extract@2"),
    prompts_dir: Path | None = opt.PROMPTS_DIR,
) -> None:
    """Start the next version of NAME as an editable copy of --from."""
    path = writable_library(prompts_dir).new_version(name, base=base)
    stdout.print(
        f"Created {path} (a draft: edit it, run 'semantic-memory eval run', then 'prompts promote').",
        markup=False,
    )


def _ontology_text(template: PromptTemplate) -> list[str]:
    data = template.ontology.model_dump(mode="json", exclude_defaults=True)
    return yaml.safe_dump(data, sort_keys=True, allow_unicode=True).splitlines(keepends=True)


@app.command("diff")
@handle_errors
def diff_prompts(
    old: str = typer.Argument(..., help="e.g. extract@1"),
    new: str = typer.Argument(..., help="e.g. extract@2"),
    prompts_dir: Path | None = opt.PROMPTS_DIR,
) -> None:
    """Show what changed between two versions: template, then ontology."""
    library = _library(prompts_dir)
    a, b = library.load(old), library.load(new)
    sections = [
        ("template", (a.system_template + a.user_template), (b.system_template + b.user_template)),
    ]
    changed = False
    for label, left, right in sections:
        lines = list(
            difflib.unified_diff(
                left.splitlines(keepends=True),
                right.splitlines(keepends=True),
                fromfile=f"{a} {label}",
                tofile=f"{b} {label}",
            )
        )
        changed |= bool(lines)
        stdout.print("".join(lines), markup=False, end="")
    ontology_lines = list(
        difflib.unified_diff(
            _ontology_text(a), _ontology_text(b), fromfile=f"{a} ontology", tofile=f"{b} ontology"
        )
    )
    changed |= bool(ontology_lines)
    stdout.print("".join(ontology_lines), markup=False, end="")
    for field in ("strategy", "reasoning"):
        if getattr(a, field) != getattr(b, field):
            changed = True
            stdout.print(f"{field}: {getattr(a, field)} -> {getattr(b, field)}", markup=False)
    if not changed:
        stdout.print(f"{a} and {b} do not differ.", markup=False)


@app.command("release")
@handle_errors
def release_prompt(ref: str = typer.Argument(...), prompts_dir: Path | None = opt.PROMPTS_DIR) -> None:
    """Record a version's sha256 in the manifest; from then on its content may not change."""
    template = writable_library(prompts_dir).release(ref)
    stdout.print(f"Released {template} (sha256 {template.sha256}).", markup=False)


@app.command("verify")
@handle_errors
def verify_prompts(prompts_dir: Path | None = opt.PROMPTS_DIR) -> None:
    """Check every released version against its recorded sha256; exit 1 on a mismatch."""
    problems = _library(prompts_dir).verify()
    if problems:
        fail("; ".join(problems))
    stdout.print("All released prompt versions match their recorded sha256.")


@app.command("promote")
@handle_errors
def promote_prompt(
    ctx: typer.Context,
    ref: str = typer.Argument(..., help="The candidate, e.g. extract@3."),
    model: str = opt.MODEL,
    base_url: str | None = opt.BASE_URL,
    api_key: str | None = opt.API_KEY,
    mode: str = opt.MODE,
    fixtures: Path = opt.FIXTURES,
    tags: list[str] = opt.TAGS,
    ids: list[str] = typer.Option(
        [],
        "--fixture",
        help="Only this fixture id (repeatable; with --tag, those of them that have one of the tags).",
    ),
    tolerance: float = typer.Option(
        0.02, "--tolerance", min=0.0, help="Largest allowed drop of F1 or success rate."
    ),
    baseline: str | None = typer.Option(
        None,
        "--baseline",
        help="The version to compare with (default: the one promoted for the model's class).",
        show_default=False,
    ),
    reasks: int | None = opt.REASKS,
    deadline: float | None = opt.DEADLINE,
    request_timeout: float | None = opt.REQUEST_TIMEOUT,
    concurrency: int = opt.CONCURRENCY,
    out: Path | None = typer.Option(
        Path("reports/promote"), "--out", "-o", help="Where to write the gate's report."
    ),
    cache_dir: Path = opt.CACHE_DIR,
    prompts_dir: Path | None = opt.PROMPTS_DIR,
) -> None:
    """Promote REF for the model's class (local or hosted) if it does not regress on the fixtures.

    The class is the model's: local for a model run in process, hosted for an endpoint. A
    hosted candidate must also stay within the hosted cost budget on the budget session
    (evals/budget/), tool schemas included, whatever it scores.
    """
    from bub_semantic_memory._errors import GateError
    from bub_semantic_memory.evals.extraction import Report, RunOptions, promote

    config = opt.extractor_config(ctx.params)  # model, endpoint, mode, bounds and prompts_dir
    library = writable_library(prompts_dir)
    candidate = library.load(ref)
    compared = library.load(baseline) if baseline is not None else None
    options = RunOptions(
        extractor=config.replace(prompts_dir=library.root),
        concurrency=concurrency,
        cache_dir=cache_dir,
    )
    selected = opt.load_selected(fixtures, tags, ids)
    try:
        outcome = asyncio.run(
            promote(
                library,
                candidate,
                selected,
                options,
                baseline=compared,
                tolerance=tolerance,
                fixtures_dir=fixtures,
                console=stderr,
            )
        )
    except GateError as refused:
        if isinstance(refused.report, Report):
            opt.print_report(refused.report, out)  # the run that refused the candidate is kept
        raise
    opt.print_report(outcome.report, out)
    promotion = outcome.promotion
    scores = {name: promotion.scores.get(name) for name in ("entity_f1", "relation_f1")}
    shown = {name: "–" if value is None else f"{value:.3f}" for name, value in scores.items()}
    stdout.print(
        f"Promoted {candidate} for {promotion.model_class} models (model {promotion.model}; entity F1 "
        f"{shown['entity_f1']}, relation F1 {shown['relation_f1']}; baseline {promotion.baseline or 'none'}"
        + (f"; {promotion.cost['ratio']:.2f}x the budget session's tokens" if promotion.cost else "")
        + ").",
        markup=False,
    )
