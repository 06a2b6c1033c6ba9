"""``eval ...``, ``fixtures import`` and ``fixtures import-locomo``: the eval harness on the command line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

import bub_semantic_memory.cli._options as opt
from bub_semantic_memory.cli._app import PROMOTED_PROMPTS, new_app
from bub_semantic_memory.cli._common import (
    fail,
    handle_errors,
    print_table,
    stderr,
    stdout,
)

if TYPE_CHECKING:
    from bub_semantic_memory._ontology import Ontology
    from bub_semantic_memory.evals import Fixture
    from bub_semantic_memory.evals.extraction import LabelMap, Report

app = new_app("Score extraction against gold fixtures, run prompt versions, compare runs.")
fixtures_app = new_app("Eval fixtures: import plain conversations, or LoCoMo's, as Bub tapes with gold.")

IDS = typer.Option([], "--fixture", help="Only this fixture id (repeatable).")
SYNONYMS = typer.Option(
    None, "--synonyms", help="JSON file mapping relation types to canonical types for scoring."
)
LABEL_MAP = typer.Option(
    None,
    "--label-map",
    help="YAML/JSON mapping gold entity types and relation labels to ontology types (see evals/README.md).",
)


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
    from bub_semantic_memory.evals.extraction import check_label_space, load_label_map

    label_map = load_label_map(label_map_path) if label_map_path is not None else None
    for line in check_label_space((f.gold for f in selected), ontology, label_map).lines():
        stderr.print(f"Warning: {line}", markup=False)
    return label_map


def _dataset_ontology(fixtures: Path) -> Ontology | None:
    from bub_semantic_memory.evals.extraction import DATASET_ONTOLOGY_FILE, load_dataset_ontology

    ontology = load_dataset_ontology(fixtures)
    if ontology is not None:
        stderr.print(
            f"Ontology: {fixtures / DATASET_ONTOLOGY_FILE} (instead of the prompts' own)", markup=False
        )
    return ontology


@app.command("run")
@handle_errors
def run(
    ctx: typer.Context,
    fixtures: Path = opt.FIXTURES,
    tags: list[str] = opt.TAGS,
    ids: list[str] = IDS,
    prompts: list[str] = typer.Option(
        PROMOTED_PROMPTS, "--prompt", "-p", help="Prompt version, e.g. extract@3 (repeatable)."
    ),
    model: str = opt.MODEL,
    base_url: str | None = opt.BASE_URL,
    api_key: str | None = opt.API_KEY,
    mode: str = opt.MODE,
    reasks: int | None = opt.REASKS,
    deadline: float | None = opt.DEADLINE,
    request_timeout: float | None = opt.REQUEST_TIMEOUT,
    transport_attempts: int | None = opt.TRANSPORT_ATTEMPTS,
    chunk_tokens: int | None = opt.CHUNK_TOKENS,
    redact_patterns: list[str] = opt.REDACT_PATTERNS,
    redact_allowlist: list[str] = opt.REDACT_ALLOWLIST,
    concurrency: int = opt.CONCURRENCY,
    out: Path | None = typer.Option(Path("reports/latest"), "--out", "-o", help="Where to write report.*"),
    replay: bool = typer.Option(False, "--replay", help="Use only cached responses; a miss is a failure."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the response cache."),
    cache_dir: Path = opt.CACHE_DIR,
    prompts_dir: Path | None = opt.PROMPTS_DIR,
    synonyms: Path | None = SYNONYMS,
    label_map: Path | None = LABEL_MAP,
    cadence: str = typer.Option(
        "tape",
        "--cadence",
        help="tape: each tape whole, in windows of chunk_tokens; plugin: replayed turn by turn and "
        "extracted when the plugin would (every_turns user turns, min_new_tokens new tokens or a handoff).",
    ),
    every_turns: int | None = opt.EVERY_TURNS,
    min_new_tokens: int | None = opt.MIN_NEW_TOKENS,
    locomo: Path | None = opt.LOCOMO,
    split: str | None = opt.SPLIT,
    samples: list[str] = opt.SAMPLES,
    sessions: int | None = opt.SESSIONS,
) -> None:
    """Run prompt versions over the fixtures: scores, a side-by-side table, report files.

    A fixture directory holding ontology.yaml runs every prompt with that ontology instead
    of its own. Gold that cannot be scored (types outside the ontology, relations to
    non-entities) is reported before the run starts.
    """
    from bub_semantic_memory.backends import model_note
    from bub_semantic_memory.evals.extraction import Cadence, RunOptions, run_eval

    if replay and no_cache:
        fail("--replay and --no-cache exclude each other", code=2)
    if cadence not in ("tape", "plugin"):
        fail(f"--cadence must be tape or plugin, not {cadence!r}", code=2)
    setup = opt.memory_setup(ctx.params)  # every setting the plugin has, by its name
    assert setup.extractor is not None
    config = setup.extractor
    templates = [config.library().load(ref, model_class=setup.traits.model_class) for ref in prompts]
    selected = opt.load_selected(
        fixtures, tags, ids, locomo=locomo, split=split, samples=samples, sessions=sessions
    )
    dataset_ontology = _dataset_ontology(fixtures) if locomo is None else None
    labels = _label_space(selected, dataset_ontology or templates[0].ontology, label_map)
    options = RunOptions(
        extractor=config,
        concurrency=concurrency,
        cache="replay" if replay else ("off" if no_cache else "use"),
        cache_dir=cache_dir,
        relation_synonyms=_synonyms(synonyms),
        label_map=labels,
        ontology=dataset_ontology,
        cadence=cast("Cadence", cadence),  # checked above
        policy=setup.policy,
    )
    if note := model_note(model):
        stderr.print(f"Model: {note}", markup=False)
    source = fixtures if locomo is None else locomo  # what a report says its fixtures came from
    report = asyncio.run(run_eval(selected, templates, options, fixtures_dir=source, console=stderr))
    opt.print_report(report, out)
    if (failure := _failures(report)) is not None:
        fail(failure)


def _failures(report: Report) -> str | None:
    """One line on the fixtures whose extraction failed in any run (None: every one was extracted).

    A replay's misses are said as such: the cache lacks them, the model never failed.
    """
    failed = [(run.prompt, result) for run in report.runs for result in run.fixtures if not result.ok]
    if not failed:
        return None
    misses = [(prompt, result) for prompt, result in failed if result.error_type == "ReplayMissError"]
    chosen = misses or failed
    fixtures = sorted({result.fixture for _, result in chosen})
    shown = ", ".join(fixtures[:5]) + (", ..." if len(fixtures) > 5 else "")
    where = f"({len(fixtures)} fixture(s) in {len({prompt for prompt, _ in chosen})} run(s))"
    if misses:
        return f"--replay: {len(misses)} extraction(s) had no cached response {where}: {shown}"
    total = sum(len(run.fixtures) for run in report.runs)
    first = next(result for _, result in chosen if result.fixture == fixtures[0])
    reason = " ".join(f"{first.error_type}: {first.error}".split())
    return (
        f"{len(failed)} of {total} extraction(s) failed {where}: {shown}; "
        f"{first.fixture}: {reason[:300]}{'...' if len(reason) > 300 else ''}"
    )


@app.command("score")
@handle_errors
def score(
    fixtures: Path = opt.FIXTURES,
    predictions: Path = typer.Option(
        ..., "--predictions", help="JSONL: one prediction per fixture, shaped like gold."
    ),
    tags: list[str] = opt.TAGS,
    ids: list[str] = IDS,
    synonyms: Path | None = SYNONYMS,
    label_map: Path | None = LABEL_MAP,
    prompt: str = typer.Option(
        "extract", "--prompt", "-p", help="Prompt version whose ontology the predictions use."
    ),
    prompts_dir: Path | None = opt.PROMPTS_DIR,
    as_json: bool = typer.Option(False, "--json", help="Print the DatasetScore as JSON."),
) -> None:
    """Score saved predictions against the fixtures' gold, without any model.

    The ontology is the fixture directory's ontology.yaml if it has one, else the prompt's.
    Undefined scores (nothing predicted, or no gold) are shown as "–" (null with --json).
    """
    from rich.table import Table

    from bub_semantic_memory.evals import load_predictions
    from bub_semantic_memory.evals.extraction import (
        PRF,
        Recall,
        RelationMisses,
        score_dataset,
        scoring_config,
    )
    from bub_semantic_memory.evals.reports import UNDEFINED
    from bub_semantic_memory.extraction import PromptLibrary

    selected = opt.load_selected(fixtures, tags, ids)
    predicted = load_predictions(predictions)
    unknown = sorted(set(predicted) - {f.id for f in selected})
    if unknown:
        stderr.print(f"Ignoring predictions for unknown fixtures: {', '.join(unknown)}", markup=False)
    library = PromptLibrary(prompts_dir)
    ontology = _dataset_ontology(fixtures) or library.load(prompt).ontology
    labels = _label_space(selected, ontology, label_map)
    config = scoring_config(ontology, labels, _synonyms(synonyms))
    result = score_dataset(
        [(f.id, f.gold, predicted.get(f.id)) for f in selected],
        config,
        facts={f.id: f.facts for f in selected},
    )
    if as_json:
        stdout.print(result.model_dump_json(indent=2), markup=False)
        _fail_on_missing(selected, predicted)
        return
    table = Table(title=f"{len(selected)} fixtures")
    for column in ("", "precision", "recall", "F1", "tp", "predicted", "gold"):
        table.add_column(column, justify="right" if column else "left")

    def fmt(value: float | None) -> str:
        return UNDEFINED if value is None else f"{value:.3f}"

    scored: list[tuple[str, PRF]] = [
        ("entities", result.entities),
        ("entities (untyped)", result.entities_untyped),
        ("relations", result.relations),
        ("relations (lenient)", result.relations_lenient or PRF()),
    ]
    if result.facts is not None:  # only where fixtures have gold facts
        scored.append(("facts", result.facts))
    if result.fact_dates is not None and result.fact_dates.gold:
        scored.append(("fact dates", result.fact_dates))
    for label, prf in scored:
        table.add_row(
            label,
            *(fmt(v) for v in (prf.precision, prf.recall, prf.f1)),
            str(prf.tp),
            str(prf.predicted),
            str(prf.gold),
        )
    given = result.relations_given_endpoints or Recall()
    table.add_row("relations given endpoints", "", fmt(given.recall), "", str(given.tp), "", str(given.gold))
    print_table(stdout, table)
    misses = result.relation_misses or RelationMisses()
    stdout.print(
        f"Missed relations: {misses.no_endpoint} no endpoint, {misses.unrelated} unrelated, "
        f"{misses.mislabelled} mislabelled",
        markup=False,
    )
    _fail_on_missing(selected, predicted)


def _fail_on_missing(selected: list[Fixture], predicted: Mapping[str, object]) -> None:
    """Exit 1 when a selected fixture has no prediction (it was scored as predicting nothing),
    as ``eval run`` does when a fixture's extraction failed."""
    missing = [f.id for f in selected if f.id not in predicted]
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        fail(
            f"no prediction for {len(missing)} of {len(selected)} fixture(s), scored as predicting nothing: "
            f'{shown} (a fixture with nothing to predict takes a line {{"fixture": "<id>"}})'
        )


@app.command("compare")
@handle_errors
def compare(
    baseline: Path = typer.Argument(..., help="A saved report.json (its first run is the baseline)."),
    candidates: list[Path] = typer.Argument(..., help="Saved report.json files to compare against it."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Also write the combined report here."),
) -> None:
    """Compare saved runs side by side, with paired-bootstrap 95% intervals of the F1 differences."""
    from bub_semantic_memory.evals.extraction import Report, compare_runs, load_report

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
    opt.print_report(combined, out)


@app.command("rescore")
@handle_errors
def rescore(
    report_path: Path = typer.Argument(..., help="A saved report.json."),
    fixtures: Path = opt.FIXTURES,
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Where to write report.* (default: the report's own directory)."
    ),
    synonyms: Path | None = SYNONYMS,
    label_map: Path | None = LABEL_MAP,
    prompts_dir: Path | None = opt.PROMPTS_DIR,
) -> None:
    """Score a saved report's predictions again on the fixtures' current gold, without any model.

    Each run is scored under its prompt version's ontology (the fixture directory's ontology.yaml
    when it has one); metrics and comparisons are recomputed, everything else the runs recorded
    is kept. The report says when it was re-scored and on which dataset.
    """
    from bub_semantic_memory.evals import load_fixtures
    from bub_semantic_memory.evals.extraction import (
        PromptRun,
        ScoringConfig,
        load_label_map,
        load_report,
        rescore_report,
        scoring_config,
    )
    from bub_semantic_memory.extraction import PromptLibrary

    report = load_report(report_path)
    library = PromptLibrary(prompts_dir)
    dataset_ontology = _dataset_ontology(fixtures)
    labels = load_label_map(label_map) if label_map is not None else None
    relation_synonyms = _synonyms(synonyms)

    def scoring(run: PromptRun) -> ScoringConfig:
        ontology = dataset_ontology or library.load(run.prompt).ontology
        return scoring_config(ontology, labels, relation_synonyms)

    rescored = rescore_report(report, load_fixtures(fixtures), scoring, fixtures_dir=fixtures)
    opt.print_report(rescored, out if out is not None else report_path.parent)


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
    prompt: str = typer.Option(
        "extract", "--prompt", "-p", help="Prompt version whose ontology the gold is checked against."
    ),
    prompts_dir: Path | None = opt.PROMPTS_DIR,
) -> None:
    """Turn plain conversations into fixtures: a Bub tape and a gold file each.

    A conversation that cannot be imported is skipped with a warning saying where and why;
    the others are written. Gold is checked against out/ontology.yaml when there is one,
    else against the ontology of --prompt (the promoted version by default).
    """
    from bub_semantic_memory.evals.extraction import load_dataset_ontology
    from bub_semantic_memory.evals.importers import import_conversations
    from bub_semantic_memory.extraction import PromptLibrary

    ontology = load_dataset_ontology(out) or PromptLibrary(prompts_dir).load(prompt).ontology
    report = import_conversations(source, out, ontology=ontology, strict=strict)
    for warning in report.warnings:
        stderr.print(f"Warning: {warning}", markup=False)
    stdout.print(f"Imported into {out}: {report.summary()}", markup=False)


@fixtures_app.command("import-locomo")
@handle_errors
def import_locomo_fixtures(
    source: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="A JSON file in the LoCoMo layout: an array of samples."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Fixture directory to write."),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Fail on any problem (a sample skipped, evidence naming no turn, a question dropped); "
        "write nothing.",
    ),
    samples: list[str] = opt.SAMPLES,
    sessions: int | None = opt.SESSIONS,
) -> None:
    """Turn LoCoMo samples into fixtures: a dated Bub tape and the sample's questions each.

    Each sample becomes the fixture locomo-<sample_id>; both speakers are named senders,
    every entry carries its session's date. A sample that cannot be imported is skipped
    with a warning saying where and why. The ids written go to stdout, one per line;
    warnings and the counts to stderr.
    """
    from bub_semantic_memory.evals.importers import import_locomo

    report = import_locomo(source, out, samples=samples or None, sessions=sessions, strict=strict)
    for warning in report.warnings:
        stderr.print(f"Warning: {warning}", markup=False)
    for fixture_id in report.fixtures:
        stdout.print(fixture_id, markup=False)
    stderr.print(f"Imported into {out}: {report.summary()}", markup=False)
