"""Helpers shared by the CLI commands: error reporting, logging, stores, output."""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

from bub_semantic_memory._errors import SemanticMemoryError
from bub_semantic_memory._logging import quiet_dependencies

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)
_state = {"verbose": False}

API_KEY_ENV = ["BUB_SEMANTIC_MEMORY_API_KEY", "OPENAI_API_KEY"]


def configure_logging(verbose: bool) -> None:
    """Warnings (or everything with --verbose) to stderr; Instructor's per-attempt noise only when verbose."""
    _state["verbose"] = verbose
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
    quiet_dependencies()


def is_verbose() -> bool:
    """Whether ``--verbose`` was given."""
    return _state["verbose"]


def handle_errors[**P, R](func: Callable[P, R]) -> Callable[P, R]:
    """Turn the package's errors into one ``Error:`` line and exit code 1 (tracebacks with --verbose)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except SemanticMemoryError as exc:
            if _state["verbose"]:
                raise
            fail(str(exc))
        except KeyboardInterrupt:
            stderr.print("Interrupted.")
            raise typer.Exit(130) from None

    return wrapper


_PYDANTIC_HINT = re.compile(r"For further information visit \S+")


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``Error: message`` (always one line) on stderr and exit."""
    print_error(message)
    raise typer.Exit(code)


def print_error(message: str) -> None:
    """Print ``Error: message`` on stderr as one line (pydantic's URL hint dropped)."""
    one_line = " ".join(_PYDANTIC_HINT.sub("", message).split())
    stderr.print(f"Error: {one_line}", markup=False)


@contextlib.asynccontextmanager
async def tape_store(tapes_dir: Path | None) -> AsyncIterator[Any]:
    """The tape store to use: ``--tapes-dir`` as a bub file store, else the one bub itself would use."""
    if tapes_dir is not None:
        from bub.store import FileTapeStore

        yield FileTapeStore(tapes_dir)
        return
    from bub_semantic_memory.stores import open_bub_tape_store

    async with open_bub_tape_store() as store:
        yield store


TAPES_DIR_OPTION = typer.Option(
    None,
    "--tapes-dir",
    help="A bub tape directory to use instead of bub's configured store (default: bub's, under BUB_HOME).",
)


def print_table(console: Console, table: Table, *, key_columns: int = 1, attached: str | None = None) -> None:
    """Print ``table`` so that no word is cut: split into parts that fit the console's width.

    rich shrinks a table wider than the terminal (or ``COLUMNS``, or 80 in a log) until
    words turn into ``extrac…``. Here the columns after the first ``key_columns`` (the
    row labels, repeated in every part) go into as many consecutive tables as needed,
    each no wider than its narrowest rendering with whole words. A column whose header
    starts with ``attached`` (the summary's "Δ vs ...") stays with the column before it.
    """
    keys = table.columns[:key_columns]
    blocks: list[list[Column]] = []
    for column in table.columns[key_columns:]:
        header = column.header.plain if isinstance(column.header, Text) else str(column.header)
        if blocks and attached is not None and header.startswith(attached):
            blocks[-1].append(column)
        else:
            blocks.append([column])
    parts: list[list[Column]] = []
    for block in blocks:
        if parts and _min_width(console, table, [*keys, *parts[-1], *block]) <= console.width:
            parts[-1].extend(block)
        else:
            parts.append(list(block))
    for index, columns in enumerate(parts or [[]]):
        part = _table_of(table, [*keys, *columns])
        if index:
            part.title = f"{table.title} (continued)" if table.title else None
        if index < len(parts) - 1:
            part.caption = None
        console.print(part)


def _table_of(template: Table, columns: list[Column]) -> Table:
    part = Table(title=template.title, caption=template.caption)
    for column in columns:
        part.add_column(
            column.header,
            justify=column.justify,
            style=column.style,
            no_wrap=column.no_wrap,
            min_width=_unbroken_width(column) if column.no_wrap else column.min_width,
        )
    for cells in zip(*(list(column.cells) for column in columns), strict=True):
        part.add_row(*cells)
    return part


def _unbroken_width(column: Column) -> int:
    """The width a ``no_wrap`` column needs to show every cell whole.

    rich measures a cell's minimum as its longest word even when the column may not wrap, so
    without this floor a table of such columns is judged to fit and then cut with an ellipsis.
    """
    cells = [column.header, *column.cells]
    return max(cell.cell_len if isinstance(cell, Text) else cell_len(str(cell)) for cell in cells)


def _min_width(console: Console, template: Table, columns: list[Column]) -> int:
    """The table's width with every column at its longest word (measured unclamped by the console)."""
    unbounded = console.options.update_width(10_000)
    return Measurement.get(console, unbounded, _table_of(template, columns)).minimum


@contextlib.contextmanager
def spinner(console: Console, message: str) -> Iterator[None]:
    """A spinner with the elapsed time while a long call runs, on a terminal only (never in logs).

    It draws on ``console`` (stderr in the CLI) and disappears when the call returns, so
    stdout keeps only the result, ``--json`` included.
    """
    if not console.is_terminal:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn(message),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    with progress:
        progress.add_task(message, total=None)
        yield
