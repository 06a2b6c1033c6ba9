"""Making an edit of a memory: find what it is about in the graph, build it, say what it changed.

The builders resolve a person's words ("Alice", ``person:alice-chen``, "Alice lives_in Lisbon",
a fact's statement) against the folded graph and return the :class:`~bub_semantic_memory._edits.Edit`
to store; they raise :class:`~bub_semantic_memory._errors.EditError` when the target is missing or
ambiguous. A forget's digests are taken here, from everything the graph knows the entity by
(every key merged into it, its name and aliases, and the forms people write them in:
:func:`~bub_semantic_memory._mentions.name_forms`), so that re-extraction of old entries under
any of those names is recognised. A form another entity of the memory has too (two people
called Alice) is left alone, and :func:`shared_forms` says which and why.

:func:`changes` compares the graph before and after an edit: what a person is told it removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bub_semantic_memory._edits import Edit, digest, fact_digests, name_digest, relation_digest
from bub_semantic_memory._errors import EditError
from bub_semantic_memory._mentions import SHARED_FORMS, name_forms
from bub_semantic_memory._models import RelationKey, fact_key, normalize_name
from bub_semantic_memory._statements import similarity
from bub_semantic_memory.memory._edit_rules import key_digest
from bub_semantic_memory.memory._facts import SAME_FACT, FactView
from bub_semantic_memory.memory._graph import MemoryGraph

__all__ = [
    "Changes",
    "SharedForm",
    "changes",
    "end_relation",
    "find_edit",
    "find_entity",
    "find_fact",
    "find_relation",
    "forget_entity",
    "forget_fact",
    "forget_relation",
    "merge_entities",
    "set_attribute",
    "shared_forms",
    "split_entities",
    "undo_edit",
    "unset_attribute",
]


def _where(graph: MemoryGraph) -> str:
    return f"the memory of {graph.tape}" if graph.tape else "this memory"


def find_entity(graph: MemoryGraph, name: str, *, entity_type: str | None = None) -> str:
    """The key of the entity ``name`` names: an entity key, a name or an alias.

    Raises:
        EditError: no entity has that name, or several do (the message lists their keys).
    """
    if graph.view(name) is not None:
        return graph.resolve(name)
    keys = list(dict.fromkeys(graph.resolve(k) for k in graph.lookup(name)))
    if entity_type is not None:
        keys = [k for k in keys if (view := graph.view(k)) is not None and view.type == entity_type]
    if not keys:
        kind = f" of type {entity_type}" if entity_type else ""
        raise EditError(f"no entity{kind} named {name!r} in {_where(graph)}")
    if len(keys) > 1:
        raise EditError(f"{name!r} names {len(keys)} entities ({', '.join(keys)}); give the key or the type")
    return keys[0]


def find_relation(graph: MemoryGraph, source: str, rel_type: str, target: str) -> RelationKey:
    """The key of the relation ``source rel_type target`` (entity names or keys).

    Raises:
        EditError: an entity or the relation is not in the memory.
    """
    key = graph.relation_key(find_entity(graph, source), rel_type, find_entity(graph, target))
    if graph.relation(key) is None:
        raise EditError(f"no relation {' '.join(key)} in {_where(graph)}")
    return key


def find_fact(graph: MemoryGraph, statement: str) -> FactView:
    """The stated fact ``statement`` says: the same words, else the one fact that shares most of them.

    Raises:
        EditError: no fact, or several, match.
    """
    folded = normalize_name(statement)
    facts = graph.fact_views()
    exact = [f for f in facts if normalize_name(f.statement) == folded]
    found = exact or [f for f in facts if similarity(f.statement, statement) >= SAME_FACT]
    if not found:
        raise EditError(f"no fact like {statement!r} in {_where(graph)}")
    if len(found) > 1:
        listed = "; ".join(repr(f.statement) for f in found[:5])
        raise EditError(f"{statement!r} matches {len(found)} facts ({listed}); give its exact words")
    return found[0]


def find_edit(graph: MemoryGraph, prefix: str) -> Edit:
    """The edit whose id starts with ``prefix``.

    Raises:
        EditError: no edit or several have such an id.
    """
    found = [e for e in graph.edits.edits if e.id.startswith(prefix)] if prefix else []
    if len(found) != 1:
        what = "no edit" if not found else f"{len(found)} edits"
        raise EditError(f"{what} of {_where(graph)} has an id starting with {prefix!r}")
    return found[0]


def _names(graph: MemoryGraph, key: str) -> tuple[tuple[str, ...], str]:
    view = graph.view(key)
    if view is None:
        raise EditError(f"no entity {key} in {_where(graph)}")
    return (view.name, *view.aliases), view.type


@dataclass(frozen=True)
class SharedForm:
    """A form of a forgotten entity's name that a forget leaves alone: others in the memory have it.

    Attributes:
        form: the folded form ("alice").
        kind: its kind (``first name``, ``surname``, ``honorific``, ``initials``, ``name``).
        others: the names of the other entities that have it.
    """

    form: str
    kind: str
    others: tuple[str, ...]

    def describe(self) -> str:
        """A line for people: what was kept and why."""
        who = ", ".join(self.others[:3]) + (
            f" and {len(self.others) - 3} more" if len(self.others) > 3 else ""
        )
        verb = "has" if len(self.others) == 1 else "have"
        return f"kept the {self.kind} {self.form!r}: {who} in the memory {verb} it too"


def _is_person(entity_type: str) -> bool:
    return entity_type == "person"


def _forms(graph: MemoryGraph, key: str) -> tuple[dict[str, str], dict[str, SharedForm]]:
    """The forms of the entity's names, and those of them that another entity of the memory has too
    (a one-word name or a shared kind of form; a name of several words is the entity's own). An
    entity all of whose names are forms of this one's ("Ms. Chen") is no other: it has no name of
    its own to tell it apart."""
    names, entity_type = _names(graph, key)
    forms = name_forms(names, person=_is_person(entity_type))
    key = graph.resolve(key)
    others: dict[str, dict[str, None]] = {}
    candidates = {
        graph.resolve(k) for form in forms for word in form.split() for k in graph.lookup_word(word)
    }
    candidates |= {graph.resolve(k) for form in forms for k in graph.lookup(form)}
    for other in sorted(candidates - {key}):
        view = graph.view(other)
        if view is None:
            continue
        if all(normalize_name(n) in forms for n in (view.name, *view.aliases)):
            continue  # "Ms. Chen", "A. Chen": no name of its own, so no other person; forgotten too
        for form in name_forms((view.name, *view.aliases), person=_is_person(view.type)):
            others.setdefault(form, {})[view.name] = None
    shared = {
        form: SharedForm(form, kind, tuple(others[form]))
        for form, kind in forms.items()
        if form in others and (kind in SHARED_FORMS or (kind in ("name", "possessive") and " " not in form))
    }
    return forms, shared


def shared_forms(graph: MemoryGraph, key: str) -> list[SharedForm]:
    """The forms of the entity's names that a forget of it leaves alone, since another entity of the
    memory has them too (a possessive is reported with the form it belongs to)."""
    _, shared = _forms(graph, key)
    return [s for form, s in shared.items() if not (form.endswith(" s") and form[:-2] in shared)]


def forget_entity(graph: MemoryGraph, key: str, *, at: int, by: str) -> Edit:
    """Forget an entity: it, its relations, its attributes and the facts about or naming it, by its
    keys, its names and every form of them no other entity of the memory has."""
    names, entity_type = _names(graph, key)
    forms, shared = _forms(graph, key)
    own = [form for form, kind in forms.items() if form not in shared or (kind == "name" and " " in form)]
    match = {key_digest(k) for k in graph.keys_of(key)}
    match |= {name_digest(entity_type, n) for n in names}
    match |= {name_digest(entity_type, form) for form in own}
    match |= {digest("text", form) for form in own}
    hidden = {normalize_name(n) for n in names if normalize_name(n)} | set(own)
    view = graph.view(key)
    said = set(view.evidence) if view is not None else set()
    for relation in graph.edges(key):
        said |= set(relation.evidence)
    for fact in graph.facts_about(key):
        said |= set(fact.evidence)
    return Edit(
        tape=graph.tape,
        op="forget",
        lines=tuple(sorted(e for e in said if e <= at)),
        hide=tuple(sorted({digest("text", form) for form in hidden})),
        at=at,
        by=by,
        entity=graph.resolve(key),
        names=names,
        entity_type=entity_type,
        match=tuple(sorted(match)),
    )


def forget_relation(graph: MemoryGraph, key: RelationKey, *, at: int, by: str) -> Edit:
    """Forget one relation (its endpoints stay)."""
    found = graph.relation(key)
    said = sorted(e for e in (found.evidence if found is not None else ()) if e <= at)
    return Edit(
        tape=graph.tape,
        op="forget",
        at=at,
        by=by,
        relation=key,
        match=(relation_digest(key),),
        lines=tuple(said),
    )


def forget_fact(graph: MemoryGraph, fact: FactView, *, at: int, by: str) -> Edit:
    """Forget one stated fact, and its re-wordings (the same kind, most of the same words)."""
    return Edit(
        tape=graph.tape,
        op="forget",
        at=at,
        by=by,
        fact=fact.statement,
        fact_kind=fact.kind,
        match=(digest("fact", fact_key(fact.kind, fact.statement)),),
        words=tuple(sorted(fact_digests(fact.statement))),
        lines=tuple(sorted(e for e in fact.evidence if e <= at)),
        about=tuple(sorted({key_digest(k) for about in fact.about for k in graph.keys_of(about)})),
    )


def set_attribute(graph: MemoryGraph, key: str, name: str, value: str, *, at: int, by: str) -> Edit:
    """Set an entity's attribute: it wins over what extraction says, until unset or undone."""
    names, entity_type = _names(graph, key)
    if not name.strip() or not value.strip():
        raise EditError("an attribute needs a name and a value")
    return Edit(
        tape=graph.tape,
        op="set",
        at=at,
        by=by,
        entity=graph.resolve(key),
        names=names,
        entity_type=entity_type,
        key=name,
        value=value,
    )


def unset_attribute(graph: MemoryGraph, key: str, name: str, *, at: int, by: str) -> Edit:
    """Drop an entity's attribute (a later mention may state it again)."""
    names, entity_type = _names(graph, key)
    view = graph.view(key)
    if view is None or name not in view.attributes:
        raise EditError(f"{names[0]} has no attribute {name!r} in {_where(graph)}")
    return Edit(
        tape=graph.tape,
        op="unset",
        at=at,
        by=by,
        entity=graph.resolve(key),
        names=names,
        entity_type=entity_type,
        key=name,
    )


def merge_entities(graph: MemoryGraph, keep: str, other: str, *, at: int, by: str) -> Edit:
    """Merge ``other`` into ``keep``: one entity, ``other``'s names kept as aliases.

    Raises:
        EditError: both are already one entity.
    """
    keep, other = graph.resolve(keep), graph.resolve(other)
    if keep == other:
        raise EditError(f"{keep} and {other} are already one entity")
    names, entity_type = _names(graph, keep)
    other_names, _ = _names(graph, other)
    return Edit(
        tape=graph.tape,
        op="merge",
        at=at,
        by=by,
        entity=keep,
        names=names,
        entity_type=entity_type,
        other=other,
        other_names=other_names,
        other_keys=tuple(graph.keys_of(other)),
    )


def split_entities(graph: MemoryGraph, keep: str, other: str, *, at: int, by: str) -> Edit:
    """Undo the merge that made ``other`` (a name it had then, or its key) part of ``keep``.

    Raises:
        EditError: no merge in effect did.
    """
    keep = graph.resolve(keep)
    folded = normalize_name(other)
    merges = [
        e
        for e in graph.edits.edits
        if e.op == "merge"
        and graph.edits.is_effective(e)
        and e.entity is not None
        and graph.resolve(e.entity) == keep
        and (other in (e.other, *e.other_keys) or folded in {normalize_name(n) for n in e.other_names})
    ]
    if not merges:
        raise EditError(f"no merge of {other!r} into {keep} to undo in {_where(graph)}")
    return undo_edit(graph, merges[-1], at=at, by=by)


def end_relation(graph: MemoryGraph, key: RelationKey, *, until: int, at: int, by: str) -> Edit:
    """A relation no longer holds from entry ``until`` on."""
    if until < 0:
        raise EditError(f"entry {until} is not a tape position")
    return Edit(tape=graph.tape, op="end", at=at, by=by, relation=key, until=until)


def undo_edit(graph: MemoryGraph, edit: Edit, *, at: int, by: str) -> Edit:
    """Cancel ``edit`` (an undo cannot itself be undone: make the edit again).

    Raises:
        EditError: ``edit`` is an undo, an erasure (a purged forget) or was undone already.
    """
    if edit.op == "undo":
        raise EditError(f"edit {edit.id} is an undo; make the edit again instead")
    if edit.erases:
        raise EditError(
            f"edit {edit.id} is a purged forget: an erasure cannot be undone (its names are gone from "
            "storage; a later mention in the conversation brings the entity back)"
        )
    if edit.id in graph.edits.undone:
        raise EditError(f"edit {edit.id} was undone already")
    return Edit(tape=graph.tape, op="undo", at=at, by=by, undoes=edit.id)


@dataclass(frozen=True)
class Changes:
    """What an edit changed in a memory (entity keys, relation sentences, fact statements)."""

    entities_removed: list[str] = field(default_factory=list)
    entities_added: list[str] = field(default_factory=list)
    relations_removed: list[str] = field(default_factory=list)
    relations_added: list[str] = field(default_factory=list)
    relations_ended: list[str] = field(default_factory=list)
    facts_removed: list[str] = field(default_factory=list)
    facts_added: list[str] = field(default_factory=list)
    attributes_changed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[str]]:
        """JSON-ready data."""
        return {
            "entities_removed": self.entities_removed,
            "entities_added": self.entities_added,
            "relations_removed": self.relations_removed,
            "relations_added": self.relations_added,
            "relations_ended": self.relations_ended,
            "facts_removed": self.facts_removed,
            "facts_added": self.facts_added,
            "attributes_changed": self.attributes_changed,
        }

    def counts(self) -> str:
        """A line for people: "1 entity, 2 relations and 3 facts removed"."""
        parts = []
        for count, noun, verb in (
            (len(self.entities_removed), "entity", "removed"),
            (len(self.relations_removed), "relation", "removed"),
            (len(self.facts_removed), "fact", "removed"),
            (len(self.entities_added), "entity", "added"),
            (len(self.relations_added), "relation", "added"),
            (len(self.facts_added), "fact", "added"),
            (len(self.relations_ended), "relation", "ended"),
            (len(self.attributes_changed), "attribute", "changed"),
        ):
            if count:
                plural = noun if count == 1 else ("entities" if noun == "entity" else noun + "s")
                parts.append(f"{count} {plural} {verb}")
        return ", ".join(parts) or "nothing changed"


def _relations(graph: MemoryGraph) -> dict[RelationKey, Any]:
    return {r.key: r for r in graph.relations()}


def changes(before: MemoryGraph, after: MemoryGraph) -> Changes:
    """What changed from ``before`` to ``after`` (two folds of one tape's memory)."""
    old_entities = {e.key: e for e in before.entities()}
    new_entities = {e.key: e for e in after.entities()}
    old_relations, new_relations = _relations(before), _relations(after)
    old_facts = {f.key: f.statement for f in before.facts()}
    new_facts = {f.key: f.statement for f in after.facts()}
    attributes = []
    for key in sorted(old_entities.keys() & new_entities.keys()):
        old, new = old_entities[key].attributes, new_entities[key].attributes
        for name in sorted(old.keys() | new.keys()):
            if old.get(name) != new.get(name):
                attributes.append(f"{key} {name}: {old.get(name)!r} -> {new.get(name)!r}")
    ended = [
        " ".join(k)
        for k in sorted(old_relations.keys() & new_relations.keys())
        if old_relations[k].valid_until != new_relations[k].valid_until
    ]
    return Changes(
        entities_removed=sorted(old_entities.keys() - new_entities.keys()),
        entities_added=sorted(new_entities.keys() - old_entities.keys()),
        relations_removed=[" ".join(k) for k in sorted(old_relations.keys() - new_relations.keys())],
        relations_added=[" ".join(k) for k in sorted(new_relations.keys() - old_relations.keys())],
        relations_ended=ended,
        facts_removed=[old_facts[k] for k in sorted(old_facts.keys() - new_facts.keys())],
        facts_added=[new_facts[k] for k in sorted(new_facts.keys() - old_facts.keys())],
        attributes_changed=attributes,
    )
