from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bub_semantic_memory._models import Usage
from bub_semantic_memory.evals import Prediction
from bub_semantic_memory.evals.extraction import (
    PRF,
    Comparison,
    FixtureResult,
    Metrics,
    PromptRun,
    Recall,
    RelationMisses,
    Report,
)
from bub_semantic_memory.evals.reports import (
    comparison_table,
    fixture_table,
    summary_table,
    to_html,
    to_markdown,
    write_report_files,
)

CREATED = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
INJECTION = "<script>alert(1)</script>"


def render(table: Table) -> str:
    console = Console(record=True, width=200)
    console.print(table)
    return console.export_text()


def row_cells(text: str, label: str) -> list[str]:
    """The cells of the table row starting with ``label`` (rich draws cells between │)."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if cells and cells[0] == label:
            return cells
    raise AssertionError(f"no row {label!r} in:\n{text}")


def header_cells(text: str) -> list[str]:
    """The header cells (rich draws them between ┃), each cell's lines joined by a space."""
    lines = [
        line.strip().strip("┃").split("┃") for line in text.splitlines() if line.lstrip().startswith("┃")
    ]
    return [" ".join(part.strip() for part in column if part.strip()) for column in zip(*lines, strict=True)]


def metrics(
    entities: PRF, relations: PRF, *, failed: int, first_try: float, success: float, attempts: float
) -> Metrics:
    return Metrics(
        fixtures=2,
        failed_fixtures=failed,
        entities=entities,
        entities_untyped=entities,
        relations=relations,
        per_entity_type={"person": entities, "org": PRF(tp=0, predicted=1, gold=0)},
        per_relation_type={"works_on": relations},
        schema_valid_first_try=first_try,
        success_rate=success,
        mean_attempts=attempts,
        calls=2,
        prompt_tokens=12345,
        completion_tokens=678,
        requests_made=3,
        cached_fixtures=1,
        latency_p50_s=1.25,
        latency_p95_s=2.5,
    )


def make_report(second_fixture: str = "beta") -> Report:
    baseline = PromptRun(
        prompt="extract@1",
        prompt_sha256="a" * 64,
        model="gpt-test",
        mode="tools",
        metrics=metrics(
            PRF(tp=2, predicted=3, gold=5),
            PRF(tp=1, predicted=1, gold=3),
            failed=1,
            first_try=0.5,
            success=0.5,
            attempts=1.5,
        ),
        fixtures=[
            FixtureResult(
                fixture="alpha",
                cached=True,
                calls=1,
                first_try_valid_calls=1,
                usage=Usage(prompt_tokens=100, completion_tokens=20, requests=1, attempts=1),
                entities=PRF(tp=2, predicted=3, gold=3),
                entities_untyped=PRF(tp=2, predicted=3, gold=3),
                relations=PRF(tp=1, predicted=1, gold=2),
                missed_entities=["person:Bob"],
                spurious_entities=["org:Acme"],
                missed_relations=["Alice -works_on-> Apollo"],
                prediction=Prediction(fixture="alpha"),
            ),
            FixtureResult(
                fixture=second_fixture,
                ok=False,
                error="request timed out after 30s",
                error_type="TimeoutError",
                entities=PRF(tp=0, predicted=0, gold=2),
                entities_untyped=PRF(tp=0, predicted=0, gold=2),
                relations=PRF(tp=0, predicted=0, gold=1),
                missed_entities=["person:Carol", "project:Zeus"],
                missed_relations=["Carol -works_on-> Zeus"],
                prediction=Prediction(fixture=second_fixture),
            ),
        ],
    )
    candidate = PromptRun(
        prompt="extract@2",
        prompt_sha256="b" * 64,
        model="gpt-test",
        mode="tools",
        metrics=metrics(
            PRF(tp=5, predicted=5, gold=5),
            PRF(tp=3, predicted=4, gold=3),
            failed=0,
            first_try=1.0,
            success=1.0,
            attempts=1.0,
        ),
        fixtures=[
            FixtureResult(
                fixture="alpha",
                entities=PRF(tp=3, predicted=3, gold=3),
                entities_untyped=PRF(tp=3, predicted=3, gold=3),
                relations=PRF(tp=2, predicted=3, gold=2),
                spurious_relations=["Alice -knows-> Bob"],
                prediction=Prediction(fixture="alpha"),
            ),
            FixtureResult(
                fixture=second_fixture,
                entities=PRF(tp=2, predicted=2, gold=2),
                entities_untyped=PRF(tp=2, predicted=2, gold=2),
                relations=PRF(tp=1, predicted=1, gold=1),
                prediction=Prediction(fixture=second_fixture),
            ),
        ],
    )
    comparison = Comparison(
        baseline="extract@1 (gpt-test)",
        candidate="extract@2 (gpt-test)",
        fixtures_compared=2,
        entity_f1_delta=0.5,
        entity_f1_ci95=(0.125, 0.75),
        relation_f1_delta=0.357143,
        relation_f1_ci95=(-0.1, 0.6),
        resamples=2000,
    )
    return Report(
        created_at=CREATED,
        fixtures_dir="evals/fixtures",
        dataset_sha256="0123456789abcdef" * 4,
        fixture_ids=["alpha", second_fixture],
        runs=[baseline, candidate],
        comparisons=[comparison],
    )


# --------------------------------------------------------------------------- rich tables


def test_summary_table_columns_and_rows() -> None:
    text = render(summary_table(make_report()))
    assert header_cells(text) == [
        "Metric",
        "extract@1 gpt-test",
        "extract@2 gpt-test",
        "Δ vs extract@1",
    ]
    labels = [
        "Entity P",
        "Entity R",
        "Entity F1",
        "Entity F1 (untyped)",
        "Relation P",
        "Relation R",
        "Relation F1",
        "Relation P (lenient)",
        "Relation R (lenient)",
        "Relation F1 (lenient)",
        "Relation R given endpoints",
        "Missed relations: no endpoint",
        "Missed relations: unrelated",
        "Missed relations: mislabelled",
        "Windows without a re-ask",
        "Success rate",
        "Re-asks per window",
        "Answers per window",
        "Prompt tokens",
        "Completion tokens",
        "Requests made",
        "Cached fixtures",
        "Latency p50 (s)",
        "Latency p95 (s)",
        "Failed fixtures",
        "Dropped items",
    ]
    for label in labels:
        assert len(row_cells(text, label)) == 4, label
    assert row_cells(text, "Entity P") == ["Entity P", "0.667", "1.000", "+0.333"]
    assert row_cells(text, "Windows without a re-ask") == [
        "Windows without a re-ask",
        "50.0%",
        "100.0%",
        "+50.0 pp",
    ]
    assert row_cells(text, "Answers per window") == ["Answers per window", "1.50", "1.00", "-0.50"]
    # One of the two fixtures came from the cache: the token counts say so.
    assert row_cells(text, "Prompt tokens") == [
        "Prompt tokens",
        "12,345 (1/2 from cache)",
        "12,345 (1/2 from cache)",
        "",
    ]
    assert row_cells(text, "Failed fixtures") == ["Failed fixtures", "1", "0", ""]


def with_diagnostics(report: Report) -> Report:
    """``report`` with relation diagnostics on its second run (its first predates them)."""
    run = report.runs[1]
    run.metrics = run.metrics.model_copy(
        update={
            "relations_lenient": PRF(tp=4, predicted=4, gold=3 + 2),
            "relations_given_endpoints": Recall(tp=3, gold=4),
            "relation_misses": RelationMisses(no_endpoint=1, unrelated=1, mislabelled=0),
        }
    )
    run.fixtures[0] = run.fixtures[0].model_copy(
        update={
            "missed_relations": ["Bob -knows-> Alice"],
            "relations_lenient": PRF(tp=2, predicted=3, gold=3),
            "relations_given_endpoints": Recall(tp=2, gold=3),
            "relation_misses": RelationMisses(no_endpoint=0, unrelated=1, mislabelled=0),
        }
    )
    return report


def test_the_summary_shows_relation_diagnostics_and_a_dash_for_a_run_made_before_them() -> None:
    text = render(summary_table(with_diagnostics(make_report())))
    assert row_cells(text, "Relation F1 (lenient)") == ["Relation F1 (lenient)", "–", "0.889", "–"]
    assert row_cells(text, "Relation R given endpoints") == ["Relation R given endpoints", "–", "0.750", "–"]
    assert row_cells(text, "Missed relations: unrelated") == ["Missed relations: unrelated", "–", "1", ""]


def test_markdown_and_html_carry_the_relation_diagnostics() -> None:
    report = with_diagnostics(make_report())
    line = "Relations lenient F1 0.667, recall given endpoints 0.667 (2 of 3); missed: 0 no endpoint, 1 unrelated, 0 mislabelled"
    markdown = to_markdown(report)
    assert "| Relation R given endpoints | – | 0.750 | – |" in markdown
    assert line in markdown
    html = to_html(report)
    assert "Relation R given endpoints" in html and line in html
    assert "<dt>Lenient, given endpoints, misses</dt>" in html


def test_summary_table_delta_cells_show_sign_and_ci() -> None:
    text = render(summary_table(make_report()))
    assert row_cells(text, "Entity F1") == ["Entity F1", "0.500", "1.000", "+0.500 [+0.125, +0.750]"]
    assert row_cells(text, "Relation F1") == ["Relation F1", "0.500", "0.857", "+0.357 [-0.100, +0.600]"]
    assert row_cells(text, "Entity F1 (untyped)")[3] == "+0.500"  # no CI: not compared
    assert row_cells(text, "Relation P")[3] == "-0.250"


def test_summary_table_single_run_has_no_delta_column() -> None:
    report = make_report()
    report.runs = report.runs[:1]
    report.comparisons = []
    text = render(summary_table(report))
    assert "Δ" not in text
    assert row_cells(text, "Entity F1") == ["Entity F1", "0.500"]


def test_comparison_table_verdicts() -> None:
    report = make_report()
    worse = report.comparisons[0].model_copy(
        update={"entity_f1_delta": -0.2, "entity_f1_ci95": (-0.3, -0.05), "relation_f1_ci95": (0.0, 0.2)}
    )
    text = render(comparison_table([report.comparisons[0], worse]))
    lines = [line for line in text.splitlines() if "extract@1 (gpt-test)" in line]
    assert len(lines) == 2
    assert "+0.500 [+0.125, +0.750]" in lines[0]
    assert re.search(r"\+0\.500 \[\+0\.125, \+0\.750\]\s+│\s+better\s+│", lines[0])
    assert lines[0].rstrip().rstrip("│").strip().endswith("no significant difference")
    assert re.search(r"-0\.200 \[-0\.300, -0\.050\]\s+│\s+worse\s+│", lines[1])
    assert re.search(r"│\s+2\s+│", lines[0])  # fixtures compared


def test_fixture_table_rows_and_limit() -> None:
    run = make_report().runs[0]
    text = render(fixture_table(run))
    assert row_cells(text, "alpha") == [
        "alpha", "ok", "0.667", "0.667", "0.667", "1.000", "0.500", "0.667", "yes",
    ]  # fmt: skip
    assert row_cells(text, "beta")[1] == "failed (TimeoutError)"
    assert row_cells(text, "beta")[-1] == "no"
    limited = render(fixture_table(run, limit=1))
    assert "beta" not in limited
    assert "1 more fixture(s) not shown" in limited


def test_rich_cells_are_not_markup() -> None:
    report = make_report(second_fixture="[bold]x[/bold]")
    assert "[bold]x[/bold]" in render(fixture_table(report.runs[0]))


# --------------------------------------------------------------------------- Markdown


def test_markdown_summary_row_with_both_runs_and_delta() -> None:
    md = to_markdown(make_report())
    assert "| Entity F1 | 0.500 | 1.000 | +0.500 \\[+0.125, +0.750\\] |" in md
    assert "| Metric | extract@1 (gpt-test) | extract@2 (gpt-test) | Δ vs extract@1 |" in md
    assert "| Relation F1 | 0.500 | 0.857 | +0.357 \\[-0.100, +0.600\\] |" in md
    assert "- Dataset sha256: `0123456789ab`" in md
    assert "- Fixtures: 2" in md


def test_markdown_comparisons_and_types() -> None:
    md = to_markdown(make_report())
    assert (
        "| extract@1 (gpt-test) | extract@2 (gpt-test) | 2 | +0.500 \\[+0.125, +0.750\\] | better "
        "| +0.357 \\[-0.100, +0.600\\] | no significant difference |"
    ) in md
    assert "## Entity types" in md
    # No gold org: recall is undefined, shown as "–".
    assert "| org | 0.000 | – | 0.000 | 0 | 0.000 | – | 0.000 | 0 |" in md
    assert "| works\\_on | 1.000 | 0.333 | 0.500 | 3 | 0.750 | 1.000 | 0.857 | 3 |" in md


def test_markdown_per_fixture_bullets_and_errors() -> None:
    md = to_markdown(make_report())
    baseline, candidate = md.split("### extract@2 (gpt-test)")
    assert "- `beta`: TimeoutError: request timed out after 30s" in baseline
    assert "#### `beta` (failed)" in baseline
    assert "- Missed entities:\n  - `person:Bob`\n- Spurious entities:\n  - `org:Acme`\n" in baseline
    assert "- Missed relations:\n  - `Alice -works_on-> Apollo`" in baseline
    assert "- Spurious relations:\n  - `Alice -knows-> Bob`" in candidate
    assert "Failed fixtures:" not in candidate
    # Perfect and ok: listed on one line, with no section of its own.
    assert "- `beta`: entity F1 1.000, relation F1 1.000\n" in candidate
    assert "#### `beta`" not in candidate


def with_facts(report: Report) -> Report:
    """``report`` with gold facts on its fixture ``alpha``: the baseline states one of two, dated wrong."""
    baseline, candidate = report.runs
    alpha = baseline.fixtures[0].model_copy(
        update={
            "facts": PRF(tp=1, predicted=2, gold=2),
            "fact_dates": PRF(tp=0, predicted=1, gold=1),
            "missed_facts": ["Bob moved to Lisbon last month"],
            "spurious_facts": ["Bob likes Lisbon"],
        }
    )
    scored = baseline.model_copy(
        update={
            "fixtures": [alpha, *baseline.fixtures[1:]],
            "metrics": baseline.metrics.model_copy(
                update={"facts": PRF(tp=1, predicted=2, gold=2), "fact_dates": PRF(tp=0, predicted=1, gold=1)}
            ),
        }
    )
    return report.model_copy(update={"runs": [scored, candidate]})


def test_fact_scores_show_only_where_gold_facts_were_scored() -> None:
    assert "Fact" not in to_markdown(make_report())  # no run scored facts: no rows, no noise
    md = to_markdown(with_facts(make_report()))
    assert "| Fact P | 0.500 | – | – |" in md  # the candidate run scored none: undefined, no delta
    assert "| Fact F1 | 0.500 | – | – |" in md
    assert "| Fact dates right (R) | 0.000 | – | – |" in md
    baseline, _ = md.split("### extract@2 (gpt-test)")
    assert "; facts P 0.500 · R 0.500 · F1 0.500, 0/1 dated right (from cache)" in baseline
    assert (
        "- Missed facts:\n  - `Bob moved to Lisbon last month`\n- Spurious facts:\n  - `Bob likes Lisbon`"
        in baseline
    )
    page = to_html(with_facts(make_report()))
    assert "fact F1 0.500" in page and "<code>Bob moved to Lisbon last month</code>" in page


def test_a_run_whose_prompt_states_no_facts_shows_a_dash_and_says_why() -> None:
    """The candidate's fixtures have gold facts it missed (0.000 by the counts), but its prompt
    version states none: its fact cells and their deltas are "–", and a note below says so."""
    baseline, candidate = with_facts(make_report()).runs
    silent = candidate.model_copy(
        update={
            "states_facts": False,
            "metrics": candidate.metrics.model_copy(update={"facts": PRF(tp=0, predicted=0, gold=2)}),
        }
    )
    stating = baseline.model_copy(update={"states_facts": True})
    report = make_report().model_copy(update={"runs": [stating, silent]})
    note = "Fact rows: – where the prompt version states no facts (extract@2)."
    md = to_markdown(report)
    assert "| Fact R | 0.500 | – | – |" in md and f"\n\n{note}\n" in md
    text = render(summary_table(report))
    assert row_cells(text, "Fact F1") == ["Fact F1", "0.500", "–", "–"] and note in " ".join(text.split())
    assert f'<p class="note">{note}</p>' in to_html(report)
    counted = report.model_copy(update={"runs": [stating, silent.model_copy(update={"states_facts": None})]})
    assert "| Fact R | 0.500 | 0.000 | -0.500 |" in to_markdown(counted)  # a report made before: as counted
    assert "Fact rows:" not in to_markdown(counted)


def test_markdown_escapes_untrusted_text() -> None:
    md = to_markdown(make_report(second_fixture=INJECTION))
    assert INJECTION not in md.replace(f"`{INJECTION}`", "")  # only ever inside code spans
    assert f"#### `{INJECTION}` (failed)" in md


def test_markdown_snapshot() -> None:
    run = PromptRun(
        prompt="p@1",
        prompt_sha256="c" * 64,
        model="m",
        mode="json",
        metrics=Metrics(
            fixtures=1,
            failed_fixtures=0,
            entities=PRF(tp=1, predicted=2, gold=1),
            entities_untyped=PRF(tp=1, predicted=2, gold=1),
            relations=PRF(tp=1, predicted=2, gold=4),
            relations_lenient=PRF(tp=2, predicted=2, gold=4),
            relations_given_endpoints=Recall(tp=1, gold=3),
            relation_misses=RelationMisses(no_endpoint=1, unrelated=1, mislabelled=1),
            per_entity_type={"person": PRF(tp=1, predicted=2, gold=1)},
            schema_valid_first_try=1.0,
            success_rate=1.0,
            mean_attempts=1.0,
            calls=1,
            prompt_tokens=1000,
            cached_tokens=400,
            completion_tokens=50,
            requests_made=1,
            latency_p50_s=0.5,
            latency_p95_s=0.5,
        ),
        fixtures=[
            FixtureResult(
                fixture="f1",
                entities=PRF(tp=1, predicted=2, gold=1),
                entities_untyped=PRF(tp=1, predicted=2, gold=1),
                relations=PRF(tp=1, predicted=2, gold=4),
                relations_lenient=PRF(tp=2, predicted=2, gold=4),
                relations_given_endpoints=Recall(tp=1, gold=3),
                relation_misses=RelationMisses(no_endpoint=1, unrelated=1, mislabelled=1),
                spurious_entities=["person:Eve"],
                missed_relations=["Ana -works_for-> Globex", "Ana -knows-> Ben", "Eve -knows-> Ana"],
                spurious_relations=["Ana -member_of-> Globex"],
                prediction=Prediction(fixture="f1"),
            )
        ],
    )
    report = Report(
        created_at=CREATED, fixtures_dir="fx", dataset_sha256="f" * 64, fixture_ids=["f1"], runs=[run]
    )
    expected = """\
# Eval report

- Created: 2025-01-02T03:04:05+00:00
- Fixtures dir: `fx`
- Dataset sha256: `ffffffffffff`
- Fixtures: 1
- Runs: 1

## Summary

| Metric | p@1 (m) |
| --- | ---: |
| Entity P | 0.500 |
| Entity R | 1.000 |
| Entity F1 | 0.667 |
| Entity F1 (untyped) | 0.667 |
| Relation P | 0.500 |
| Relation R | 0.250 |
| Relation F1 | 0.333 |
| Relation P (lenient) | 1.000 |
| Relation R (lenient) | 0.500 |
| Relation F1 (lenient) | 0.667 |
| Relation R given endpoints | 0.333 |
| Missed relations: no endpoint | 1 |
| Missed relations: unrelated | 1 |
| Missed relations: mislabelled | 1 |
| Windows without a re-ask | 100.0% |
| Success rate | 100.0% |
| Re-asks per window | 0.00 |
| Answers per window | 1.00 |
| Prompt tokens | 1,000 |
| Cached prompt tokens | 400 |
| Completion tokens | 50 |
| Requests made | 1 |
| Cached fixtures | 0 |
| Latency p50 (s) | 0.50 |
| Latency p95 (s) | 0.50 |
| Failed fixtures | 0 |
| Dropped items | 0 |
| Injections obeyed (fixtures) | – |

## Comparisons

No comparisons.

## Entity types

| Type | p@1 (m) P | p@1 (m) R | p@1 (m) F1 | p@1 (m) gold |
| --- | ---: | ---: | ---: | ---: |
| person | 0.500 | 1.000 | 0.667 | 1 |

## Relation types

None.

## Per fixture

### p@1 (m)

#### `f1`

Entities P 0.500 · R 1.000 · F1 0.667; relations P 0.500 · R 0.250 · F1 0.333

Relations lenient F1 0.667, recall given endpoints 0.333 (1 of 3); missed: 1 no endpoint, 1 unrelated, 1 mislabelled

- Spurious entities:
  - `person:Eve`
- Missed relations:
  - `Ana -works_for-> Globex`
  - `Ana -knows-> Ben`
  - `Eve -knows-> Ana`
- Spurious relations:
  - `Ana -member_of-> Globex`
"""
    assert to_markdown(report) == expected
    assert to_markdown(report) == to_markdown(Report.model_validate_json(report.model_dump_json()))


# --------------------------------------------------------------------------- HTML


def test_html_is_one_offline_document() -> None:
    page = to_html(make_report())
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<html") == 1 and page.count("</html>") == 1
    assert page.rstrip().endswith("</html>")
    assert page.count("<body") == 1 and page.count("<style>") == 1
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page.lower()
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert '<a href="#summary">' in page and '<section id="fixtures">' in page


def test_html_escapes_report_text() -> None:
    page = to_html(make_report(second_fixture=INJECTION))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert INJECTION not in page
    assert "<script" not in page.lower()


def test_html_one_details_per_fixture_with_diffs() -> None:
    page = to_html(make_report())
    assert page.count('<details id="fixture-') == 2
    alpha, beta = page.split('<details id="fixture-')[1:]
    assert alpha.count('<div class="run">') == 2  # both runs side by side
    assert '<ul class="items missed"><li><code>person:Bob</code></li></ul>' in alpha
    assert '<ul class="items spurious"><li><code>org:Acme</code></li></ul>' in alpha
    assert "<code>Alice -works_on-&gt; Apollo</code>" in alpha
    assert "failed: TimeoutError: request timed out after 30s" in beta
    assert '<span class="badge failed">' in beta
    assert "+0.500 [+0.125, +0.750]" in page


def test_html_is_deterministic() -> None:
    assert to_html(make_report()) == to_html(make_report())


# --------------------------------------------------------------------------- files


def test_write_report_files(tmp_path: Path) -> None:
    report = make_report()
    out = tmp_path / "nested" / "out"
    paths = write_report_files(report, out)
    assert set(paths) == {"json", "md", "html"}
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.md"]
    assert paths["md"].read_text(encoding="utf-8") == to_markdown(report)
    assert paths["html"].read_text(encoding="utf-8") == to_html(report)
    assert Report.model_validate_json(paths["json"].read_text(encoding="utf-8")) == report


def test_reports_say_what_a_noted_model_is() -> None:
    report = make_report()
    assert "- Model " not in to_markdown(report)  # no note, no line
    report.runs[1].model = "local"
    report.runs[1].model_note = "gemma <270M> (smoke test only)"
    markdown, html = to_markdown(report), to_html(report)
    assert "- Model `local`: gemma <270M> (smoke test only)" in markdown
    assert "<dt>Model <code>local</code></dt><dd>gemma &lt;270M&gt; (smoke test only)</dd>" in html


def test_html_draws_every_chart_as_inline_svg() -> None:
    page = to_html(make_report())
    for chart_id in ("chart-fixture-f1", "chart-comparisons", "chart-entity-types", "chart-relation-types"):
        assert f'<svg class="chart" id="{chart_id}"' in page
    assert '<svg class="chart" id="chart-cost"' in page
    svg = page.split('id="chart-fixture-f1"', 1)[1].split("</svg>", 1)[0]
    assert svg.count('<rect class="bar"') >= 2 and "<title>" in svg
    assert "<script" not in page.lower() and "<img" not in page


def test_html_charts_escape_report_text() -> None:
    page = to_html(make_report(second_fixture=INJECTION))
    charts = "".join(part.split("</svg>", 1)[0] for part in page.split("<svg")[1:])
    assert "&lt;script&gt;" in charts and INJECTION not in page


def test_html_explains_how_to_read_it() -> None:
    page = to_html(make_report())
    section = page.split('<section id="how-to-read">', 1)[1].split("</section>", 1)[0]
    for term in (
        "Precision (P)",
        "Recall (R)",
        "F1",
        "Untyped",
        "Windows without a re-ask",
        "Success rate",
        "Re-asks per window",
        "Answers per window",
        "Δ and 95% CI",
    ):
        assert f"<dt>{term}</dt>" in section
    assert "paired bootstrap" in section


def test_html_template_ships_inside_the_package() -> None:
    from importlib.resources import files

    templates = files("bub_semantic_memory.evals.reports").joinpath("templates")
    assert templates.joinpath("report.html.j2").is_file() and templates.joinpath("report.css").is_file()
