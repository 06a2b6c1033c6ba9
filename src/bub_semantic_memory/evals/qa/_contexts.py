"""What an agent receives for a question, under each condition the memory-QA eval compares.

Every condition builds the context of one question over one tape, at the same token budget
(the plugin's, by default), so the conditions can be compared side by side:

* ``none``: nothing (the floor);
* ``memory``: exactly what the plugin injects for the question at the end of the tape: the
  memory service of the agent layer loads the tape's snapshots from a tape store and renders
  the block for the question, as the plugin's hooks do, with the plugin's policy;
* ``memory-no-facts``: the same memory with its stated facts left out (only entities and typed
  relations, what the memory held before facts): opt-in, to measure what facts add;
* ``memory-no-lines``: the same memory without the transcript lines a block shows after its
  facts (the policy's ``passage_share`` at 0): opt-in, to measure what the lines add;
* ``gold-memory``: the same, from the gold entities, relations and facts (extraction errors taken out);
* ``tape-search``: bub's own ``tape.search`` as an agent calls it: one search per content word
  of the question (:func:`search_words`), through bub's tape store query with the tool's default
  kinds and limit, the matches in tape order, rendered as the tool renders them, packed into
  the budget;
* ``bm25``: transcript lines ranked by BM25 for the question (SQLite's FTS5, in the standard
  library), best first, packed into the budget;
* ``full``: the whole transcript, marked as not fitting when it exceeds the answering model's
  context (the ceiling).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bub_semantic_memory._models import Entity, Fact, PromptRef, Relation, Snapshot, Usage
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.evals._dataset import Gold, GoldFact, Prediction
from bub_semantic_memory.evals.qa._scores import normalize
from bub_semantic_memory.tape import Entry, Transcript, render_transcript

__all__ = [
    "ALL_CONDITIONS",
    "CONDITIONS",
    "MEMORY_WITHOUT_FACTS",
    "MEMORY_WITHOUT_LINES",
    "Context",
    "LoadedMemory",
    "SearchableTape",
    "bm25_context",
    "full_context",
    "load_memory",
    "memory_context",
    "pack",
    "search_words",
    "snapshots_of",
    "tape_search_context",
]

CONDITIONS = ("none", "memory", "gold-memory", "tape-search", "bm25", "full")
"""The conditions a run builds by default, in report order."""

MEMORY_WITHOUT_FACTS = "memory-no-facts"
MEMORY_WITHOUT_LINES = "memory-no-lines"
ALL_CONDITIONS = (
    "none",
    "memory",
    MEMORY_WITHOUT_FACTS,
    MEMORY_WITHOUT_LINES,
    "gold-memory",
    "tape-search",
    "bm25",
    "full",
)
"""Every condition, in report order (``memory-no-facts`` and ``memory-no-lines`` only when asked for)."""

_TOKENIZER = "porter unicode61 remove_diacritics 2"  # English stems, accents folded
_SEARCH_LIMIT = 20  # bub's tape.search default
_SEARCH_KINDS = ("message", "tool_result")  # bub's tape.search default
_SEARCHED_TAPE = "qa"
_MAX_SEARCH_WORDS = 5
_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her hers him his how i
    if in into is it its me my no not now of on or our she so than that the their them then there these they
    this to up us was we were what when where which who whom whose why will with would you your about after
    again also any because before did does doing done ever first last many more most much new next other
    same should some still such tell told very going get got know""".split()  # noqa: SIM905
)


@dataclass(frozen=True)
class Context:
    """What one condition gives the agent for one question.

    Attributes:
        condition: one of :data:`CONDITIONS`.
        text: the context itself ("" for none).
        tokens: its estimated tokens.
        fits: False when the context exceeds what the answering model can read (``full`` only).
    """

    condition: str
    text: str
    tokens: int
    fits: bool | None = True


def pack(pieces: Iterable[str], budget: int) -> str:
    """The pieces, in order, as many as fit in ``budget`` tokens (one per line); a piece that does
    not fit is skipped and later smaller ones still may."""
    kept: list[str] = []
    used = 0
    for piece in pieces:
        cost = estimate_tokens(piece + "\n")
        if used + cost > budget:
            continue
        kept.append(piece)
        used += cost
    return "\n".join(kept)


def _context(condition: str, text: str) -> Context:
    return Context(condition, text, estimate_tokens(text) if text else 0)


# -- memory, from snapshots -------------------------------------------------------------------


def snapshots_of(
    fixture_id: str,
    facts: Gold | Prediction,
    ontology: Ontology,
    *,
    last_entry_id: int,
    source: str,
    stated: Sequence[GoldFact] = (),
) -> tuple[list[Snapshot], list[str]]:
    """One snapshot of the whole tape holding ``facts`` (gold, or an eval run's prediction).

    ``stated`` are gold facts (a fixture's ``facts.json``) to hold beside the gold's items; a
    prediction carries its own.

    Returns the snapshots and what could not be kept (a relation or fact about no entity of the
    facts, an entity of a type the ontology lacks), one reason each.
    """
    dropped: list[str] = []
    entities: dict[str, Entity] = {}
    keys: dict[str, str] = {}
    for item in facts.entities:
        if item.type not in ontology.entity_types:
            dropped.append(f"entity {item.name!r}: type {item.type!r} is not in the ontology")
            continue
        entity = Entity.create(item.name, item.type, aliases=item.aliases, attributes=item.attributes)
        entities[entity.key] = entity
        for name in (item.name, *item.aliases):
            keys.setdefault(name.casefold(), entity.key)
    relations = []
    for fact in facts.relations:
        source_key, target_key = keys.get(fact.source.casefold()), keys.get(fact.target.casefold())
        if source_key is None or target_key is None or fact.type not in ontology.relation_types:
            dropped.append(
                f"relation ({fact.source} {fact.type} {fact.target}): an end or the type is unknown"
            )
            continue
        relations.append(Relation(source=source_key, type=fact.type, target=target_key))
    kept_facts = []
    for said in [*stated, *(facts.facts if isinstance(facts, Prediction) else ())]:
        about = [keys.get(name.casefold()) for name in said.about]
        if None in about:
            dropped.append(f"fact {said.statement!r}: it is about an entity that is not one of the items")
            continue
        kept_facts.append(
            Fact(
                statement=said.statement,
                kind=said.kind,
                about=tuple(key for key in about if key is not None),
                topic=said.topic,
                when=said.when,
                evidence=tuple(said.evidence),
                valid_from=min(said.evidence, default=None),
            )
        )
    snapshot = Snapshot(
        tape=fixture_id,
        first_entry_id=1,
        last_entry_id=max(1, last_entry_id),
        prompt=PromptRef(name=source, version=1, sha256="0" * 64),
        model=source,
        mode="tools",
        usage=Usage(),
        entities=tuple(entities.values()),
        relations=tuple(relations),
        facts=tuple(kept_facts),
    )
    return [snapshot], dropped


@dataclass(frozen=True)
class LoadedMemory:
    """A tape's memory as the plugin's service holds it once loaded: asked for one block per question.

    Loading renders and indexes the tape's lines; a block is then a search of that index, so the
    questions about one tape share one load (a block depends on the loaded memory and the
    question only)."""

    condition: str
    tape: str
    service: Any

    def context(self, question: str) -> Context:
        """The block the plugin injects for ``question``."""
        return _context(self.condition, self.service.block(self.tape, question))


async def load_memory(
    condition: str,
    tape: str,
    snapshots: Sequence[Snapshot],
    ontology: Ontology,
    *,
    budget: int,
    entries: Sequence[Entry] = (),
    passage_share: float | None = None,
) -> LoadedMemory:
    """The tape and its snapshots in a tape store, loaded by the agent layer's
    :class:`~bub_semantic_memory.agent.MemoryService` with the plugin's policy (the tape's lines
    are the evidence its facts quote, and the lines a block shows after the facts).
    ``passage_share`` replaces the policy's (None: the plugin's default)."""
    from bub.store import InMemoryTapeStore

    from bub_semantic_memory.agent import MemoryPolicy, MemoryService, MemorySetup
    from bub_semantic_memory.stores import SnapshotStore, append_entries

    store: Any = InMemoryTapeStore()
    append_entries(store, tape, sorted(entries, key=lambda e: e.id))  # ids from 1, as the store assigns them
    sidecar = SnapshotStore(store)
    for snapshot in snapshots:
        await sidecar.append(snapshot.model_copy(update={"tape": tape}))
    policy = MemoryPolicy(
        budget=budget, passage_share=MemoryPolicy.passage_share if passage_share is None else passage_share
    )
    service = MemoryService.from_setup(
        MemorySetup(policy=policy, folds_with=ontology), extractor=lambda: None
    )
    await service.load(tape, store)
    return LoadedMemory(condition, tape, service)


async def memory_context(
    condition: str,
    tape: str,
    snapshots: Sequence[Snapshot],
    ontology: Ontology,
    question: str,
    *,
    budget: int,
    entries: Sequence[Entry] = (),
    passage_share: float | None = None,
) -> Context:
    """The block the plugin injects for ``question`` (:func:`load_memory`, then its block)."""
    loaded = await load_memory(
        condition, tape, snapshots, ontology, budget=budget, entries=entries, passage_share=passage_share
    )
    return loaded.context(question)


# -- search over the transcript ---------------------------------------------------------------


def search_words(question: str) -> list[str]:
    """The words an agent searches the tape for: the question's content words, names first.

    A word is kept unless it is shorter than three letters or a common word (a small English
    list); capitalised words (names) come first, then longer words; at most five, one search each.
    """
    words = [w.strip("'’") for w in re.findall(r"[\w'’-]+", question)]
    kept = list(dict.fromkeys(w for w in words if len(w) >= 3 and w.casefold() not in _STOPWORDS))
    ordered = sorted(kept, key=lambda w: (not w[:1].isupper(), -len(w)))
    return ordered[:_MAX_SEARCH_WORDS]


class SearchableTape:
    """The entries in a tape store as the tape ``qa``, searched as bub's ``tape.search`` searches it;
    each word's matches are remembered, for the other questions about the same tape."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        from bub.store import InMemoryTapeStore

        from bub_semantic_memory.stores import append_entries

        self.store: Any = InMemoryTapeStore()
        append_entries(self.store, _SEARCHED_TAPE, entries)
        self._found: dict[str, list[Any]] = {}

    def search(self, word: str) -> list[Any]:
        """The entries ``tape.search`` finds for ``word`` (its kinds and limit)."""
        from bub.tape import TapeQuery

        if word not in self._found:
            query = TapeQuery(tape=_SEARCHED_TAPE, store=self.store)
            self._found[word] = list(
                self.store.fetch_all(query.query(word).kinds(*_SEARCH_KINDS).limit(_SEARCH_LIMIT))
            )
        return self._found[word]


async def tape_search_context(
    entries: Sequence[Entry], question: str, *, budget: int, tape: SearchableTape | None = None
) -> Context:
    """bub's ``tape.search``, once per content word, merged in tape order and packed into the budget.

    ``tape``: the entries already searchable (shared by the questions about one tape)."""
    tape = tape if tape is not None else SearchableTape(entries)
    found: dict[int, Any] = {}
    for word in search_words(question):
        for entry in tape.search(word):
            found.setdefault(entry.id, entry)
    # what the agent reads: the tool's own rendering of each match, oldest first
    lines = [
        json.dumps({"date": found[i].date, "content": found[i].payload}, ensure_ascii=False)
        for i in sorted(found)
    ]
    return _context("tape-search", pack(lines, budget))


def bm25_context(transcript: Transcript, question: str, *, budget: int) -> Context:
    """Transcript lines ranked by BM25 for ``question`` (SQLite FTS5), best first, within the budget."""
    terms = [normalize(w) for w in re.findall(r"\w+", question)]
    terms = [t for t in dict.fromkeys(terms) if t]
    if not terms or not transcript.lines:
        return _context("bm25", "")
    with sqlite3.connect(":memory:") as db:
        db.execute(f"CREATE VIRTUAL TABLE lines USING fts5(text, tokenize={_TOKENIZER!r})")
        db.executemany("INSERT INTO lines(text) VALUES (?)", ((line.text,) for line in transcript.lines))
        match = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
        found = db.execute("SELECT text FROM lines WHERE lines MATCH ? ORDER BY bm25(lines)", (match,))
        ranked = [row[0] for row in found]
    return _context("bm25", pack(ranked, budget))


def full_context(transcript: Transcript, *, context_tokens: int | None) -> Context:
    """The whole transcript; it does not fit when it exceeds ``context_tokens`` (None: no model said
    how much it reads, so whether it fits is not known)."""
    text = transcript.text()
    tokens = estimate_tokens(text)
    return Context("full", text, tokens, fits=None if context_tokens is None else tokens <= context_tokens)


def rendered(entries: Sequence[Entry]) -> Transcript:
    """The transcript an agent's tape renders to (as the extractor sees it, without redaction)."""
    return render_transcript(entries)
