"""``extract`` and ``show``: run the extractor on a tape file, print what would be injected; the
``memory`` group (``search`` here, the edit verbs in :mod:`._edit_cmd`, export and import in
:mod:`._export_cmd`)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from bub_semantic_memory._models import Snapshot
from bub_semantic_memory.cli._app import PROMOTED_PROMPT, Command, new_app
from bub_semantic_memory.cli._common import (
    TAPES_DIR_OPTION,
    fail,
    handle_errors,
    is_verbose,
    spinner,
    stderr,
    stdout,
    tape_store,
)
from bub_semantic_memory.cli._edit_cmd import SESSION, tape_name
from bub_semantic_memory.cli._edit_cmd import register as register_edits
from bub_semantic_memory.cli._export_cmd import register as register_export
from bub_semantic_memory.cli._options import (
    API_KEY,
    BASE_URL,
    BUDGET,
    DEADLINE,
    FOLDING_PROMPT,
    MODE,
    MODEL,
    PASSAGE_SHARE,
    PROMPTS_DIR,
    REASKS,
    REQUEST_TIMEOUT,
    extractor_config,
    tape_setup,
)
from bub_semantic_memory.extraction import Extractor
from bub_semantic_memory.memory import MemoryGraph
from bub_semantic_memory.tape import Entry, ReadReport, read_tape_file

if TYPE_CHECKING:  # the stores and the agent layer import bub: loaded when a command runs
    from bub_semantic_memory.agent import ExtractionLag, MemoryService


def register(app: typer.Typer, *, verbs_at_top: bool = False) -> None:
    """Add the memory commands to ``app`` (the console script, or bub's ``memory`` group):
    ``extract``, ``show``, and the ``memory`` verbs on a tape's stored memory; with
    ``verbs_at_top`` the verbs are also commands of ``app`` itself, and their group is unlisted."""
    app.command("extract", cls=Command)(extract)
    app.command("show", cls=Command)(show)
    verbs = new_app(
        "A tape's stored memory: search it, forget, correct, merge, end, undo, export and import."
    )
    for group in (verbs, app) if verbs_at_top else (verbs,):
        group.command("search", cls=Command)(search)
        register_edits(group)
        register_export(group)
    app.add_typer(verbs, name="memory", hidden=verbs_at_top)


@handle_errors
def extract(
    tape_file: Path = typer.Argument(..., help="A Bub tape JSONL file.", exists=True, dir_okay=False),
    model: str = MODEL,
    base_url: str | None = BASE_URL,
    api_key: str | None = API_KEY,
    mode: str = MODE,
    prompt: str = typer.Option(PROMOTED_PROMPT, "--prompt", "-p", help="Prompt version, e.g. extract@3."),
    prompts_dir: Path | None = PROMPTS_DIR,
    reasks: int | None = REASKS,
    deadline: float | None = DEADLINE,
    request_timeout: float | None = REQUEST_TIMEOUT,
    tape: str | None = typer.Option(
        None, "--tape", help="Tape name for the store (default: the file's stem)."
    ),
    store: bool = typer.Option(
        False, "--store", help="Extract after the stored watermark and append the snapshots."
    ),
    tapes_dir: Path | None = TAPES_DIR_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the snapshots as a JSON array."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Also write the snapshots to FILE (JSON lines)."
    ),
) -> None:
    """Extract entities and relations from a tape file and print the snapshot(s)."""
    from bub_semantic_memory.stores import SnapshotStore, validate_tape_name

    name = validate_tape_name(tape or tape_file.name.removesuffix(".jsonl"))
    entries = _read_tape(tape_file)

    config = extractor_config(
        model=model,
        base_url=base_url,
        api_key=api_key,
        mode=mode,
        prompt=prompt,
        prompts_dir=prompts_dir,
        reasks=reasks,
        deadline=deadline,
        request_timeout=request_timeout,
    )

    async def run() -> list[Snapshot]:
        async with Extractor(config) as extractor:
            if not store:
                return await extractor.extract(entries, tape=name)
            async with tape_store(tapes_dir) as backend:
                snapshots_store = SnapshotStore(backend)
                memory, _ = await snapshots_store.graph(name, extractor.prompt.ontology)
                stored: list[Snapshot] = []
                async for snapshot in extractor.iter_extract(entries, tape=name, memory=memory):
                    await snapshots_store.append(snapshot)
                    stored.append(snapshot)
                if not stored:
                    stderr.print(f"Nothing new after entry {memory.watermark} of tape {name}.")
                return stored

    with spinner(stderr, f"Extracting {len(entries)} entries of {tape_file.name} with {model}"):
        snapshots = asyncio.run(run())
    if out is not None:
        out.write_text("".join(s.model_dump_json() + "\n" for s in snapshots), encoding="utf-8")
    if as_json:
        stdout.print(
            json.dumps([s.model_dump(mode="json") for s in snapshots], indent=2, ensure_ascii=False),
            markup=False,
        )
        return
    _print_snapshots(snapshots)


def _read_tape(path: Path) -> list[Entry]:
    """The tape's entries; one summary line for skipped lines (each one with --verbose); none: exit 1."""
    level = logging.WARNING if is_verbose() else logging.DEBUG
    entries, report = read_tape_file(path, report=ReadReport(source=str(path), log_level=level))
    if not entries:
        fail(f"no entries in {path}: " + (report.summary() if report.issues else "the file is empty"))
    if report.issues:
        stderr.print(f"Read {report.entries} entries; {report.summary()}", markup=False)
    return entries


def _print_snapshots(snapshots: list[Snapshot]) -> None:
    for snapshot in snapshots:
        usage = snapshot.usage
        stdout.print(
            f"# {snapshot.tape} entries {snapshot.first_entry_id}-{snapshot.last_entry_id} "
            f"· {snapshot.prompt} · {snapshot.model} ({snapshot.mode}) · "
            f"{usage.prompt_tokens}+{usage.completion_tokens} tokens, {usage.requests} request(s), "
            f"{usage.reasks} re-ask(s), {usage.latency_s:.2f}s",
            markup=False,
        )
        for entity in snapshot.entities:
            aliases = f" (also {', '.join(entity.aliases)})" if entity.aliases else ""
            stdout.print(f"  {entity.key}: {entity.name}{aliases}", markup=False)
        for relation in snapshot.relations:
            stdout.print(f"  {relation.source} -{relation.type}-> {relation.target}", markup=False)
        if not snapshot.entities and not snapshot.relations:
            stdout.print("  (nothing to remember in these entries)")


async def _load(service: MemoryService, name: str, backend: Any) -> MemoryGraph:
    """The tape's memory, loaded the way the plugin loads it (the skipped lines said on stderr).

    A tape without any memory is an error (exit 1) that says whether the tape exists and which
    tapes have a memory: a mistyped or unhashed name must not look like an empty memory.
    """
    graph = await service.load(name, backend)
    skipped = service.stats["unreadable_snapshots"]
    if skipped:
        stderr.print(f"Skipped {skipped} unreadable line(s) of the memory sidecar.", markup=False)
    if not graph.snapshot_count and not len(graph):
        raise _NoMemory(await _no_memory(name, backend))
    return graph


_LISTED = 5
"""Tapes a "no memory" error names before it counts the rest."""


class _NoMemory(Exception):
    """The tape has no memory: the message says why and which tapes have one."""


async def _no_memory(name: str, backend: Any) -> str:
    from bub_semantic_memory.stores import fetch_tape, tapes_with_memory

    entries = len(await fetch_tape(backend, name))
    why = f"the tape has {entries} entries, none extracted yet" if entries else "no such tape in the store"
    known = await tapes_with_memory(backend)
    if not known:
        return f"no memory for tape {name} ({why}); no tape has a memory yet"
    more = f" and {len(known) - _LISTED} more" if len(known) > _LISTED else ""
    return f"no memory for tape {name} ({why}); tapes with a memory: {', '.join(known[:_LISTED])}{more}"


def _load_or_fail(
    name: str,
    tapes_dir: Path | None,
    *,
    prompt: str | None,
    prompts_dir: Path | None,
    with_lag: bool = False,
    **policy: Any,
) -> tuple[MemoryService, MemoryGraph, ExtractionLag | None]:
    """The tape's memory in the tape store ``--tapes-dir`` names (else bub's), as the plugin loads
    it, under the setup :func:`~._options.tape_setup` makes, and (``with_lag``) what of the tape
    waits for extraction; no memory: exit 1."""

    from bub_semantic_memory.agent import MemoryService

    async def load() -> tuple[MemoryService, MemoryGraph, ExtractionLag | None]:
        async with tape_store(tapes_dir) as backend:
            setup = await tape_setup(backend, name, prompt=prompt, prompts_dir=prompts_dir, **policy)
            service = MemoryService.from_setup(setup, extractor=lambda: None)
            graph = await _load(service, name, backend)
            lag = None
            if with_lag:
                try:
                    lag = await service.lag(name, backend)
                except Exception as exc:  # the memory is shown all the same
                    stderr.print(f"Cannot say what tape {name} lags: {exc}", markup=False)
            return service, graph, lag

    try:
        return asyncio.run(load())
    except _NoMemory as exc:
        fail(str(exc))


@handle_errors
def search(
    query: str = typer.Argument(..., help="What to look for: a question or keywords."),
    tape: str | None = typer.Option(None, "--tape", help="Tape name (or use --session)."),
    session: str | None = SESSION,
    workspace: Path = typer.Option(Path(), "--workspace", "-w", help="The bub workspace of --session."),
    entity_type: str | None = typer.Option(None, "--type", help="Only entities of this type."),
    limit: int = typer.Option(10, "--limit", "-n", min=1, max=50, help="At most this many facts."),
    prompt: str | None = FOLDING_PROMPT,
    prompts_dir: Path | None = PROMPTS_DIR,
    tapes_dir: Path | None = TAPES_DIR_OPTION,
    as_json: bool = typer.Option(
        False, "--json", help="Print the results as JSON (as the memory.search tool returns them)."
    ),
) -> None:
    """Search a tape's memory as the agent's memory.search tool does: facts and entities, best first."""
    from bub_semantic_memory.agent import search_memory

    name = tape_name(tape, session, workspace)
    service, _, _ = _load_or_fail(name, tapes_dir, prompt=prompt, prompts_dir=prompts_dir)
    result = search_memory(service, name, query, entity_type=entity_type, limit=limit)
    if as_json:
        stdout.print(json.dumps(result, indent=2, ensure_ascii=False), markup=False)
        return
    if "error" in result:
        fail(f"{name}: {result['error']}")
    if not result["facts"] and not result["entities"]:
        stderr.print(f"Nothing in the memory of {name} matches {query!r}.", markup=False)
        return
    for fact in result["facts"]:
        status = "" if fact["current"] else f" (superseded at entry {fact['valid_until']})"
        stdout.print(
            f"- {fact['fact']}{status}  [entries {', '.join(map(str, fact['evidence'])) or '-'}]",
            markup=False,
        )
        for said in fact["said"]:
            stdout.print(f"    > {said}", markup=False)
    if result["entities"]:
        names = ", ".join(f"{e['name']} ({e['type']})" for e in result["entities"])
        stdout.print(f"Entities: {names}", markup=False)


@handle_errors
def show(
    tape: str | None = typer.Argument(
        None,
        help="Tape name (bub's: <md5 of the workspace>__<md5 of the session>, 16 hex digits each), "
        "or use --session.",
    ),
    session: str | None = typer.Option(
        None, "--session", help="A bub session id, with --workspace ('bub run' uses cli:local)."
    ),
    workspace: Path = typer.Option(Path(), "--workspace", "-w", help="The bub workspace of --session."),
    query: str = typer.Option("", "--query", "-q", help="The user message to rank facts for."),
    budget: int = BUDGET,
    passage_share: float = PASSAGE_SHARE,
    prompt: str | None = FOLDING_PROMPT,
    prompts_dir: Path | None = PROMPTS_DIR,
    tapes_dir: Path | None = TAPES_DIR_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the block and its statistics as JSON."),
) -> None:
    """Print exactly the memory block that would be injected for TAPE (on stderr: what of the
    tape waits for extraction, and how long it should take at the tape's pace)."""
    from bub_semantic_memory.stores import session_tape_name, validate_tape_name

    if (tape is None) == (session is None):
        fail("give either a TAPE name or --session", code=2)
    name = validate_tape_name(tape) if tape is not None else session_tape_name(str(session), workspace)
    service, graph, lag = _load_or_fail(
        name,
        tapes_dir,
        prompt=prompt,
        prompts_dir=prompts_dir,
        with_lag=True,
        budget=budget,
        passage_share=passage_share,
    )
    block = service.render(name, query)  # the plugin's own path: ranked, evidence quoted
    if as_json:
        payload = {
            "tape": name,
            "block": block.text,
            "tokens": block.tokens,
            "budget": budget,
            "entities_shown": block.entities,
            "facts_shown": block.facts,
            "entities_omitted": block.omitted,
            "lines_shown": block.passages,
            "entities": len(graph),
            "relations": graph.relation_count,
            "snapshots": graph.snapshot_count,
            "watermark": graph.watermark,
            "lag": lag.as_dict() if lag else None,
        }
        stdout.print(json.dumps(payload, indent=2, ensure_ascii=False), markup=False)
        return
    if lag is not None and lag.entries:
        stderr.print(f"Tape {name}: {lag.describe()}.", markup=False)
    if not block:
        stderr.print(f"The memory of tape {name} holds nothing to inject.", markup=False)
        return
    stdout.print(block.text, markup=False)
