"""The report as ``report.md``: header facts, summary, comparisons, per-type and per-fixture sections.

Every piece of report text (fixture ids, entity names, error messages, prompt names) is
treated as untrusted: it is escaped for Markdown, and an item is a code span fenced with more
backticks than it holds. The output is a pure function of the report (no clock, no
environment), so the same ``report.json`` always renders to the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bub_semantic_memory.evals.extraction._report import FixtureResult, PromptRun, Report
from bub_semantic_memory.evals.extraction._scoring import PRF
from bub_semantic_memory.evals.reports._format import (
    diff_lists,
    error_text,
    format_score,
    has_diff,
    relation_diagnosis,
    run_label,
)
from bub_semantic_memory.evals.reports._grids import (
    Grid,
    comparison_grid,
    entity_types,
    relation_types,
    summary_grid,
    type_grid,
)

__all__ = ["to_markdown"]


def _one_line(text: str) -> str:
    return " ".join(text.split())


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def _md(text: str) -> str:
    """Inline Markdown text: one line, with characters that Markdown or tables would read escaped."""
    return _MD_SPECIAL.sub(r"\\\1", _one_line(text))


def _md_code(text: str) -> str:
    """A code span holding ``text`` literally (fenced with more backticks than it contains)."""
    text = _one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_table(grid: Grid) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    headers = [_md(f"{c.title} ({c.subtitle})" if c.subtitle else c.title) for c in grid.columns]
    align = ["---:" if column.numeric else "---" for column in grid.columns]
    lines = [line(headers), line(align)]
    lines.extend(line([_md(row.label), *(_md(cell.text) for cell in row.cells)]) for row in grid.rows)
    if grid.notes:
        lines += ["", *(_md(note) for note in grid.notes)]
    return lines


def _md_prf(prf: PRF) -> str:
    text = f"P {format_score(prf.precision)} · R {format_score(prf.recall)} · F1 {format_score(prf.f1)}"
    return f"{text} ({_undefined_why(prf)})" if prf.f1 is None else text


def _undefined_why(prf: PRF) -> str:
    """Why F1 is "–": nothing to divide by."""
    if prf.gold == 0 and prf.predicted == 0:
        return "no gold items and nothing extracted: nothing to score"
    if prf.gold == 0:
        return f"no gold items; {prf.predicted} extracted, all spurious"
    return f"nothing extracted of {prf.gold} gold item(s)"


def _md_run_fixtures(run: PromptRun) -> list[str]:
    """Every fixture of ``run``: one line for a clean one, the missed and spurious items otherwise."""
    lines = [f"### {_md(run_label(run))}", ""]
    failed = [r for r in run.fixtures if not r.ok]
    if failed:
        lines += ["Failed fixtures:", ""]
        lines += [f"- {_md_code(r.fixture)}: {_md(error_text(r))}" for r in failed]
        lines.append("")
    clean = [r for r in run.fixtures if r.ok and not has_diff(r)]
    if clean:
        lines += ["Fixtures with nothing missed and nothing spurious:", ""]
        lines += [f"- {_md_code(r.fixture)}: {_md_scores(r)}{_md_cached(r)}" for r in clean]
        lines.append("")
    for result in run.fixtures:
        if result.ok and not has_diff(result):
            continue
        marker = " (failed)" if not result.ok else ""
        lines += [
            f"#### {_md_code(result.fixture)}{marker}",
            "",
            f"Entities {_md_prf(result.entities)}; relations {_md_prf(result.relations)}"
            f"{_md_facts(result)}{_md_cached(result)}",
            "",
        ]
        if diagnosis := relation_diagnosis(result):
            lines += [diagnosis, ""]
        for title, _, items in diff_lists(result):
            lines.append(f"- {title}:")
            lines.extend(f"  - {_md_code(item)}" for item in items)
        lines.append("")
    return lines


def _md_scores(result: FixtureResult) -> str:
    facts = f", fact F1 {_md_f1(result.facts)}" if result.facts is not None else ""
    return f"entity F1 {_md_f1(result.entities)}, relation F1 {_md_f1(result.relations)}{facts}"


def _md_facts(result: FixtureResult) -> str:
    """The fact score of a fixture that has gold facts (nothing for one that has none)."""
    if result.facts is None:
        return ""
    dates = result.fact_dates
    dated = f", {dates.tp}/{dates.gold} dated right" if dates is not None and dates.gold else ""
    return f"; facts {_md_prf(result.facts)}{dated}"


def _md_f1(prf: PRF) -> str:
    return format_score(prf.f1) if prf.f1 is not None else f"{format_score(prf.f1)} ({_undefined_why(prf)})"


def _md_cached(result: FixtureResult) -> str:
    return " (from cache)" if result.cached else ""


_RESCORED = "the same predictions, on the gold of the dataset below"

_CADENCES = {
    "plugin": "the plugin's: the tape replayed turn by turn, extracted as the plugin's service extracts it"
}


def to_markdown(report: Report) -> str:
    """A complete ``report.md``: header facts, summary, comparisons, per-type and per-fixture sections.

    The output depends only on the report (deterministic): the summary table has the
    same rows and columns as :func:`~._terminal.summary_table`; comparisons carry their 95%
    intervals and verdicts; per-type tables give P/R/F1 and the gold count per run; the
    per-fixture section lists, for each run, every fixture: the failed ones with their
    errors, the clean ones on one line each, and the missed and spurious entities and
    relations (and facts, where the fixture has gold facts) of every other fixture. The fact
    rows of the summary appear only when a run scored facts.
    """
    lines = [
        "# Eval report",
        "",
        f"- Created: {report.created_at.isoformat()}",
        *([f"- Re-scored: {report.rescored_at.isoformat()} ({_RESCORED})"] if report.rescored_at else []),
        f"- Fixtures dir: {_md_code(report.fixtures_dir)}",
        f"- Dataset sha256: {_md_code(report.dataset_sha256[:12])}",
        f"- Fixtures: {len(report.fixture_ids)}",
        f"- Runs: {len(report.runs)}",
        *(f"- Model {_md_code(model)}: {note}" for model, note in report.model_notes().items()),
        *(
            f"- Model class of {_md_code(model)}: {model_class} (the promotion a bare prompt name means)"
            for model, model_class in report.model_classes().items()
        ),
        *(
            f"- Cadence of {_md_code(run.label)}: {_CADENCES.get(run.cadence, run.cadence)}"
            for run in report.runs
            if run.cadence != "tape"
        ),
        "",
        "## Summary",
        "",
    ]
    lines += _md_table(summary_grid(report)) if report.runs else ["No runs."]
    lines += ["", "## Comparisons", ""]
    if report.comparisons:
        lines += [
            "Paired bootstrap over fixtures; Δ is candidate − baseline, with its 95% interval.",
            "",
            *_md_table(comparison_grid(report.comparisons)),
        ]
    else:
        lines.append("No comparisons.")
    for title, per_type in (
        ("Entity types", entity_types),
        ("Relation types", relation_types),
    ):
        grid = type_grid(report.runs, per_type)
        lines += ["", f"## {title}", ""]
        lines += _md_table(grid) if grid.rows else ["None."]
    lines += ["", "## Per fixture", ""]
    for run in report.runs:
        lines += _md_run_fixtures(run)
    return "\n".join(lines).rstrip("\n") + "\n"
