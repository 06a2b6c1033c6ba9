"""Write the session the promotion gate's cost budget is measured on: ``python -m benchmarks.budget_tape``.

The gate (``bub_semantic_memory.evals.extraction.measure_cost``) and benchmark section 8 must measure the same
session, but the gate cannot import the benchmarks: this writes the 200-turn synthetic tape
of :func:`benchmarks.synthetic.make_tape` and its facts as a fixture directory,
``evals/budget/session-200/``. ``tests/evals/extraction/test_cost.py`` checks the committed files are
what this writes.
"""

from __future__ import annotations

import dataclasses
import json

from benchmarks.common import REPO
from benchmarks.synthetic import make_tape

__all__ = ["BUDGET_TURNS", "budget_fixture_files", "main"]

BUDGET_TURNS = 200


def budget_fixture_files(turns: int = BUDGET_TURNS) -> dict[str, str]:
    """The fixture's files (``tape.jsonl``, ``gold.json``) as text."""
    tape = make_tape(turns)
    lines = [
        json.dumps(dataclasses.asdict(entry), ensure_ascii=False, sort_keys=True) for entry in tape.entries
    ]
    gold = {
        "id": f"session-{turns}",
        "description": f"The benchmarks' synthetic {turns}-turn bub session (benchmarks/synthetic.py); "
        "the session the hosted cost budget is measured on.",
        "tags": ["budget"],
        "entities": [
            {"name": e["name"], "type": e["type"], "aliases": list(e.get("aliases", ())), "attributes": {}}
            for e in tape.entities
        ],
        "relations": [
            {"source": r["source"], "target": r["target"], "type": r["type"]} for r in tape.relations
        ],
    }
    return {
        "tape.jsonl": "\n".join(lines) + "\n",
        "gold.json": json.dumps(gold, indent=2, ensure_ascii=False) + "\n",
    }


def main() -> None:
    directory = REPO / "evals" / "budget" / f"session-{BUDGET_TURNS}"
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in budget_fixture_files().items():
        (directory / name).write_text(text, encoding="utf-8")
    print(f"wrote {directory.relative_to(REPO)}")


if __name__ == "__main__":
    main()
