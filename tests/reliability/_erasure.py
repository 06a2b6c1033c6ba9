"""The erasure scenario of issue 45: a tape that names one person in many ways, as extraction stores it.

Alice Chen (alias Ali) is named by her full name, her alias, her first name, "Ms. Chen" inside a
tool result, her name split over a line break, her surname alone and a possessive; she has a
private fact (an allergy to penicillin-zx9). Bob Stone, Globex, Lisbon and Porto are others the
memory must keep. :data:`FORMS` are the forms of her name a re-extraction may use.

:func:`traces` counts what the person leaves in text or bytes: her first name and surname
anywhere (any case, so across a JSON line break too), her alias as a word, and the private value.
The scenario holds no other word containing them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from bub.tape import TapeEntry

from bub_semantic_memory._models import Entity, Fact, PromptRef, Relation, Snapshot

TAPE = "0123456789abcdef__eeee0000eeee0000"
PRIVATE = "penicillin-zx9"

CONVERSATION: tuple[tuple[str, str], ...] = (
    ("user", "Hi, I'm Alice Chen, but everyone calls me Ali."),
    ("assistant", "Nice to meet you, Alice. Noted."),
    ("user", "My colleague Bob Stone works with me at Globex."),
    ("user", f"alice's allergy: she is allergic to {PRIVATE}, keep that private."),
    ("user", "Bob Stone plays the piano with Ali every Friday."),
    ("tool_call", "crm"),
    ("tool_result", "Contact card: Ms. Chen, Globex, badge 4411."),
    ("user", "The budget was approved by Alice\nChen yesterday."),
    ("user", "Chen booked the Lisbon offsite."),
    ("user", "Bob Stone moved to Porto last spring."),
)
"""Entries 1-10 of the tape."""

LATER = "Thanks! Carol Diaz says hi."
"""Entry 11, after everything about her."""

ALICE = Entity.create(
    "Alice Chen", "person", aliases=["Ali"], attributes={"allergy": PRIVATE, "badge": "4411"}, evidence=[1, 4]
)
BOB = Entity.create("Bob Stone", "person", evidence=[3, 5, 10])
GLOBEX = Entity.create("Globex", "organization", evidence=[3, 7])
MS_CHEN = Entity.create("Ms. Chen", "person", evidence=[7])
LISBON = Entity.create("Lisbon", "location", evidence=[9])
PORTO = Entity.create("Porto", "location", evidence=[10])
CAROL = Entity.create("Carol Diaz", "person", evidence=[11])
ALLERGY = Fact(
    statement=f"Alice Chen is allergic to {PRIVATE}", kind="state", about=(ALICE.key,), evidence=(4,)
)
PIANO = Fact(
    statement="Bob Stone plays the piano every Friday", kind="event", about=(BOB.key,), evidence=(5,)
)
"""Bob's fact: it does not name her, but the line that said it does."""
OFFSITE = Fact(statement="Chen booked the Lisbon offsite", kind="event", about=(LISBON.key,), evidence=(9,))
"""A fact that names her by her surname only."""
BUDGET = Fact(
    statement="The budget was approved by Alice Chen", kind="event", about=(GLOBEX.key,), evidence=(8,)
)

FORMS: tuple[str, ...] = (
    "Alice Chen",
    "Ali",
    "Alice",
    "Chen",
    "Ms. Chen",
    "Dr. Chen",
    "A. Chen",
    "Alice C.",
    "alice's",
    "Chen's",
    "ALICE  CHEN",
    "Alice\nChen",
    "AliceChen",
)
"""Forms of her name a re-extraction of her old entries may use, each as an entity's name."""

KEPT = {"Bob Stone", "Globex", "Lisbon", "Porto"}
"""The entities a forget of her leaves (and Carol Diaz, said after it)."""

_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (r"alice", r"chen", r"(?<![a-z])ali(?![a-z])", r"zx9", r"penicillin")
]
_BYTE_PATTERNS = [re.compile(p.pattern.encode(), re.IGNORECASE) for p in _PATTERNS]


def entries() -> list[TapeEntry]:
    """Entries 1-10 as bub stores them."""
    found = []
    for role, text in CONVERSATION:
        if role == "tool_call":
            call = {
                "id": "c1",
                "type": "function",
                "function": {"name": text, "arguments": '{"badge": 4411}'},
            }
            found.append(TapeEntry.tool_call([call]))
        elif role == "tool_result":
            found.append(TapeEntry.tool_result([text]))
        else:
            found.append(TapeEntry.message({"role": role, "content": text}))
    return found


def _snapshot(first: int, last: int, sha: str, **content: object) -> Snapshot:
    return Snapshot(
        tape=TAPE,
        first_entry_id=first,
        last_entry_id=last,
        prompt=PromptRef(name="extract", version=1, sha256=sha),
        model="test-model",
        mode="tools",
        **content,  # type: ignore[arg-type]
    )


def extracted() -> list[Snapshot]:
    """What extraction stored of entries 1-10, in two windows."""
    first = _snapshot(
        1,
        5,
        "0" * 64,
        entities=(ALICE, BOB, GLOBEX),
        relations=(
            Relation(source=ALICE.key, type="works_for", target=GLOBEX.key, evidence=(3,)),
            Relation(source=BOB.key, type="works_for", target=GLOBEX.key, evidence=(3,)),
            Relation(source=BOB.key, type="knows", target=ALICE.key, evidence=(5,)),
        ),
        facts=(ALLERGY, PIANO),
        dropped=('entity "Ali\'s piano": not mentioned in its evidence lines',),
    )
    second = _snapshot(
        6,
        10,
        "0" * 64,
        entities=(MS_CHEN, GLOBEX, LISBON, PORTO, BOB),
        relations=(Relation(source=BOB.key, type="lives_in", target=PORTO.key, evidence=(10,)),),
        facts=(OFFSITE, BUDGET),
    )
    return [first, second]


def replayed(sha: str = "1" * 64) -> Snapshot:
    """Her old entries extracted again (a replayed window, another worker, a gap) under every form of
    her name: each form an entity with her private value, and a fact about it."""
    named: dict[str, tuple[str, Entity]] = {}
    for form in FORMS:  # "A. Chen" folds to "chen", as "Chen" does: one entity
        entity = Entity.create(form, "person", attributes={"allergy": PRIVATE}, evidence=[4])
        named.setdefault(entity.key, (form, entity))
    facts = tuple(
        Fact(statement=f"{form} is allergic to {PRIVATE}", kind="state", about=(entity.key,), evidence=(4,))
        for form, entity in named.values()
    )
    return _snapshot(1, 10, sha, entities=(*(e for _, e in named.values()), BOB), facts=facts)


def later(sha: str = "2" * 64) -> Snapshot:
    """Entries 1-11 extracted by a window that started before the purge: her again, and Carol."""
    return _snapshot(
        1,
        11,
        sha,
        entities=(Entity.create("Ms. Chen", "person", attributes={"allergy": PRIVATE}, evidence=[7]), CAROL),
        facts=(
            Fact(
                statement=f"Ms. Chen is allergic to {PRIVATE}",
                kind="state",
                about=(MS_CHEN.key,),
                evidence=(4,),
            ),
        ),
    )


def traces(text: str | bytes) -> int:
    """How many traces of her ``text`` holds (see the module docstring)."""
    if isinstance(text, bytes):
        return sum(len(p.findall(text)) for p in _BYTE_PATTERNS)
    return sum(len(p.findall(text)) for p in _PATTERNS)


def found(texts: Mapping[str, str | bytes] | Iterable[tuple[str, str | bytes]]) -> dict[str, int]:
    """The places among ``texts`` that hold a trace of her, with how many."""
    items = texts.items() if isinstance(texts, Mapping) else texts
    counted = {where: traces(text) for where, text in items}
    return {where: count for where, count in counted.items() if count}


def unaccounted(data: bytes, conversation: bytes) -> int:
    """The traces of her in ``data`` (a file the conversation shares: SQLite's, PostgreSQL's heap,
    Redis's append-only file) that are not the conversation's own: a trace is the conversation's when
    the bytes from the start of its JSON object (at most 120 bytes back) through it occur in the
    conversation's rows as stored. Copies of a page (SQLite's log) hold the same bytes; a snapshot,
    an edit or a checkpoint holds them under other keys ("name", "statement"...)."""
    lowered, reference = data.lower(), conversation.lower()
    count = 0
    for pattern in _BYTE_PATTERNS:
        for match in pattern.finditer(lowered):
            start = lowered.rfind(b"{", max(0, match.start() - 120), match.start())
            window = lowered[start if start >= 0 else max(0, match.start() - 40) : match.end()]
            count += window not in reference
    return count
