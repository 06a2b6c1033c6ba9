"""The report in the terminal: ``rich`` tables of the summary, the comparisons and a run's fixtures.

Report text (fixture ids, prompt names, models) is passed to ``rich`` as plain
:class:`~rich.text.Text`, so it is never read as markup; a delta that is better is green, one
that is worse red.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from bub_semantic_memory.evals.extraction._report import Comparison, PromptRun, Report
from bub_semantic_memory.evals.reports._format import Tone
from bub_semantic_memory.evals.reports._grids import Grid, comparison_grid, fixture_grid, summary_grid

__all__ = ["comparison_table", "fixture_table", "summary_table"]

_RICH_STYLES: dict[Tone, str] = {"": "", "good": "green", "bad": "red"}


def _rich_table(grid: Grid, *, title: str | None = None, caption: str | None = None) -> Table:
    table = Table(title=title, caption=" ".join(filter(None, (caption, *grid.notes))) or None)
    for column in grid.columns:
        header = f"{column.title}\n{column.subtitle}" if column.subtitle else column.title
        table.add_column(Text(header), justify="right" if column.numeric else "left")
    for row in grid.rows:
        table.add_row(
            Text(row.label), *(Text(cell.text, style=_RICH_STYLES[cell.tone]) for cell in row.cells)
        )
    return table


def summary_table(report: Report) -> Table:
    """The runs side by side: one column per run (prompt, model below), one row per metric.

    Every run after the first also gets a "Δ vs <first prompt>" column for the score and
    rate rows; the Entity F1 and Relation F1 deltas include the 95% interval of the
    comparison whose candidate is that run (green/red when the interval excludes 0).
    """
    return _rich_table(summary_grid(report), title="Summary")


def comparison_table(comparisons: list[Comparison]) -> Table:
    """One row per comparison: F1 deltas with their 95% intervals and a verdict for each.

    A verdict is "better" when the interval's lower bound is above 0, "worse" when its
    upper bound is below 0, and "no significant difference" otherwise.
    """
    return _rich_table(comparison_grid(comparisons), title="Comparisons (paired bootstrap, 95% CI)")


def fixture_table(run: PromptRun, *, limit: int | None = None) -> Table:
    """One row per fixture of ``run`` (in run order): status, entity and relation P/R/F1, cached.

    With ``limit``, only the first ``limit`` fixtures are shown and the caption says how
    many were left out.
    """
    grid = fixture_grid(run, limit)
    hidden = len(run.fixtures) - len(grid.rows)
    caption = f"{hidden} more fixture(s) not shown" if hidden > 0 else None
    return _rich_table(grid, title=f"{run.prompt} ({run.model})", caption=caption)
