"""Deterministic synthetic data for the benchmarks: bub-format tapes and memory snapshots.

Everything here is generated from a fixed seed, so two runs measure the same inputs.

:func:`make_tape` writes a conversation the way bub 0.5 records one (compare
``tests/data/bub_run_tape.jsonl``): a ``session/start`` anchor, then per turn
``loop.start`` / ``loop.step.start`` events, the system prompt of each model call, the user
message with bub's ``sender_id=...`` and date header lines, an assistant reply, ``run`` and
``loop.step`` events; every few turns the first step calls a tool (``tool_call`` /
``tool_result``) and a second step (a second model call) answers. The turns name people,
projects, organisations, places and technologies and state facts about them, so an oracle
extractor has something to find. The facts are returned alongside the entries.

:func:`make_memory` builds the snapshots of a memory of N entities with 3 relations each
(the shape an extraction of many turns produces: about 10 entities per snapshot).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bub_semantic_memory._models import Entity, Relation, Snapshot, Usage
from bub_semantic_memory.evals.qa._distractors import (
    DISTRACTOR_PROMPT_REF,
    ROLES,
    SEED,
    MemoryFixture,
    NameGenerator,
    make_memory,
)
from bub_semantic_memory.tape._transcript import Entry

__all__ = [
    "BENCH_PROMPT_REF",
    "MemoryFixture",
    "NameGenerator",
    "SyntheticTape",
    "make_memory",
    "make_queries",
    "make_snapshot_stream",
    "make_tape",
    "user_header",
]

MODEL = "openai:gpt-4o-mini"
BENCH_PROMPT_REF = DISTRACTOR_PROMPT_REF

_FILLER = [
    "The notes also mention the quarterly planning review and a few open questions about scope.",
    "Nothing else stood out in the record; the last update was made during the sprint review.",
    "There is a reminder to double-check the budget line before the end of the month.",
    "The document lists two follow-ups that are still open and one that was closed last week.",
    "Meeting minutes say the team agreed to revisit the rollout plan after the demo.",
]
SYSTEM_PROMPT = (
    "<general_instruct>\nCall tools or skills to finish the task.\n</general_instruct>\n"
    "<response_instruct>\nBefore ending this run, you MUST determine whether a response needs to be "
    "sent via channel, checking the following conditions:\n1. Has the user asked you a question waiting "
    "for your answer?\n2. Is there any error or important information that needs to be sent to the user "
    "immediately?\n3. If it is a casual chat, does the conversation need to be continued?\n"
    "</response_instruct>\n<context_contract>\nExcessively long context may cause model call failures. "
    "In this case, you MAY use tape.info to retrieve the token usage and you SHOULD use tape.handoff tool "
    "to shorten the retrieved history.\n</context_contract>\n<available_skills>\n- gh: GitHub CLI skill "
    "for interacting with GitHub via the gh command line tool.\n- skill-creator: Guide for creating "
    "effective skills.\n- telegram: Telegram Bot skill for sending and editing Telegram messages via Bot "
    "API.\n</available_skills>"
)


def user_header(when: datetime) -> str:
    """bub's context and date lines that precede a user message's text."""
    return f"sender_id=human|channel=$cli|chat_id=local\n---Date: {when.isoformat(timespec='seconds')}---\n"


# -- tapes -------------------------------------------------------------------------------------


@dataclass
class SyntheticTape:
    """A generated tape and what a perfect extractor would find in it.

    Attributes:
        entries: bub-format entries, ids from 1.
        turn_ends: for each turn, how many entries the tape holds once the turn is over.
        model_calls: for each model call, how many entries exist when it is made (the current
            user message, and the tool call and result for a second step, included).
        entities / relations: the facts, in the shape :class:`OracleResponder` takes.
    """

    entries: list[Entry] = field(default_factory=list)
    turn_ends: list[int] = field(default_factory=list)
    model_calls: list[int] = field(default_factory=list)
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def turns(self) -> int:
        return len(self.turn_ends)


class _TapeWriter:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.tape = SyntheticTape()
        self.clock = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        self.call_counter = 0

    def add(self, kind: str, payload: dict[str, Any], **meta: Any) -> None:
        self.clock += timedelta(milliseconds=self.rng.randint(5, 1500))
        entry_id = len(self.tape.entries) + 1
        self.tape.entries.append(Entry(entry_id, kind, payload, dict(meta), self.clock.isoformat()))

    def event(self, name: str, data: dict[str, Any], **meta: Any) -> None:
        self.add("event", {"name": name, "data": data}, **meta)

    def model_call(self) -> None:
        self.tape.model_calls.append(len(self.tape.entries))


@dataclass
class _Cast:
    people: list[str]
    projects: list[str]
    orgs: list[str]
    places: list[str]
    techs: list[str]
    roles: dict[str, str] = field(default_factory=dict)


def _cast(rng: random.Random, turns: int) -> _Cast:
    names = NameGenerator(rng)
    return _Cast(
        people=[names.person() for _ in range(12 + turns // 6)],
        projects=[names.project() for _ in range(4 + turns // 25)],
        orgs=[names.organization() for _ in range(4 + turns // 40)],
        places=[names.location() for _ in range(6 + turns // 40)],
        techs=[names.technology(i) for i in range(8 + turns // 60)],
    )


def _a(noun: str) -> str:
    return f"{'an' if noun[0].lower() in 'aeiou' or noun.startswith('SRE') else 'a'} {noun}"


def _turn_text(
    rng: random.Random, cast: _Cast, facts: set[tuple[str, str, str]]
) -> tuple[str, str, dict[str, Any] | None]:
    """(user text, assistant text, tool call spec or None) for one turn."""
    person, other = rng.sample(cast.people, 2)
    project, project2 = rng.sample(cast.projects, 2)
    org, place, tech = rng.choice(cast.orgs), rng.choice(cast.places), rng.choice(cast.techs)
    role = cast.roles.setdefault(person, rng.choice(ROLES))
    first = person.split()[0]
    kind = rng.randrange(8)
    tool: dict[str, Any] | None = None
    if kind == 0:
        facts.update({(person, "works_for", org), (person, "lives_in", place)})
        user = (
            f"I had coffee with {person} today. {first} joined {org} as {_a(role)} and just moved to "
            f"{place}, so we should loop them in on anything local."
        )
        reply = f"Noted: {person} is {_a(role)} at {org} and now lives in {place}. I'll remember that."
    elif kind == 1:
        facts.update({(person, "works_on", project), (project, "uses", tech)})
        user = (
            f"{person} is taking over {project}. They want to move the backend to {tech} before the "
            f"next release; can you keep track of that?"
        )
        reply = (
            f"Sure. {person} now works on {project}, and the plan is to use {tech}. I'll flag it when "
            f"the release comes up."
        )
    elif kind == 2:
        facts.update({(person, "knows", other), (other, "works_for", org)})
        user = f"Did you know {person} and {other} went to school together? {other} is at {org} now."
        reply = f"I didn't! So {person} knows {other}, who works for {org}. Small world."
    elif kind == 3:
        facts.update({(project, "depends_on", project2)})
        user = (
            f"Quick question: is {project} still blocked on {project2}, or did that get resolved "
            f"in the last sync?"
        )
        reply = (
            f"As of the last update {project} still depends on {project2}; nobody marked the "
            f"dependency as resolved yet."
        )
    elif kind == 4:
        facts.update({(org, "located_in", place), (person, "works_for", org)})
        user = f"Can you look up {person} in the CRM? I need their team and office before the call."
        reply = (
            f"{person} is {_a(role)} at {org}, whose office is in {place}. Want me to draft an intro "
            f"for the call?"
        )
        tool = {
            "name": "crm_lookup",
            "arguments": {"query": person, "fields": ["role", "organization", "office"]},
            "result": (
                f"Contact: {person}\nRole: {role}\nOrganization: {org}\nOffice: {place}\n"
                f"Owner: {other}\n" + " ".join(rng.sample(_FILLER, 3))
            ),
        }
    elif kind == 5:
        facts.update({(person, "works_on", project), (other, "works_on", project)})
        user = f"Please read notes/{project.split()[-1].lower()}.md and tell me who is on {project}."
        reply = f"According to the notes, {person} and {other} both work on {project}."
        tool = {
            "name": "fs_read",
            "arguments": {"path": f"notes/{project.split()[-1].lower()}.md"},
            "result": (
                f"# {project}\n\nTeam: {person} ({role}), {other}.\nStack: {tech}.\n"
                f"Depends on: {project2}.\n\n" + " ".join(rng.sample(_FILLER, 4))
            ),
        }
    elif kind == 6:
        user = rng.choice(
            [
                "Good morning! How's it going?",
                "Thanks, that's all for now.",
                "Can you summarise what we discussed yesterday in two lines?",
                "What's on my calendar this afternoon?",
            ]
        )
        reply = rng.choice(
            [
                "Good morning! All good here. What are we working on today?",
                "You're welcome. Ping me any time.",
                "Here's the short version: progress on the open projects and a couple of follow-ups.",
                "You have a 1:1 at 14:00 and the design review at 16:30.",
            ]
        )
    else:
        facts.update({(person, "lives_in", place)})
        user = (
            f"Remind me where {first} lives again? I want to send {person} a card for the {project} launch."
        )
        reply = f"{person} lives in {place}. Want me to find a shop nearby for the card?"
        tool = {
            "name": "web_search",
            "arguments": {"q": f"card shops in {place}"},
            "result": (
                f"Results for card shops in {place}: 1. Paper & Ink, Main Street. 2. The Card Corner, "
                f"Harbour Road. 3. Letterbox Studio, open until 18:00. " + rng.choice(_FILLER)
            ),
        }
    return user, reply, tool


def make_tape(turns: int, *, seed: int = SEED) -> SyntheticTape:
    """A bub-format tape of ``turns`` turns (about one in three calls a tool), and its facts."""
    rng = random.Random(seed + turns)
    writer = _TapeWriter(rng)
    cast = _cast(rng, turns)
    facts: set[tuple[str, str, str]] = set()
    writer.add("anchor", {"name": "session/start", "state": {"owner": "human"}})
    writer.event("handoff", {"name": "session/start", "state": {"owner": "human"}})
    for turn in range(turns):
        user, reply, tool = _turn_text(rng, cast, facts)
        prompt = user_header(writer.clock) + user
        run_id = f"run-{turn:05d}"
        usage = {"completion_tokens": 40, "prompt_tokens": 900 + 40 * turn, "total_tokens": 940 + 40 * turn}
        writer.event(
            "loop.start",
            {"model": MODEL, "prompt": prompt, "allowed_skills": None, "allowed_tools": None},
        )
        writer.event("loop.step.start", {"step": 1, "prompt": prompt})
        writer.add("system", {"content": SYSTEM_PROMPT})
        writer.add("message", {"role": "user", "content": prompt}, run_id=run_id)
        writer.model_call()
        step = 1
        if tool is not None:
            writer.call_counter += 1
            call = {
                "id": f"call_{writer.call_counter}",
                "type": "function",
                "function": {"name": tool["name"], "arguments": json.dumps(tool["arguments"])},
            }
            writer.add("tool_call", {"calls": [call]}, run_id=run_id)
            writer.add("tool_result", {"results": [tool["result"]]}, run_id=run_id)
            writer.event("run", {"status": "ok", "usage": usage, "model": MODEL}, run_id=run_id)
            writer.event("loop.step", {"step": 1, "elapsed_ms": rng.randint(300, 2500), "status": "continue"})
            step = 2
            writer.event("loop.step.start", {"step": 2, "prompt": None})
            writer.add("system", {"content": SYSTEM_PROMPT})
            writer.model_call()
        writer.add("message", {"role": "assistant", "content": reply}, run_id=run_id)
        writer.event("run", {"status": "ok", "usage": usage, "model": MODEL}, run_id=run_id)
        writer.event("loop.step", {"step": step, "elapsed_ms": rng.randint(300, 2500), "status": "ok"})
        writer.tape.turn_ends.append(len(writer.tape.entries))
    tape = writer.tape
    types = {
        **dict.fromkeys(cast.people, "person"),
        **dict.fromkeys(cast.projects, "project"),
        **dict.fromkeys(cast.orgs, "organization"),
        **dict.fromkeys(cast.places, "location"),
        **dict.fromkeys(cast.techs, "technology"),
    }
    tape.entities = [
        {"name": name, "type": kind, "aliases": [name.split()[0]] if kind == "person" else []}
        for name, kind in types.items()
    ]
    tape.relations = [{"source": s, "type": t, "target": o} for s, t, o in sorted(facts)]
    return tape


# -- memories ----------------------------------------------------------------------------------


def bench_snapshot(
    tape: str,
    number: int,
    entities: Iterable[Entity],
    relations: Iterable[Relation] = (),
    *,
    usage: Usage | None = None,
) -> Snapshot:
    """The ``number``-th per-turn snapshot of a synthetic tape (entries ``12 * number + 1`` to ``+ 11``)."""
    first = 12 * number + 1
    return Snapshot(
        tape=tape,
        first_entry_id=first,
        last_entry_id=first + 11,
        prompt=BENCH_PROMPT_REF,
        model="fake-extractor",
        mode="tools",
        usage=usage or Usage(),
        entities=tuple(entities),
        relations=tuple(relations),
    )


def make_snapshot_stream(
    count: int, *, pool: int = 2000, per_snapshot: int = 3, seed: int = SEED, tape: str = "bench-tape"
) -> list[Snapshot]:
    """``count`` per-turn snapshots over a long tape: each names ``per_snapshot`` entities of a
    pool of ``pool`` (people come up again and again) and states as many relations between them."""
    rng = random.Random(seed + count)
    base = make_memory(pool, seed=seed, tape=tape).snapshots
    entities = [e for s in base for e in s.entities]
    relations = [r for s in base for r in s.relations]
    by_key = {e.key: e for e in entities}
    snapshots: list[Snapshot] = []
    for number in range(count):
        first = 12 * number + 1
        picked = rng.sample(relations, per_snapshot)
        mentioned: dict[str, Entity] = {}
        for relation in picked:
            for key in (relation.source, relation.target):
                mentioned.setdefault(key, by_key[key])
        usage = Usage(prompt_tokens=1900, completion_tokens=180, requests=1, attempts=1, latency_s=1.1)
        snapshots.append(
            bench_snapshot(
                tape,
                number,
                [
                    e.model_copy(update={"evidence": (first + 3,)})
                    for e in list(mentioned.values())[: per_snapshot + 1]
                ],
                [r.model_copy(update={"evidence": (first + 3,)}) for r in picked],
                usage=usage,
            )
        )
    return snapshots


# -- queries ---------------------------------------------------------------------------------


_QUESTIONS = [
    "What is {a} working on these days?",
    "Can you remind me where {a} lives and who {b} is?",
    "Draft a short note to {a} about the review on Friday.",
    "Did {a} ever meet {b}?",
]
_ABSENT = [
    "Who is {x}? I think they joined last week.",
    "Schedule a call with {x} and {y} tomorrow.",
]
_GENERIC = [
    "What's the weather like on {day} at {time}?",
    "Summarise the last {count} messages, please.",
    "Remind me at {time} on {day} to stretch.",
    "Can you list my open tasks for {day}?",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def make_queries(names: list[str], count: int, seed: int) -> list[str]:
    """``count`` user prompts with bub's header, each with a question no other one asks (so
    the plugin, which reads the question without the header, never answers one from its
    render cache): half name memory entities, a quarter name people who are not in it, a
    quarter name nobody."""
    rng = random.Random(seed)
    strangers = NameGenerator(random.Random(seed + 1))
    when = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    queries: list[str] = []
    asked: set[str] = set()
    for index in range(count):
        when += timedelta(seconds=rng.randint(20, 600))
        text = _question(index % 4, names, strangers, rng)
        while text in asked:
            text = _question(index % 4, names, strangers, rng)
        asked.add(text)
        queries.append(user_header(when) + text)
    return queries


def _question(kind: int, names: list[str], strangers: NameGenerator, rng: random.Random) -> str:
    if kind in (0, 1):
        return rng.choice(_QUESTIONS).format(a=rng.choice(names), b=rng.choice(names))
    if kind == 2:
        return rng.choice(_ABSENT).format(x=strangers.person(), y=strangers.person())
    return rng.choice(_GENERIC).format(
        day=rng.choice(_DAYS), time=f"{rng.randint(7, 20)}:{rng.randint(0, 59):02d}", count=rng.randint(2, 30)
    )
