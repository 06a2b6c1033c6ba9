"""Chart geometry for the HTML eval report: bars, intervals and labels in SVG user units.

This module owns *where* things go; ``templates/report.html.j2`` turns a :class:`Chart`
into inline SVG markup. Charts are pure functions of the report (deterministic, no
fonts measured: text widths are estimated from character counts), so the same
``report.json`` always renders to the same bytes.

Any score may be ``None`` (undefined, e.g. precision with nothing predicted): its bar
is left out and its label reads "–". Two chart shapes cover the report:

* :func:`bar_panels`: rows (fixtures, types or runs) × panels (metrics), one bar per
  run in each cell. Per-fixture F1, per-type P/R/F1, and tokens/latency per run.
* :func:`interval_panels`: one row per comparison, a point for Δ and a line for its
  95% interval in each panel, around a zero line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "MISSING",
    "PALETTE",
    "Bar",
    "BarRow",
    "Chart",
    "Dot",
    "Interval",
    "IntervalRow",
    "Label",
    "Rule",
    "Series",
    "bar_panels",
    "interval_panels",
    "series_for",
]

PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#7f7f7f", "#f0e442")
"""Run colours (Okabe-Ito, distinguishable with colour-vision deficiencies), cycled."""

MISSING = "–"

_CHAR = 6.4  # estimated width of one character at the charts' 11px font
_BAR = 7.0  # bar thickness
_BAR_GAP = 2.0
_ROW_PAD = 8.0
_GROUP_HEAD = 22.0
_TOP = 40.0  # panel titles and tick labels
_PANEL_GAP = 28.0
_VALUE_ROOM = 56.0  # room right of a bar for its value label


@dataclass(frozen=True)
class Series:
    """One run as the charts draw it: a label and a colour."""

    label: str
    color: str


@dataclass(frozen=True)
class Bar:
    """A horizontal bar; ``title`` is its tooltip (exact value, run, metric)."""

    x: float
    y: float
    width: float
    height: float
    color: str
    title: str


@dataclass(frozen=True)
class Dot:
    """A point (an estimate), with its tooltip."""

    x: float
    y: float
    r: float
    color: str
    title: str


@dataclass(frozen=True)
class Rule:
    """A straight line; ``kind`` is its CSS class (``grid``, ``zero``, ``ci``)."""

    x1: float
    y1: float
    x2: float
    y2: float
    kind: str
    color: str = ""


@dataclass(frozen=True)
class Label:
    """A text label; ``kind`` is its CSS class (``row``, ``group``, ``panel``, ``tick``, ``value``)."""

    x: float
    y: float
    text: str
    kind: str
    anchor: str = "start"


@dataclass(frozen=True)
class Chart:
    """Everything one SVG chart draws, in user units of a ``width`` × ``height`` view box."""

    id: str
    title: str
    description: str
    width: float
    height: float
    series: tuple[Series, ...]
    bars: tuple[Bar, ...] = ()
    dots: tuple[Dot, ...] = ()
    rules: tuple[Rule, ...] = ()
    labels: tuple[Label, ...] = ()


@dataclass(frozen=True)
class BarRow:
    """One row of :func:`bar_panels`: ``values[panel][series]``, ``None`` where undefined.

    ``note`` is appended to a run's value label (``✗`` for a failed extraction);
    ``group`` starts a new titled block of rows when it changes.
    """

    label: str
    values: tuple[tuple[float | None, ...], ...]
    notes: tuple[str, ...] = ()
    group: str = ""


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% interval, coloured by its verdict."""

    delta: float
    low: float
    high: float
    color: str


@dataclass(frozen=True)
class IntervalRow:
    """One row of :func:`interval_panels`: an :class:`Interval` per panel, ``None`` where undefined."""

    label: str
    values: tuple[Interval | None, ...]


@dataclass
class _Canvas:
    bars: list[Bar] = field(default_factory=list)
    dots: list[Dot] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)


def _text_width(text: str) -> float:
    return len(text) * _CHAR


def _label_column(labels: Sequence[str]) -> float:
    return max((_text_width(label) for label in labels), default=0.0) + 16.0


def series_for(labels: Sequence[str]) -> tuple[Series, ...]:
    """A :class:`Series` per run label, coloured from :data:`PALETTE` in order."""
    return tuple(Series(label, PALETTE[i % len(PALETTE)]) for i, label in enumerate(labels))


def _nice_max(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^k at or above ``value`` (an axis end that reads well)."""
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(value))
    return next(step * magnitude for step in (1.0, 2.0, 5.0, 10.0) if step * magnitude >= value * (1 - 1e-9))


def bar_panels(
    *,
    chart_id: str,
    title: str,
    description: str,
    series: Sequence[Series],
    panels: Sequence[str],
    rows: Sequence[BarRow],
    fmt: Callable[[float], str] | Sequence[Callable[[float], str]],
    fixed_max: float | None = 1.0,
    panel_width: float = 200.0,
) -> Chart:
    """Rows × panels, one bar per series in each cell, every panel on its own scale from 0.

    Args:
        fmt: how values (and axis ticks) read: one function, or one per panel.
        fixed_max: the axis end of every panel (1.0 for scores); ``None`` scales each
            panel to a round number at or above its largest value (tokens, seconds).
        panel_width: length of a full-scale bar.
    """
    canvas = _Canvas()
    formats = [fmt] * len(panels) if callable(fmt) else list(fmt)
    label_width = _label_column([row.label for row in rows] + [row.group for row in rows])
    cell = panel_width + _VALUE_ROOM + _PANEL_GAP
    width = label_width + cell * len(panels)
    maxima = [
        fixed_max
        if fixed_max is not None
        else _nice_max(max((v for row in rows for v in row.values[p] if v is not None), default=0.0))
        for p in range(len(panels))
    ]
    row_height = len(series) * (_BAR + _BAR_GAP) - _BAR_GAP + _ROW_PAD
    groups = [row.group for row in rows]
    height = (
        _TOP
        + row_height * len(rows)
        + _GROUP_HEAD * sum(1 for i, g in enumerate(groups) if g and (i == 0 or groups[i - 1] != g))
    )
    for p, name in enumerate(panels):
        left = label_width + cell * p
        canvas.labels.append(Label(left, 14, name, "panel"))
        for tick in (0.0, 0.5, 1.0):
            x = left + panel_width * tick
            canvas.rules.append(Rule(x, _TOP - 6, x, height, "grid"))
            tick_text = f"{tick:g}" if fixed_max is not None else formats[p](maxima[p] * tick)
            canvas.labels.append(Label(x, _TOP - 10, tick_text, "tick", "middle"))
    y = _TOP
    for index, row in enumerate(rows):
        if row.group and (index == 0 or rows[index - 1].group != row.group):
            canvas.labels.append(Label(4, y + 15, row.group, "group"))
            y += _GROUP_HEAD
        canvas.labels.append(Label(label_width - 8, y + row_height / 2 + 1, row.label, "row", "end"))
        for p, panel in enumerate(panels):
            left = label_width + cell * p
            for s, run in enumerate(series):
                value = row.values[p][s]
                top = y + _ROW_PAD / 2 + s * (_BAR + _BAR_GAP)
                note = row.notes[s] if s < len(row.notes) else ""
                shown = (MISSING if value is None else formats[p](value)) + (f" {note}" if note else "")
                length = 0.0
                if value is not None:
                    length = panel_width * min(max(value / maxima[p], 0.0), 1.0)
                    if length > 0:
                        tip = f"{run.label} · {row.label} · {panel}: {shown}"
                        canvas.bars.append(Bar(left, top, length, _BAR, run.color, tip))
                canvas.labels.append(Label(left + length + 4, top + _BAR - 0.5, shown, "value"))
        y += row_height
    return Chart(
        chart_id,
        title,
        description,
        round(width, 1),
        round(height + 4, 1),
        tuple(series),
        tuple(canvas.bars),
        tuple(canvas.dots),
        tuple(canvas.rules),
        tuple(canvas.labels),
    )


def interval_panels(
    *,
    chart_id: str,
    title: str,
    description: str,
    panels: Sequence[str],
    rows: Sequence[IntervalRow],
    fmt: Callable[[float], str],
    panel_width: float = 260.0,
) -> Chart:
    """One row per comparison: Δ as a point, its 95% interval as a line, 0 marked in every panel.

    All panels share one symmetric scale, so intervals compare across panels.
    """
    canvas = _Canvas()
    label_width = _label_column([row.label for row in rows])
    extent = max(
        (abs(v) for row in rows for c in row.values if c is not None for v in (c.delta, c.low, c.high)),
        default=0.0,
    )
    half = _nice_max(extent) if extent > 0 else 0.1
    cell_width = panel_width + _PANEL_GAP + _VALUE_ROOM
    width = label_width + cell_width * len(panels)
    row_height = 26.0
    height = _TOP + row_height * len(rows) + 4

    def x_of(left: float, value: float) -> float:
        return left + panel_width * (value + half) / (2 * half)

    for p, name in enumerate(panels):
        left = label_width + cell_width * p
        canvas.labels.append(Label(left, 14, name, "panel"))
        for tick in (-half, 0.0, half):
            x = x_of(left, tick)
            canvas.rules.append(Rule(x, _TOP - 6, x, height, "zero" if tick == 0 else "grid"))
            canvas.labels.append(Label(x, _TOP - 10, fmt(tick), "tick", "middle"))
    for index, row in enumerate(rows):
        middle = _TOP + row_height * index + row_height / 2
        canvas.labels.append(Label(label_width - 8, middle + 4, row.label, "row", "end"))
        for p, panel in enumerate(panels):
            left = label_width + cell_width * p
            cell = row.values[p]
            if cell is None:
                canvas.labels.append(Label(x_of(left, 0.0) + 6, middle + 4, MISSING, "value"))
                continue
            low, high = x_of(left, cell.low), x_of(left, cell.high)
            canvas.rules.append(Rule(low, middle, high, middle, "ci", cell.color))
            canvas.labels.append(
                Label(max(high, x_of(left, cell.delta) + 4.5) + 5, middle + 4, fmt(cell.delta), "value")
            )
            tip = f"{row.label} · {panel}: Δ {fmt(cell.delta)}, 95% CI [{fmt(cell.low)}, {fmt(cell.high)}]"
            canvas.dots.append(Dot(x_of(left, cell.delta), middle, 4.5, cell.color, tip))
    return Chart(
        chart_id,
        title,
        description,
        round(width, 1),
        round(height, 1),
        (),
        (),
        tuple(canvas.dots),
        tuple(canvas.rules),
        tuple(canvas.labels),
    )
