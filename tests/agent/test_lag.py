"""What of a tape waits for extraction, and the time it should take at the tape's own pace."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from bub.store import FileTapeStore, InMemoryTapeStore
from bub.tape import TapeEntry
from typer.testing import CliRunner

from bub_semantic_memory._models import Entity, Snapshot, Usage
from bub_semantic_memory._tokens import estimate_tokens
from bub_semantic_memory.agent._lag import ExtractionLag, ExtractionPace, extraction_lag
from bub_semantic_memory.agent._policy import MemoryPolicy
from bub_semantic_memory.agent._service import MemoryService
from bub_semantic_memory.agent._setup import MemorySetup
from bub_semantic_memory.backends import HOSTED
from bub_semantic_memory.cli import app
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores import fetch_tape
from bub_semantic_memory.tape import render_transcript
from tests.conftest import make_snapshot

TAPE = "lag-tape"
ONTOLOGY = PromptLibrary().load("extract@1").ontology


class TimedExtractor:
    """Extracts one entity from what follows the watermark, saying the call took ``seconds``."""

    traits = HOSTED
    chunk_tokens = 3000

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def iter_extract(
        self, entries: Sequence[Any], *, tape: str, memory: MemoryGraph | None = None
    ) -> AsyncIterator[Snapshot]:
        new = [e for e in entries if e.id > (memory.watermark if memory else 0)]
        if new:
            snapshot = make_snapshot(
                [Entity.create("Maya Lin", "person")], [], tape=tape, first=new[0].id, last=new[-1].id
            )
            yield snapshot.model_copy(update={"usage": Usage(latency_s=self.seconds, requests=1)})

    async def aclose(self) -> None:
        pass


def turns(store: InMemoryTapeStore, *texts: str) -> None:
    for text in texts:
        store.append(TAPE, TapeEntry.message({"role": "user", "content": text}))
        store.append(TAPE, TapeEntry.message({"role": "assistant", "content": "noted"}))


def tokens_of(entries: Sequence[Any]) -> int:
    return estimate_tokens(render_transcript(entries).text())


def service(extractor: TimedExtractor, every_turns: int) -> MemoryService:
    policy = MemoryPolicy(every_turns=every_turns, min_new_tokens=0)
    setup = MemorySetup(folds_with=ONTOLOGY, policy=policy)
    return MemoryService.from_setup(setup, extractor=lambda: extractor)  # type: ignore[arg-type,return-value]


async def extract_now(memory: MemoryService, store: InMemoryTapeStore | FileTapeStore) -> None:
    memory.schedule(TAPE, store, force=True)
    while tasks := memory.running():
        await asyncio.gather(*tasks)


def test_the_wait_is_the_tokens_after_the_watermark_at_the_pace_of_the_tapes_snapshots() -> None:
    store = InMemoryTapeStore()
    turns(store, "Maya Lin moved to Lisbon in May.", "She works at Globex on the payments team.")
    memory = service(TimedExtractor(seconds=12.0), every_turns=10)
    asyncio.run(extract_now(memory, store))
    covered = asyncio.run(fetch_tape(store, TAPE))
    turns(store, "Her brother Tom visits in June.", "Tom is a pilot for a small airline in Porto.")
    lag = asyncio.run(memory.lag(TAPE, store))
    waiting = [e for e in asyncio.run(fetch_tape(store, TAPE)) if e.id > covered[-1].id]
    assert lag.entries == len(waiting) == 4
    assert lag.tokens == tokens_of(waiting) > 0
    assert lag.expected_s == pytest.approx(lag.tokens * 12.0 / tokens_of(covered))
    assert not lag.due  # two new user turns of the ten the cadence waits for
    assert "4 entries" in lag.describe() and "to catch up" in lag.describe()


def test_a_memory_level_with_its_tape_waits_for_nothing() -> None:
    store = InMemoryTapeStore()
    turns(store, "Maya Lin moved to Lisbon in May.")
    memory = service(TimedExtractor(seconds=3.0), every_turns=1)
    asyncio.run(extract_now(memory, store))
    lag = asyncio.run(memory.lag(TAPE, store))
    assert (lag.entries, lag.tokens, lag.due, lag.expected_s) == (0, 0, False, None)
    assert lag.describe() == "the memory covers every entry"


def test_without_a_timed_snapshot_there_is_no_estimate_rather_than_a_guess() -> None:
    store = InMemoryTapeStore()
    turns(store, "Maya Lin moved to Lisbon in May.", "Tom is a pilot.")
    entries = asyncio.run(fetch_tape(store, TAPE))
    untimed = make_snapshot([Entity.create("Maya Lin", "person")], [], tape=TAPE, first=1, last=2)
    imported = make_snapshot([Entity.create("Tom", "person")], [], tape=TAPE, first=0, last=0)
    pace = ExtractionPace.of([untimed, imported.model_copy(update={"usage": Usage(latency_s=5.0)})], entries)
    assert pace == ExtractionPace() and pace.seconds_per_token is None
    lag = extraction_lag(entries, 2, pace, due=True)
    assert lag.entries == 2 and lag.due and lag.expected_s is None
    assert "no pace measured" in lag.describe()


def test_an_extraction_logs_what_waits_after_it(caplog: pytest.LogCaptureFixture) -> None:
    store = InMemoryTapeStore()
    turns(store, "Maya Lin moved to Lisbon in May.", "She works at Globex.")
    memory = service(TimedExtractor(seconds=30.0), every_turns=2)
    with caplog.at_level(logging.INFO, logger="bub_semantic_memory.agent._scheduler"):
        asyncio.run(extract_now(memory, store))
    assert f"tape {TAPE}: the memory covers every entry" in caplog.text


def test_show_reports_the_lag(tmp_path: Path) -> None:
    store = FileTapeStore(tmp_path)
    for text in ("Maya Lin moved to Lisbon in May.", "She works at Globex.", "Tom is a pilot."):
        store.append(TAPE, TapeEntry.message({"role": "user", "content": text}))
    asyncio.run(extract_now(service(TimedExtractor(seconds=8.0), every_turns=10), store))
    store.append(TAPE, TapeEntry.message({"role": "user", "content": "Tom flies to Porto on Friday."}))
    result = CliRunner().invoke(app, ["show", TAPE, "--tapes-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    lag = json.loads(result.stdout)["lag"]
    assert lag["entries"] == 1 and lag["due"] is False and lag["expected_s"] > 0
    shown = CliRunner().invoke(app, ["show", TAPE, "--tapes-dir", str(tmp_path)])
    assert f"Tape {TAPE}: 1 entry (" in shown.stderr


def test_lag_is_public_from_the_agent_face() -> None:
    from bub_semantic_memory.agent import ExtractionLag as Public

    assert Public is ExtractionLag
