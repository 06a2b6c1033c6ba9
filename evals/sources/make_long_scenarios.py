#!/usr/bin/env python3
"""Write ``long-scenarios.jsonl``: five 200+ turn fixtures where memory should beat plain search.

Each scenario (one module in ``long_scenarios/``) is a conversation over dated sessions: two at
work (a product team through a reorg; an account executive's CRM), two personal (a family's
year; a runner's friends and hobbies) and one of both (a job change and a move). They hold many
look-alike names, facts that change several times, facts spread over several turns, preferences
stated once and needed later, and tool results (issue tracker, CRM, calendar, mail) that state
facts. Fact-free filler between the fact blocks comes from a seeded ``random.Random`` per
scenario, so rerunning gives byte-identical output; questions name their evidence by block and
are written out as ``evidence_turns``.

Usage: python3 evals/sources/make_long_scenarios.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from long_scenarios import SCENARIOS
from long_scenarios.kit import build

NAME = "long-scenarios.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent, help="directory to write into")
    args = parser.parse_args()
    lines = [json.dumps(build(scenario), ensure_ascii=False) for scenario in SCENARIOS]
    (args.out / NAME).write_text("\n".join(lines) + "\n", encoding="utf-8")
    for scenario, line in zip(SCENARIOS, lines, strict=True):
        print(f"wrote {scenario.id}: {len(json.loads(line)['turns'])} turns")


if __name__ == "__main__":
    main()
