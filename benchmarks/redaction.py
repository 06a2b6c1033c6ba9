"""7. Redaction: the time secret redaction adds to rendering a transcript, per 1,000 lines.

Redaction runs off the agent's critical path (in the background extraction), but evals
re-render large tapes, so its cost per line matters there. Two workloads, each rendered
with :func:`render_transcript` once without and once with a :class:`Redactor`, the two
interleaved round by round in the same process (so load and caches hit both alike):

* **fixture conversations**: the entries of every eval fixture tape (including the ones
  with planted secrets), repeated to at least 1,000 rendered lines;
* **synthetic tape**: a generated 1,000-turn bub tape (user and assistant messages, one
  turn in three with a tool call and its result).

Reported: milliseconds per 1,000 rendered lines without and with redaction (median of the
rounds), the difference (what redaction adds) and the ratio. The one-off cost of the first
redaction in a process (detect-secrets loads its plugins) is timed separately.

Run on its own, ``uv run python -m benchmarks.redaction`` prints the figures;
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
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import FIXTURES, BenchConfig, Section, Table
from benchmarks.synthetic import make_tape
from bub_semantic_memory.evals.dataset import load_fixtures
from bub_semantic_memory.redact import Redactor
from bub_semantic_memory.transcript import Entry, render_transcript

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


def _time(entries: list[Entry], redactor: Redactor | None) -> float:
    started = time.perf_counter()
    render_transcript(entries, redact=redactor)
    return time.perf_counter() - started


def first_call_seconds() -> float:
    """The first redaction in a fresh process includes loading detect-secrets' plugins."""
    started = time.perf_counter()
    Redactor()("warm-up")
    return time.perf_counter() - started


def measure(workload: Workload, rounds: int) -> tuple[float, float]:
    """Median seconds per 1,000 lines (without, with redaction), rounds interleaved."""
    plain: list[float] = []
    redacted: list[float] = []
    gc.collect()
    for index in range(rounds):
        order = (None, Redactor()) if index % 2 == 0 else (Redactor(), None)
        for redactor in order:
            seconds = _time(workload.entries, redactor) * 1000 / workload.lines
            (plain if redactor is None else redacted).append(seconds)
    return statistics.median(plain), statistics.median(redacted)


async def run(config: BenchConfig) -> Section:
    rounds = 3 if config.quick else 9
    first = first_call_seconds()
    workloads = [fixture_workload(), synthetic_workload(200 if config.quick else 1000)]
    section = Section(7, "Redaction", method=__doc__.split("\n\n", 1)[1] if __doc__ else "")
    table = Table(
        "Rendering with and without redaction, per 1,000 lines",
        ["workload", "lines", "without (ms)", "with (ms)", "added (ms)", "ratio"],
    )
    worst = 0.0
    for workload in workloads:
        without, with_ = measure(workload, rounds)
        added = (with_ - without) * 1000
        worst = max(worst, added)
        table.rows.append(
            [
                workload.name,
                f"{workload.lines:,}",
                f"{without * 1000:.1f}",
                f"{with_ * 1000:.1f}",
                f"{added:.1f}",
                f"{with_ / without:.1f}x",
            ]
        )
    section.tables.append(table)
    section.row(
        "time redaction adds per 1,000 transcript lines (worst workload)",
        f"{worst:.0f} ms",
        notes=f"median of {rounds} interleaved rounds; no target (off the critical path)",
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
        f"`uv run python -m benchmarks.redaction {' '.join(argv)}`; absolute times are indicative (this "
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
