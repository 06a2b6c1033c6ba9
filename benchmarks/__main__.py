"""Run the benchmark suite: ``python -m benchmarks``.

Runs every section in a fresh process of its own, one after another (so no section runs
on a heap or threads another section left behind), prints the summary table and
writes ``benchmarks/RESULTS.md`` (the table, per-section details, the machine's core
count and load, versions, the date and the command).

Options:
    --quick      small sizes and short latencies, a few seconds, no local model: a smoke
                 run. Prints the table; writes a file only with --out.
    --only N     run section N only (repeatable), while developing. Prints the table;
                 writes a file only with --out.
    --prompt REF the extraction prompt version (default: the plugin's default, ``extract``:
                 the version promoted for hosted models, as the sections extract against a
                 fake endpoint; while none is, the one promoted for local models, and the
                 results say so), recorded in the results.
    --prompts-dir DIR
                 the prompt directory whose versions and promotions are measured (default:
                 ``$BUB_SEMANTIC_MEMORY_PROMPTS_DIR``, else the bundled prompts), as the
                 plugin's setting of that name: ``--only 8 --check --prompts-dir DIR`` holds a
                 directory's hosted promotion to the hosted budget before it ships.
    --out PATH   where to write the results (default: benchmarks/RESULTS.md for a full run).
    --check      exit 1 when a target that CI holds is missed (the hosted extraction budget of
                 section 8): ``python -m benchmarks --only 8 --check`` in ``.ci/run``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from benchmarks.common import BENCH_DIR, REPO, BenchConfig, Row, Section, md_cell
from benchmarks.sections import SECTIONS, configure_logging, run_isolated
from bub_semantic_memory.extraction._prompts import PromptLibrary

PACKAGES = ("bub", "bub-semantic-memory", "instructor", "openai", "pydantic", "httpx", "llama-cpp-python")


def _versions() -> str:
    found: list[str] = []
    for name in PACKAGES:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def _command(argv: Sequence[str]) -> str:
    return " ".join(["python -m benchmarks", *argv])


def _met(row: Row) -> str:
    return "—" if row.met is None else ("yes" if row.met else "**no**")


def _value(row: Row) -> str:
    return f"{row.value} ⏱" if row.kind == "time" else row.value


def summary_table(sections: Sequence[Section]) -> str:
    lines = ["| # | Metric | Value | Target | Met | Notes |", "|---|---|---|---|---|---|"]
    for section in sections:
        if section.skipped:
            lines.append(
                f"| {section.number} | {section.title} | skipped | | — | {md_cell(section.skipped)} |"
            )
        for row in section.rows:
            cells = [row.metric, _value(row), row.target, _met(row), row.notes]
            lines.append(f"| {section.number} | " + " | ".join(md_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def render_results(
    sections: Sequence[Section],
    *,
    command: str,
    started: datetime,
    total_s: float,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
    quick: bool,
    prompt: str,
    prompt_chosen: str,
) -> str:
    cores = os.cpu_count()
    # Only the load before the run says whether other processes competed: the load after
    # includes this run's own work (the fake endpoint's process, the local model's threads).
    loaded = load_before[0] > 0.5 * (cores or 1)
    targets = [row for s in sections for row in s.rows if row.met is not None]
    missed = [row for row in targets if not row.met]
    out = [
        "# Benchmark results"
        + (" (quick smoke run: small sizes, not the reference figures)" if quick else ""),
        "",
        f"- Command: `{command}` (from the repository root; `--quick` for a smoke run of a few seconds, "
        "`--only N` for one section)",
        f"- Date: {started.strftime('%Y-%m-%d %H:%M:%S %Z').strip()} · total run time {total_s:.1f} s",
        f"- Machine: {cores} cores (`os.cpu_count()`), {platform.machine()}, {platform.system()} "
        f"{platform.release()}",
        f"- Load average before the run: {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f} "
        f"(1/5/15 min), after: {load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f}"
        + (
            f" — **the machine was loaded** (1-minute load {load_before[0]:.1f} on {cores} cores before "
            "the run: other processes were using the CPU), so absolute times are pessimistic"
            if loaded
            else ""
        ),
        f"- Python {platform.python_version()}; {_versions()}",
        f"- Extraction prompt (sections 1, 2, 5, and the agent calls of 8): {prompt}{prompt_chosen}"
        + "; every section but 6 extracts against a fake OpenAI-compatible endpoint. Section 6 runs the "
        "version promoted for the local class; section 8 measures each class's own promoted version",
        "",
        "Ratios, counts, sizes and shares are measured side by side in this one run and are the figures to "
        "compare. Absolute times (marked ⏱) are indicative only: they depend on this machine and its load. "
        f"Targets met: {len(targets) - len(missed)} of {len(targets)}.",
        "",
        "## Summary",
        "",
        summary_table(sections),
        "",
    ]
    if missed:
        out += ["Targets missed (the section notes below say why):", ""]
        out += [
            f"- {section.number}. {row.metric}: {row.value} (target: {row.target})"
            for section in sections
            for row in section.rows
            if row.met is False
        ]
        out.append("")
    for section in sections:
        out += [f"## {section.number}. {section.title}", ""]
        if section.skipped:
            out += [f"Skipped: {section.skipped}", ""]
        if section.method:
            out += [f"How: {section.method}", ""]
        for table in section.tables:
            out += [table.markdown(), ""]
        out += [f"- {note}" for note in section.notes]
        out += [f"- Section run time: {section.seconds:.1f} s", ""]
    return "\n".join(out).rstrip() + "\n"


def _resolve_prompt(ref: str | None, library: PromptLibrary) -> tuple[str, str]:
    """``ref``, or the plugin's default prompt setting for a hosted model, as ``name@version``, and
    how it was chosen.

    The sections that extract do so against a fake OpenAI-compatible endpoint: the hosted class.
    While no version is promoted for it (a hosted model then extracts only with a version named),
    they run the version promoted for local models.
    """
    from bub_semantic_memory._errors import PromptNotFoundError
    from bub_semantic_memory.plugin._settings import SemanticMemorySettings

    if ref is not None:
        return str(library.load(ref, model_class="hosted")), " (given with --prompt)"
    default = str(SemanticMemorySettings.model_fields["prompt"].default)
    try:
        return str(library.load(default, model_class="hosted")), (
            " — the plugin's default `extract` for a hosted model, resolved at run time (the version "
            "promoted for the hosted class)"
        )
    except PromptNotFoundError:
        return str(library.load(default, model_class="local")), (
            " — no version is promoted for hosted models (the plugin extracts for one only with a version "
            "named), so the one promoted for local models"
        )


def exit_code(sections: Sequence[Section], *, check: bool) -> int:
    """1 when a section failed, or with ``check`` when a target CI holds is missed (printed); else 0."""
    failed = [row for s in sections for row in s.rows if row.metric == "section failed"]
    missed = [row for s in sections for row in s.rows if row.check and row.met is False]
    for row in missed:
        print(f"missed: {row.metric}: {row.value} (target {row.target})", file=sys.stderr)
    return 1 if failed or (check and missed) else 0


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds, no local model")
    parser.add_argument(
        "--only", type=int, action="append", choices=sorted(SECTIONS), help="run only section N (repeatable)"
    )
    parser.add_argument(
        "--prompt", default=None, help="extraction prompt version (default: the plugin's default prompt)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="results file (default: benchmarks/RESULTS.md)"
    )
    parser.add_argument(
        "--prompts-dir",
        type=Path,
        default=os.environ.get("BUB_SEMANTIC_MEMORY_PROMPTS_DIR") or None,
        help="prompt directory (default: $BUB_SEMANTIC_MEMORY_PROMPTS_DIR, else the bundled prompts)",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target CI holds is missed")
    args = parser.parse_args(args_list)
    configure_logging()
    out: Path | None = args.out.resolve() if args.out is not None else None
    prompts_dir: Path | None = Path(args.prompts_dir).resolve() if args.prompts_dir else None
    os.chdir(REPO)
    prompt, chosen = _resolve_prompt(args.prompt, PromptLibrary(prompts_dir))
    config = BenchConfig(quick=args.quick, prompt=prompt, prompts_dir=prompts_dir)
    numbers = sorted(set(args.only)) if args.only else sorted(SECTIONS)
    default_out = out is None and not args.quick and not args.only
    if default_out:
        out = BENCH_DIR / "RESULTS.md"

    load_before = os.getloadavg()
    started = datetime.now().astimezone()
    clock = time.perf_counter()
    sections: list[Section] = []
    for number in numbers:
        print(
            f"[{time.perf_counter() - clock:6.1f}s] section {number}: {SECTIONS[number][1]} ...",
            file=sys.stderr,
        )
        sections.append(run_isolated(number, config))
    total = time.perf_counter() - clock
    text = render_results(
        sections,
        command=_command(args_list),
        started=started,
        total_s=total,
        load_before=load_before,
        load_after=os.getloadavg(),
        quick=config.quick,
        prompt=config.prompt,
        prompt_chosen=chosen,
    )
    failed = [row for s in sections for row in s.rows if row.metric == "section failed"]
    print(summary_table(sections))
    print(f"\ntotal {total:.1f} s on {os.cpu_count()} cores", end="")
    if out is not None and failed and default_out:
        # Keep the last complete results: a broken run is printed, not recorded.
        print(f"; {len(failed)} section(s) failed, {out} left unchanged (use --out to write anyway)")
    elif out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)  # make budget: reports/ is absent in a clean checkout
        out.write_text(text, encoding="utf-8")
        print(f"; wrote {out}")
    else:
        print()
    return exit_code(sections, check=args.check)


if __name__ == "__main__":
    raise SystemExit(main())
