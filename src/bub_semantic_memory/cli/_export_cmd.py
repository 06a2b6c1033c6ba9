"""``memory export`` and ``memory import``: a tape's memory as JSON, GraphML or JSON-LD, and back (JSON)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Literal

import typer

from bub_semantic_memory._errors import EditError
from bub_semantic_memory.cli._common import TAPES_DIR_OPTION, fail, handle_errors, stderr, stdout, tape_store
from bub_semantic_memory.cli._edit_cmd import (
    BY,
    JSON,
    PROMPT,
    SESSION,
    TAPE,
    WORKSPACE,
    author,
    run_edit,
    show,
    tape_name,
)
from bub_semantic_memory.cli._options import PROMPTS_DIR, tape_setup
from bub_semantic_memory.memory import EXPORT_FORMATS, MemoryGraph, export_memory, read_export

__all__ = ["export", "import_memory", "register", "write_private"]


def register(verbs: typer.Typer) -> None:
    """Add ``export`` and ``import`` to the ``memory`` group."""
    verbs.command("export")(export)
    verbs.command("import")(import_memory)


@handle_errors
def export(
    output_format: str = typer.Option(
        "json", "--format", help="json (read back by 'memory import'), graphml or jsonld."
    ),
    history: bool = typer.Option(
        False, "--history", help="Also superseded and ended relations and facts (with their valid_until)."
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write to FILE instead of stdout."),
    tape: str | None = TAPE,
    session: str | None = SESSION,
    workspace: Path = WORKSPACE,
    prompt: str | None = PROMPT,
    prompts_dir: Path | None = PROMPTS_DIR,
    tapes_dir: Path | None = TAPES_DIR_OPTION,
) -> None:
    """Write a tape's memory as it is now: entities, relations and facts (a file is written 0600: a
    purge cannot reach it, so delete it when you erase someone)."""
    if output_format not in EXPORT_FORMATS:
        fail(f"--format must be one of {', '.join(EXPORT_FORMATS)}, not {output_format!r}", code=2)
    chosen: Literal["json", "graphml", "jsonld"] = output_format  # type: ignore[assignment]
    from bub_semantic_memory.agent import MemoryEditor

    name = tape_name(tape, session, workspace)

    async def load() -> MemoryGraph:
        async with tape_store(tapes_dir) as store:
            setup = await tape_setup(store, name, prompt=prompt, prompts_dir=prompts_dir)
            return await MemoryEditor.from_setup(setup, store, name, by=author(None)).graph()

    graph = asyncio.run(load())
    text = export_memory(graph, format=chosen, history=history)
    if out is None:
        stdout.print(text, markup=False, end="")
        return
    write_private(out, text)
    stderr.print(
        f"Wrote {len(graph)} entities, {graph.relation_count} relations and {graph.fact_count} facts "
        f"of {name} to {out} ({chosen}{', with history' if history else ''}).",
        markup=False,
    )


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by the user only (0600, like the memory sidecar): an
    export is a copy of what a person may later ask to erase, and a purge cannot reach it.

    Raises:
        EditError: the file cannot be written.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise EditError(f"cannot write {path}: {exc.strerror or exc}") from exc


@handle_errors
def import_memory(
    file: Path = typer.Argument(
        ..., help="A JSON file written by 'memory export'.", exists=True, dir_okay=False
    ),
    tape: str | None = TAPE,
    session: str | None = SESSION,
    workspace: Path = WORKSPACE,
    prompt: str | None = PROMPT,
    prompts_dir: Path | None = PROMPTS_DIR,
    tapes_dir: Path | None = TAPES_DIR_OPTION,
    by: str | None = BY,
    as_json: bool = JSON,
) -> None:
    """Add an exported memory to a tape's memory (an edit: 'memory undo' takes it out again).

    Into the tape it was exported from, everything is kept; into another tape, the evidence
    entry ids are dropped (they would point at unrelated entries).
    """
    name = tape_name(tape, session, workspace)
    try:
        export_data = read_export(file.read_bytes())
    except OSError as exc:
        raise EditError(f"cannot read {file}: {exc.strerror or exc}") from exc
    result = run_edit(
        name,
        tapes_dir=tapes_dir,
        prompt=prompt,
        prompts_dir=prompts_dir,
        by=by,
        act=lambda editor: editor.import_memory(export_data),
    )
    show(result, name, as_json)
