"""``models``: the local models this package can run, and whether each is ready."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from bub_semantic_memory.cli._common import handle_errors, stdout


def _models_dir() -> Path:
    import bub

    return Path(bub.home) / "models"


@handle_errors
def models(
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """List the local models (``--model local:<name>``): size, licence, sha256, assembled, purpose.

    Works without the 'local' extra; it then says how to install it. A packaged model is
    assembled into <bub home>/models the first time it is used.
    """
    from bub_semantic_memory.local_models import (
        DEFAULT_LOCAL_MODEL,
        INSTALL_HINT,
        REGISTRY,
        assembled_path,
        is_assembled,
    )

    directory = _models_dir()
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
    table = Table(title=f"Local models ({directory})")
    table.add_column("model", no_wrap=True)
    table.add_column("size", no_wrap=True, justify="right")
    table.add_column("state", no_wrap=True)
    for column in ("licence", "sha256", "for"):
        table.add_column(column)
    for row in rows:
        state = "assembled" if row["assembled"] else ("installed" if row["installed"] else "not installed")
        table.add_row(
            f"{row['spec']}" + (" (default)" if row["default"] else ""),
            f"{int(str(row['size_bytes'])) / 1e6:,.0f} MB",
            state,
            str(row["licence"]),
            f"{str(row['sha256'])[:12]}…",
            str(row["purpose"]),
        )
    stdout.print(table)
    if not all(row["installed"] for row in rows):
        stdout.print(f"To install: {INSTALL_HINT}.", markup=False)
    stdout.print("Any GGUF file works too: --model local:/path/to/model.gguf", markup=False)
