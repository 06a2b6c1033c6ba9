"""Building blocks of a long scenario: turns, fact blocks, dated sessions, gold, questions and facts.

A scenario is a list of dated sessions; each session is a list of fact blocks (a few turns that
state facts, under a key). Fact-free filler exchanges are spread between the blocks, drawn from a
seeded ``random.Random``, so a scenario always builds to the same turns. A question, and a gold
fact, names its evidence as block keys (``"move"``: the block's first turn; ``"move@2"``: its third
turn), and the build turns those into ``evidence_turns``, the 0-based turn indices the importer
maps to entry ids.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from make_long import filler as desk_filler

Turn = dict[str, Any]
Filler = Callable[[random.Random], tuple[str, str]]

SINGLE, MULTI, TEMPORAL, PREFERENCE, AGGREGATION = (
    "single-hop",
    "multi-hop",
    "temporal",
    "preference",
    "aggregation",
)
MESSAGE_TURNS = 220  # user and assistant messages per scenario, filler included (the floor is 200)


def user(text: str) -> Turn:
    return {"speaker": "user", "text": text}


def assistant(text: str) -> Turn:
    return {"speaker": "assistant", "text": text}


def call(name: str, arguments: dict[str, Any]) -> Turn:
    """An assistant turn that only calls a tool."""
    return {"speaker": "assistant", "text": "", "tool_calls": [{"name": name, "arguments": arguments}]}


def result(name: str, payload: Any) -> Turn:
    """The tool's answer to the preceding call, as the JSON text a tool returns."""
    return {"speaker": "tool", "name": name, "text": json.dumps(payload, ensure_ascii=False)}


@dataclass(frozen=True)
class Block:
    key: str
    turns: tuple[Turn, ...]


def block(key: str, *turns: Turn) -> Block:
    return Block(key, turns)


@dataclass(frozen=True)
class Session:
    date: str  # ISO 8601 with an offset: the first turn of the session carries it
    blocks: tuple[Block, ...]


def session(date: str, *blocks: Block) -> Session:
    return Session(date, blocks)


def entity(name: str, kind: str, *aliases: str, **attributes: str) -> dict[str, Any]:
    return {"name": name, "type": kind, "aliases": list(aliases), "attributes": dict(attributes)}


def relation(source: str, kind: str, target: str) -> dict[str, str]:
    return {"source": source, "target": target, "type": kind}


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    category: str
    evidence: tuple[str, ...] = ()
    accepted: tuple[str, ...] = ()


def ask(question: str, answer: str, category: str, *evidence: str, accepted: tuple[str, ...] = ()) -> Question:
    return Question(question, answer, category, evidence, accepted)


def unknown(question: str) -> Question:
    """A question the tape never answers."""
    return Question(question, "unknown", "unanswerable")


# Fact kinds; a preference fact's kind is PREFERENCE, the same word as the question category.
EVENT, STATE, PLAN, OPINION = "event", "state", "plan", "opinion"


@dataclass(frozen=True)
class Fact:
    statement: str
    kind: str
    about: tuple[str, ...]
    evidence: tuple[str, ...]
    topic: str = ""
    when: str | None = None
    said_when: str | None = None


def fact(
    statement: str,
    kind: str,
    about: str | tuple[str, ...],
    *evidence: str,
    topic: str = "",
    when: str | None = None,
    said: str | None = None,
) -> Fact:
    """A gold fact: what it says, its kind, the gold entities it is about, its evidence by block key.

    ``when`` is the resolved date; ``said`` the relative time the turn says ("last spring"), which
    must resolve to ``when`` on the date of the first evidence turn (a test holds it to that).
    """
    return Fact(statement, kind, (about,) if isinstance(about, str) else about, evidence, topic, when, said)


@dataclass(frozen=True)
class Scenario:
    id: str
    description: str
    tags: tuple[str, ...]
    seed: int
    sessions: tuple[Session, ...]
    entities: tuple[dict[str, Any], ...]
    relations: tuple[dict[str, str], ...]
    questions: tuple[Question, ...]
    filler: Filler = field(default=desk_filler)
    facts: tuple[Fact, ...] = ()


def build(scenario: Scenario) -> dict[str, Any]:
    """The source conversation of ``scenario``: turns with filler between the blocks, and gold."""
    rng = random.Random(scenario.seed)
    blocks = [b for s in scenario.sessions for b in s.blocks]
    keys = [b.key for b in blocks]
    if len(keys) != len(set(keys)):
        raise ValueError(f"{scenario.id}: duplicate block keys")
    stated = sum(
        1 for b in blocks for t in b.turns if t["speaker"] in ("user", "assistant") and not t.get("tool_calls")
    )
    pairs = max(0, math.ceil((MESSAGE_TURNS - stated) / 2))
    base, extra = divmod(pairs, len(blocks))
    turns: list[Turn] = []
    starts: dict[str, int] = {}
    index = 0
    for dated in scenario.sessions:
        first = len(turns)
        for item in dated.blocks:
            for _ in range(base + (1 if index < extra else 0)):
                question, answer = scenario.filler(rng)
                turns += [user(question), assistant(answer)]
            index += 1
            starts[item.key] = len(turns)
            turns.extend(dict(t) for t in item.turns)
        turns[first]["date"] = dated.date
    turns.append(user("That's all for now, thanks!"))
    turns.append(assistant("Anytime. Talk soon!"))
    lengths = {b.key: len(b.turns) for b in blocks}
    gold: dict[str, Any] = {
        "entities": list(scenario.entities),
        "relations": list(scenario.relations),
        "questions": [_question(q, starts, lengths, scenario.id) for q in scenario.questions],
    }
    if scenario.facts:
        gold["facts"] = [_fact(f, starts, lengths, scenario.id) for f in scenario.facts]
    return {
        "id": scenario.id,
        "description": scenario.description,
        "tags": list(scenario.tags),
        "turns": turns,
        "gold": gold,
    }


def _question(q: Question, starts: dict[str, int], lengths: dict[str, int], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {"question": q.question, "answer": q.answer}
    if q.accepted:
        out["accepted"] = list(q.accepted)
    out["category"] = q.category
    turns = _turns(q.evidence, starts, lengths, f"{where}: question {q.question!r}")
    if turns:
        out["evidence_turns"] = turns
    return out


def _fact(f: Fact, starts: dict[str, int], lengths: dict[str, int], where: str) -> dict[str, Any]:
    if not f.evidence:
        raise ValueError(f"{where}: fact {f.statement!r} names no evidence block")
    out: dict[str, Any] = {"statement": f.statement, "kind": f.kind, "about": list(f.about)}
    if f.topic:
        out["topic"] = f.topic
    if f.when is not None:
        out["when"] = f.when
    if f.said_when is not None:
        out["said_when"] = f.said_when
    out["evidence_turns"] = _turns(f.evidence, starts, lengths, f"{where}: fact {f.statement!r}")
    return out


def _turns(refs: tuple[str, ...], starts: dict[str, int], lengths: dict[str, int], where: str) -> list[int]:
    """Block references (``"move"``, ``"move@2"``) as 0-based turn indices."""
    turns: list[int] = []
    for ref in refs:
        key, _, offset = ref.partition("@")
        step = int(offset or 0)
        if key not in starts or not 0 <= step < lengths[key]:
            raise ValueError(f"{where}: no turn {ref!r}")
        turns.append(starts[key] + step)
    return turns


# Fact-free everyday exchanges for the personal scenarios (no names, places or dates).
_HOME_CHAT = [
    ("How long do I boil an egg for a soft yolk?", "About six and a half minutes from boiling, then straight into cold water."),
    ("What can I use instead of buttermilk?", "Stir a tablespoon of lemon juice into a cup of milk and let it sit for ten minutes."),
    ("Any tips for getting kids to bed on time?", "A fixed routine helps: bath, story, lights out at the same time every night."),
    ("Why is the sky blue?", "Air scatters short blue wavelengths of sunlight more than red ones, so blue comes at you from every direction."),
    ("How do I get a wine stain out of a shirt?", "Blot it, rinse from the back with cold water, then dab on a little dish soap before washing."),
    ("What's a quick healthy lunch?", "A wrap with hummus, leftover vegetables and a handful of greens takes five minutes."),
    ("Is it bad to water plants at night?", "Mornings are better; leaves that stay wet overnight invite mildew."),
    ("Give me a fun fact.", "Octopuses have three hearts, and two of them stop while they swim."),
    ("How often should I wash my pillows?", "Two or three times a year, and the pillowcases every week."),
    ("What's a good rainy-day activity?", "Build a blanket fort, bake cookies, or start a jigsaw puzzle together."),
    ("I can't sleep. Any advice?", "Put the phone away, keep the room cool and dark, and try slow breathing for a few minutes."),
    ("How do I keep herbs fresh?", "Treat soft herbs like flowers: trim the stems and stand them in a glass of water in the fridge."),
    ("What's a polite way to decline an invitation?", "Thank them warmly, say you can't make it this time, and suggest another time if you mean it."),
    ("How long does cooked rice keep in the fridge?", "About four days, if it went into the fridge within an hour of cooking."),
    ("Suggest a stretch for a stiff back.", "Try child's pose for thirty seconds, then a gentle cat-cow ten times."),
    ("What's the trick to fluffy pancakes?", "Don't overmix: a few lumps are fine, and let the batter rest for five minutes."),
    ("How do I clean a cast iron pan?", "Hot water and a brush, no soaking; dry it on the stove and rub in a drop of oil."),
    ("Any idea for a cheap weekend treat?", "A picnic, a library visit, or a film night with homemade popcorn."),
]

_CUPS = [0.25, 0.5, 0.75, 1, 1.5, 2]


def home_filler(rng: random.Random) -> tuple[str, str]:
    """An everyday exchange: the desk filler of ``make_long.py``, kitchen sums or household chat."""
    kind = rng.choice(["desk", "desk", "cups", "ounces", "chat", "chat", "chat"])
    if kind == "desk":
        return desk_filler(rng)
    if kind == "cups":
        cups = rng.choice(_CUPS)
        return f"How many millilitres is {cups:g} cups?", f"{cups:g} cups is about {cups * 240:g} ml."
    if kind == "ounces":
        ounces = rng.randint(2, 32)
        return f"How many grams is {ounces} ounces?", f"{ounces} ounces is about {ounces * 28.35:.0f} g."
    return rng.choice(_HOME_CHAT)
