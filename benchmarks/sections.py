"""The benchmark sections, and running one in a process of its own.

Kept apart from ``__main__`` so that a spawned child process can import what it runs.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import multiprocessing
import time
import traceback
from collections.abc import Callable, Coroutine
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from benchmarks.common import BenchConfig, Section

__all__ = ["SECTIONS", "SECTION_TIMEOUT_S", "configure_logging", "run_isolated", "run_section"]

SECTION_TIMEOUT_S = 1800.0
"""A section taking longer than this (the local model on a very slow machine) is reported failed."""

SECTIONS: dict[int, tuple[str, str]] = {
    1: ("token_economy", "Token economy"),
    2: ("critical_path", "Critical path"),
    3: ("memory_block", "Memory block"),
    4: ("store_scale", "Store scale"),
    5: ("eval_throughput", "Eval throughput"),
    6: ("local_model", "Local model"),
    7: ("redaction", "Redaction"),
    8: ("prefix_cache", "Prefix cache"),
    9: ("memory_qa", "Memory QA"),
    10: ("locomo", "LoCoMo"),
}


def configure_logging() -> None:
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("instructor").setLevel(logging.CRITICAL)  # re-asks are counted, not logged


def run_isolated(number: int, config: BenchConfig) -> Section:
    """Run one section in a freshly spawned interpreter and bring its results back.

    Sections build large memories (10,000-entity graphs), start threads (the local model)
    and child processes; in one shared process a later section's timings (a cold load of
    10,000 snapshots, for one) would include the earlier sections' heap.
    """
    context = multiprocessing.get_context("spawn")
    started = time.perf_counter()
    pool = ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=configure_logging)
    try:
        return pool.submit(run_section, number, config).result(timeout=SECTION_TIMEOUT_S)
    except Exception as exc:  # the child died (killed, out of memory) or hung: report, go on
        reason = f"no result after {SECTION_TIMEOUT_S:.0f} s" if isinstance(exc, TimeoutError) else exc
        section = _failed(number, f"{type(exc).__name__}: {reason}")
        section.seconds = time.perf_counter() - started
        return section
    finally:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.kill()  # a hung section must not keep the suite waiting at shutdown
        pool.shutdown(wait=False, cancel_futures=True)


def _failed(number: int, error: str) -> Section:
    section = Section(number, SECTIONS[number][1])
    section.row("section failed", error, "runs", False)
    return section


def run_section(number: int, config: BenchConfig) -> Section:
    module_name = SECTIONS[number][0]
    started = time.perf_counter()
    try:
        module = importlib.import_module(f"benchmarks.{module_name}")
        runner: Callable[[BenchConfig], Coroutine[Any, Any, Section]] = module.run
        section = asyncio.run(runner(config))
    except Exception as exc:  # a broken section is reported, the others still run
        traceback.print_exc()
        section = _failed(number, f"{type(exc).__name__}: {exc}")
    section.seconds = time.perf_counter() - started
    return section
