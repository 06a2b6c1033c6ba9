"""A memory-QA run says how far it is: never silent for longer than the heartbeat, never a line per question."""

from __future__ import annotations

import asyncio
import io

from rich.console import Console

from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.evals.extraction._progress import HEARTBEAT_S
from bub_semantic_memory.evals.qa import QAOptions, QuestionProgress, run_qa
from bub_semantic_memory.extraction._prompts import PromptLibrary
from tests.conftest import REPO


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_at_most_every_heartbeat_and_one_at_the_end() -> None:
    out = io.StringIO()
    clock = FakeClock()
    progress = QuestionProgress(Console(file=out, width=200), clock=clock)
    for done in range(1, 101):
        clock.now += HEARTBEAT_S / 10  # ten questions per heartbeat
        progress(done, 100)
    lines = out.getvalue().splitlines()
    assert len(lines) == 10  # at 10, 20, ... 90 questions, and the last
    assert lines[0].startswith("Memory QA: 10/100 questions; elapsed 30 s, ETA 4 min 30 s")
    assert lines[-1].startswith("Memory QA: 100/100 questions; elapsed 5 min 00 s, ETA 0 s")


def test_the_runner_reports_every_question_it_scores() -> None:
    fixtures = [f for f in load_fixtures(REPO / "evals" / "fixtures", tags=["quick"]) if f.gold.questions]
    calls: list[tuple[int, int]] = []
    options = QAOptions(
        ontology=PromptLibrary().load("extract").ontology,
        conditions=("bm25",),
        progress=lambda done, total: calls.append((done, total)),
    )
    report = asyncio.run(run_qa(fixtures, options))
    total = len(report.items)
    assert total > 0 and calls == [(done, total) for done in range(1, total + 1)]
