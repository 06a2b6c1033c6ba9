"""A person's edits of a tape's memory, made on its store: the ``memory`` verbs of the CLI.

:class:`MemoryEditor` loads the tape's memory, builds the edit against it
(:mod:`bub_semantic_memory.memory._edit_builder`), places it at the tape's last entry, appends it to
the sidecar, folds the memory again under it and stores a checkpoint, so later loads are short
and hold the edit. Each method returns an :class:`EditResult`: the edit and what it changed.
``forget(..., purge=True)`` stores the forget as digests only, records it as an erasure and
erases the forgotten names from what the sidecar stored before
(:mod:`bub_semantic_memory.stores._purge`); run again, it reports what was left. An erasure cannot
be undone, and an import leaves out what an erasure of this tape (or of the tape the export came
from) recognises.

An agent never purges: its ``memory.forget`` tool goes through
:meth:`~bub_semantic_memory.agent.MemoryService.forget`, which makes an ordinary, undoable forget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bub_semantic_memory._edits import Edit, digest, name_digest
from bub_semantic_memory._errors import EditError, StoreError
from bub_semantic_memory._mentions import name_forms
from bub_semantic_memory._models import PromptRef, Snapshot, normalize_name
from bub_semantic_memory.memory import Changes, EditBook, MemoryExport, MemoryGraph, changes
from bub_semantic_memory.memory import edit_builder as build
from bub_semantic_memory.stores import (
    PurgeReport,
    SnapshotStore,
    fetch_tape,
    memory_tape_name,
    purge,
    store_kind,
)

if TYPE_CHECKING:
    from bub.store import AsyncTapeStore, TapeStore

    from bub_semantic_memory._ontology import Ontology
    from bub_semantic_memory.agent._setup import MemorySetup

__all__ = ["EditResult", "MemoryEditor"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EditResult:
    """An edit that was stored, what it changed in the memory, and what a purge erased.

    Attributes:
        edit: the edit as stored (a purged forget: its digests only).
        changes: what it changed in the memory.
        purge: what a purge erased or found left.
        notes: what else a person should know (forms of a name left alone and why, what an
            import left out).
    """

    edit: Edit
    changes: Changes
    purge: PurgeReport | None = None
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data (the ``--json`` output of the edit verbs)."""
        return {
            "edit": self.edit.model_dump(mode="json", exclude_defaults=True),
            "changes": self.changes.as_dict(),
            "purge": self.purge.as_dict() if self.purge is not None else None,
            "notes": list(self.notes),
        }


class MemoryEditor:
    """Edits of one tape's memory in one store.

    Args:
        store: the bub tape store holding the tape and its memory sidecar.
        tape: the tape.
        ontology: the ontology the memory is folded with.
        by: who makes the edits (``cli:<login>``).
        archive_dir: where bub archives sidecars (beside its tapes); a purge rewrites them too.
    """

    def __init__(
        self,
        store: TapeStore | AsyncTapeStore,
        tape: str,
        ontology: Ontology | None,
        *,
        by: str,
        archive_dir: Path | None = None,
    ) -> None:
        self.snapshots = SnapshotStore(store)
        self.store = store
        self.tape = tape
        self.ontology = ontology
        self.by = by
        self.archive_dir = archive_dir
        self._graph: MemoryGraph | None = None

    @classmethod
    def from_setup(
        cls,
        setup: MemorySetup,
        store: TapeStore | AsyncTapeStore,
        tape: str,
        *,
        by: str,
        archive_dir: Path | None = None,
    ) -> MemoryEditor:
        """A person's editor of ``tape``'s memory, folding it with ``setup``'s ontology (a setup from
        :meth:`~._setup.MemorySetup.for_tape` folds it with the version that extracted it)."""
        return cls(store, tape, setup.ontology, by=by, archive_dir=archive_dir)

    async def graph(self) -> MemoryGraph:
        """The tape's memory as stored now (read once, then after each edit)."""
        if self._graph is None:
            self._graph = (await self.snapshots.load_graph(self.tape, self.ontology)).graph
        return self._graph

    async def position(self) -> int:
        """The tape entry an edit made now is placed at: the tape's last (or the last one extracted)."""
        graph = await self.graph()
        try:
            entries = await fetch_tape(self.store, self.tape)
        except Exception as exc:  # the memory may outlive its tape (moved, reset)
            logger.warning("cannot read tape %s for its last entry: %s", self.tape, exc)
            entries = []
        return max([graph.extracted_through, *(e.id for e in entries)])

    async def _apply(self, make: Callable[[MemoryGraph, int], Edit]) -> tuple[Edit, MemoryGraph, MemoryGraph]:
        before = await self.graph()
        edit = make(before, await self.position())
        await self.snapshots.append_edit(edit)
        after = await self._reload()
        return edit, before, after

    async def _reload(self) -> MemoryGraph:
        loaded = await self.snapshots.load_graph(self.tape, self.ontology)
        self._graph = graph = loaded.graph
        try:
            await self.snapshots.checkpoint(self.tape, self.ontology, min_tail=1, loaded=loaded)
        except StoreError as exc:  # costs load time only: the edit is stored
            logger.warning("cannot store a checkpoint of tape %s after the edit: %s", self.tape, exc)
        return graph

    async def _result(self, make: Callable[[MemoryGraph, int], Edit], *, purge: bool = False) -> EditResult:
        """Make the edit, or (``purge``) make it, store it as digests only and erase what it forgot
        from what was stored before."""
        if not purge:
            edit, before, after = await self._apply(make)
            return EditResult(edit, changes(before, after))
        before = await self.graph()
        edit = make(before, await self.position())
        await self.snapshots.append_edit(edit.redacted())  # its names are never stored
        report = await self._purge(edit, before, edit.names)
        return EditResult(edit.redacted(), changes(before, await self.graph()), report)

    # -- the verbs -------------------------------------------------------------------------------

    async def forget(self, name: str, *, entity_type: str | None = None, purge: bool = False) -> EditResult:
        """Forget an entity (``purge``: and erase its names from what the sidecar stored before).

        A name already forgotten is purged by its forget, when ``purge`` is asked for; a forget
        already purged is purged again, and the report says what was left. Forms of the name
        another entity of the memory has too are left alone, and the result's notes say which.

        Raises:
            EditError: no such entity (nor a forget of it, for a purge), or an ambiguous name.
        """
        graph = await self.graph()
        try:
            key = build.find_entity(graph, name, entity_type=entity_type)
        except EditError:
            if not purge:
                raise
            return await self._purge_earlier(name)
        shared = tuple(form.describe() for form in build.shared_forms(graph, key))
        result = await self._result(lambda g, at: build.forget_entity(g, key, at=at, by=self.by), purge=purge)
        return EditResult(result.edit, result.changes, result.purge, shared)

    async def forget_relation(
        self, source: str, rel_type: str, target: str, *, purge: bool = False
    ) -> EditResult:
        """Forget one relation (its entities stay)."""
        key = build.find_relation(await self.graph(), source, rel_type, target)
        return await self._result(lambda g, at: build.forget_relation(g, key, at=at, by=self.by), purge=purge)

    async def forget_fact(self, statement: str, *, purge: bool = False) -> EditResult:
        """Forget one stated fact and its re-wordings, and the attribute holding its value of the
        entities it is about."""
        fact = build.find_fact(await self.graph(), statement)
        return await self._result(lambda g, at: build.forget_fact(g, fact, at=at, by=self.by), purge=purge)

    async def _purge(self, edit: Edit, before: MemoryGraph, names: tuple[str, ...]) -> PurgeReport:
        """Erase what ``edit`` forgot; ``names``: the names it was made with (or the one a person gave
        to purge it again), whose forms the forget's digests confirm are searched for in files."""
        person = edit.entity_type == "person"
        known = {*edit.match, *edit.hide}
        terms = [form for form in name_forms(names, person=person) if digest("text", form) in known]
        report = await purge(self.snapshots, edit, before, archive_dir=self.archive_dir, terms=terms)
        await self._reload()  # a new checkpoint: the newest one is no longer a purged stub
        report.not_touched = self._not_touched()
        return report

    def _not_touched(self) -> list[str]:
        """The copies a purge cannot reach, in words."""
        kind = "file" if self.snapshots.directory is not None else store_kind(self.store)
        where = {
            "file": f"the file {self.snapshots.directory}/{self.tape}.jsonl",
            "sqlite": f"the rows of tape {self.tape} in the same SQLite database",
            "postgresql": f"the rows of tape {self.tape} in the same PostgreSQL database, and the "
            "server's write-ahead log (until it is recycled) and base backups",
            "redis": f"the list of tape {self.tape} in the same Redis database, and any RDB snapshot "
            "(dump.rdb) or replica of it",
        }.get(kind, f"tape {self.tape} in bub's tape store")
        return [
            f"the conversation itself, bub's tape, is not rewritten: it still holds every line that named "
            f"it ({where})",
            "export files written with 'memory export' (they are copies: delete them yourself)",
            "backups and copies of the store made outside bub, and free blocks of the disk",
        ]

    async def _purge_earlier(self, name: str) -> EditResult:
        """Purge with the forget that already took ``name`` out of the memory (found by its digests,
        so a purged forget is found too, and purged again)."""
        folded = normalize_name(name)
        graph = await self.graph()
        forgets = [
            e
            for e in graph.edits.edits
            if e.op == "forget"
            and graph.edits.is_effective(e)
            and (
                folded in {normalize_name(n) for n in e.names}
                or name == e.entity
                or not {digest("text", folded), name_digest(e.entity_type or "", folded)}.isdisjoint(e.match)
            )
        ]
        if not forgets:
            raise EditError(
                f"no entity named {name!r} in the memory of {self.tape}, and no forget of it to purge"
            )
        edit = forgets[-1]
        report = await self._purge(edit, graph, edit.names or (name,))
        return EditResult(edit.redacted(), Changes(), report)

    async def set(self, name: str, attribute: str, value: str) -> EditResult:
        """Set an entity's attribute by hand."""
        key = build.find_entity(await self.graph(), name)
        return await self._result(
            lambda g, at: build.set_attribute(g, key, attribute, value, at=at, by=self.by)
        )

    async def unset(self, name: str, attribute: str) -> EditResult:
        """Drop an entity's attribute."""
        key = build.find_entity(await self.graph(), name)
        return await self._result(lambda g, at: build.unset_attribute(g, key, attribute, at=at, by=self.by))

    async def merge(self, keep: str, other: str) -> EditResult:
        """Merge ``other`` into ``keep``."""
        graph = await self.graph()
        keep_key, other_key = build.find_entity(graph, keep), build.find_entity(graph, other)
        return await self._result(
            lambda g, at: build.merge_entities(g, keep_key, other_key, at=at, by=self.by)
        )

    async def split(self, keep: str, other: str) -> EditResult:
        """Undo the merge of ``other`` into ``keep``."""
        keep_key = build.find_entity(await self.graph(), keep)
        return await self._result(lambda g, at: build.split_entities(g, keep_key, other, at=at, by=self.by))

    async def end(self, source: str, rel_type: str, target: str, *, until: int | None = None) -> EditResult:
        """Close a relation at entry ``until`` (default: the tape's last entry)."""
        key = build.find_relation(await self.graph(), source, rel_type, target)
        return await self._result(
            lambda g, at: build.end_relation(g, key, until=at if until is None else until, at=at, by=self.by)
        )

    async def undo(self, edit_id: str) -> EditResult:
        """Cancel the edit whose id starts with ``edit_id``.

        Raises:
            EditError: no such edit, or it cannot be undone (an undo, an erasure).
        """
        edit = build.find_edit(await self.graph(), edit_id)
        return await self._result(lambda g, at: build.undo_edit(g, edit, at=at, by=self.by))

    async def import_memory(self, export: MemoryExport) -> EditResult:
        """Add an exported memory to this tape's: one snapshot, and an ``import`` edit (undo drops it).

        Evidence and validity are entry ids of the exported tape: kept when it is this tape,
        dropped otherwise (they would point at unrelated entries).
        """
        same_tape = export.tape == self.tape
        snapshot = Snapshot(
            tape=self.tape,
            first_entry_id=0,
            last_entry_id=0,
            prompt=PromptRef(name="import", version=export.version, sha256=export.sha256()),
            model="import",
            mode="import",
            entities=tuple(export.entities_for(keep_positions=same_tape)),
            relations=tuple(export.relations_for(keep_positions=same_tape)),
            facts=tuple(export.facts_for(keep_positions=same_tape)),
        )

        def make(graph: MemoryGraph, at: int) -> Edit:
            return Edit(tape=self.tape, op="import", at=at, by=self.by, snapshot=snapshot.id)

        before = await self.graph()
        source = await self._source_erasures(export.tape)
        kept = snapshot
        if source:  # the export's own tape was purged since: what it erased stays erased here too
            kept = EditBook(source).erase(snapshot, lambda r: (r.source, r.type, r.target), lambda k: k)
        kept = await self.snapshots.append(kept, memory=before)  # and what this tape's purges erased
        edit = make(before, await self.position())
        await self.snapshots.append_edit(edit)
        after = await self._reload()
        left_out = sum(
            len(getattr(snapshot, p)) - len(getattr(kept, p)) for p in ("entities", "relations", "facts")
        )
        notes = (
            (
                f"{left_out} item(s) of the export were left out: a purge erased them from the memory "
                f"of {self.tape if not source else export.tape} (an export written before the purge "
                "still holds them: delete it)",
            )
            if left_out
            else ()
        )
        return EditResult(edit, changes(before, after), notes=notes)

    async def _source_erasures(self, tape: str) -> list[Edit]:
        """The erasures of the tape an export was written from, when it is another tape of this store."""
        if tape == self.tape:
            return []
        try:
            memory_tape_name(tape)
            return await self.snapshots.erasures(tape)
        except Exception as exc:  # a tape name this store cannot hold: nothing of it is known here
            logger.debug("no erasures read for tape %r: %s", tape, exc)
            return []
