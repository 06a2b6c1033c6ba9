"""``models``: the local models this package can run, and whether each is ready."""

from __future__ import annotations

import json
import textwrap

import typer
from rich.table import Table

from bub_semantic_memory._home import models_dir
from bub_semantic_memory.cli._common import handle_errors, print_table, stdout


@handle_errors
def models(
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """List the local models (``--model local:<name>``): size, licence, sha256, assembled, purpose.

    Works without the 'local' extra; it then says how to install it. A packaged model is
    assembled into <bub home>/models the first time it is used.
    """
    from bub_semantic_memory.backends import DEFAULT_LOCAL_MODEL, REGISTRY, assembled_path, is_assembled

    directory = models_dir()
    rows = []
    for model in REGISTRY.values():
        ready = is_assembled(model, directory)
        rows.append(
            {
                "name": model.name,
                "spec": "local" if model.name == DEFAULT_LOCAL_MODEL else f"local:{model.name}",
                "default": model.name == DEFAULT_LOCAL_MODEL,
                "size_bytes": model.size,
                "licence": model.licence,
                "sha256": model.sha256,
                "installed": model.packages_installed(),
                "assembled": ready,
                "path": str(assembled_path(model, directory)),
                "purpose": model.purpose,
            }
        )
    if as_json:
        stdout.print(json.dumps(rows, indent=2), markup=False)
        return
    table = Table(title="Local models")
    for column in ("model", "size", "state", "sha256"):
        table.add_column(column, no_wrap=True, justify="right" if column == "size" else "left")
    for row in rows:
        state = "assembled" if row["assembled"] else ("installed" if row["installed"] else "not installed")
        table.add_row(
            _label(row), f"{int(str(row['size_bytes'])) / 1e6:,.0f} MB", state, f"{str(row['sha256'])[:8]}…"
        )
    print_table(stdout, table)
    # What each model is for and its licence are sentences: wrapped at spaces, never cut.
    for row in rows:
        purpose = str(row["purpose"]).removeprefix("default: ")
        _print_wrapped(f"{_label(row)}: {purpose}. Licence: {row['licence']}.", indent="  ")
    for hint in dict.fromkeys(m.install_hint for m in REGISTRY.values() if not m.packages_installed()):
        _print_wrapped(f"To install: {hint}.")
    _print_wrapped("Any GGUF file works too: --model local:/path/to/model.gguf")
    _print_wrapped(f"Packaged models are assembled in {directory}")


def _label(row: dict[str, object]) -> str:
    return f"{row['spec']}" + (" (default)" if row["default"] else "")


def _print_wrapped(text: str, *, indent: str = "") -> None:
    """``text`` in lines no wider than the terminal, broken at spaces only (later lines indented)."""
    lines = textwrap.wrap(
        text,
        max(stdout.width, 20),
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    stdout.print("\n".join(lines), markup=False)
