"""Chart geometry: bars proportional to values, undefined values drawn as "–", intervals around zero."""

from __future__ import annotations

from bub_semantic_memory.evals.reports._charts import (
    MISSING,
    BarRow,
    Chart,
    Interval,
    IntervalRow,
    bar_panels,
    interval_panels,
    series_for,
)

RUNS = series_for(["extract@1", "extract@2"])


def fmt(value: float) -> str:
    return f"{value:.3f}"


def scores_chart(rows: list[BarRow]) -> Chart:
    return bar_panels(
        chart_id="c",
        title="t",
        description="d",
        series=RUNS,
        panels=("Entity F1", "Relation F1"),
        rows=rows,
        fmt=fmt,
        panel_width=200.0,
    )


def test_series_get_distinct_colours_in_order() -> None:
    colours = [s.color for s in series_for([f"r{i}" for i in range(6)])]
    assert len(set(colours)) == 6 and [s.label for s in RUNS] == ["extract@1", "extract@2"]


def test_bar_length_is_proportional_to_the_score() -> None:
    chart = scores_chart([BarRow("fx", ((0.25, 1.0), (0.5, 0.75)))])
    assert [b.width for b in chart.bars] == [50.0, 200.0, 100.0, 150.0]
    assert [b.color for b in chart.bars] == [RUNS[0].color, RUNS[1].color] * 2
    assert chart.bars[0].title == "extract@1 · fx · Entity F1: 0.250"
    values = [label.text for label in chart.labels if label.kind == "value"]
    assert values == ["0.250", "1.000", "0.500", "0.750"]


def test_an_undefined_score_draws_no_bar_and_reads_a_dash() -> None:
    chart = scores_chart([BarRow("fx", ((None, 0.5), (0.0, None)), notes=("✗", ""))])
    assert [b.width for b in chart.bars] == [100.0]  # only the one defined, non-zero value
    values = [label.text for label in chart.labels if label.kind == "value"]
    assert values == [f"{MISSING} ✗", "0.500", "0.000 ✗", MISSING]


def test_rows_are_grouped_under_a_heading_when_the_group_changes() -> None:
    rows = [
        BarRow("a-1", ((1.0, 1.0), (1.0, 1.0)), group="a"),
        BarRow("a-2", ((1.0, 1.0), (1.0, 1.0)), group="a"),
    ]
    rows.append(BarRow("b-1", ((1.0, 1.0), (1.0, 1.0)), group="b"))
    chart = scores_chart(rows)
    assert [label.text for label in chart.labels if label.kind == "group"] == ["a", "b"]
    tops = sorted({b.y for b in chart.bars if b.color == RUNS[0].color})
    assert len(tops) == 3 and tops[2] - tops[1] > tops[1] - tops[0]  # a heading sits between a-2 and b-1


def test_unfixed_panels_scale_to_a_round_maximum_each() -> None:
    chart = bar_panels(
        chart_id="cost",
        title="t",
        description="d",
        series=RUNS,
        panels=("Tokens", "Seconds"),
        rows=[BarRow("", ((1200.0, 3400.0), (0.4, 1.6)))],
        fmt=(lambda v: f"{v:,.0f}", lambda v: f"{v:.2f}"),
        fixed_max=None,
        panel_width=100.0,
    )
    assert [round(b.width, 6) for b in chart.bars] == [24.0, 68.0, 20.0, 80.0]  # axes end at 5,000 and 2
    ticks = [label.text for label in chart.labels if label.kind == "tick"]
    assert ticks == ["0", "2,500", "5,000", "0.00", "1.00", "2.00"]


def test_interval_panels_put_zero_in_the_middle_and_span_the_interval() -> None:
    chart = interval_panels(
        chart_id="ci",
        title="t",
        description="d",
        panels=("Entity F1 Δ", "Relation F1 Δ"),
        rows=[IntervalRow("b vs a", (Interval(0.2, 0.1, 0.3, "#146c2e"), None))],
        fmt=lambda v: f"{v:+.2f}",
        panel_width=200.0,
    )
    zero = next(r for r in chart.rules if r.kind == "zero")
    (dot,) = chart.dots
    (ci,) = [r for r in chart.rules if r.kind == "ci"]
    # symmetric axis of ±0.5 (the round number at or above 0.3): 200 units per 1.0
    assert dot.x - zero.x1 == 40.0 and (ci.x1 - zero.x1, ci.x2 - zero.x1) == (20.0, 60.0)
    assert dot.color == ci.color == "#146c2e"
    assert "Δ +0.20, 95% CI [+0.10, +0.30]" in dot.title
    assert MISSING in [label.text for label in chart.labels if label.kind == "value"]
