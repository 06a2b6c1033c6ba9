"""``eval ...`` and ``fixtures ...``: scoring, running and comparing evals; importing fixtures."""

from __future__ import annotations

import typer

app = typer.Typer(
    help="Score extraction against gold fixtures, run prompt versions, compare runs.", no_args_is_help=True
)
fixtures_app = typer.Typer(
    help="Eval fixtures: import plain conversations as Bub tapes with gold.", no_args_is_help=True
)
