#!/usr/bin/env python3
"""Drop gold relations that restate another from its other end (inverse twins).

The gold stated many facts twice, once through each type of an inverse pair (``T-12
assigned_to Ana`` and ``Ana works_on T-12``). With the pair declared inverse in the ontology,
the twins are one fact, and a gold that holds both counts it twice. This script keeps the
pair's canonical form (the one the memory graph stores, :meth:`Ontology.orient` under the
promoted prompt's ontology, with the gold entities' types) and drops the other, in every
source: the hand-written ``conversations-*.jsonl`` are rewritten line by line; the relation
lines of the generators (``make_long.py``, ``long_scenarios/*.py``) are deleted and the
generators rerun. It prints every relation it drops, and running it again changes nothing.

Usage: python evals/sources/drop_inverse_twins.py
Then:  semantic-memory fixtures import evals/sources --out evals/fixtures
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bub_semantic_memory._models import normalize_name
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.extraction._prompts import PromptLibrary

SOURCES = Path(__file__).parent
GENERATORS = {
    "long-tape.jsonl": ["make_long.py"],
    "long-scenarios.jsonl": ["make_long_scenarios.py"],
}
GENERATOR_FILES = [SOURCES / "make_long.py", *sorted((SOURCES / "long_scenarios").glob("*.py"))]


def twins(gold: dict[str, Any], ontology: Ontology) -> list[dict[str, str]]:
    """The relations of ``gold`` that restate an earlier-or-canonical one from its other end."""
    types = {}
    for entity in gold.get("entities", []):
        for name in (entity["name"], *entity.get("aliases", [])):
            types.setdefault(normalize_name(name), entity["type"])
    canonical: dict[tuple[str, str, str], list[tuple[bool, int]]] = {}
    for index, relation in enumerate(gold.get("relations", [])):
        source, target = normalize_name(relation["source"]), normalize_name(relation["target"])
        oriented = ontology.orient(relation["type"], types.get(source, ""), types.get(target, ""))
        if oriented is None or ontology.inverse(relation["type"]) is None:
            continue
        kind, turned = oriented
        key = (target, kind, source) if turned else (source, kind, target)
        as_stored = kind == relation["type"] and not turned
        canonical.setdefault(key, []).append((as_stored, index))
    dropped = []
    for statements in canonical.values():
        if len(statements) < 2:
            continue
        keep = min(statements, key=lambda s: (not s[0], s[1]))  # the canonical form, else the first
        dropped += [gold["relations"][i] for _, i in statements if i != keep[1]]
    return dropped


def drop_from_jsonl(path: Path, ontology: Ontology) -> list[tuple[str, dict[str, str]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out, dropped = [], []
    for line in lines:
        conversation = json.loads(line)
        gold = conversation["gold"]
        found = twins(gold, ontology)
        if found:
            gold["relations"] = [r for r in gold["relations"] if r not in found]
            dropped += [(conversation["id"], r) for r in found]
            line = json.dumps(conversation, ensure_ascii=False)
        out.append(line)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return dropped


def generator_lines(relation: dict[str, str]) -> list[str]:
    """How the generators write ``relation``: the kit's ``relation(...)`` call or make_long's dict."""
    s, t, k = (json.dumps(relation[key], ensure_ascii=False) for key in ("source", "target", "type"))
    return [f"relation({s}, {k}, {t}),", f'{{"source": {s}, "target": {t}, "type": {k}}},']


def drop_from_generators(relations: list[tuple[str, dict[str, str]]]) -> None:
    for fixture, relation in relations:
        forms = generator_lines(relation)
        hits = [
            (path, number)
            for path in GENERATOR_FILES
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines())
            if line.strip() in forms
        ]
        if len(hits) != 1:
            sys.exit(f"{fixture}: cannot find exactly one generator line for {relation} ({len(hits)} found)")
        path, number = hits[0]
        text = path.read_text(encoding="utf-8").splitlines(keepends=True)
        del text[number]
        path.write_text("".join(text), encoding="utf-8")


def main() -> None:
    ontology = PromptLibrary().load("extract").ontology
    for path in sorted(SOURCES.glob("*.jsonl")):
        if path.name in GENERATORS:
            found = [
                (json.loads(line)["id"], r)
                for line in path.read_text(encoding="utf-8").splitlines()
                for r in twins(json.loads(line)["gold"], ontology)
            ]
            drop_from_generators(found)
            for script in GENERATORS[path.name]:
                subprocess.run([sys.executable, str(SOURCES / script)], check=True, capture_output=True)
        else:
            found = drop_from_jsonl(path, ontology)
        for fixture, relation in found:
            print(
                f"{path.name} {fixture}: dropped {relation['source']} -{relation['type']}-> {relation['target']}"
            )
        leftover = [
            r
            for line in path.read_text(encoding="utf-8").splitlines()
            for r in twins(json.loads(line)["gold"], ontology)
        ]
        if leftover:
            sys.exit(f"{path.name}: twins left after the rewrite: {leftover}")


if __name__ == "__main__":
    main()
