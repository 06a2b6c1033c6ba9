"""Ranked retrieval over a memory graph: which entities and facts a question is about.

A question rarely names what it asks about ("where did my sister move?", "who is handling it
now?"), so naming alone picks the wrong memory. The index ranks by content as well:

* **BM25** over one document per entity (name, aliases, type, attributes), one per relation,
  written as a fact sentence ("Maya Lin works for Globex", with "formerly" when superseded), and
  one per stated fact (its statement and date), each with the lines that stated it, in SQLite's
  FTS5 (the standard library: incremental inserts and deletes, BM25 built in, English stemming,
  accents folded);
* **names**: entities whose name or alias the question contains (:meth:`MemoryGraph.named_in`);
* **neighbourhood**: the entities one relation away from the best of the two above.

The three ranked lists are fused by reciprocal rank (each list adds ``1 / (60 + rank)``), the
usual way to combine rankings whose scores are not comparable. Findings (relations and stated
facts) are ranked by their own BM25 rank and their entities' fused scores, the newest first
among equals; a superseded one ranks below the current ones unless the question asks about the
past ("before", "used to", "previously"...).

The index is updated, not rebuilt: :meth:`MemoryIndex.refresh` rewrites only the documents whose
text changed since the last refresh (the graph's version tells when to look). The memory service
refreshes after each extraction, off the agent's model calls.
"""

from __future__ import annotations

import bisect
import heapq
import re
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bub_semantic_memory.memory._graph import EntityView, FactView, MemoryGraph, RelationView
from bub_semantic_memory.memory._graph import item_id as finding_id

__all__ = ["Finding", "MemoryIndex", "Passage", "Ranking", "asks_about_the_past", "fact_sentence"]

RRF_K = 60
"""The reciprocal-rank constant: rank 1 adds 1/61, rank 10 adds 1/70."""
_TOKENIZER = "porter unicode61 remove_diacritics 2"
_CANDIDATES = 50  # BM25 hits read per query
_COMMON_MIN = 5  # a word in more documents than this and a quarter of them is too common to search for
_COMMON_MAX = 500
"""A word in more documents than this is too common to search for, whatever the memory's size.

On a large memory a quarter of the documents is thousands ("works", "lives" in every
``works_on``/``lives_in`` fact of 10,000 people): every one of them would be scored on every
model call (12 ms at the 95th percentile, against 1 ms without), to rank documents the question's
rarer words and names rank anyway."""
_FUNCTION_WORDS = frozenset(
    """a an and are as at be been but by can could did do does doing done for from had has have he her hers
    him his how i if in into is it its me my of on or our she so than that the their them then there these
    they this to was we were what when where which who whom whose why will with would you your""".split()  # noqa: SIM905
)
"""Words a question is built of, not what it is about: left out of the search for lines.

A long conversation's lines share them with any question ("What made you pick them?" matches
"What recipes has Nate made?" by three of its four words), and a line that matched several
outranked one that matched the word the question is about. Only closed-class words are here:
"last", "before" or "first" carry the time a question asks about. On LoCoMo's tune
conversations, leaving them out raised the note's word-level recall of the answers from 0.708
to 0.736 (whole conversations, with the memory of their first four sessions), multi-hop answers'
from 0.445 to 0.524 ("us" is not here: "the US")."""
_REORDER_READ = 2
"""How many times ``limit`` lines a search for a named sender's lines reads: the reorder brings
lines from below the limit above it, so it needs them to choose from."""
_COUNTS_KEPT = 512  # word counts remembered (and counted again when the index changes)
_MERGE_PAGES = 200  # FTS5 pages merged after a small write (about 0.8 MB of work at most)
_NEIGHBOURS_MAX = 100
"""A seed entity with more relations than this (its degree) adds none of its neighbours to the
ranking.

Such a hub (the user of a personal tape, related to nearly everyone) is next to whatever a
question is about, so its neighbours say nothing about the question, as a word in every
document says nothing; and listing thousands of them took milliseconds of each model call."""
_MANY_ITEMS = 100
"""An entity with more relations and facts than this has only those of them that can rank
scored on each model call (see :meth:`MemoryIndex._leading_items`), not all of them."""
_LEADING = 50  # the newest items per kind kept for each entity with many items
_FINDINGS_KEPT = 4096  # findings remembered between questions (the oldest let go first)
_EVIDENCE_LINES = 2  # transcript lines kept with a fact: the first that stated it, and the latest
_EVIDENCE_CHARS = 300
_PAST = re.compile(
    r"\b(before|previous(ly)?|used to|former(ly)?|earlier|originally|at first|old|no longer|until|past|"
    r"prior|once|back then|had been|did .* (live|work)|was .* (assigned|working))\b",
    re.IGNORECASE,
)


def asks_about_the_past(question: str) -> bool:
    """Whether ``question`` asks what held before ("where did X live before?", "who used to...")."""
    return _PAST.search(question) is not None


def fact_sentence(graph: MemoryGraph, relation: RelationView) -> str:
    """A relation as a short sentence in the graph's names ("Maya Lin works for Globex")."""

    def name(key: str) -> str:
        entity = graph.view(key)
        return entity.name if entity is not None else key

    verb = relation.type.replace("_", " ")
    prefix = "formerly: " if relation.valid_until is not None else ""
    return f"{prefix}{name(relation.source)} {verb} {name(relation.target)}"


def _entity_text(entity: EntityView) -> str:
    attributes = " ".join(f"{key} {value}" for key, value in entity.attributes.items())
    return " ".join(filter(None, [entity.name, *entity.aliases, entity.type, attributes]))


def stated_sentence(fact: FactView) -> str:
    """A stated fact as a note line's text: its statement, dated when a date was resolved."""
    prefix = "formerly: " if fact.valid_until is not None else ""
    return f"{prefix}{fact.statement}" + (f" ({fact.when})" if fact.when else "")


@dataclass(frozen=True)
class Finding:
    """A relation or a stated fact as retrieval returns it.

    Attributes:
        id: the finding's id (``r<TAB>source<TAB>type<TAB>target`` or ``s<TAB><fact key>``).
        sentence: the fact in words.
        kind: ``relation``, or the stated fact's kind (event, state, preference, plan, opinion).
        type: the relation type, or the stated fact's topic.
        entities: the keys of the entities it is about (a relation's source and target).
        current: False when a later value superseded it.
        valid_from, valid_until: the tape positions (entry ids) it held from and until.
        evidence: entry ids that state it.
        evidence_lines: the transcript lines of (some of) those entries, when the index was given them.
        evidence_dates: the date of each of ``evidence_lines``' entries (ISO-8601; "" when unknown).
        stated: the dates of the evidence entries the index knows (ISO-8601), in entry order.
        when: a stated fact's resolved date (``2023-05-05``, ``2023-05``...), if it has one.
    """

    id: str
    sentence: str
    kind: str
    type: str
    entities: tuple[str, ...]
    current: bool
    valid_from: int | str | None
    valid_until: int | str | None
    evidence: tuple[int, ...]
    evidence_lines: tuple[str, ...] = ()
    stated: tuple[str, ...] = ()
    when: str | None = None
    evidence_dates: tuple[str, ...] = ()


@dataclass(frozen=True)
class Passage:
    """A transcript line that matches a question, as :meth:`MemoryIndex.passages` returns it.

    Attributes:
        entry_id: the tape entry the line renders.
        text: the line (``user: ...``, ``tool result ...``), as the transcript renders it.
        date: the entry's date (ISO-8601; "" when the index was given none).
    """

    entry_id: int
    text: str
    date: str = ""


@dataclass(frozen=True, slots=True)
class _Item:
    """A relation or stated fact as ranking reads it on every question, worked out once per
    graph version (off the model-call path): its document id, the resolved keys of the entities
    it is about, whether it was superseded, and its latest evidence entry."""

    doc: str
    view: RelationView | FactView
    entities: tuple[str, ...]
    superseded: bool
    newest: int


def _newest_first(item: _Item) -> tuple[int, str]:
    return -item.newest, item.doc


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _pairs_of(entities: Iterable[str]) -> set[tuple[str, str]]:
    keys = sorted(set(entities))
    return {(a, b) for i, a in enumerate(keys) for b in keys[i + 1 :]}


@dataclass(frozen=True)
class Ranking:
    """What a question is about, best first: entity keys, and findings (relations and facts)."""

    entities: tuple[str, ...]
    facts: tuple[Finding, ...]


def _names(name: str, text: str) -> bool:
    """Whether ``text`` holds ``name`` as written, as whole words."""
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def _words(text: str) -> list[str]:
    """The words of ``text`` a search looks for: casefolded, numbers and words of two letters or more."""
    return [t for t in re.findall(r"\w+", text.casefold()) if t.isdigit() or len(t) > 1]


class MemoryIndex:
    """A BM25 index of one graph's entities and facts, refreshed as the graph changes.

    Used from one thread (the memory service calls it on the event loop): the lock serialises
    the SQLite connection only, and the caches beside it (findings, per-entity lists, entity
    pairs) are not guarded by it.

    Args:
        graph: the graph it indexes (read through its public views).
    """

    def __init__(self, graph: MemoryGraph) -> None:
        self.graph = graph
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            f"CREATE VIRTUAL TABLE docs USING fts5(doc UNINDEXED, text, tokenize={_TOKENIZER!r})"
        )
        # the transcript's lines, one row each, the entry id as rowid (BM25 ties go to the older line)
        self._db.execute(f"CREATE VIRTUAL TABLE lines USING fts5(text, tokenize={_TOKENIZER!r})")
        for table in ("docs", "lines"):  # merge two segments of a level, not four (see _compact)
            self._db.execute(f"INSERT INTO {table}({table}, rank) VALUES('usermerge', 2)")
        self._lock = threading.Lock()
        self._texts: dict[str, str] = {}  # doc id -> indexed text
        self._rowids: dict[str, int] = {}
        self._version = -1
        self._lines: dict[int, str] = {}  # entry id -> transcript line, for evidence text
        self._dates: dict[int, str] = {}  # entry id -> its date
        # who said a line (entry id -> name, where the tape names them), and the names by their first
        # word, casefolded: written by refresh and read by passages, on the one thread (not the lock's)
        self._senders: dict[int, str] = {}
        self._senders_by_word: dict[str, set[str]] = {}
        self._line_order: list[int] = []  # the entry ids of the lines, ascending: which line follows which
        self._new_lines: set[int] = set()  # entry ids of lines added or rewritten since the last refresh
        self._cites: dict[int, set[str]] = {}  # entry id -> documents whose evidence holds it
        self._frequencies: dict[tuple[str, str], int] = {}  # (table, word) -> rows holding it, until a change
        self._items: dict[str, dict[str, _Item]] = {}  # entity key -> doc id -> what is said about it
        self._items_by_doc: dict[str, _Item] = {}
        self._leading: dict[str, tuple[list[_Item], list[_Item]]] = {}  # key -> newest items, if many
        self._pairs: dict[tuple[str, str], set[str]] = {}  # two entity keys -> docs about both
        self._findings: dict[str, Finding] = {}  # doc id -> finding, dropped when what it says changes
        self._findings_version = -1  # the graph version the findings are up to

    def __len__(self) -> int:
        return len(self._texts)

    @property
    def line_count(self) -> int:
        """How many transcript lines the index holds."""
        return len(self._lines)

    @property
    def last_line_id(self) -> int:
        """The entry id of the latest transcript line the index holds (0: none)."""
        return self._line_order[-1] if self._line_order else 0

    @property
    def stale(self) -> bool:
        """Whether the graph changed since the last refresh (the next ranking would refresh first)."""
        return self._version != self.graph.version

    def refresh(
        self,
        lines: Mapping[int, str] | None = None,
        dates: Mapping[int, str] | None = None,
        senders: Mapping[int, str] | None = None,
    ) -> int:
        """Bring the index up to the graph: rewrite the documents whose text changed.

        Args:
            lines: transcript lines by entry id (new ones are added to those known): a fact's
                evidence lines are indexed with it and returned with it, so a question can
                find a fact by words the sentence lacks, and a note can show what was said.

            dates: entry dates by entry id, returned with the facts they date.
            senders: who said a line, by entry id, where the tape names the sender: a question
                about one of them prefers their lines (see :meth:`passages`).

        Returns how many documents were written or deleted (0 when nothing changed).
        """
        if senders:
            self._senders.update(senders)
            for name in set(senders.values()):
                words = _words(name)
                if words and not all(word in _FUNCTION_WORDS for word in words):  # "Will": "Will it rain?"
                    self._senders_by_word.setdefault(words[0], set()).add(name)
        if dates:
            redated = [entry for entry, date in dates.items() if self._dates.get(entry) != date]
            self._dates.update(dates)
            self._drop_findings_citing(redated)  # findings carry their evidence's dates
        if lines:
            self._index_lines(
                {entry: text for entry, text in lines.items() if self._lines.get(entry) != text}
            )
        if self._version == self.graph.version and not self._new_lines:
            return 0
        version = self.graph.version  # before reading: a fold landing meanwhile is indexed next time
        touched = self.graph.changed_since(self._version)
        finer = self.graph.facts_changed_since(self._version)
        if touched is None or finer is None:  # the first refresh, or too far behind: read it all
            items = self._read_items()
            wanted = dict(self._documents(sorted(self.graph.ranked_keys()), items))
            removed = [doc for doc in self._texts if doc not in wanted]
        else:  # the entities and facts the graph changed, and the facts whose evidence lines are new
            items = self._items_about(*finer)
            wanted = dict(self._documents(sorted(touched), items))
            removed = []
        with self._lock, self._db:
            changed = self._write(wanted, removed)
            if changed:
                self._compact("docs", changed, len(self._texts))
                self._recount("docs")
            self._keep_items(items, everything=touched is None)
            self._new_lines.clear()
            self._version = version
            if touched is None:
                self._findings.clear()
            for item in items:  # what the graph or new lines changed: the findings of the rest hold
                self._findings.pop(item.doc, None)
            self._findings_version = version
        return changed

    def _write(self, wanted: Mapping[str, str], removed: Iterable[str]) -> int:
        """Store the documents whose text changed and delete ``removed``; how many were written.
        Called under the lock, in a transaction."""
        changed = 0
        for doc in removed:
            self._db.execute("DELETE FROM docs WHERE rowid = ?", (self._rowids.pop(doc),))
            del self._texts[doc]
            changed += 1
        for doc, text in wanted.items():
            if self._texts.get(doc) == text:
                continue
            if doc in self._rowids:
                self._db.execute("DELETE FROM docs WHERE rowid = ?", (self._rowids[doc],))
            cursor = self._db.execute("INSERT INTO docs(doc, text) VALUES (?, ?)", (doc, text))
            assert cursor.lastrowid is not None
            self._rowids[doc] = cursor.lastrowid
            self._texts[doc] = text
            changed += 1
        return changed

    def _keep_items(self, items: list[_Item], *, everything: bool) -> None:
        """Make ``items`` the ones ranking reads (all of them, or those that changed)."""
        if everything:
            self._items, self._items_by_doc, self._cites, self._leading, self._pairs = {}, {}, {}, {}, {}
        for item in items:
            old = self._items_by_doc.get(item.doc)
            moved = old is None or old.entities != item.entities
            if old is not None and moved:  # it is about other keys now (a merge resolved one of them)
                for key in old.entities:
                    held = self._items.get(key, {})
                    held.pop(item.doc, None)
                    self._leading.pop(key, None)
                    if not held:
                        self._items.pop(key, None)
                for pair in _pairs_of(old.entities):
                    docs = self._pairs.get(pair, set())
                    docs.discard(item.doc)
                    if not docs:
                        self._pairs.pop(pair, None)
            self._items_by_doc[item.doc] = item
            for key in item.entities:
                self._items.setdefault(key, {})[item.doc] = item
                self._leading.pop(key, None)
            if moved:  # the pairs hold doc ids: the same while the item is about the same keys
                for pair in _pairs_of(item.entities):
                    self._pairs.setdefault(pair, set()).add(item.doc)
            for entry in item.view.evidence:
                self._cites.setdefault(entry, set()).add(item.doc)
        for key in {key for item in items for key in item.entities}:
            if len(self._items.get(key, ())) > _MANY_ITEMS:
                # here, rather than on the next model call: the facts that can rank, and the
                # order a note reads the entity's facts in (sorting thousands takes milliseconds)
                self._leading_items(key, _LEADING)
                self.graph.facts_in_order(key)

    def _items_about(self, renewed: set[str], changed: list[RelationView | FactView]) -> list[_Item]:
        """What a refresh reads again from the graph: every relation and stated fact about the
        entities ``renewed`` (those the graph holds now, and those the index held under a key
        since merged into another), the relations and facts that ``changed``, and those whose
        evidence lines are new. The same relations as :meth:`_read_items` reads.

        An entity a fold only added to (the user of a personal tape, related to thousands) has
        its new and changed facts read, not all of them: reading every one again took 34 ms
        per extraction with 2,000."""
        graph = self.graph
        found: dict[str, RelationView | FactView] = {}
        for key in sorted(renewed):
            for relation in sorted(graph.edges(key), key=finding_id):
                if self._read_with_entities(relation):
                    found[finding_id(relation)] = relation
            for fact in graph.facts_about(key):
                found[finding_id(fact)] = fact
            for doc, item in sorted(self._items.get(key, {}).items()):
                found.setdefault(doc, item.view)
        for view in sorted(changed, key=finding_id):
            if isinstance(view.key, str) or self._read_with_entities(view):
                found.setdefault(finding_id(view), view)
        for entry in sorted(self._new_lines):
            for doc in sorted(self._cites.get(entry, ())):
                if doc not in found and doc in self._items_by_doc:
                    found[doc] = self._items_by_doc[doc].view
        return [self._new_item(doc, view) for doc, view in found.items()]

    def _read_with_entities(self, relation: RelationView) -> bool:
        """Whether a full read finds ``relation``: it walks the edges of the entities, so a
        relation stored under no entity's own key (both ends not extracted yet, or merged
        since) is not read."""
        graph = self.graph
        return any(graph.resolve(key) == key and graph.view(key) is not None for key in relation.key[::2])

    def _new_item(self, doc: str, view: RelationView | FactView) -> _Item:
        resolve = self.graph.resolve
        about = view.about if isinstance(view.key, str) else (view.source, view.target)
        # once each: a merge can make two of them one (a fact about "Anna" and "Mom", once Mom
        # is merged into Anna), and an entity counted twice would score twice
        entities = tuple(dict.fromkeys(resolve(key) for key in about))
        return _Item(doc, view, entities, view.valid_until is not None, max(view.evidence, default=0))

    def _index_lines(self, lines: Mapping[int, str]) -> None:
        """Add new transcript lines to the line table (and rewrite those whose text changed)."""
        if not lines:
            return
        with self._lock, self._db:
            self._db.executemany(
                "DELETE FROM lines WHERE rowid = ?", ((e,) for e in lines if e in self._lines)
            )
            self._db.executemany("INSERT INTO lines(rowid, text) VALUES (?, ?)", sorted(lines.items()))
            for entry in sorted(e for e in lines if e not in self._lines):  # mostly appended at the end
                bisect.insort(self._line_order, entry)
            self._lines.update(lines)
            self._new_lines.update(lines)
            self._compact("lines", len(lines), len(self._lines))
            self._recount("lines")

    def _compact(self, table: str, written: int, rows: int) -> None:
        """Merge the FTS5 segments that writing ``written`` rows of ``table`` (``rows`` now) left.
        Called under the lock.

        Each write leaves a segment behind, and a query looks each word up in every segment: after
        30 extractions, searching a 10,000-entity memory took three times as long as after a
        merge. A write of at least a quarter of the table is merged in full (the cost is in
        proportion to the write); a smaller one merges a bounded amount of work, pairs of segments
        of a level, so the segments stay few without rewriting a large table on each extraction.
        """
        if written * 4 >= rows:
            self._db.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")
        else:
            self._db.execute(f"INSERT INTO {table}({table}, rank) VALUES('merge', ?)", (_MERGE_PAGES,))

    def _read_items(self) -> list[_Item]:
        """Every relation (in key order: FTS5 breaks BM25 ties by rowid, which must not follow
        set order) and every stated fact of the graph, as ranking reads them."""
        graph = self.graph
        items: list[_Item] = []
        seen: set[str] = set()
        for key in sorted(graph.ranked_keys()):
            for relation in sorted(graph.edges(key), key=finding_id):
                doc = finding_id(relation)
                if doc not in seen:
                    seen.add(doc)
                    items.append(self._new_item(doc, relation))
        items.extend(self._new_item(finding_id(fact), fact) for fact in graph.fact_views())
        return items

    def _documents(self, keys: Iterable[str], items: list[_Item]) -> Iterable[tuple[str, str]]:
        """The documents of the entities ``keys`` (those that are their own key), then of ``items``."""
        graph = self.graph
        for key in keys:
            if graph.resolve(key) != key:
                continue
            view = graph.view(key)
            if view is not None:
                yield f"e\t{key}", _entity_text(view)
        for item in items:
            evidence = " ".join(self.evidence_lines(item.view.evidence))
            yield item.doc, f"{self._sentence(item.view)} {evidence}".strip()

    def _sentence(self, item: RelationView | FactView) -> str:
        """A relation or a stated fact in words, as its document and its finding say it."""
        if isinstance(item.key, str):
            return stated_sentence(item)
        return fact_sentence(self.graph, item)

    def evidence_lines(self, evidence: Iterable[int]) -> tuple[str, ...]:
        """The transcript lines of the first and the latest entry that state a fact (those known),
        never a line a forget hides: a line that named a forgotten person is not quoted as the
        evidence of another item either."""
        return tuple(self._lines[entry][:_EVIDENCE_CHARS] for entry in self._quotable(evidence))

    def _quotable(self, evidence: Iterable[int]) -> list[int]:
        """The entries of :meth:`evidence_lines`, in entry order."""
        known = sorted(entry for entry in evidence if entry in self._lines and not self._hidden(entry))
        return list(dict.fromkeys([*known[:1], *known[-1:]]))[:_EVIDENCE_LINES]

    def _bm25(self, question: str) -> list[str]:
        with self._lock:
            # A word in a quarter of the memory ("person", "project", "the") tells nothing apart:
            # it only adds hits the question is not about.
            common = max(_COMMON_MIN, min(len(self._texts) // 4, _COMMON_MAX))
            match = self._match("docs", question, common)
            if match is None:
                return []
            rows = self._db.execute(
                "SELECT doc FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (match, _CANDIDATES)
            ).fetchall()
        return [row[0] for row in rows]

    def _match(
        self,
        table: str,
        question: str,
        common: int,
        *,
        leave_out: Iterable[str] = (),
        stop: frozenset[str] = frozenset(),
    ) -> str | None:
        """The FTS5 query for ``question``'s words, without those in ``leave_out``, those in
        ``stop`` (unless no other word is left after ``leave_out``) and those in more than
        ``common`` rows of ``table`` (None: no word left). Called under the lock."""
        left_out = set(leave_out)
        terms = [t for t in dict.fromkeys(_words(question)) if t not in left_out]
        terms = [t for t in terms if t not in stop] or terms
        terms = [t for t in terms if self._frequency(table, t) <= common]
        return " OR ".join(f'"{term}"' for term in terms) if terms else None

    def _frequency(self, table: str, term: str) -> int:
        """How many rows of ``table`` hold ``term`` (counted up to ``_COMMON_MAX + 1``), as last
        counted: a change to the table counts the remembered words again (:meth:`_recount`)."""
        count = self._frequencies.get((table, term))
        if count is None:
            if len(self._frequencies) >= _COUNTS_KEPT:
                del self._frequencies[next(iter(self._frequencies))]
            count = self._frequencies[(table, term)] = self._count(table, term)
        return count

    def _count(self, table: str, term: str) -> int:
        query = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"
        return int(self._db.execute(query, (f'"{term}"', _COMMON_MAX + 1)).fetchone()[0])

    def _recount(self, table: str) -> None:
        """Count the remembered words of ``table`` again after it changed. This runs where the
        table changes, after an extraction, so that the next model call finds the counts ready.
        Called under the lock."""
        for key in [key for key in self._frequencies if key[0] == table]:
            self._frequencies[key] = self._count(table, key[1])

    def passages(self, question: str, *, limit: int = 10) -> tuple[Passage, ...]:
        """The transcript lines that match ``question`` best by BM25, best first (at most ``limit``),
        each line that asks followed by its reply.

        The tape holds what extraction missed: a note that carries the best lines as well as
        the facts answers questions the facts alone cannot (see the memory-QA eval). The words
        a question is built of (:data:`_FUNCTION_WORDS`) are left out unless it has no other,
        and so are words in more than 500 lines, as too common to search for. A line that
        names a forgotten entity, said before the forget, is never returned.

        A question in a conversation shares its words with a later question about the same thing
        ("any hobbies you love?"), while the answer, in the next line, often shares none ("Besides
        writing, I also enjoy reading"): so a line with a question mark brings the line after it.
        On LoCoMo's tune conversations this raised the note's word-level recall of the answers
        from 0.810 to 0.839 at the same budget (benchmarks section 10).

        A question that names one of the tape's senders, as the tape writes the name ("What
        recipes has Nate made?"), is about what that person said: of the best
        :data:`_REORDER_READ` times ``limit`` lines, those that match it without the name (which
        every line of theirs holds in its speaker label) and are theirs, or ask something they
        answer, come first (:meth:`_said_by_first`), then the others that match without the
        name, then those that matched by the name alone. On the tune conversations: 0.736 to
        0.743, multi-hop 0.524 to 0.543.
        """
        edits = self.graph.edits
        room = _CANDIDATES if edits else 0  # for lines a forget hides; without edits none is hidden
        sender = self._sender_asked_about(question)
        read = (_REORDER_READ * limit if sender is not None else limit) + room
        with self._lock:
            ranked = self._ranked_lines(question, read)
            if sender is not None:
                topical = self._matching(question, ranked, leave_out=_words(sender))
                ranked = self._said_by_first(sender, [e for e in ranked if e in topical]) + [
                    e for e in ranked if e not in topical
                ]
            shown = ranked[:limit]
            entries = dict.fromkeys(e for entry in shown for e in (entry, *self._reply_to(entry)))
            return tuple(Passage(e, self._lines[e], self._dates.get(e, "")) for e in entries)

    def _ranked_lines(self, question: str, limit: int, *, leave_out: Iterable[str] = ()) -> list[int]:
        """The lines that match ``question`` (without the words ``leave_out``) best by BM25, best
        first, without those a forget hides. Called under the lock."""
        match = self._lines_match(question, leave_out)
        if match is None:
            return []
        rows = self._db.execute(
            "SELECT rowid FROM lines WHERE lines MATCH ? ORDER BY bm25(lines), rowid LIMIT ?", (match, limit)
        ).fetchall()
        return [int(row[0]) for row in rows if not self._hidden(int(row[0]))]

    def _matching(self, question: str, among: list[int], *, leave_out: Iterable[str]) -> set[int]:
        """The lines of ``among`` that match ``question`` without the words ``leave_out``.
        Called under the lock."""
        match = self._lines_match(question, leave_out)
        if match is None or not among:
            return set()
        rows = self._db.execute(
            f"SELECT rowid FROM lines WHERE lines MATCH ? AND rowid IN ({', '.join('?' * len(among))})",
            (match, *among),
        ).fetchall()
        return {int(row[0]) for row in rows}

    def _lines_match(self, question: str, leave_out: Iterable[str]) -> str | None:
        """The FTS5 query of the lines search for ``question`` without the words ``leave_out``.
        Called under the lock."""
        return self._match("lines", question, _COMMON_MAX, leave_out=leave_out, stop=_FUNCTION_WORDS)

    def _sender_asked_about(self, question: str) -> str | None:
        """The one sender of the tape's lines that ``question`` names as the tape writes the name
        and asks something about (None: none, several, or nothing but the name: "Who is Nate?"),
        a name inside a longer one named too not counted ("Ann" in "Mary Ann"). Looked up by the
        question's words, not by every sender."""
        words = _words(question)
        named = {
            name
            for word in set(words)
            for name in self._senders_by_word.get(word, ())
            if _names(name, question)
        }
        named = {name for name in named if not any(other != name and _names(name, other) for other in named)}
        if len(named) != 1:
            return None
        sender = named.pop()
        name = set(_words(sender))
        asks = any(word not in name and word not in _FUNCTION_WORDS for word in words)
        return sender if asks else None

    def _said_by_first(self, sender: str, ranked: list[int]) -> list[int]:
        """``ranked`` in two groups, each in its order: first the lines ``sender`` said or that
        ask something ``sender`` answers (the line after), then the others. Called under the lock."""

        def theirs(entry: int) -> bool:
            return any(self._senders.get(e) == sender for e in (entry, *self._reply_to(entry)))

        return sorted(ranked, key=lambda entry: not theirs(entry))

    def _reply_to(self, entry: int) -> tuple[int, ...]:
        """The line after ``entry``'s when ``entry``'s line asks something (and a forget does not
        hide it). Called under the lock."""
        if "?" not in self._lines[entry]:
            return ()
        position = bisect.bisect_right(self._line_order, entry)
        if position == len(self._line_order):
            return ()
        reply = self._line_order[position]
        return () if self._hidden(reply) else (reply,)

    def _hidden(self, entry: int) -> bool:
        """Whether a forget hides ``entry``'s line (a line the index holds)."""
        edits = self.graph.edits
        return bool(edits) and edits.hides_line(entry, self._lines[entry])

    def rank(self, question: str, *, limit: int = 20) -> Ranking:
        """The entities and facts ``question`` is about, best first (at most ``limit`` of each)."""
        self.refresh()
        graph = self.graph
        hits = self._bm25(question)
        lexical: list[str] = []
        fact_rank: dict[str, int] = {}
        for doc in hits:
            kind, *parts = doc.split("\t")
            if kind == "e":
                lexical.append(parts[0])
                continue
            fact_rank.setdefault(doc, len(fact_rank))
            if kind == "r":
                lexical.extend((parts[0], parts[2]))
            else:
                hit = self._items_by_doc.get(doc)
                lexical.extend(hit.entities if hit is not None else ())
        lexical = list(dict.fromkeys(graph.resolve(k) for k in lexical))
        named = list(dict.fromkeys(graph.resolve(k) for k in graph.named_in(question)))
        seeds = list(dict.fromkeys([*named[:5], *lexical[:5]]))
        nearby = list(
            dict.fromkeys(
                n
                for key in seeds
                if graph.degree(key) <= _NEIGHBOURS_MAX
                for n in graph.neighbours(key)
                if n not in seeds
            )
        )
        scores: dict[str, float] = {}
        for ranked in (lexical, named, nearby):
            for position, key in enumerate(ranked, start=1):
                scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + position)
        entities = sorted(scores, key=lambda k: (-scores[k], -graph.last_seen(k), k))[:limit]
        return Ranking(
            entities=tuple(entities), facts=self._facts(question, entities, fact_rank, scores, limit)
        )

    def _facts(
        self,
        question: str,
        entities: list[str],
        fact_rank: dict[str, int],
        scores: dict[str, float],
        limit: int,
    ) -> tuple[Finding, ...]:
        past = asks_about_the_past(question)
        candidates: dict[str, _Item] = {}  # an item is one object in every list that holds it
        for key in entities:
            held = self._items.get(key, {})
            if len(held) <= _MANY_ITEMS:
                candidates.update(held)
                continue
            # An entity with many items: those about no other scored entity tie on its score,
            # so only the newest of them can rank; those about another one are looked up.
            candidates.update(self._leading_items(key, limit))
            for other in scores:
                for doc in self._pairs.get(_pair(key, other), ()):
                    candidates[doc] = self._items_by_doc[doc]
        for doc in fact_rank:
            hit = self._items_by_doc.get(doc)
            if hit is not None:
                candidates[doc] = hit

        # current facts first, unless the question asks what held before; then by score (the
        # entities' fused scores plus the fact's own BM25 rank); newest first among equals.
        # Plain loops with bound look-ups: this runs for every candidate on every model call.
        entity_score, bm25_rank = scores.get, fact_rank.get
        ordered: list[tuple[bool, float, int, str]] = []
        for doc, item in candidates.items():
            score = 0.0
            for key in item.entities:
                score += entity_score(key, 0.0)
            rank = bm25_rank(doc)
            if rank is not None:
                score += 1.0 / (RRF_K + rank + 1)
            ordered.append((item.superseded != past, -score, -item.newest, doc))
        ordered.sort()  # the keys are unique: they end with the doc id
        return tuple(self._finding(candidates[key[3]].view) for key in ordered[:limit])

    def _leading_items(self, key: str, limit: int) -> dict[str, _Item]:
        """The newest ``limit`` current and ``limit`` superseded items about ``key``.

        For an entity with many items, these are the only ones of them that can rank among
        the first ``limit`` on the entity's score alone (the others that can, by a BM25 rank or
        another entity's score, :meth:`_facts` adds). Kept until the entity's items change (a
        refresh computes them again, off the model call)."""
        leading = self._leading.get(key)
        if leading is None or limit > _LEADING:
            leading = self._newest_items(key, max(limit, _LEADING))
            if limit <= _LEADING:
                self._leading[key] = leading
        return {item.doc: item for kind in leading for item in kind[:limit]}

    def _newest_items(self, key: str, limit: int) -> tuple[list[_Item], list[_Item]]:
        """The newest ``limit`` current items about ``key``, and the newest ``limit`` superseded."""
        held = self._items.get(key, {}).values()
        current = heapq.nsmallest(limit, (i for i in held if not i.superseded), key=_newest_first)
        superseded = heapq.nsmallest(limit, (i for i in held if i.superseded), key=_newest_first)
        return current, superseded

    def _finding(self, item: RelationView | FactView) -> Finding:
        """``item`` as retrieval returns it, remembered until a refresh finds what it says changed
        (the same facts come back turn after turn, and building one reads its evidence lines)."""
        if self._findings_version != self.graph.version:  # not refreshed since the graph changed
            self._findings.clear()
            self._findings_version = self.graph.version
        doc = finding_id(item)
        found = self._findings.get(doc)
        if found is None:
            if len(self._findings) >= _FINDINGS_KEPT:
                # the oldest one only: freeing thousands at once takes milliseconds of a model call
                del self._findings[next(iter(self._findings))]
            found = self._findings[doc] = self._new_finding(item)
        return found

    def _drop_findings_citing(self, entries: Iterable[int]) -> None:
        """Drop the findings whose evidence holds one of ``entries`` (entries whose dates changed)."""
        for entry in entries:
            for doc in self._cites.get(entry, ()):
                self._findings.pop(doc, None)

    def _new_finding(self, item: RelationView | FactView) -> Finding:
        evidence = tuple(sorted(item.evidence))
        quotable = self._quotable(evidence)
        lines = tuple(self._lines[entry][:_EVIDENCE_CHARS] for entry in quotable)
        said_on = tuple(self._dates.get(entry, "") for entry in quotable)
        dates = tuple(self._dates[e] for e in evidence if e in self._dates)
        if isinstance(item.key, str):  # a stated fact
            fact: FactView = item
            return Finding(
                id=finding_id(fact),
                sentence=self._sentence(fact),
                kind=fact.kind,
                type=fact.topic,
                entities=tuple(dict.fromkeys(self.graph.resolve(k) for k in fact.about)),
                current=fact.valid_until is None,
                valid_from=fact.valid_from,
                valid_until=fact.valid_until,
                evidence=evidence,
                evidence_lines=lines,
                evidence_dates=said_on,
                stated=dates,
                when=fact.when,
            )
        relation: RelationView = item
        return Finding(
            id=finding_id(relation),
            sentence=self._sentence(relation),
            kind="relation",
            type=relation.type,
            entities=(relation.source, relation.target),
            current=relation.valid_until is None,
            valid_from=relation.valid_from,
            valid_until=relation.valid_until,
            evidence=evidence,
            evidence_lines=lines,
            evidence_dates=said_on,
            stated=dates,
        )

    def facts_of(self, key: str) -> tuple[Finding, ...]:
        """Every relation and stated fact about the entity ``key``: current ones first, then
        superseded, latest first."""
        return tuple(self._finding(item) for _, item in self.graph.facts_in_order(key))

    def close(self) -> None:
        with self._lock:
            self._db.close()
