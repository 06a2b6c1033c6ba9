"""A small dialogue-relation dataset in a foreign label space, written for the tests.

It imitates what public human-annotated dialogue datasets look like (speaker-labelled
turns, ``PER``/``ORG`` entity types, ``per:...`` relation labels, relations to things
that are not annotated as entities) without copying any of them. Three conversations:

* ``dlg-siblings``: two speakers, non-ASCII names, a relation whose target ("Mimi") is
  no gold entity;
* ``dlg-empty-turn``: one turn with no text: it cannot be imported and must be skipped;
* ``dlg-long``: a 600-turn dialogue.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LABEL_MAP = {
    "entity_types": {"PER": "person", "ORG": "organization"},
    "relation_types": {"per:siblings": "family_of", "per:employee_of": "works_for"},
    "symmetric": ["family_of"],
}

SIBLINGS: dict[str, Any] = {
    "id": "dlg-siblings",
    "turns": [
        {"speaker": "Speaker 1", "text": "Mia! It's Jake. How is Acme Logística treating you?"},
        {"speaker": "Speaker 2", "text": "Hey little brother. Søren from accounting says hi."},
        {"speaker": "Speaker 1", "text": "Still calling you Mimi, by the way."},
        {"speaker": "Speaker 2", "text": "Only you do. See you at José's on Friday."},
    ],
    "gold": {
        "entities": [
            {"name": "Jake", "type": "PER", "aliases": ["Speaker 1"]},
            {"name": "Mia", "type": "PER", "aliases": ["Speaker 2"]},
            {"name": "Acme Logística", "type": "ORG", "aliases": []},
            {"name": "Søren", "type": "PER", "aliases": []},
        ],
        "relations": [
            {"source": "Jake", "target": "Mia", "type": "per:siblings"},
            {"source": "Mia", "target": "Acme Logística", "type": "per:employee_of"},
            {"source": "Speaker 2", "target": "Mimi", "type": "per:alternate_names"},
        ],
    },
}

EMPTY_TURN: dict[str, Any] = {
    "id": "dlg-empty-turn",
    "turns": [
        {"speaker": "Speaker 1", "text": "Did Nora call?"},
        {"speaker": "Speaker 2", "text": ""},
        {"speaker": "Speaker 1", "text": "Never mind."},
    ],
    "gold": {"entities": [{"name": "Nora", "type": "PER", "aliases": []}], "relations": []},
}


def long_dialogue(turns: int = 600) -> dict[str, Any]:
    """A ``turns``-turn dialogue; its only facts are in the first and the last turn."""
    lines = [
        {"speaker": f"Speaker {1 + i % 2}", "text": f"Line {i + 1} of the call, nothing new."}
        for i in range(turns)
    ]
    lines[0] = {"speaker": "Speaker 1", "text": "Zoë here, calling from Nordlicht GmbH."}
    lines[-1] = {"speaker": "Speaker 2", "text": "Thanks Zoë, bye."}
    return {
        "id": "dlg-long",
        "turns": lines,
        "gold": {
            "entities": [
                {"name": "Zoë", "type": "PER", "aliases": ["Speaker 1"]},
                {"name": "Nordlicht GmbH", "type": "ORG", "aliases": []},
            ],
            "relations": [{"source": "Zoë", "target": "Nordlicht GmbH", "type": "per:employee_of"}],
        },
    }


def write_source(path: Path) -> Path:
    """Write the three conversations as a JSONL source file."""
    rows = [SIBLINGS, EMPTY_TURN, long_dialogue()]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def write_label_map(path: Path) -> Path:
    path.write_text(json.dumps(LABEL_MAP), encoding="utf-8")
    return path
