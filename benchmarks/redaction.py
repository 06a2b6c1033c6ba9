"""7. Redaction: the time secret redaction adds to rendering a transcript, per 1,000 lines.

Redaction runs off the agent's critical path (in the background extraction), but evals
re-render large tapes, so its cost per line matters there. Two workloads, each rendered
with :func:`render_transcript` without redaction, with the hand-written list of 15 patterns
redaction used before issue 18 (:mod:`benchmarks.redaction_baseline`) and with the current
:class:`Redactor`, interleaved round by round in the same process (so load and caches hit
all three alike):

* **fixture conversations**: the entries of every eval fixture tape (including the ones
  with planted secrets), repeated to at least 1,000 rendered lines;
* **synthetic tape**: a generated 1,000-turn bub tape (user and assistant messages, one
  turn in three with a tool call and its result).

Reported: milliseconds per 1,000 rendered lines of each (median of the rounds), what
redaction now adds, and now / before. The one-off cost of the first redaction in a process
(detect-secrets loads its plugins) is timed separately.

Run on its own, ``python -m benchmarks.redaction`` prints the figures;
``--reliability docs/reliability.md`` also writes them into that report's redaction block
(the reliability suite carries the block over when it regenerates the file).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import FIXTURES, BenchConfig, Section, Table
from benchmarks.redaction_baseline import PatternListRedactor
from benchmarks.synthetic import make_tape
from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.tape._redact import Redactor
from bub_semantic_memory.tape._transcript import Entry, render_transcript

__all__ = ["BLOCK", "Workload", "measure", "run"]

BLOCK = "redaction-cost"
"""The name of the measured block in ``docs/reliability.md``."""


class Workload:
    """Entries to render, and how many lines they render to."""

    def __init__(self, name: str, entries: list[Entry]) -> None:
        self.name = name
        self.entries = entries
        self.lines = len(render_transcript(entries).lines)


def fixture_workload(min_lines: int = 1000) -> Workload:
    entries = [entry for fixture in load_fixtures(FIXTURES) for entry in fixture.entries()]
    lines = len(render_transcript(entries).lines)
    repeats = -(-min_lines // max(lines, 1))
    return Workload("fixture conversations", entries * repeats)


def synthetic_workload(turns: int = 1000) -> Workload:
    return Workload(f"synthetic tape ({turns:,} turns)", make_tape(turns).entries)


type Redact = Callable[[str], str]


def _time(entries: list[Entry], redact: Redact | None) -> float:
    started = time.perf_counter()
    render_transcript(entries, redact=redact)
    return time.perf_counter() - started


def first_call_seconds() -> float:
    """The first redaction in a fresh process includes loading detect-secrets' plugins."""
    started = time.perf_counter()
    Redactor()("warm-up")
    return time.perf_counter() - started


VARIANTS: dict[str, Callable[[], Redact | None]] = {
    "without": lambda: None,
    "pattern list (before)": PatternListRedactor,
    "detect-secrets (now)": Redactor,
}
"""What renders the transcript: no redaction, the 15-pattern list it replaced, the current redactor."""


def measure(workload: Workload, rounds: int) -> dict[str, float]:
    """Median seconds per 1,000 lines of each variant; the variants' order rotates round by round."""
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    gc.collect()
    for index in range(rounds):
        for name in names[index % len(names) :] + names[: index % len(names)]:
            seconds = _time(workload.entries, VARIANTS[name]())
            samples[name].append(seconds * 1000 / workload.lines)
    return {name: statistics.median(values) for name, values in samples.items()}


async def run(config: BenchConfig) -> Section:
    rounds = 3 if config.quick else 9
    first = first_call_seconds()
    workloads = [fixture_workload(), synthetic_workload(200 if config.quick else 1000)]
    section = Section(7, "Redaction", method=__doc__.split("\n\n", 1)[1] if __doc__ else "")
    table = Table(
        "Rendering per 1,000 lines: no redaction, the pattern list it replaced, detect-secrets",
        [
            "workload",
            "lines",
            "without (ms)",
            "pattern list (ms)",
            "detect-secrets (ms)",
            "added (ms)",
            "now / before",
        ],
    )
    worst = 0.0
    for workload in workloads:
        ms_per = {name: seconds * 1000 for name, seconds in measure(workload, rounds).items()}
        without, before, now = (
            ms_per["without"],
            ms_per["pattern list (before)"],
            ms_per["detect-secrets (now)"],
        )
        worst = max(worst, now - without)
        table.rows.append(
            [
                workload.name,
                f"{workload.lines:,}",
                f"{without:.1f}",
                f"{before:.1f}",
                f"{now:.1f}",
                f"{now - without:.1f}",
                f"{now / before:.1f}x",
            ]
        )
    section.tables.append(table)
    section.row(
        "time redaction adds per 1,000 transcript lines (worst workload)",
        f"{worst:.0f} ms",
        notes=f"median of {rounds} rounds, variants interleaved; no target (off the critical path)",
        kind="time",
    )
    section.row(
        "first redaction in a process (loads detect-secrets' plugins)", f"{first * 1000:.0f} ms", kind="time"
    )
    return section


def block_markdown(section: Section, argv: Sequence[str]) -> str:
    """The figures as the reliability report's measured block (without its markers)."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [section.tables[0].markdown(), ""]
    lines.extend(f"- {row.metric}: {row.value}" for row in section.rows)
    lines.append(
        f"\nMeasured {now} on {os.cpu_count()} cores (load average {load} after the run) with "
        f"`python -m benchmarks.redaction {' '.join(argv)}`; absolute times are indicative (this "
        "machine, its load), the ratio is the figure to compare."
    )
    return "\n".join(lines)


def write_block(path: Path, name: str, markdown: str) -> None:
    """Replace the measured block ``name`` of the Markdown file ``path``.

    Raises:
        SystemExit: the file has no such block (regenerate it with the reliability suite first).
    """
    text = path.read_text(encoding="utf-8")
    block = re.compile(
        rf"(<!-- measured:{re.escape(name)} -->\n).*?(\n<!-- /measured:{re.escape(name)} -->)", re.S
    )
    if not block.search(text):
        raise SystemExit(
            f"Error: {path} has no measured block {name!r}; regenerate it with the reliability suite"
        )
    path.write_text(block.sub(lambda m: m.group(1) + markdown + m.group(2), text, count=1), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.redaction", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds, a smaller synthetic tape")
    parser.add_argument("--reliability", type=Path, help="write the figures into this report's block")
    args = parser.parse_args(argv)
    section = asyncio.run(run(BenchConfig(quick=args.quick)))
    shown = ["--quick"] if args.quick else []
    markdown = block_markdown(
        section, [*shown, *(["--reliability", str(args.reliability)] if args.reliability else [])]
    )
    print(markdown)
    if args.reliability is not None:
        write_block(args.reliability, BLOCK, markdown)


if __name__ == "__main__":
    main()
