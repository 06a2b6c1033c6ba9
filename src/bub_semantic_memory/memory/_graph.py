"""The memory graph: the incremental fold of a tape's snapshots.

Folding rules:

* Same key, same entity. An entity whose name or alias matches a known entity of
  the same type (after normalisation) merges into it; its key is redirected, so
  relations that use either key land on one node.
* Relations dedupe on (source, type, target); symmetric types are stored with
  their endpoints in a canonical order, so ``a knows b`` and ``b knows a`` are one fact, and
  a relation of an inverse pair in the pair's canonical form (:meth:`Ontology.orient`), so
  ``Ana works_on T-12`` and ``T-12 assigned_to Ana`` are one fact too.
* A single-valued relation (``lives_in``) has one current value per source. A newer
  value closes the older one (``valid_until``) instead of deleting it, so history
  stays visible. "Newer" is decided by tape position (evidence entry ids), so
  snapshots folded out of order still converge to the same graph.
* Facts fold by the rules of :mod:`._facts` (one statement, one fact; a newer state on a
  topic closes the older one).
* A person's edits (forget, set, merge, end...) are given to the graph before it folds and
  decide what of each snapshot survives, by the rules of :mod:`._edit_rules`; a new edit means a
  new fold, so snapshots folded before and after it meet the same rules.
* :meth:`MemoryGraph.add` costs O(size of the snapshot): nothing is refolded.
"""

from __future__ import annotations

import bisect
import collections
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bub_semantic_memory._edits import Edit
from bub_semantic_memory._gc import gc_paused
from bub_semantic_memory._models import Entity, Fact, Relation, RelationKey, Snapshot, normalize_name
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.memory._edit_rules import EditBook
from bub_semantic_memory.memory._facts import FactBook, FactView

_MAX_NGRAM_WORDS = 5
_CHANGES_KEPT = 256  # snapshots whose changed entities the graph remembers (see changed_since)
_CJK_MIN, _CJK_MAX = 2, 8
_MAX_WORD_HOLDERS = 5  # a word shared by more entities than this ("project") is not a useful match

__all__ = ["EntityView", "FactView", "MemoryGraph", "RelationView"]

_COMMON_WORD = 32


class EntityView(Protocol):
    """What renderers read from an entity (see :meth:`MemoryGraph.view`); do not mutate."""

    @property
    def key(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def aliases(self) -> dict[str, None]: ...
    @property
    def attributes(self) -> dict[str, str]: ...
    @property
    def last_seen(self) -> int: ...
    @property
    def evidence(self) -> set[int]: ...


class RelationView(Protocol):
    """What renderers read from a relation (see :meth:`MemoryGraph.edges`); do not mutate."""

    @property
    def source(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def valid_from(self) -> int | str | None: ...
    @property
    def valid_until(self) -> int | str | None: ...
    @property
    def evidence(self) -> set[int]: ...
    @property
    def key(self) -> RelationKey: ...


@dataclass(frozen=True, slots=True)
class _Change:
    """What one fold changed (see :meth:`MemoryGraph.changed_since`)."""

    version: int
    entities: frozenset[str]  # every entity whose own facts changed
    renewed: frozenset[str]  # new to the graph, or merged into another by name
    items: tuple[RelationView | FactView, ...]  # the relations and stated facts that changed


def item_id(item: RelationView | FactView) -> str:
    """The id of a relation or a stated fact, as retrieval and rendering name it."""
    key = item.key
    return f"s\t{key}" if isinstance(key, str) else "r\t" + "\t".join(key)


def _current_and_newest_first(pair: tuple[str, RelationView | FactView]) -> tuple[bool, int, str]:
    item_id, item = pair
    return item.valid_until is not None, -max(item.evidence, default=0), item_id


@dataclass(slots=True)
class _Node:
    key: str
    name: str
    type: str
    aliases: dict[str, None] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)
    evidence: set[int] = field(default_factory=set)
    last_seen: int = 0

    def freeze(self) -> Entity:
        # Fields are already valid (they came from validated snapshots): skip re-validation.
        return Entity.model_construct(
            key=self.key,
            name=self.name,
            type=self.type,
            aliases=tuple(self.aliases),
            attributes=dict(self.attributes),
            evidence=tuple(sorted(self.evidence)),
        )


@dataclass(slots=True)
class _Edge:
    source: str
    type: str
    target: str
    attributes: dict[str, str] = field(default_factory=dict)
    evidence: set[int] = field(default_factory=set)
    valid_from: int | str | None = None
    valid_until: int | str | None = None
    last_seen: int = 0

    @property
    def key(self) -> RelationKey:
        return (self.source, self.type, self.target)

    def freeze(self) -> Relation:
        return Relation.model_construct(
            source=self.source,
            type=self.type,
            target=self.target,
            attributes=dict(self.attributes),
            evidence=tuple(sorted(self.evidence)),
            valid_from=self.valid_from,
            valid_until=self.valid_until,
        )


class MemoryGraph:
    """One tape's memory, folded from its snapshots.

    Args:
        ontology: decides which relation types are symmetric or single-valued.
        tape: the tape name, for display.
        edits: the tape's edits (see :mod:`._edit_rules`), applied to every snapshot folded in.
    """

    def __init__(
        self, ontology: Ontology | None = None, *, tape: str = "", edits: Iterable[Edit] = ()
    ) -> None:
        self.ontology = ontology
        self.tape = tape
        self._edits = EditBook(edits)
        self._nodes: dict[str, _Node] = {}
        self._redirects: dict[str, str] = dict(self._edits.redirects)
        self._merged_keys: dict[str, list[str]] | None = None  # canonical key -> keys redirected to it
        self._names: dict[tuple[str, str], str] = {}
        self._by_name: dict[str, dict[str, None]] = {}
        self._by_word: dict[str, dict[str, None]] = {}
        self._common_words: set[str] = set()
        self._edges: dict[RelationKey, _Edge] = {}
        self._adjacency: dict[str, set[RelationKey]] = {}
        self._current: dict[tuple[str, str], RelationKey] = {}
        self._snapshot_ids: set[str] = set()
        self._coverage: list[tuple[int, int]] = []
        self._ranking: list[str] | None = None
        self._facts = FactBook()
        self.version = 0
        """Bumped on every change; renderers use it to invalidate caches."""
        self._changes: collections.deque[_Change] = collections.deque(maxlen=_CHANGES_KEPT)
        self._changes_from = 0  # the version the change log starts at
        # entity key -> its relations and facts in order, until a fold touches the entity
        self._in_order: dict[str, list[tuple[str, RelationView | FactView]]] = {}

    @classmethod
    def fold(
        cls,
        snapshots: Iterable[Snapshot],
        ontology: Ontology | None = None,
        *,
        tape: str = "",
        edits: Iterable[Edit] = (),
    ) -> MemoryGraph:
        """Build a graph from snapshots (in any order), under ``edits``."""
        graph = cls(ontology, tape=tape, edits=edits)
        with gc_paused():
            for snapshot in snapshots:
                graph.add(snapshot)
        return graph

    # -- reading ---------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._nodes)

    @property
    def snapshot_count(self) -> int:
        return len(self._snapshot_ids)

    @property
    def relation_count(self) -> int:
        return len(self._edges)

    @property
    def edits(self) -> EditBook:
        """The edits this graph folds under (a new edit needs a new graph: see :mod:`._edit_rules`)."""
        return self._edits

    @property
    def watermark(self) -> int:
        """The last entry id of the contiguous extracted range that starts the tape's coverage.

        Entries after it are not extracted yet. If a snapshot in the middle is lost,
        the watermark stops before the gap, so the gap is extracted again (the fold
        dedupes whatever overlaps).
        """
        return self._coverage[0][1] if self._coverage else 0

    @property
    def extracted_through(self) -> int:
        """The last entry id any folded snapshot covers (0: none), gaps or not."""
        return self._coverage[-1][1] if self._coverage else 0

    def resolve(self, key: str) -> str:
        """The canonical key for ``key`` (itself unless it was merged into another entity)."""
        if key not in self._redirects:  # the common case, on every fold step: no set to build
            return key
        seen: set[str] = set()
        while key in self._redirects and key not in seen:
            seen.add(key)
            key = self._redirects[key]
        return key

    def entity(self, key: str) -> Entity | None:
        node = self._nodes.get(self.resolve(key))
        return node.freeze() if node else None

    def view(self, key: str) -> EntityView | None:
        """A read-only view of an entity without building a model (for hot paths like rendering)."""
        return self._nodes.get(self.resolve(key))

    def edges(self, key: str) -> list[RelationView]:
        """Read-only views of the relations touching ``key`` (unsorted, no models built)."""
        adjacency = self._adjacency.get(self.resolve(key), ())
        return [self._edges[k] for k in adjacency]

    def keys_of(self, key: str) -> list[str]:
        """Every key that resolves to the entity ``key`` resolves to: its own first, then merged ones."""
        key = self.resolve(key)
        if self._merged_keys is None:  # rebuilt after a merge: every fact look-up asks for it
            merged: dict[str, list[str]] = {}
            for source in sorted(self._redirects):
                target = self.resolve(source)
                if source != target:
                    merged.setdefault(target, []).append(source)
            self._merged_keys = merged
        return [key, *self._merged_keys.get(key, ())]

    def relation_key(self, source: str, rel_type: str, target: str) -> RelationKey:
        """The key a relation between these entity keys is stored under (merges resolved, symmetric
        relations in their canonical order)."""
        return self._canonical_key(Relation.model_construct(source=source, type=rel_type, target=target))

    def relation(self, key: RelationKey) -> RelationView | None:
        """A read-only view of the relation stored under ``key`` (see :meth:`relation_key`)."""
        return self._edges.get(key)

    def entities(self) -> list[Entity]:
        """All entities, in key order."""
        return [self._nodes[k].freeze() for k in sorted(self._nodes)]

    def relations(self, *, current_only: bool = False) -> list[Relation]:
        """All relations (or only those not superseded), in key order."""
        edges = (self._edges[k] for k in sorted(self._edges))
        return [e.freeze() for e in edges if not current_only or e.valid_until is None]

    @property
    def fact_count(self) -> int:
        return len(self._facts)

    def facts(self, *, current_only: bool = False) -> list[Fact]:
        """All facts (or only those not superseded), in key order, entity keys resolved."""
        return self._facts.frozen(self.resolve, current_only=current_only)

    def fact_views(self) -> list[FactView]:
        """Read-only views of every fact (no models built; ``about`` holds keys as folded)."""
        return self._facts.facts()

    def facts_about(self, key: str) -> list[FactView]:
        """Read-only views of the facts about the entity ``key``."""
        return self._facts.about(self.keys_of(key))

    def degree(self, key: str) -> int:
        """How many relations touch ``key``."""
        return len(self._adjacency.get(self.resolve(key), ()))

    def neighbours(self, key: str) -> list[str]:
        """Keys one relation away from ``key``."""
        key = self.resolve(key)
        found: dict[str, None] = {}
        for rel_key in sorted(self._adjacency.get(key, ())):
            source, _, target = rel_key
            found[target if source == key else source] = None
        return list(found)

    def facts_in_order(self, key: str) -> list[tuple[str, RelationView | FactView]]:
        """The relations and stated facts about the entity ``key`` with their ids (see
        :func:`item_id`): current before superseded, newest first, then by id.

        Kept until a fold touches the entity: an entity that thousands of relations touch (the
        user of a personal tape) took milliseconds to sort on every model call that showed it.
        """
        key = self.resolve(key)
        pairs = self._in_order.get(key)
        if pairs is None:
            items: list[RelationView | FactView] = [*self.edges(key), *self.facts_about(key)]
            pairs = sorted(((item_id(item), item) for item in items), key=_current_and_newest_first)
            self._in_order[key] = pairs
        return pairs

    def last_seen(self, key: str) -> int:
        node = self._nodes.get(self.resolve(key))
        return node.last_seen if node else 0

    def lookup(self, name: str) -> list[str]:
        """Keys of entities (any type) whose name or alias normalises to ``normalize_name(name)``."""
        return self.lookup_normalized(normalize_name(name))

    def lookup_normalized(self, folded: str) -> list[str]:
        """Like :meth:`lookup` for an already normalised name (no normalisation cost)."""
        return list(self._by_name.get(folded, ()))

    def lookup_word(self, word: str) -> list[str]:
        """Keys of entities with a multi-word name or alias containing the normalised ``word``.

        A weaker match than :meth:`lookup` ("Maya" for "Maya Lin"); words shared by many
        entities ("project") are not indexed usefully and return many keys.
        """
        if word in self._common_words:
            return []
        return list(self._by_word.get(word, ()))

    def named_in(self, text: str) -> list[str]:
        """Keys of entities named in ``text``: full names and aliases first (word n-grams), then
        single words of longer names ("Maya" for "Maya Lin"), then CJK substrings."""
        words = normalize_name(text).split()
        found: dict[str, None] = {}
        for start in range(len(words)):
            for length in range(1, _MAX_NGRAM_WORDS + 1):
                if start + length > len(words):
                    break
                for key in self.lookup_normalized(" ".join(words[start : start + length])):
                    found.setdefault(self.resolve(key), None)
        for word in words:
            if len(word) < 3 or not word.isascii():
                continue
            holders = self.lookup_word(word)
            if len(holders) <= _MAX_WORD_HOLDERS:
                for key in holders:
                    found.setdefault(self.resolve(key), None)
        for word in words:
            if word.isascii():
                continue
            for size in range(_CJK_MIN, min(_CJK_MAX, len(word)) + 1):
                for start in range(len(word) - size + 1):
                    for key in self.lookup_normalized(word[start : start + size]):
                        found.setdefault(self.resolve(key), None)
        return list(found)

    def ranked_keys(self) -> list[str]:
        """Entity keys, most recently mentioned first, then by degree; cached until the graph changes."""
        if self._ranking is None:
            self._ranking = sorted(
                self._nodes,
                key=lambda k: (-self._nodes[k].last_seen, -len(self._adjacency.get(k, ())), k),
            )
        return self._ranking

    # -- checkpoint state -----------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """Everything the fold has built, as JSON-ready data (see :meth:`from_state`).

        The name indexes are kept as they are, in their order, rather than rebuilt:
        "first owner wins" and lookup order depend on the order names arrived in, so
        only the indexes themselves restore a graph that folds on exactly like this one.
        """
        return {
            "nodes": [
                [n.key, n.name, n.type, list(n.aliases), n.attributes, sorted(n.evidence), n.last_seen]
                for n in self._nodes.values()
            ],
            "redirects": self._redirects,
            "names": [[entity_type, folded, key] for (entity_type, folded), key in self._names.items()],
            "by_name": {folded: list(keys) for folded, keys in self._by_name.items()},
            "by_word": {word: list(keys) for word, keys in self._by_word.items()},
            "common_words": sorted(self._common_words),
            "edges": [
                [
                    e.source,
                    e.type,
                    e.target,
                    e.attributes,
                    sorted(e.evidence),
                    e.valid_from,
                    e.valid_until,
                    e.last_seen,
                ]
                for e in self._edges.values()
            ],
            "current": [[source, rel_type, list(key)] for (source, rel_type), key in self._current.items()],
            "snapshot_ids": sorted(self._snapshot_ids),
            "coverage": [list(span) for span in self._coverage],
            "facts": self._facts.to_state(),
            "edits": [edit.model_dump(mode="json", exclude_defaults=True) for edit in self._edits.edits],
        }

    @classmethod
    def from_state(
        cls, state: dict[str, Any], ontology: Ontology | None = None, *, tape: str = ""
    ) -> MemoryGraph:
        """Rebuild a graph from :meth:`to_state` data (freshly parsed: its dicts are taken over, not copied).

        Raises:
            KeyError, TypeError, ValueError: ``state`` is not what :meth:`to_state` wrote.
        """
        # A checkpoint written before edits existed folded none.
        graph = cls(ontology, tape=tape, edits=[Edit.model_validate(e) for e in state.get("edits", ())])
        with gc_paused():
            for key, name, entity_type, aliases, attributes, evidence, last_seen in state["nodes"]:
                graph._nodes[key] = _Node(
                    key,
                    name,
                    entity_type,
                    dict.fromkeys(aliases),
                    attributes,
                    set(evidence),
                    last_seen,
                )
            graph._redirects = {str(k): str(v) for k, v in state["redirects"].items()}
            graph._merged_keys = None
            graph._names = {(t, folded): key for t, folded, key in state["names"]}
            graph._by_name = {folded: dict.fromkeys(keys) for folded, keys in state["by_name"].items()}
            graph._by_word = {word: dict.fromkeys(keys) for word, keys in state["by_word"].items()}
            graph._common_words = set(state["common_words"])
            for source, rel_type, target, attributes, evidence, valid_from, valid_until, last_seen in state[
                "edges"
            ]:
                edge = _Edge(
                    source,
                    rel_type,
                    target,
                    attributes,
                    set(evidence),
                    valid_from,
                    valid_until,
                    last_seen,
                )
                graph._edges[edge.key] = edge
                graph._adjacency.setdefault(source, set()).add(edge.key)
                graph._adjacency.setdefault(target, set()).add(edge.key)
            for source, rel_type, (key_source, key_type, key_target) in state["current"]:
                graph._current[(source, rel_type)] = (key_source, key_type, key_target)
            graph._snapshot_ids = set(state["snapshot_ids"])
            graph._coverage = [(int(first), int(last)) for first, last in state["coverage"]]
            # A checkpoint written before facts existed folded snapshots that had none.
            graph._facts = FactBook.from_state(state.get("facts", ()), graph.resolve)
        graph.version = graph._changes_from = len(graph._snapshot_ids)
        return graph

    # -- folding ---------------------------------------------------------------

    def add(self, snapshot: Snapshot) -> bool:
        """Fold one snapshot in. Returns False (and changes nothing) if it was already folded."""
        if snapshot.id in self._snapshot_ids:
            return False
        self._snapshot_ids.add(snapshot.id)
        if snapshot.last_entry_id > 0:  # an import (entries 0-0) covers no entry of the tape
            self._cover(snapshot.first_entry_id, snapshot.last_entry_id)
        if snapshot.id in self._edits.suppressed_snapshots:
            return True  # an import that was undone: folded as nothing
        fallback_position = snapshot.last_entry_id
        touched: set[str] = set()
        renewed: set[str] = set()
        items: list[RelationView | FactView] = []
        entities, dropped = self._edits.entities(snapshot.entities, fallback_position)
        for entity in entities:
            new = self._add_entity(entity, fallback_position)
            keys = (entity.key, self.resolve(entity.key))  # merged by name: both keys
            touched.update(keys)
            if new:
                renewed.update(keys)
        relations = self._edits.relations(snapshot.relations, fallback_position, dropped, self._canonical_key)
        for relation in relations:
            for edge in self._add_relation(relation, fallback_position):
                touched.update((edge.source, edge.target))
                items.append(edge)
        for fact in self._edits.facts(snapshot.facts, fallback_position, dropped, self.resolve):
            for changed in self._facts.add(fact, self.resolve):
                touched.update(self.resolve(key) for key in changed.about)
                items.append(changed)
        self._ranking = None
        for key in touched:
            self._in_order.pop(key, None)
        self.version += 1
        if len(self._changes) == self._changes.maxlen:
            self._changes_from = self._changes[0].version
        self._changes.append(_Change(self.version, frozenset(touched), frozenset(renewed), tuple(items)))
        return True

    def changed_since(self, version: int) -> set[str] | None:
        """The keys of the entities whose own facts changed after ``version``: their names,
        attributes, relations and stated facts, including every entity of a relation or fact
        that a later one closed (or reopened). None when the graph does not know (a version
        before it was built from a checkpoint, or further back than its log): read everything."""
        changes = self._changes_after(version)
        if changes is None:
            return None
        changed: set[str] = set()
        for change in changes:
            changed.update(change.entities)
        return changed

    def facts_changed_since(self, version: int) -> tuple[set[str], list[RelationView | FactView]] | None:
        """What changed after ``version``, finer than :meth:`changed_since`: the entities each
        of whose relations and facts may read differently (new to the graph, or merged into
        another: a relation's sentence names its ends, and one stored under a key that was no
        entity yet becomes readable), and the relations and stated facts that changed. None
        when the graph does not know."""
        changes = self._changes_after(version)
        if changes is None:
            return None
        renewed: set[str] = set()
        items: dict[int, RelationView | FactView] = {}
        for change in changes:
            renewed.update(change.renewed)
            items.update((id(item), item) for item in change.items)
        return renewed, list(items.values())

    def _changes_after(self, version: int) -> list[_Change] | None:
        """The log's entries after ``version``, newest first (None: the log does not reach back)."""
        if version < self._changes_from or version > self.version:
            return None
        found: list[_Change] = []
        for change in reversed(self._changes):
            if change.version <= version:
                break
            found.append(change)
        return found

    def _cover(self, first: int, last: int) -> None:
        index = bisect.bisect_left(self._coverage, (first, last))
        self._coverage.insert(index, (first, last))
        merged: list[tuple[int, int]] = []
        for start, end in self._coverage:
            if merged and start <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        self._coverage = merged

    def _add_entity(self, entity: Entity, fallback_position: int) -> bool:
        """Fold ``entity`` in. Returns whether it is new to the graph or was merged into another
        by name (either way, what is said about it reads differently now)."""
        renewed = False
        position = max(entity.evidence, default=fallback_position)
        key = self.resolve(entity.key)
        merged_into = self._edits.merged_names.get(key) if key != entity.key else None
        if key not in self._nodes and merged_into is None:
            match = self._match_by_name(entity)
            if match is not None:
                self._redirects[entity.key] = match
                self._merged_keys = None
                key = match
                renewed = True
        node = self._nodes.get(key)
        if node is None:
            name, entity_type = merged_into or (entity.name, entity.type)  # merged by hand, not folded yet
            node = _Node(key=key, name=name, type=entity_type)
            self._nodes[key] = node
            self._index_name(node, node.name)
            renewed = True
        own = normalize_name(node.name)
        for alias in entity.names():
            # Only names not seen before are indexed: re-mentions cost O(their own names).
            if alias not in node.aliases and alias != node.name and normalize_name(alias) != own:
                node.aliases[alias] = None
                self._index_name(node, alias)
        if entity.attributes:
            attributes = entity.attributes
            if self._edits:
                attributes = self._edits.attributes((key, entity.key), attributes, position)
            node.attributes.update(attributes)
        if self._edits:
            node.attributes.update(self._edits.pins(key))
        node.evidence.update(entity.evidence)
        if position > node.last_seen:
            node.last_seen = position
        return renewed

    def _match_by_name(self, entity: Entity) -> str | None:
        for name in entity.names():
            existing = self._names.get((entity.type, normalize_name(name)))
            if existing is not None:
                return self.resolve(existing)
        return None

    def _index_name(self, node: _Node, name: str) -> None:
        folded = normalize_name(name)
        if not folded:
            return
        # First owner wins: two different people called "Alex" stay two entities.
        self._names.setdefault((node.type, folded), node.key)
        self._by_name.setdefault(folded, {})[node.key] = None
        words = folded.split()
        for word in words if len(words) > 1 else ():
            self._index_word(word, node.key)

    def _index_word(self, word: str, key: str) -> None:
        if word in self._common_words:
            return
        holders = self._by_word.setdefault(word, {})
        holders[key] = None
        if len(holders) > _COMMON_WORD:
            # "person", "project": a word in this many names identifies nothing; stop indexing it.
            self._common_words.add(word)
            del self._by_word[word]

    def _type_of(self, key: str) -> str:
        node = self._nodes.get(key)
        return node.type if node is not None else key.partition(":")[0]

    def _canonical_key(self, relation: Relation) -> RelationKey:
        source, target = self.resolve(relation.source), self.resolve(relation.target)
        if self.ontology is None:
            return (source, relation.type, target)
        rel_type = relation.type
        oriented = self.ontology.orient(rel_type, self._type_of(source), self._type_of(target))
        if oriented is not None:  # a relation the ontology does not allow is kept as it was stored
            rel_type, turned = oriented
            if turned:
                source, target = target, source
        if self.ontology.is_symmetric(rel_type) and target < source:
            source, target = target, source
        return (source, rel_type, target)

    def _add_relation(self, relation: Relation, fallback_position: int) -> list[_Edge]:
        """Fold ``relation`` in. Returns the relations that changed: it, and those it superseded
        (or that superseded it)."""
        key = self._canonical_key(relation)
        source, rel_type, target = key
        position = max(relation.evidence, default=fallback_position)
        edge = self._edges.get(key)
        if edge is None:
            edge = _Edge(source=source, type=rel_type, target=target, valid_from=relation.valid_from)
            self._edges[key] = edge
            self._adjacency.setdefault(source, set()).add(key)
            self._adjacency.setdefault(target, set()).add(key)
            if relation.valid_until is not None:
                edge.valid_until = relation.valid_until
        if relation.attributes:
            edge.attributes.update(relation.attributes)
        edge.evidence.update(relation.evidence)
        if position > edge.last_seen:
            edge.last_seen = position
        if edge.valid_from is None:
            edge.valid_from = min(relation.evidence, default=None)
        for node_key in (source, target):
            node = self._nodes.get(node_key)
            if node is not None and position > node.last_seen:
                node.last_seen = position
        if (
            self.ontology is not None
            and self.ontology.is_single_valued(rel_type)
            and relation.valid_until is None
        ):
            changed = self._supersede(edge)
        else:
            changed = [edge]
        if self._edits:
            self._apply_end(edge)
        return changed

    def _apply_end(self, edge: _Edge) -> None:
        """Close ``edge`` where a person ended it (the earlier of that entry and a supersession)."""
        until = self._edits.end(edge.key, edge.last_seen)
        if until is None:
            return
        current = edge.valid_until
        edge.valid_until = min(current, until) if isinstance(current, int) else until

    def _slots(self, edge: _Edge) -> list[tuple[str, str]]:
        slots = [(edge.source, edge.type)]
        if self.ontology is not None and self.ontology.is_symmetric(edge.type):
            slots.append((edge.target, edge.type))
        return slots

    def _supersede(self, edge: _Edge) -> list[_Edge]:
        """Keep one current value per (source, type): the one stated latest in the tape. Returns
        ``edge`` and every relation it superseded or was superseded by."""
        changed = [edge]
        for slot in self._slots(edge):
            current_key = self._current.get(slot)
            if current_key is None or current_key == edge.key:
                self._current[slot] = edge.key
                edge.valid_until = None
                continue
            current = self._edges[current_key]
            older, newer = (current, edge) if current.last_seen <= edge.last_seen else (edge, current)
            older.valid_until = min(newer.evidence, default=newer.last_seen)
            newer.valid_until = None
            for newer_slot in self._slots(newer):
                self._current[newer_slot] = newer.key
            if self._edits:
                self._apply_end(older)
            changed.append(current)
        return changed
