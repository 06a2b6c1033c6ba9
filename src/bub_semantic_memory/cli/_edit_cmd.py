"""The ``memory`` verbs that edit a tape's memory: forget, set, unset, merge, split, end, undo, edits.

Each verb appends an edit to the tape's memory sidecar (who, when, what), folds the memory
again and prints what changed; ``--json`` prints :meth:`EditResult.as_dict
<bub_semantic_memory.agent._editor.EditResult.as_dict>` (``edit``, ``changes``, ``purge``).
``forget --purge`` also erases the forgotten names from what the sidecar stored before, from
its archives and from the eval cache of that tape. Export and import live in :mod:`._export_cmd`.
"""

from __future__ import annotations

import asyncio
import getpass
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from bub_semantic_memory.cli._common import TAPES_DIR_OPTION, fail, handle_errors, stderr, stdout, tape_store
from bub_semantic_memory.cli._options import FOLDING_PROMPT, PROMPTS_DIR, tape_setup

if TYPE_CHECKING:  # the stores and the agent layer import bub: loaded when a verb runs
    from bub_semantic_memory.agent import EditResult, MemoryEditor
    from bub_semantic_memory.memory import EditBook

__all__ = ["end", "forget", "list_edits", "merge", "register", "set_attribute", "split", "undo", "unset"]

TAPE = typer.Option(None, "--tape", help="Tape name (or use --session).")
SESSION = typer.Option(
    None, "--session", help="A bub session id, with --workspace ('bub run' uses cli:local)."
)
WORKSPACE = typer.Option(Path(), "--workspace", "-w", help="The bub workspace of --session.")
PROMPT = FOLDING_PROMPT
BY = typer.Option(None, "--by", help="Who makes the edit, for the log (default: cli:<login name>).")
JSON = typer.Option(False, "--json", help="Print the edit, what it changed and what a purge erased, as JSON.")


def register(verbs: typer.Typer) -> None:
    """Add the edit verbs to the ``memory`` group."""
    verbs.command("forget")(forget)
    verbs.command("set")(set_attribute)
    verbs.command("unset")(unset)
    verbs.command("merge")(merge)
    verbs.command("split")(split)
    verbs.command("end")(end)
    verbs.command("undo")(undo)
    verbs.command("edits")(list_edits)


def tape_name(tape: str | None, session: str | None, workspace: Path) -> str:
    """The tape of ``--tape``, or of ``--session`` in ``--workspace`` (one of them, else a usage error)."""
    if (tape is None) == (session is None):
        fail("give either --tape NAME or --session", code=2)
    from bub_semantic_memory.stores import session_tape_name, validate_tape_name

    return validate_tape_name(tape) if tape is not None else session_tape_name(str(session), workspace)


def author(by: str | None) -> str:
    """``--by``, or ``cli:`` and the login name."""
    if by:
        return by
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return "cli"


def archive_directory(tapes_dir: Path | None) -> Path:
    """Where bub archives sidecars: beside its tapes (``--tapes-dir``, else ``bub.home/tapes``)."""
    if tapes_dir is not None:
        return tapes_dir
    from bub_semantic_memory._home import bub_home

    return bub_home() / "tapes"


def run_edit(
    name: str,
    *,
    tapes_dir: Path | None,
    prompt: str | None,
    prompts_dir: Path | None,
    by: str | None,
    act: Callable[[MemoryEditor], Awaitable[EditResult]],
) -> EditResult:
    """Open the store, make the edit with a :class:`MemoryEditor`, return what it did."""

    from bub_semantic_memory.agent import MemoryEditor

    async def run() -> EditResult:
        async with tape_store(tapes_dir) as store:
            setup = await tape_setup(store, name, prompt=prompt, prompts_dir=prompts_dir)
            editor = MemoryEditor.from_setup(
                setup, store, name, by=author(by), archive_dir=archive_directory(tapes_dir)
            )
            return await act(editor)

    return asyncio.run(run())


def show(result: EditResult, name: str, as_json: bool) -> None:
    """Print what an edit did: a summary line, then each change (or the ``--json`` data)."""
    if as_json:
        stdout.print(json.dumps(result.as_dict(), indent=2, ensure_ascii=False), markup=False)
        return
    edit, changes = result.edit, result.changes
    stdout.print(f"{edit.summary()}: {changes.counts()}.", markup=False)
    for label, items in changes.as_dict().items():
        for item in items:
            stdout.print(f"  {label.replace('_', ' ')}: {item}", markup=False)
    for note in result.notes:
        stdout.print(f"Note: {note}.", markup=False)
    if result.purge is not None:
        p = result.purge
        stdout.print(
            f"Purged from the {p.store} store: {p.snapshots} snapshot(s) rewritten ({p.items} item(s) taken "
            f"out), {p.checkpoints} checkpoint(s) invalidated, {p.edits} edit(s) reduced to digests, "
            f"{p.archives} archive(s) rewritten, {p.blanked} unreadable line(s) blanked, {p.torn} torn "
            f"chunk(s) removed, {p.eval_cache} eval cache file(s) deleted"
            + (f"; {p.compacted}" if p.compacted else "")
            + (f"; {p.left} other entr(ies) still name it" if p.left else "")
            + ".",
            markup=False,
        )
        if p.again:
            left = "it was complete" if not p.found else "taken out now"
            stdout.print(f"Purged before: {p.found} trace(s) were left ({left}).", markup=False)
        stdout.print("It cannot be undone. Not touched by the purge:", markup=False)
        for copy in p.not_touched:
            stdout.print(f"  - {copy}", markup=False)
    elif edit.op != "undo":
        stdout.print(
            f"Edit {edit.id}; undo with: semantic-memory memory undo {edit.id} --tape {name}", markup=False
        )


def apply_edit(params: dict[str, Any], act: Callable[[MemoryEditor], Awaitable[EditResult]]) -> EditResult:
    """Make an edit on the tape that a verb's options (``ctx.params``) name, and print what it did."""
    name = tape_name(params["tape"], params["session"], params["workspace"])
    result = run_edit(
        name,
        tapes_dir=params["tapes_dir"],
        prompt=params["prompt"],
        prompts_dir=params["prompts_dir"],
        by=params["by"],
        act=act,
    )
    show(result, name, params["as_json"])
    return result


@handle_errors
def forget(
    name: str | None = typer.Argument(None, help="The entity to forget: a name, an alias or a key."),
    relation: tuple[str, str, str] | None = typer.Option(
        None,
        "--relation",
        metavar="SRC TYPE DST",
        help="Forget this relation instead (entity names or keys).",
    ),
    fact: str | None = typer.Option(None, "--fact", help="Forget this stated fact instead (its words)."),
    entity_type: str | None = typer.Option(
        None, "--type", help="The entity's type, when its name is shared."
    ),
    purge: bool = typer.Option(
        False,
        "--purge",
        help="Also erase the names and values from earlier snapshots, checkpoints, archives and the eval "
        "cache of this tape (a person's right to erasure; cannot be undone).",
    ),
    eval_cache: Path = typer.Option(
        Path(".cache/eval"), "--eval-cache", help="The eval response cache --purge searches."
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
    """Forget an entity (with its relations, attributes and the facts about it), a relation or a fact.

    It leaves the memory, every later block and tool result, and every checkpoint stored after
    it; extracting the old entries again never brings it back, a later mention does. Undo it
    with 'memory undo'. With --purge it is also erased from what was stored before.
    """
    if sum(x is not None for x in (name, relation, fact)) != 1:
        fail("give one of NAME, --relation SRC TYPE DST or --fact STATEMENT", code=2)
    tape_of = tape_name(tape, session, workspace)

    async def act(editor: MemoryEditor) -> EditResult:
        if relation is not None:
            return await editor.forget_relation(*relation, purge=purge)
        if fact is not None:
            return await editor.forget_fact(fact, purge=purge)
        assert name is not None
        return await editor.forget(name, entity_type=entity_type, purge=purge)

    result = run_edit(tape_of, tapes_dir=tapes_dir, prompt=prompt, prompts_dir=prompts_dir, by=by, act=act)
    if result.purge is not None and eval_cache.is_dir():
        from bub_semantic_memory.evals.extraction import ResponseCache

        result.purge.eval_cache = ResponseCache(eval_cache).purge(tape_of, result.edit.named_in)
    show(result, tape_of, as_json)


@handle_errors
def set_attribute(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The entity: a name, an alias or a key."),
    key: str = typer.Argument(..., help="The attribute."),
    value: str = typer.Argument(..., help="Its value: it wins over what extraction says, until unset."),
    tape: str | None = TAPE,
    session: str | None = SESSION,
    workspace: Path = WORKSPACE,
    prompt: str | None = PROMPT,
    prompts_dir: Path | None = PROMPTS_DIR,
    tapes_dir: Path | None = TAPES_DIR_OPTION,
    by: str | None = BY,
    as_json: bool = JSON,
) -> None:
    """Set an entity's attribute by hand: extraction never overrides it."""
    apply_edit(ctx.params, lambda editor: editor.set(name, key, value))


@handle_errors
def unset(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The entity: a name, an alias or a key."),
    key: str = typer.Argument(..., help="The attribute to drop."),
    tape: str | None = TAPE,
    session: str | None = SESSION,
    workspace: Path = WORKSPACE,
    prompt: str | None = PROMPT,
    prompts_dir: Path | None = PROMPTS_DIR,
    tapes_dir: Path | None = TAPES_DIR_OPTION,
    by: str | None = BY,
    as_json: bool = JSON,
) -> None:
    """Drop an entity's attribute (a later mention may state it again)."""
    apply_edit(ctx.params, lambda editor: editor.unset(name, key))


@handle_errors
def merge(
    ctx: typer.Context,
    keep: str = typer.Argument(..., help="The entity that stays (a name, an alias or a key)."),
    other: str = typer.Argument(..., help="The entity merged into it: its names become aliases."),
    tape: str | None = TAPE,
    session: str | None = SESSION,
    workspace: Path = WORKSPACE,
    prompt: str | None = PROMPT,
    prompts_dir: Path | None = PROMPTS_DIR,
    tapes_dir: Path | None = TAPES_DIR_OPTION,
    by: str | None = BY,
    as_json: bool = JSON,
) -> None:
    """Merge two entities into one: aliases kept, relations and facts re-pointed (undo with 'split')."""
    apply_edit(ctx.params, lambda editor: editor.merge(keep, other))


@handle_errors
def split(
    ctx: typer.Context,
    keep: str = typer.Argument(..., help="The entity that was kept."),
    other: str = typer.Argument(..., help="The entity merged into it (a name it had, or its key)."),
    tape: str | None = TAPE,
    session: str | None = SESSION,
    workspace: Path = WORKSPACE,
    prompt: str | None = PROMPT,
    prompts_dir: Path | None = PROMPTS_DIR,
    tapes_dir: Path | None = TAPES_DIR_OPTION,
    by: str | None = BY,
    as_json: bool = JSON,
) -> None:
    """Undo a merge: the two entities are two again."""
    apply_edit(ctx.params, lambda editor: editor.split(keep, other))


@handle_errors
def end(
    ctx: typer.Context,
    source: str = typer.Argument(..., help="The relation's source entity."),
    rel_type: str = typer.Argument(..., metavar="TYPE", help="The relation type (lives_in, works_for...)."),
    target: str = typer.Argument(..., help="The relation's target entity."),
    at: int | None = typer.Option(
        None, "--at", min=0, help="The entry from which it no longer holds (default: the tape's last)."
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
    """Close a relation as no longer true (its valid_until); a later mention opens it again."""
    apply_edit(ctx.params, lambda editor: editor.end(source, rel_type, target, until=at))


@handle_errors
def undo(
    ctx: typer.Context,
    edit_id: str = typer.Argument(
        ..., metavar="EDIT", help="The edit's id, or the start of it ('memory edits')."
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
    """Undo an edit (a forget, a set, a merge, an import...): what it changed comes back."""
    apply_edit(ctx.params, lambda editor: editor.undo(edit_id))


@handle_errors
def list_edits(
    tape: str | None = TAPE,
    session: str | None = SESSION,
    workspace: Path = WORKSPACE,
    prompt: str | None = PROMPT,
    prompts_dir: Path | None = PROMPTS_DIR,
    tapes_dir: Path | None = TAPES_DIR_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the edits as a JSON array."),
) -> None:
    """List the edits of a tape's memory, oldest first: id, position, when, who, what, and whether
    it still applies."""
    from bub_semantic_memory.agent import MemoryEditor

    tape_of = tape_name(tape, session, workspace)

    async def run() -> EditBook:
        async with tape_store(tapes_dir) as store:
            setup = await tape_setup(store, tape_of, prompt=prompt, prompts_dir=prompts_dir)
            return (await MemoryEditor.from_setup(setup, store, tape_of, by=author(None)).graph()).edits

    book = asyncio.run(run())
    if as_json:
        found = [
            edit.model_dump(mode="json", exclude_defaults=True) | {"applies": book.is_effective(edit)}
            for edit in book.edits
        ]
        stdout.print(json.dumps(found, indent=2, ensure_ascii=False), markup=False)
        return
    if not book:
        stderr.print(f"The memory of {tape_of} has no edits.", markup=False)
        return
    for edit in book.edits:
        status = "" if book.is_effective(edit) else "  (does not apply: undone, voided or an undo)"
        when = f"{edit.created_at:%Y-%m-%d %H:%M}"
        stdout.print(f"{edit.id}  entry {edit.at}  {when}  {edit.by}  {edit.summary()}{status}", markup=False)
