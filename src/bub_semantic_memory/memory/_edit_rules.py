"""The edits a memory graph applies while it folds: what a person forgot, corrected, merged or ended.

:class:`EditBook` holds a tape's edits (:class:`~bub_semantic_memory._edits.Edit`) and decides,
for each item of each snapshot the graph folds, what of it survives. Its rules:

* **Edits apply in order** (tape position, then time): an ``undo`` cancels the edit it names,
  unless that is an erasure (a purged forget: never undone); a ``forget`` of an entity voids the
  earlier ``set``, ``unset``, ``merge`` and ``end`` edits about it (the agent's forget voids no
  person's ``set``: a person's correction outlives the agent's forget).
* **A forget wins over the entries up to its position.** An entity mention, relation or fact it
  recognises is dropped when everything that states it is at or before the forget's position
  (:attr:`Edit.at`; an item without evidence is placed at its snapshot's last entry). What is
  also stated after it is a new mention: it is kept, with only its later evidence. A forgotten
  entity takes its relations, the facts about it or naming it, and the attribute values naming
  it along; a forgotten fact takes the attribute of the entities it is about that holds its
  value. An entity is recognised by its keys, by a key's name, by its names and by their forms.
* **A set attribute wins over extraction**, at any position, until it is unset or undone; an
  ``unset`` drops the values extracted up to its position.
* **A merge redirects** the merged entity's keys to the kept one, so its mentions, relations and
  facts land there; **an end** closes a relation at its entry unless the relation is stated again
  after the edit.

The graph applies the book *before* it folds anything (a new edit means a new fold, see
:meth:`~bub_semantic_memory.stores.SnapshotStore.load_graph`), so whatever order the snapshots
come in, they meet the same rules: a snapshot replayed after a forget, and a snapshot of old
entries extracted again, are filtered like the first ones were.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Set
from dataclasses import dataclass

from bub_semantic_memory._edits import (
    Edit,
    digest,
    fact_digests,
    mention_digests,
    name_digest,
    relation_digest,
)
from bub_semantic_memory._models import Entity, Fact, Relation, RelationKey, Snapshot
from bub_semantic_memory.memory._facts import SAME_FACT

__all__ = ["EditBook"]


@dataclass(frozen=True, slots=True)
class _Forget:
    match: frozenset[str]
    words: frozenset[str]
    kind: str | None
    at: int
    lines: frozenset[int] = frozenset()
    named: frozenset[str] = frozenset()  # every digest a line that names what it forgets holds
    about: frozenset[str] = frozenset()  # a forgotten fact: the keys of the entities it was about


def _position(evidence: Iterable[int], fallback: int) -> int:
    return max(evidence, default=fallback)


def _later(evidence: tuple[int, ...], position: int) -> tuple[int, ...]:
    return tuple(e for e in evidence if e > position)


def key_digest(key: str) -> str:
    """The digest of an entity key, as a forget's ``match`` holds it."""
    return digest("key", key)


def key_digests(key: str) -> set[str]:
    """The digests a forget may know an entity key by: the key's, and that of the name it was made
    from (``person:ms-chen`` is a person called "ms chen"), so that a key another extraction made
    from another form of the name is recognised too."""
    entity_type, _, slug = key.partition(":")
    return {key_digest(key), name_digest(entity_type, slug.replace("-", " "))} if slug else {key_digest(key)}


AGENT_PREFIX = "agent:"
"""Who an agent's edit is recorded as made by starts with this (``agent:memory.forget``)."""


class EditBook:
    """A tape's edits, ordered, with what they decide for the fold (see the module docstring)."""

    def __init__(self, edits: Iterable[Edit] = ()) -> None:
        self._edits: dict[str, Edit] = {}
        for edit in edits:
            known = self._edits.get(edit.id)
            if known is None or (edit.purged and not known.purged):  # a purge's copy wins
                self._edits[edit.id] = edit
        ordered = sorted(self._edits.values(), key=lambda e: e.order)
        erasures = {e.id for e in ordered if e.erases}
        undone = {e.undoes for e in ordered if e.op == "undo" and e.undoes and e.undoes not in erasures}
        effective = [e for e in ordered if e.op != "undo" and e.id not in undone]
        self.undone: frozenset[str] = frozenset(i for i in undone if i is not None)
        self.suppressed_snapshots = frozenset(
            e.snapshot for e in ordered if e.op == "import" and e.id in undone and e.snapshot
        )
        self._forgets = [
            _Forget(
                match=frozenset(e.match),
                words=frozenset(e.words),
                kind=e.fact_kind,
                at=e.at,
                lines=frozenset(e.lines),
                named=frozenset(e.match) | frozenset(e.hide),
                about=frozenset(e.about),
            )
            for e in effective
            if e.op == "forget"
        ]
        self.erasures = [e for e in effective if e.erases]
        """Forgets whose names were purged: what they recognise is never stored again either."""
        self._forget_edits = [e for e in effective if e.op == "forget"]
        self._void = {e.id for e in effective if e.op != "forget" and self._voided(e, effective)}
        self.redirects: dict[str, str] = {}
        self.merged_names: dict[str, tuple[str, str]] = {}
        self._pins: dict[str, dict[str, str]] = {}
        self._unsets: dict[tuple[str, str], int] = {}
        self._ends: dict[RelationKey, tuple[int, int]] = {}
        for edit in effective:
            if edit.id not in self._void and not edit.purged:
                self._apply(edit)

    def __bool__(self) -> bool:
        return bool(self._edits)

    def __len__(self) -> int:
        return len(self._edits)

    def __contains__(self, edit_id: object) -> bool:
        return edit_id in self._edits

    @property
    def edits(self) -> list[Edit]:
        """Every edit, undone ones and undos included, in the order they apply."""
        return sorted(self._edits.values(), key=lambda e: e.order)

    def is_effective(self, edit: Edit) -> bool:
        """Whether ``edit`` still applies (not undone, not voided by a later forget, not an undo)."""
        return edit.op != "undo" and edit.id not in self.undone and edit.id not in self._void

    def _voided(self, edit: Edit, effective: list[Edit]) -> bool:
        """Whether a later forget of the entity (or of a relation endpoint) ``edit`` is about voids it.

        The agent's forget voids no person's ``set``: text in the tape can make the agent forget,
        and it must not take a person's correction with it."""
        keys = [k for k in (edit.entity, edit.other, *(edit.relation or ())) if k]
        digests = {key_digest(k) for k in keys}
        pinned_by_person = edit.op == "set" and not edit.by.startswith(AGENT_PREFIX)
        return any(
            f.op == "forget"
            and f.order > edit.order
            and digests.intersection(f.match)
            and not (pinned_by_person and f.by.startswith(AGENT_PREFIX))
            for f in effective
        )

    def _apply(self, edit: Edit) -> None:
        if edit.op == "merge" and edit.entity and edit.other:
            for key in dict.fromkeys((edit.other, *edit.other_keys)):
                if key != edit.entity:
                    self.redirects[key] = edit.entity
            if edit.names and edit.entity_type:
                self.merged_names[edit.entity] = (edit.names[0], edit.entity_type)
        elif edit.op == "set" and edit.entity and edit.key is not None and edit.value is not None:
            self._pins.setdefault(edit.entity, {})[edit.key] = edit.value
            self._unsets.pop((edit.entity, edit.key), None)
        elif edit.op == "unset" and edit.entity and edit.key is not None:
            self._pins.get(edit.entity, {}).pop(edit.key, None)
            self._unsets[(edit.entity, edit.key)] = edit.at
        elif edit.op == "end" and edit.relation is not None and edit.until is not None:
            self._ends[edit.relation] = (edit.until, edit.at)

    def hides_line(self, entry_id: int, text: str) -> bool:
        """Whether a transcript line may not be shown as memory: it was said at or before a forget
        and stated what the forget removed, names the forgotten entity (any of its names), or
        holds most of the words of a forgotten fact.

        A note quotes the tape's lines beside the facts; what was forgotten must not come back
        through them. A line said after the forget is shown, as its facts would be kept.
        """
        forgets = [f for f in self._forgets if entry_id <= f.at]
        if not forgets:
            return False
        if any(entry_id in f.lines for f in forgets):
            return True
        mentioned = mention_digests(text)
        if any(not f.named.isdisjoint(mentioned) for f in forgets):
            return True
        said = fact_digests(text) if any(f.words for f in forgets) else frozenset()
        return any(f.words and len(said & f.words) >= SAME_FACT * len(f.words) for f in forgets)

    # -- what survives of a snapshot ------------------------------------------------------------

    def _forgotten_at(self, digests: Set[str]) -> int | None:
        """The position of the latest forget that recognises any of ``digests`` (None: none does)."""
        found = [f.at for f in self._forgets if not f.match.isdisjoint(digests)]
        return max(found, default=None)

    def entities(self, entities: Iterable[Entity], fallback: int) -> tuple[list[Entity], dict[str, int]]:
        """The entity mentions a snapshot keeps, and the keys of those it drops (with the forget's
        position)."""
        if not self._forgets:
            return list(entities), {}
        kept: list[Entity] = []
        dropped: dict[str, int] = {}
        for entity in entities:
            digests = {*key_digests(entity.key), *(name_digest(entity.type, n) for n in entity.names())}
            at = self._forgotten_at(digests)
            if at is None:
                kept.append(entity)
            elif _position(entity.evidence, fallback) <= at:
                dropped[entity.key] = at
            else:
                kept.append(entity.model_copy(update={"evidence": _later(entity.evidence, at)}))
        return kept, dropped

    def relations(
        self,
        relations: Iterable[Relation],
        fallback: int,
        dropped: dict[str, int],
        canonical: Callable[[Relation], RelationKey],
    ) -> list[Relation]:
        """The relations a snapshot keeps (``dropped``: the entity keys its entity mentions lost)."""
        if not self._forgets:
            return list(relations)
        kept: list[Relation] = []
        for relation in relations:
            if relation.source in dropped or relation.target in dropped:
                continue  # an endpoint only this snapshot's forgotten mention named
            key = canonical(relation)
            digests = {relation_digest(key)}
            for k in {relation.source, relation.target, key[0], key[2]}:
                digests |= key_digests(k)
            at = self._forgotten_at(digests)
            if at is not None:
                if _position(relation.evidence, fallback) <= at:
                    continue
                relation = relation.model_copy(update={"evidence": _later(relation.evidence, at)})
            if relation.attributes:
                relation = relation.model_copy(
                    update={"attributes": self.unnamed(relation.attributes, relation.evidence, fallback)}
                )
            kept.append(relation)
        return kept

    def facts(
        self,
        facts: Iterable[Fact],
        fallback: int,
        dropped: dict[str, int],
        resolve: Callable[[str], str],
    ) -> list[Fact]:
        """The facts a snapshot keeps: not forgotten, not about or naming a forgotten entity."""
        if not self._forgets:
            return list(facts)
        kept: list[Fact] = []
        for fact in facts:
            at = self._fact_forgotten_at(fact, dropped, resolve)
            if at is not None:
                if _position(fact.evidence, fallback) <= at:
                    continue
                fact = fact.model_copy(update={"evidence": _later(fact.evidence, at)})
            kept.append(fact)
        return kept

    def _fact_forgotten_at(
        self, fact: Fact, dropped: dict[str, int], resolve: Callable[[str], str]
    ) -> int | None:
        digests = {digest("fact", fact.key), *mention_digests(fact.statement)}
        if fact.topic:
            digests |= mention_digests(fact.topic)
        for key in fact.about:
            digests |= key_digests(key) | key_digests(resolve(key))
        found = [dropped[k] for k in fact.about if k in dropped]
        found += [f.at for f in self._forgets if not f.match.isdisjoint(digests)]
        words = fact_digests(fact.statement) if any(f.words for f in self._forgets) else frozenset()
        for forget in self._forgets:
            if forget.words and forget.kind == fact.kind and words:
                shared = len(words & forget.words) / len(words | forget.words)
                if shared >= SAME_FACT:
                    found.append(forget.at)
        return max(found, default=None)

    def unnamed(
        self, values: dict[str, str], evidence: tuple[int, ...], fallback: int, keys: Iterable[str] = ()
    ) -> dict[str, str]:
        """``values`` without those naming a forgotten entity, or (of the entity known by ``keys``)
        holding the value of a forgotten fact about it, stated at or before the forget."""
        position = _position(evidence, fallback)
        about: set[str] = set()
        for key in keys:
            about |= key_digests(key)
        kept = {}
        for name, value in values.items():
            found = [self._forgotten_at(mention_digests(value)), self._value_forgotten_at(value, about)]
            at = max((f for f in found if f is not None), default=None)
            if at is None or position > at:
                kept[name] = value
        return kept

    def _value_forgotten_at(self, value: str, about: Set[str]) -> int | None:
        """The position of the latest forgotten fact about one of the ``about`` keys whose words hold
        all of ``value``'s content words (an allergy forgotten as a fact goes as an attribute too)."""
        if not about:
            return None
        words = fact_digests(value)
        found = [f.at for f in self._forgets if words and f.about & about and words <= f.words]
        return max(found, default=None)

    def scrub(
        self,
        snapshot: Snapshot,
        canonical: Callable[[Relation], RelationKey],
        resolve: Callable[[str], str],
    ) -> Snapshot:
        """``snapshot`` without what the forgets recognise (same id): what a purge stores in its place.

        Attribute values naming a forgotten entity go too; the pins and unsets of other edits do not
        apply (they are not erasures).
        """
        fallback = snapshot.last_entry_id
        entities, dropped = self.entities(snapshot.entities, fallback)
        entities = [
            e.model_copy(update={"attributes": self.unnamed(e.attributes, e.evidence, fallback, (e.key,))})
            if e.attributes
            else e
            for e in entities
        ]
        relations = self.relations(snapshot.relations, fallback, dropped, canonical)
        facts = self.facts(snapshot.facts, fallback, dropped, resolve)
        return snapshot.model_copy(
            update={"entities": tuple(entities), "relations": tuple(relations), "facts": tuple(facts)}
        )

    def erase(
        self,
        snapshot: Snapshot,
        canonical: Callable[[Relation], RelationKey],
        resolve: Callable[[str], str],
    ) -> Snapshot:
        """``snapshot`` as storage may keep it under these forgets: :meth:`scrub`, then without the
        entities whose name names a forgotten one ("Alice Chen's team", stated up to the forget),
        with their relations and facts, and without the dropped-item reasons that name one.

        What a purge stores in place of an old snapshot, and what a sidecar stores of a new one
        under its erasures (see :mod:`bub_semantic_memory.stores._erasure`).
        """
        scrubbed = self.scrub(snapshot, canonical, resolve)
        forgets = [e for e in self._forget_edits if e.entity is not None or e.hide or e.purged]
        if not forgets:
            return scrubbed
        fallback = snapshot.last_entry_id
        named = {
            e.key
            for e in scrubbed.entities
            if any(
                _position(e.evidence, fallback) <= f.at and any(f.named_in(n) for n in e.names())
                for f in forgets
            )
        }
        return scrubbed.model_copy(
            update={
                "entities": tuple(e for e in scrubbed.entities if e.key not in named),
                "relations": tuple(
                    r for r in scrubbed.relations if r.source not in named and r.target not in named
                ),
                "facts": tuple(f for f in scrubbed.facts if named.isdisjoint(f.about)),
                "dropped": tuple(d for d in scrubbed.dropped if not any(f.named_in(d) for f in forgets)),
            }
        )

    # -- what the graph applies to its nodes and edges -----------------------------------------

    def attributes(self, keys: Iterable[str], values: dict[str, str], position: int) -> dict[str, str]:
        """The extracted attribute values a mention at ``position`` may set on the entity known by
        ``keys``: none that a set pins, an unset dropped, or that names a forgotten entity."""
        keys = list(keys)
        kept = {}
        for name, value in values.items():
            if any(name in self._pins.get(k, ()) for k in keys):
                continue
            if any(position <= self._unsets.get((k, name), -1) for k in keys):
                continue
            kept[name] = value
        return self.unnamed(kept, (), position, keys) if self._forgets else kept

    def pins(self, key: str) -> dict[str, str]:
        """The attributes set by hand on entity ``key``."""
        return self._pins.get(key, {})

    def end(self, key: RelationKey, last_stated: int) -> int | None:
        """The entry a relation was ended at by hand (None: not ended, or stated again after the edit)."""
        found = self._ends.get(key)
        if found is None:
            return None
        until, at = found
        return None if last_stated > at else until
