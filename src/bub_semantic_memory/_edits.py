"""A person's edits of a tape's memory: forget, correct, merge, end, undo, import.

The memory is derived from the tape, and extraction is incremental: a fact a person corrected
or erased must not come back from an old snapshot folded again, a checkpoint, or a new
extraction of old entries. So an edit is not a change made to the folded graph; it is an entry
of the tape's memory sidecar, beside the snapshots, that every fold applies (see
:mod:`bub_semantic_memory.memory._edit_rules`): every store and every worker sees it the way it sees
a snapshot, and the history stays auditable (who, when, what).

Each edit has a tape position, :attr:`Edit.at`: the last tape entry when it was made. It wins
over whatever the entries up to that position said; an entry after it (a new mention) may state
the fact again. Edits are ordered by ``(at, created_at, id)``, so a fold that meets them in
another order converges to the same memory.

A forget recognises what it forgot by **digests** (:func:`digest`) of the keys, names and
words involved, not by the names themselves: ``forget --purge`` erases the names from storage,
and the edit that must go on suppressing them may hold no trace of them either. A digest of a
name confirms a guessed name; it does not reveal one. The digests cover every form of the names
(:func:`~bub_semantic_memory._mentions.name_forms`: first name, surname, "Ms. Chen", "A. Chen",
possessives...), so a purged forget recognises "Ms. Chen" as well as "Alice Chen".

A purged forget is an **erasure**: it cannot be undone (:attr:`Edit.erases`), and what it
recognises is never stored again (see :mod:`bub_semantic_memory.stores._erasure`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bub_semantic_memory._mentions import fold_text, has_unspaced_script, is_mentioned
from bub_semantic_memory._models import RelationKey, normalize_name
from bub_semantic_memory._statements import content_words

__all__ = [
    "EDIT_OPS",
    "Edit",
    "EditOp",
    "digest",
    "fact_digests",
    "mention_digests",
    "name_digest",
    "relation_digest",
]

EDIT_SCHEMA_VERSION = 1
_MAX_NGRAM_WORDS = 5
_CJK_MIN, _CJK_MAX = 2, 8

type EditOp = Literal["forget", "set", "unset", "merge", "end", "undo", "import"]
"""What an edit does:

* ``forget``: an entity (with its relations, attributes and the facts about it), a relation, or a fact;
* ``set`` / ``unset``: an entity's attribute, whatever extraction says;
* ``merge``: one entity into another (aliases kept, relations re-pointed);
* ``end``: a relation is no longer true from an entry on (its ``valid_until``);
* ``undo``: another edit no longer applies (``split`` is the undo of a merge);
* ``import``: a memory read from an export file was added (its snapshot; undoing it drops it).
"""

EDIT_OPS: tuple[str, ...] = get_args(EditOp.__value__)


def digest(*parts: str) -> str:
    """A short SHA-256 of ``parts``: how a forget recognises a key, a name or a word without holding it."""
    return hashlib.sha256("\x1f".join(("bub-semantic-memory", *parts)).encode("utf-8")).hexdigest()[:32]


def name_digest(entity_type: str, name: str) -> str:
    """The digest of an entity name of a type (compared after :func:`normalize_name`)."""
    return digest("name", entity_type, normalize_name(name))


def relation_digest(key: RelationKey) -> str:
    """The digest of a relation's (source, type, target) key."""
    return digest("relation", *key)


def _ngrams(folded: str) -> Iterator[str]:
    """Word n-grams (up to five words) of a folded text, and substrings of its unspaced-script words."""
    words = folded.split()
    for start in range(len(words)):
        for length in range(1, min(_MAX_NGRAM_WORDS, len(words) - start) + 1):
            yield " ".join(words[start : start + length])
    for word in words:
        if has_unspaced_script(word):
            for size in range(_CJK_MIN, min(_CJK_MAX, len(word)) + 1):
                for start in range(len(word) - size + 1):
                    yield word[start : start + size]


@functools.lru_cache(maxsize=65_536)
def mention_digests(text: str) -> frozenset[str]:
    """Digests of every name ``text`` could mention (its word n-grams): compared with a forget's names.

    Cached: a fold under a forget asks this of every fact statement, and a new fold asks again.
    """
    return frozenset(digest("text", gram) for gram in _ngrams(normalize_name(text)))


def fact_digests(statement: str) -> frozenset[str]:
    """Digests of a statement's content words (see :mod:`bub_semantic_memory._statements`)."""
    return frozenset(digest("word", word) for word in content_words(statement))


class Edit(BaseModel):
    """One edit of a tape's memory, stored as a ``memory.edit`` event of its memory sidecar.

    Attributes:
        tape: the tape whose memory it edits.
        op: what it does (see :data:`EditOp`).
        at: the last tape entry when it was made: it wins over what entries up to it said.
        by: who made it (``cli:<login>``, ``agent:memory.forget``...).
        created_at: when.
        entity: the entity key it is about (forget, set, unset; merge: the entity kept).
        names: that entity's names when the edit was made, display name first (for the log).
        entity_type: that entity's type.
        other, other_names, other_keys: merge: the entity merged into ``entity``, its names, and
            every key that resolved to it.
        relation: forget a relation, end: its (source, type, target) key.
        fact, fact_kind: forget a fact: its statement and kind.
        key, value: set (``value``) or unset an attribute.
        until: end: the entry from which the relation no longer holds.
        undoes: undo: the id of the edit it cancels.
        snapshot: import: the id of the snapshot the import stored.
        match: forget: digests of what it recognises (keys, names, the relation or the fact).
        words: forget a fact: digests of the statement's content words.
        lines: forget: the tape entries that stated what it forgets (the entity's mentions, its
            relations and facts; the relation; the fact), up to ``at``: a note never quotes them.
        hide: forget an entity: digests of each of its names, aliases and their forms as text:
            a note never quotes a line said up to ``at`` that holds one.
        about: forget a fact: digests of the keys of the entities it is about; their attribute
            holding the fact's value goes too.
        purged: the edit's names were erased (``forget --purge``); its digests still apply.
    """

    model_config = ConfigDict(frozen=True)

    schema_version: int = EDIT_SCHEMA_VERSION
    id: str = ""
    tape: str
    op: EditOp
    at: int = Field(ge=0)
    by: str
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    entity: str | None = None
    names: tuple[str, ...] = ()
    entity_type: str | None = None
    other: str | None = None
    other_names: tuple[str, ...] = ()
    other_keys: tuple[str, ...] = ()
    relation: tuple[str, str, str] | None = None
    fact: str | None = None
    fact_kind: str | None = None
    key: str | None = None
    value: str | None = None
    until: int | None = None
    undoes: str | None = None
    snapshot: str | None = None
    match: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    lines: tuple[int, ...] = ()
    hide: tuple[str, ...] = ()
    about: tuple[str, ...] = ()
    purged: bool = False

    @model_validator(mode="after")
    def _derive_id(self) -> Edit:
        if not self.id:
            # Frozen model: derived once, from the content as made; a purge keeps it.
            material = self.model_dump_json(exclude={"id", "purged"})
            object.__setattr__(self, "id", hashlib.sha256(material.encode("utf-8")).hexdigest()[:20])
        return self

    @property
    def order(self) -> tuple[int, datetime, str]:
        """Edits apply in this order: by tape position, then time, then id."""
        return (self.at, self.created_at, self.id)

    def summary(self) -> str:
        """What the edit does, in a line (names as far as the edit still holds them)."""
        what = self.names[0] if self.names else (self.entity or "")
        if self.purged:
            return f"{self.op} (purged: names erased)"
        if self.op == "forget" and self.relation is not None:
            return "forget relation " + " ".join(self.relation)
        if self.op == "forget" and self.fact is not None:
            return f"forget fact {self.fact!r}"
        if self.op == "set":
            return f"set {what} {self.key} = {self.value!r}"
        if self.op == "unset":
            return f"unset {what} {self.key}"
        if self.op == "merge":
            other = self.other_names[0] if self.other_names else self.other
            return f"merge {other} into {what}"
        if self.op == "end":
            relation = " ".join(self.relation or ())
            return f"end {relation} at entry {self.until}"
        if self.op == "undo":
            return f"undo {self.undoes}"
        if self.op == "import":
            return f"import snapshot {self.snapshot}"
        return f"forget {what}"

    @property
    def erases(self) -> bool:
        """Whether this is an erasure (a purged forget): it cannot be undone, and what it recognises
        is never stored again."""
        return self.op == "forget" and self.purged

    def named_in(self, text: str) -> bool:
        """Whether ``text`` names what this forget forgot: one of its names or their forms (whole
        words, recognised by their digests, so a purged forget still answers), or its fact."""
        known = frozenset((*self.match, *self.hide))
        if known and any(digest("text", gram) in known for gram in _ngrams(normalize_name(text))):
            return True
        return bool(self.fact and self.fact.strip() and is_mentioned(self.fact, fold_text(text)))

    def redacted(self) -> Edit:
        """This edit without the names and values it holds (the digests stay): what a purge keeps."""
        return Edit.model_construct(
            schema_version=self.schema_version,
            id=self.id,
            tape=self.tape,
            op=self.op,
            at=self.at,
            by=self.by,
            created_at=self.created_at,
            entity=None,
            names=(),
            entity_type=self.entity_type,
            other=None,
            other_names=(),
            other_keys=(),
            relation=None,
            fact=None,
            fact_kind=self.fact_kind,
            key=None,
            value=None,
            until=self.until,
            undoes=self.undoes,
            snapshot=self.snapshot,
            match=self.match,
            words=self.words,
            lines=self.lines,
            hide=self.hide,
            about=self.about,
            purged=True,
        )
