#!/usr/bin/env python3
"""Write ``long-tape.jsonl``: one 200+ turn evaluation fixture.

The tape is a weeks-long chat between a user and her assistant: mostly fact-free
filler (arithmetic, unit conversions, word help, timers, chit-chat) with about twenty
facts scattered across it, including a correction, a move to a new city, a task
reassignment and one calendar tool call. Deterministic: the filler comes from a
seeded ``random.Random``, so rerunning gives byte-identical output. Questions and gold facts
name their evidence as (fact block, turn within the block) and are written out as
``evidence_turns``.

Usage: python3 evals/sources/make_long.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

OUT = Path(__file__).with_name("long-tape.jsonl")
SEED = 20260301
FILLER_PAIRS = 100  # user/assistant exchanges of filler; facts are interleaved between them


def user(text: str) -> dict:
    return {"speaker": "user", "text": text}


def assistant(text: str) -> dict:
    return {"speaker": "assistant", "text": text}


SYNONYMS = {
    "happy": "cheerful, content, glad, upbeat",
    "tired": "weary, drained, worn out, exhausted",
    "quick": "fast, swift, rapid, brisk",
    "important": "crucial, vital, key, essential",
    "messy": "untidy, cluttered, chaotic, disordered",
    "calm": "peaceful, serene, relaxed, tranquil",
    "strange": "odd, unusual, peculiar, curious",
    "big": "large, huge, sizable, substantial",
    "small": "tiny, little, compact, modest",
    "begin": "start, launch, kick off, commence",
}

SPELLINGS = [
    "necessary",
    "accommodate",
    "rhythm",
    "definitely",
    "separate",
    "embarrass",
    "occurrence",
    "privilege",
    "conscientious",
    "millennium",
]

CHITCHAT = [
    ("Long day. My brain is mush.", "Sounds like a good moment for a short break and a glass of water."),
    (
        "Do you ever get bored?",
        "Not really - every conversation is a bit different, which keeps things interesting.",
    ),
    (
        "I just spilled coffee on my desk.",
        "Oh no! Paper towels first, then check nothing electronic got wet.",
    ),
    (
        "What's a good stretch after sitting all day?",
        "Try a standing forward fold, then slow neck rolls and a doorway chest stretch.",
    ),
    (
        "Tell me something cheerful.",
        "Sea otters sometimes hold hands while they sleep so they don't drift apart.",
    ),
    (
        "I can't decide what to have for dinner.",
        "Something quick: eggs on toast, a stir-fry with whatever vegetables you have, or soup.",
    ),
    ("Is it weird to talk to plants?", "Not at all, plenty of people do. The plants don't seem to mind."),
    (
        "I keep procrastinating.",
        "Try setting a timer for ten minutes and only committing to that. Starting is the hardest part.",
    ),
    ("What's a fun word?", "Kerfuffle. It means a commotion or a fuss."),
    (
        "Give me a two-minute breathing exercise.",
        "Breathe in for four counts, hold for four, out for six. Repeat for about two minutes.",
    ),
    ("Is tea better than coffee?", "Depends on the mood! Tea is gentler; coffee has more of a kick."),
    ("My neighbor's dog barked all night.", "That's rough. Earplugs or a white noise app can help tonight."),
    ("Any tip for remembering things?", "Write it down right away, and review the list once in the evening."),
    ("I finally cleaned my kitchen.", "Nice work! A clean kitchen makes everything feel calmer."),
    (
        "What's a good desk plant?",
        "A pothos or a snake plant - both tolerate low light and irregular watering.",
    ),
    (
        "Should I nap or push through?",
        "A 20-minute nap can help without leaving you groggy. Longer than that, maybe push through.",
    ),
]

TIMERS = ["the pasta", "the laundry", "a focus block", "the tea", "a short break", "the oven"]


def filler(rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(
        ["mult", "miles", "temp", "synonym", "spell", "chat", "chat", "tip", "timer", "percent"]
    )
    if kind == "mult":
        a, b = rng.randint(12, 99), rng.randint(12, 99)
        return f"quick one: what's {a} times {b}?", f"{a} x {b} = {a * b}."
    if kind == "miles":
        m = rng.randint(2, 40)
        return f"How many kilometers is {m} miles?", f"{m} miles is about {m * 1.609:.1f} km."
    if kind == "temp":
        f = rng.randint(20, 100)
        return f"What's {f} Fahrenheit in Celsius?", f"{f} F is about {(f - 32) * 5 / 9:.1f} C."
    if kind == "synonym":
        word = rng.choice(sorted(SYNONYMS))
        return f"Give me a synonym for '{word}'.", f"Some options: {SYNONYMS[word]}."
    if kind == "spell":
        word = rng.choice(SPELLINGS)
        return f"How do you spell {word}? I always get it wrong.", f"It's {word}: {'-'.join(word.upper())}."
    if kind == "tip":
        amount = rng.randint(18, 140)
        pct = rng.choice([15, 18, 20])
        return (
            f"What's a {pct}% tip on ${amount}?",
            f"A {pct}% tip on ${amount} is ${amount * pct / 100:.2f}.",
        )
    if kind == "timer":
        minutes = rng.choice([5, 8, 10, 12, 15, 20, 25])
        what = rng.choice(TIMERS)
        return f"Set a {minutes}-minute timer for {what}.", f"Timer set: {minutes} minutes for {what}."
    if kind == "percent":
        a, b = rng.randint(5, 60), rng.randint(80, 400)
        return f"What's {a}% of {b}?", f"{a}% of {b} is {a * b / 100:g}."
    return rng.choice(CHITCHAT)


# Fact exchanges, in order. Each item is a list of turns inserted as one block.
FACTS: list[list[dict]] = [
    [
        user(
            "Hey, I'm Noor Haddad. I'm going to use you as my running notebook for a while, hope that's ok."
        ),
        assistant("Of course, Noor. I'll keep track of whatever you tell me."),
    ],
    [
        user("Context: I'm a firmware engineer at Tidepool Robotics. We build small robot arms for labs."),
        assistant("Got it - firmware engineer at Tidepool Robotics."),
    ],
    [
        user("My current project is the Otter Arm. Its firmware is written in Rust and runs on Zephyr."),
        assistant("Noted: Otter Arm, Rust firmware on Zephyr."),
    ],
    [
        user("My manager is Hyun-woo Park. Everyone calls him Woo."),
        assistant("Hyun-woo Park, a.k.a. Woo, is your manager."),
    ],
    [
        user("I live in Oakland with my husband Sami, so the commute to Tidepool is short."),
        assistant("Noted: you and your husband Sami live in Oakland."),
    ],
    [
        user("Big Otter Arm task for me this quarter: the motor driver bring-up, due April 18."),
        assistant("Added: motor driver bring-up, yours, due April 18."),
    ],
    [
        user(
            "Dev Malhotra is writing the calibration script, and I can't finish the motor driver bring-up until his calibration script works."
        ),
        assistant(
            "Noted: the motor driver bring-up depends on the calibration script, which Dev Malhotra owns."
        ),
    ],
    [
        user("Woo says the whole team is going to the Robotics Expo on May 12. It's in Santa Clara."),
        assistant("Noted: Robotics Expo, May 12, Santa Clara."),
    ],
    [
        user("Correction on the expo: it's in San Jose, not Santa Clara. I misread the flyer."),
        assistant("Updated: the Robotics Expo is in San Jose."),
    ],
    [
        user("Woo and I are presenting the Otter Arm demo at the expo."),
        assistant("Nice! You and Woo are presenting the Otter Arm demo at the Robotics Expo."),
    ],
    [
        user("My sister Yasmin lives in Amman. She's getting married in August!"),
        assistant("Congratulations to Yasmin!"),
    ],
    [
        user("Sami and I are flying to Amman for Yasmin's wedding, obviously."),
        assistant("Noted: you and Sami will be at Yasmin's wedding in Amman in August."),
    ],
    [
        user("What's on my calendar for expo day?"),
        {
            "speaker": "assistant",
            "text": "",
            "tool_calls": [{"name": "calendar.list_events", "arguments": {"date": "2026-05-12"}}],
        },
        {
            "speaker": "tool",
            "name": "calendar.list_events",
            "text": json.dumps(
                {
                    "events": [
                        {
                            "title": "Robotics Expo",
                            "date": "2026-05-12",
                            "location": "San Jose",
                            "attendees": ["Noor Haddad", "Hyun-woo Park", "Dev Malhotra"],
                        }
                    ]
                }
            ),
        },
        assistant("Just the Robotics Expo in San Jose, all day."),
    ],
    [
        user("Update: Dev got pulled onto another project, so the calibration script is now Ana Sousa's."),
        assistant("Updated: the calibration script is now owned by Ana Sousa."),
    ],
    [
        user("Big news: Sami and I finally moved! We're in Berkeley now."),
        assistant("Congratulations on the move! Noted: you and Sami now live in Berkeley."),
    ],
    [
        user("Ana says the calibration script will be done by April 10, so my bring-up is still on track."),
        assistant(
            "Great: calibration script due April 10 (Ana Sousa); motor driver bring-up still due April 18."
        ),
    ],
    [
        user("Remind me: what's my bring-up deadline again?"),
        assistant("The motor driver bring-up is due April 18."),
    ],
]

GOLD = {
    "entities": [
        {
            "name": "Noor Haddad",
            "type": "person",
            "aliases": ["Noor"],
            "attributes": {"role": "firmware engineer"},
        },
        {"name": "Tidepool Robotics", "type": "organization", "aliases": ["Tidepool"], "attributes": {}},
        {"name": "Otter Arm", "type": "project", "aliases": [], "attributes": {}},
        {"name": "Rust", "type": "technology", "aliases": [], "attributes": {}},
        {"name": "Zephyr", "type": "technology", "aliases": [], "attributes": {}},
        {"name": "Hyun-woo Park", "type": "person", "aliases": ["Woo"], "attributes": {}},
        {"name": "Oakland", "type": "location", "aliases": [], "attributes": {}},
        {"name": "Berkeley", "type": "location", "aliases": [], "attributes": {}},
        {"name": "Sami", "type": "person", "aliases": [], "attributes": {}},
        {"name": "motor driver bring-up", "type": "task", "aliases": [], "attributes": {"due": "April 18"}},
        {"name": "calibration script", "type": "task", "aliases": [], "attributes": {"due": "April 10"}},
        {"name": "Dev Malhotra", "type": "person", "aliases": ["Dev"], "attributes": {}},
        {"name": "Ana Sousa", "type": "person", "aliases": ["Ana"], "attributes": {}},
        {"name": "Robotics Expo", "type": "event", "aliases": [], "attributes": {"date": "May 12"}},
        {"name": "San Jose", "type": "location", "aliases": [], "attributes": {}},
        {"name": "Yasmin", "type": "person", "aliases": [], "attributes": {}},
        {"name": "Amman", "type": "location", "aliases": [], "attributes": {}},
        {"name": "Yasmin's wedding", "type": "event", "aliases": [], "attributes": {"date": "August"}},
    ],
    "relations": [
        {"source": "Noor Haddad", "target": "Tidepool Robotics", "type": "works_for"},
        {"source": "Noor Haddad", "target": "Otter Arm", "type": "works_on"},
        {"source": "Otter Arm", "target": "Rust", "type": "uses"},
        {"source": "Otter Arm", "target": "Zephyr", "type": "uses"},
        {"source": "Noor Haddad", "target": "Hyun-woo Park", "type": "reports_to"},
        {"source": "Noor Haddad", "target": "Sami", "type": "partner_of"},
        {"source": "Noor Haddad", "target": "Oakland", "type": "lives_in"},
        {"source": "Sami", "target": "Oakland", "type": "lives_in"},
        {"source": "Noor Haddad", "target": "Berkeley", "type": "lives_in"},
        {"source": "Sami", "target": "Berkeley", "type": "lives_in"},
        {"source": "motor driver bring-up", "target": "Noor Haddad", "type": "assigned_to"},
        {"source": "motor driver bring-up", "target": "Otter Arm", "type": "part_of"},
        {"source": "motor driver bring-up", "target": "calibration script", "type": "depends_on"},
        {"source": "calibration script", "target": "Dev Malhotra", "type": "assigned_to"},
        {"source": "calibration script", "target": "Ana Sousa", "type": "assigned_to"},
        {"source": "Robotics Expo", "target": "San Jose", "type": "located_in"},
        {"source": "Noor Haddad", "target": "Robotics Expo", "type": "attends"},
        {"source": "Hyun-woo Park", "target": "Robotics Expo", "type": "attends"},
        {"source": "Dev Malhotra", "target": "Robotics Expo", "type": "attends"},
        {"source": "Noor Haddad", "target": "Yasmin", "type": "family_of"},
        {"source": "Yasmin", "target": "Amman", "type": "lives_in"},
        {"source": "Yasmin's wedding", "target": "Amman", "type": "located_in"},
        {"source": "Yasmin", "target": "Yasmin's wedding", "type": "attends"},
        {"source": "Noor Haddad", "target": "Yasmin's wedding", "type": "attends"},
        {"source": "Sami", "target": "Yasmin's wedding", "type": "attends"},
    ],
}

# Questions: (question, answer, category, evidence as (FACTS index, turn in the block), accepted forms).
QUESTIONS: list[tuple[str, str, str, list[tuple[int, int]], list[str]]] = [
    ("Where does Noor live now?", "Berkeley", "temporal", [(14, 0)], []),
    ("Who owns the calibration script now?", "Ana Sousa", "temporal", [(13, 0)], []),
    ("Which city is the Robotics Expo in?", "San Jose", "single-hop", [(8, 0), (12, 2)], []),
    ("Where did Noor and Sami live before Berkeley?", "Oakland", "temporal", [(4, 0)], []),
    ("Who owned the calibration script before Ana Sousa?", "Dev Malhotra", "temporal", [(6, 0)], []),
    ("Where does Noor work?", "Tidepool Robotics", "single-hop", [(1, 0)], []),
    ("Who is Noor's manager?", "Hyun-woo Park", "single-hop", [(3, 0)], ["Woo"]),
    ("What is the Otter Arm firmware written in?", "Rust", "single-hop", [(2, 0)], []),
    ("What does the Otter Arm firmware run on?", "Zephyr", "single-hop", [(2, 0)], []),
    ("When is the motor driver bring-up due?", "April 18", "single-hop", [(5, 0)], []),
    ("When will the calibration script be done?", "April 10", "single-hop", [(15, 0)], []),
    ("When is the Robotics Expo?", "May 12", "single-hop", [(7, 0)], ["2026-05-12"]),
    ("When is Yasmin getting married?", "August", "single-hop", [(10, 0)], []),
    ("Who is presenting the Otter Arm demo with Noor?", "Woo", "single-hop", [(9, 0)], ["Hyun-woo Park"]),
    (
        "Who now owns the task that Noor's bring-up depends on?",
        "Ana Sousa",
        "multi-hop",
        [(6, 0), (13, 0)],
        [],
    ),
    ("In which city is the wedding of Noor's sister?", "Amman", "multi-hop", [(10, 0), (11, 0)], []),
    (
        "Who is on the calendar invite for the Robotics Expo besides Noor and her manager?",
        "Dev Malhotra",
        "multi-hop",
        [(3, 0), (12, 2)],
        [],
    ),
    ("How old is Noor?", "unknown", "unanswerable", [], []),
    ("What does Sami do for a living?", "unknown", "unanswerable", [], []),
]

# Gold facts: what was said that no relation holds. Each is (statement, kind, about, evidence as (FACTS
# index, turn in the block), topic, when, said_when); a dated one gives the words it is dated by, which
# resolve to ``when`` on the day they were said (the tape has no dates: its entries start 2026-01-05).
FACT_GOLD: list[tuple[str, str, list[str], list[tuple[int, int]], str, str | None, str | None]] = [
    ("Tidepool Robotics builds small robot arms for labs", "state", ["Tidepool Robotics"], [(1, 0)], "business", None, None),
    (
        "Noor's commute to Tidepool is short: she lives in Oakland with her husband Sami",
        "state",
        ["Noor Haddad", "Tidepool Robotics", "Sami", "Oakland"],
        [(4, 0)],
        "commute",
        None,
        None,
    ),
    (
        "The motor driver bring-up is Noor's big Otter Arm task this quarter, due April 18",
        "plan",
        ["motor driver bring-up", "Noor Haddad", "Otter Arm"],
        [(5, 0)],
        "deadline",
        "2026-04-18",
        "April 18",
    ),
    (
        "The whole team is going to the Robotics Expo on May 12",
        "plan",
        ["Robotics Expo", "Hyun-woo Park"],
        [(7, 0)],
        "expo",
        "2026-05-12",
        "May 12",
    ),
    (
        "Woo and Noor are presenting the Otter Arm demo at the expo",
        "plan",
        ["Hyun-woo Park", "Noor Haddad", "Otter Arm", "Robotics Expo"],
        [(9, 0)],
        "expo demo",
        None,
        None,
    ),
    ("Yasmin is getting married in August", "plan", ["Yasmin", "Yasmin's wedding"], [(10, 0)], "wedding", "2026-08", "in August"),
    (
        "Sami and Noor are flying to Amman for Yasmin's wedding",
        "plan",
        ["Sami", "Noor Haddad", "Amman", "Yasmin's wedding"],
        [(11, 0)],
        "travel",
        None,
        None,
    ),
    (
        "The Robotics Expo calendar event on 2026-05-12 in San Jose lists Noor Haddad, Hyun-woo Park and Dev "
        "Malhotra as attendees",
        "plan",
        ["Robotics Expo", "San Jose", "Noor Haddad", "Hyun-woo Park", "Dev Malhotra"],
        [(12, 1), (12, 2)],
        "attendees",
        "2026-05-12",
        "2026-05-12",
    ),
    (
        "Dev got pulled onto another project, so the calibration script is now Ana Sousa's",
        "event",
        ["Dev Malhotra", "calibration script", "Ana Sousa"],
        [(13, 0)],
        "",
        None,
        None,
    ),
    ("Sami and Noor finally moved to Berkeley", "event", ["Sami", "Noor Haddad", "Berkeley"], [(14, 0)], "", None, None),
    (
        "Ana says the calibration script will be done by April 10, so the bring-up is still on track",
        "plan",
        ["calibration script", "Ana Sousa", "motor driver bring-up"],
        [(15, 0)],
        "deadline",
        "2026-04-10",
        "April 10",
    ),
]


def build() -> dict:
    rng = random.Random(SEED)
    # Spread the fact blocks evenly over the filler, keeping their order.
    slots = len(FACTS)
    gap = FILLER_PAIRS // slots
    turns: list[dict] = []
    starts: list[int] = []  # where each fact block begins
    fact_index = 0
    for i in range(FILLER_PAIRS):
        if fact_index < slots and i == fact_index * gap + 1:
            starts.append(len(turns))
            turns.extend(FACTS[fact_index])
            fact_index += 1
        u, a = filler(rng)
        turns.append(user(u))
        turns.append(assistant(a))
    for block in FACTS[fact_index:]:
        starts.append(len(turns))
        turns.extend(block)
    # Close the tape with a farewell.
    turns.append(user("That's all for today, thanks!"))
    turns.append(assistant("Anytime. Talk soon!"))
    return {
        "id": "long-tape-firmware-engineer",
        "description": "A 200+ turn tape of mostly filler with facts about a firmware engineer's job, "
        "family, move, a corrected event city, a task reassignment and a calendar tool result scattered across it.",
        "tags": [
            "long",
            "test",
            "people",
            "tasks",
            "deadlines",
            "temporal",
            "correction",
            "family",
            "events",
            "tool-facts",
            "aliases",
            "technology",
        ],
        "turns": turns,
        "gold": {
            **GOLD,
            "questions": [_question(q, starts) for q in QUESTIONS],
            "facts": [_fact(f, starts) for f in FACT_GOLD],
        },
    }


def _question(spec: tuple[str, str, str, list[tuple[int, int]], list[str]], starts: list[int]) -> dict:
    question, answer, category, evidence, accepted = spec
    out: dict = {"question": question, "answer": answer}
    if accepted:
        out["accepted"] = accepted
    out["category"] = category
    for block, turn in evidence:
        if not 0 <= turn < len(FACTS[block]):
            raise ValueError(f"{question!r}: fact block {block} has no turn {turn}")
    if evidence:
        out["evidence_turns"] = [starts[block] + turn for block, turn in evidence]
    return out


def _fact(
    spec: tuple[str, str, list[str], list[tuple[int, int]], str, str | None, str | None], starts: list[int]
) -> dict:
    statement, kind, about, evidence, topic, when, said_when = spec
    out: dict = {"statement": statement, "kind": kind, "about": about}
    if topic:
        out["topic"] = topic
    if when is not None:
        out["when"] = when
    if said_when is not None:
        out["said_when"] = said_when
    for block, turn in evidence:
        if not 0 <= turn < len(FACTS[block]):
            raise ValueError(f"{statement!r}: fact block {block} has no turn {turn}")
    out["evidence_turns"] = [starts[block] + turn for block, turn in evidence]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT.parent, help="directory to write into")
    out = parser.parse_args().out / OUT.name
    fixture = build()
    out.write_text(json.dumps(fixture, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out.name}: {len(fixture['turns'])} turns")


if __name__ == "__main__":
    main()
