"""The facts of a memory graph: statements folded across windows, with their validity.

Folding rules (the graph calls :meth:`FactBook.add` for each fact of each snapshot):

* **One statement, one fact.** A fact whose kind and normalised statement match a folded one
  (:attr:`~bub_semantic_memory._models.Fact.key`), or that is about the same first entity, of the
  same kind, and shares :data:`SAME_FACT` of its content words with one, is that fact said again:
  its evidence is added, nothing else changes. Two facts that differ in the one word that
  matters ("lessons are on Tuesdays" / "on Thursdays") share fewer words and stay two.
* **A newer state replaces an older one.** For the kinds that supersede
  (:data:`~bub_semantic_memory._models.SUPERSEDING_KINDS`: state, preference, plan), the facts
  about one entity on one topic have one current fact: the one stated latest in the tape. An
  older one is closed at the entry where the newer was first said after it (``valid_until``),
  never deleted. Events and opinions accumulate.
* "Latest" is decided by tape position (evidence entry ids), so snapshots folded out of order
  converge to the same facts, as relations do.

Entity keys are resolved through the graph's merges when facts are read, not when they are
folded, so a later merge of two entities joins their facts.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bub_semantic_memory._models import SUPERSEDING_KINDS, Fact
from bub_semantic_memory._statements import similarity

__all__ = ["SAME_FACT", "FactBook", "FactView"]

SAME_FACT = 0.8
"""Two statements of one kind about one entity sharing this share of their content words (Jaccard)
are one fact said twice."""


class FactView(Protocol):
    """What renderers read from a folded fact (see :meth:`FactBook.facts`); do not mutate."""

    @property
    def key(self) -> str: ...
    @property
    def statement(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def about(self) -> tuple[str, ...]: ...
    @property
    def topic(self) -> str: ...
    @property
    def when(self) -> str | None: ...
    @property
    def said_when(self) -> str | None: ...
    @property
    def evidence(self) -> set[int]: ...
    @property
    def valid_from(self) -> int | None: ...
    @property
    def valid_until(self) -> int | None: ...


@dataclass(slots=True)
class _Stated:
    key: str
    statement: str
    kind: str
    about: tuple[str, ...]
    topic: str = ""
    when: str | None = None
    said_when: str | None = None
    evidence: set[int] = field(default_factory=set)
    valid_from: int | None = None
    valid_until: int | None = None

    @property
    def last_stated(self) -> int:
        return max(self.evidence, default=self.valid_from or 0)

    def freeze(self, resolve: Callable[[str], str]) -> Fact:
        return Fact.model_construct(
            statement=self.statement,
            kind=self.kind,
            about=tuple(dict.fromkeys(resolve(k) for k in self.about)),
            topic=self.topic,
            when=self.when,
            said_when=self.said_when,
            evidence=tuple(sorted(self.evidence)),
            valid_from=self.valid_from,
            valid_until=self.valid_until,
        )

    def to_state(self) -> list[Any]:
        return [
            self.key,
            self.statement,
            self.kind,
            list(self.about),
            self.topic,
            self.when,
            self.said_when,
            sorted(self.evidence),
            self.valid_from,
            self.valid_until,
        ]


class FactBook:
    """The facts folded so far, indexed by entity and by (entity, topic) for supersession."""

    def __init__(self) -> None:
        self._facts: dict[str, _Stated] = {}
        self._by_entity: dict[str, dict[str, None]] = {}  # first about-key -> fact keys
        self._topics: dict[tuple[str, str], dict[str, None]] = {}  # (first about-key, topic) -> fact keys
        self._mentions: dict[str, dict[str, None]] = {}  # every about-key as folded -> fact keys
        self._position: dict[str, int] = {}  # fact key -> fold order

    def __len__(self) -> int:
        return len(self._facts)

    def add(self, fact: Fact, resolve: Callable[[str], str]) -> list[FactView]:
        """Fold one fact in (see the module docstring). Returns the facts that may have changed:
        the one ``fact`` was folded into, and every fact on its topic (those it may have closed
        or reopened)."""
        subject = resolve(fact.about[0]) if fact.about else ""
        folded = self._facts.get(fact.key) or self._said_before(fact, subject)
        if folded is None:
            folded = _Stated(
                key=fact.key,
                statement=fact.statement,
                kind=fact.kind,
                about=fact.about,
                topic=fact.topic,
                when=fact.when,
                said_when=fact.said_when,
                valid_from=min(fact.evidence, default=fact.valid_from),
            )
            self._keep(folded, subject)
        folded.evidence.update(fact.evidence)
        if folded.when is None and fact.when is not None:
            folded.when, folded.said_when = fact.when, fact.said_when
        if fact.evidence and (folded.valid_from is None or min(fact.evidence) < folded.valid_from):
            folded.valid_from = min(fact.evidence)
        changed: list[FactView] = [folded]
        if folded.kind in SUPERSEDING_KINDS and folded.topic:
            topic = self._topics.setdefault((subject, folded.topic), {})
            topic[folded.key] = None
            ordered = [self._facts[k] for k in topic]
            self._order(ordered)
            changed.extend(ordered)
        return changed

    def _keep(self, fact: _Stated, subject: str) -> None:
        """Store a new fact and index it by its subject and by every entity it is about."""
        self._facts[fact.key] = fact
        self._position[fact.key] = len(self._position)
        self._by_entity.setdefault(subject, {})[fact.key] = None
        for key in fact.about:
            self._mentions.setdefault(key, {})[fact.key] = None

    def _said_before(self, fact: Fact, subject: str) -> _Stated | None:
        """The folded fact ``fact`` says again in other words, if any."""
        for key in self._by_entity.get(subject, ()):
            folded = self._facts[key]
            if folded.kind == fact.kind and similarity(folded.statement, fact.statement) >= SAME_FACT:
                return folded
        return None

    @staticmethod
    def _order(facts: list[_Stated]) -> None:
        """One current fact per topic: the one stated latest; each older one closed where a newer
        one was first said after it."""
        ordered = sorted(facts, key=lambda f: (f.last_stated, f.key))
        for older, newer in itertools.pairwise(ordered):
            after = [e for e in newer.evidence if e > older.last_stated]
            older.valid_until = min(after, default=newer.last_stated)
        if ordered:
            ordered[-1].valid_until = None

    def facts(self) -> list[FactView]:
        """Every fact, current and superseded, in key order."""
        return [self._facts[k] for k in sorted(self._facts)]

    def frozen(self, resolve: Callable[[str], str], *, current_only: bool = False) -> list[Fact]:
        """Every fact (or only the current ones) as stored models, entity keys resolved."""
        return [
            self._facts[k].freeze(resolve)
            for k in sorted(self._facts)
            if not current_only or self._facts[k].valid_until is None
        ]

    def about(self, keys: Iterable[str]) -> list[FactView]:
        """The facts about any of ``keys`` (keys as folded, merged ones included), in fold order.

        Looked up in an index, not by reading every fact: rendering asks this for each entity
        it shows, on the agent's model calls."""
        found = {fact for key in keys for fact in self._mentions.get(key, ())}
        return [self._facts[fact] for fact in sorted(found, key=self._position.__getitem__)]

    def to_state(self) -> list[list[Any]]:
        """The folded facts as JSON-ready data (see :meth:`from_state`)."""
        return [fact.to_state() for fact in self._facts.values()]

    @classmethod
    def from_state(cls, state: Iterable[list[Any]], resolve: Callable[[str], str]) -> FactBook:
        """Rebuild from :meth:`to_state` data (the indexes are derived again, in the same order).

        Raises:
            TypeError, ValueError: ``state`` is not what :meth:`to_state` wrote.
        """
        book = cls()
        for key, statement, kind, about, topic, when, said_when, evidence, valid_from, valid_until in state:
            fact = _Stated(
                str(key),
                str(statement),
                str(kind),
                tuple(about),
                str(topic),
                when,
                said_when,
                set(evidence),
                valid_from,
                valid_until,
            )
            subject = resolve(fact.about[0]) if fact.about else ""
            book._keep(fact, subject)
            if fact.kind in SUPERSEDING_KINDS and fact.topic:
                book._topics.setdefault((subject, fact.topic), {})[fact.key] = None
        return book
