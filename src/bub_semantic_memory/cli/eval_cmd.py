"""``eval ...``, ``fixtures import`` and ``prompts promote``: the eval harness on the command line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from bub_semantic_memory.cli._app import PROMOTED_PROMPTS, new_app
from bub_semantic_memory.cli._common import (
    API_KEY_ENV,
    fail,
    handle_errors,
    print_table,
    stderr,
    stdout,
)

if TYPE_CHECKING:
    from bub_semantic_memory.evals.dataset import Fixture
    from bub_semantic_memory.evals.labels import LabelMap
    from bub_semantic_memory.evals.report import Report
    from bub_semantic_memory.evals.runner import RunOptions
    from bub_semantic_memory.ontology import Ontology

app = new_app("Score extraction against gold fixtures, run prompt versions, compare runs.")
fixtures_app = new_app("Eval fixtures: import plain conversations as Bub tapes with gold.")

FIXTURES = typer.Option(Path("evals/fixtures"), "--fixtures", "-f", help="Fixture directory.")
TAGS = typer.Option([], "--tag", "-t", help="Only fixtures with this tag (repeatable; any of).")
IDS = typer.Option([], "--fixture", help="Only this fixture id (repeatable).")
MODEL = typer.Option(
    ...,
    "--model",
    "-m",
    envvar="BUB_SEMANTIC_MEMORY_MODEL",
    help="Model name, or 'local' (a smoke-test model).",
)
BASE_URL = typer.Option(
    None, "--base-url", envvar="BUB_SEMANTIC_MEMORY_BASE_URL", help="OpenAI-compatible endpoint."
)
API_KEY = typer.Option(None, "--api-key", envvar=API_KEY_ENV, help="Endpoint key.", show_default=False)
MODE = typer.Option("tools", "--mode", help="Instructor mode: tools, json_schema, md_json, json.")
CONCURRENCY = typer.Option(4, "--concurrency", "-c", min=1, help="Fixtures extracted at once.")
PROMPTS_DIR = typer.Option(
    None,
    "--prompts-dir",
    envvar="BUB_SEMANTIC_MEMORY_PROMPTS_DIR",
    help="Prompt directory (default: bundled).",
)
CACHE_DIR = typer.Option(Path(".cache/eval"), "--cache-dir", help="Response cache directory.")
SYNONYMS = typer.Option(
    None, "--synonyms", help="JSON file mapping relation types to canonical types for scoring."
)
LABEL_MAP = typer.Option(
    None,
    "--label-map",
    help="YAML/JSON mapping gold entity types and relation labels to ontology types (see evals/README.md).",
)


def _fixtures(directory: Path, tags: list[str], ids: list[str]) -> list[Fixture]:
    from bub_semantic_memory.evals.dataset import load_fixtures

    return load_fixtures(directory, tags=tags, ids=ids)


def _synonyms(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        fail(f"cannot read synonyms {path}: {exc}")
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        fail(f"{path} must be a JSON object of relation type -> canonical type")
    return data


def _label_space(selected: list[Fixture], ontology: Ontology, label_map_path: Path | None) -> LabelMap | None:
    """Read the label map and warn, before anything runs, about gold the run cannot score."""
    from bub_semantic_memory.evals.labels import check_label_space, load_label_map

    label_map = load_label_map(label_map_path) if label_map_path is not None else None
    for line in check_label_space((f.gold for f in selected), ontology, label_map).lines():
        stderr.print(f"Warning: {line}", markup=False)
    return label_map


def _dataset_ontology(fixtures: Path) -> Ontology | None:
    from bub_semantic_memory.evals.labels import DATASET_ONTOLOGY_FILE, load_dataset_ontology

    ontology = load_dataset_ontology(fixtures)
    if ontology is not None:
        stderr.print(
            f"Ontology: {fixtures / DATASET_ONTOLOGY_FILE} (instead of the prompts' own)", markup=False
        )
    return ontology


def _print_report(report: Report, out: Path | None) -> None:
    from bub_semantic_memory.evals.render import comparison_table, summary_table, write_report_files

    print_table(stdout, summary_table(report), attached="Δ")
    if report.comparisons:
        print_table(stdout, comparison_table(report.comparisons), key_columns=2)
    if out is not None:
        paths = write_report_files(report, out)
        stderr.print("Wrote " + ", ".join(str(p) for p in paths.values()), markup=False)


@app.command("run")
@handle_errors
def run(
    fixtures: Path = FIXTURES,
    tags: list[str] = TAGS,
    ids: list[str] = IDS,
    prompts: list[str] = typer.Option(
        PROMOTED_PROMPTS, "--prompt", "-p", help="Prompt version, e.g. extract@3 (repeatable)."
    ),
    model: str = MODEL,
    base_url: str | None = BASE_URL,
    api_key: str | None = API_KEY,
    mode: str = MODE,
    concurrency: int = CONCURRENCY,
    out: Path | None = typer.Option(Path("reports/latest"), "--out", "-o", help="Where to write report.*"),
    replay: bool = typer.Option(False, "--replay", help="Use only cached responses; a miss is a failure."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the response cache."),
    cache_dir: Path = CACHE_DIR,
    prompts_dir: Path | None = PROMPTS_DIR,
    synonyms: Path | None = SYNONYMS,
    label_map: Path | None = LABEL_MAP,
) -> None:
    """Run prompt versions over the fixtures: scores, a side-by-side table, report files.

    A fixture directory holding ontology.yaml runs every prompt with that ontology instead
    of its own. Gold that cannot be scored (types outside the ontology, relations to
    non-entities) is reported before the run starts.
    """
    from bub_semantic_memory.evals.runner import RunOptions, run_eval
    from bub_semantic_memory.local_models import model_note
    from bub_semantic_memory.prompts import PromptLibrary

    if replay and no_cache:
        fail("--replay and --no-cache exclude each other", code=2)
    library = PromptLibrary(prompts_dir) if prompts_dir else PromptLibrary()
    templates = [library.load(ref) for ref in prompts]
    selected = _fixtures(fixtures, tags, ids)
    dataset_ontology = _dataset_ontology(fixtures)
    labels = _label_space(selected, dataset_ontology or templates[0].ontology, label_map)
    options = RunOptions(
        model=model,
        base_url=base_url,
        api_key=api_key,
        mode=mode,
        concurrency=concurrency,
        cache="replay" if replay else ("off" if no_cache else "use"),
        cache_dir=cache_dir,
        relation_synonyms=_synonyms(synonyms),
        label_map=labels,
        ontology=dataset_ontology,
    )
    if note := model_note(model):
        stderr.print(f"Model: {note}", markup=False)
    report = asyncio.run(run_eval(selected, templates, options, fixtures_dir=fixtures, console=stderr))
    _print_report(report, out)
    misses = [r.fixture for run in report.runs for r in run.fixtures if r.error_type == "ReplayMissError"]
    if misses:
        fail(
            f"--replay: {len(misses)} fixture(s) had no cached response: {', '.join(sorted(set(misses))[:5])}"
        )


@app.command("score")
@handle_errors
def score(
    fixtures: Path = FIXTURES,
    predictions: Path = typer.Option(
        ..., "--predictions", help="JSONL: one prediction per fixture, shaped like gold."
    ),
    tags: list[str] = TAGS,
    ids: list[str] = IDS,
    synonyms: Path | None = SYNONYMS,
    label_map: Path | None = LABEL_MAP,
    prompt: str = typer.Option(
        "extract", "--prompt", "-p", help="Prompt version whose ontology the predictions use."
    ),
    prompts_dir: Path | None = PROMPTS_DIR,
    as_json: bool = typer.Option(False, "--json", help="Print the DatasetScore as JSON."),
) -> None:
    """Score saved predictions against the fixtures' gold, without any model.

    The ontology is the fixture directory's ontology.yaml if it has one, else the prompt's.
    Undefined scores (nothing predicted, or no gold) are shown as "–" (null with --json).
    """
    from rich.table import Table

    from bub_semantic_memory.evals.dataset import load_predictions
    from bub_semantic_memory.evals.labels import scoring_config
    from bub_semantic_memory.evals.render import UNDEFINED
    from bub_semantic_memory.evals.scoring import score_dataset
    from bub_semantic_memory.prompts import PromptLibrary

    selected = _fixtures(fixtures, tags, ids)
    predicted = load_predictions(predictions)
    unknown = sorted(set(predicted) - {f.id for f in selected})
    if unknown:
        stderr.print(f"Ignoring predictions for unknown fixtures: {', '.join(unknown)}", markup=False)
    library = PromptLibrary(prompts_dir) if prompts_dir else PromptLibrary()
    ontology = _dataset_ontology(fixtures) or library.load(prompt).ontology
    labels = _label_space(selected, ontology, label_map)
    config = scoring_config(ontology, labels, _synonyms(synonyms))
    result = score_dataset([(f.id, f.gold, predicted.get(f.id)) for f in selected], config)
    if as_json:
        stdout.print(result.model_dump_json(indent=2), markup=False)
        return
    table = Table(title=f"{len(selected)} fixtures")
    for column in ("", "precision", "recall", "F1", "tp", "predicted", "gold"):
        table.add_column(column, justify="right" if column else "left")
    for label, prf in (
        ("entities", result.entities),
        ("entities (untyped)", result.entities_untyped),
        ("relations", result.relations),
    ):
        table.add_row(
            label,
            *(
                UNDEFINED if value is None else f"{value:.3f}"
                for value in (prf.precision, prf.recall, prf.f1)
            ),
            str(prf.tp),
            str(prf.predicted),
            str(prf.gold),
        )
    print_table(stdout, table)


@app.command("compare")
@handle_errors
def compare(
    baseline: Path = typer.Argument(..., help="A saved report.json (its first run is the baseline)."),
    candidates: list[Path] = typer.Argument(..., help="Saved report.json files to compare against it."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Also write the combined report here."),
) -> None:
    """Compare saved runs side by side, with paired-bootstrap 95% intervals of the F1 differences."""
    from bub_semantic_memory.evals.report import Report, compare_runs, load_report

    base = load_report(baseline)
    others = [load_report(path) for path in candidates]
    for path, other in zip(candidates, others, strict=True):
        if other.dataset_sha256 != base.dataset_sha256:
            stderr.print(
                f"Warning: {path} was run on different fixtures; only shared fixtures are compared.",
                markup=False,
            )
    runs = [base.runs[0], *(run for other in others for run in other.runs)]
    combined = Report(
        fixtures_dir=base.fixtures_dir,
        dataset_sha256=base.dataset_sha256,
        fixture_ids=base.fixture_ids,
        runs=runs,
        comparisons=[compare_runs(runs[0], run) for run in runs[1:]],
    )
    _print_report(combined, out)


@fixtures_app.command("import")
@handle_errors
def import_fixtures(
    source: Path = typer.Argument(
        ..., exists=True, help="A JSONL file of conversations with gold (or a directory of them)."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Fixture directory to write."),
    strict: bool = typer.Option(
        False, "--strict", help="Stop at the first conversation that cannot be imported; write nothing."
    ),
) -> None:
    """Turn plain conversations into fixtures: a Bub tape and a gold file each.

    A conversation that cannot be imported is skipped with a warning saying where and why;
    the others are written. Gold is checked against out/ontology.yaml when there is one,
    else against the promoted prompt's ontology.
    """
    from bub_semantic_memory.evals.importer import import_conversations
    from bub_semantic_memory.evals.labels import load_dataset_ontology

    report = import_conversations(source, out, ontology=load_dataset_ontology(out), strict=strict)
    for warning in report.warnings:
        stderr.print(f"Warning: {warning}", markup=False)
    stdout.print(f"Imported into {out}: {report.summary()}", markup=False)


def promote_command(
    ref: str = typer.Argument(..., help="The candidate, e.g. extract@3."),
    model: str = MODEL,
    base_url: str | None = BASE_URL,
    api_key: str | None = API_KEY,
    mode: str = MODE,
    fixtures: Path = FIXTURES,
    tags: list[str] = TAGS,
    tolerance: float = typer.Option(
        0.02, "--tolerance", min=0.0, help="Largest allowed drop of F1 or success rate."
    ),
    concurrency: int = CONCURRENCY,
    out: Path | None = typer.Option(
        Path("reports/promote"), "--out", "-o", help="Where to write the gate's report."
    ),
    cache_dir: Path = CACHE_DIR,
    prompts_dir: Path | None = PROMPTS_DIR,
) -> None:
    """Promote REF for the plugin if it does not regress against the promoted version on the fixtures."""
    from bub_semantic_memory.evals.gate import promote
    from bub_semantic_memory.evals.runner import RunOptions
    from bub_semantic_memory.prompts import PromptLibrary

    library = PromptLibrary(prompts_dir) if prompts_dir else PromptLibrary()
    candidate = library.load(ref)
    options: RunOptions = RunOptions(
        model=model,
        base_url=base_url,
        api_key=api_key,
        mode=mode,
        concurrency=concurrency,
        cache_dir=cache_dir,
    )
    selected = _fixtures(fixtures, tags, [])
    outcome = asyncio.run(
        promote(
            library, candidate, selected, options, tolerance=tolerance, fixtures_dir=fixtures, console=stderr
        )
    )
    _print_report(outcome.report, out)
    promotion = outcome.promotion
    scores = {name: promotion.scores.get(name) for name in ("entity_f1", "relation_f1")}
    shown = {name: "–" if value is None else f"{value:.3f}" for name, value in scores.items()}
    stdout.print(
        f"Promoted {candidate} (model {promotion.model}; entity F1 {shown['entity_f1']}, "
        f"relation F1 {shown['relation_f1']}; baseline {promotion.baseline or 'none'}).",
        markup=False,
    )
