"""The memory service on its own: no bub framework, an in-memory tape store, a scripted extractor."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from bub.store import InMemoryTapeStore
from bub.tape import TapeEntry

from bub_semantic_memory._models import Entity, Relation, Snapshot
from bub_semantic_memory.agent._policy import MemoryPolicy
from bub_semantic_memory.agent._service import MemoryService
from bub_semantic_memory.agent._setup import MemorySetup
from bub_semantic_memory.backends import HOSTED, BackendTraits
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.memory._graph import MemoryGraph
from bub_semantic_memory.stores._store import SnapshotStore, memory_tape_name
from bub_semantic_memory.testing import FakeOpenAIServer, tool_call_reply
from tests.conftest import FAST, make_snapshot

TAPE = "service-tape"
MAYA = {"entities": [{"name": "Maya Lin", "type": "person", "evidence": [5]}], "relations": []}
ONTOLOGY = PromptLibrary().load("extract@1").ontology


class ScriptedExtractor:
    """Extracts 'Maya Lin lives in Lisbon' from whatever follows the watermark; can be told to fail.

    It declares an endpoint's traits, as the extractor of a hosted model does.
    """

    traits = HOSTED
    chunk_tokens = 3000

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []
        self.fail = False
        self.closed = False

    async def iter_extract(
        self, entries: Sequence[Any], *, tape: str, memory: MemoryGraph | None = None
    ) -> AsyncIterator[Snapshot]:
        new = [e for e in entries if e.id > (memory.watermark if memory else 0)]
        self.calls.append((new[0].id, new[-1].id) if new else (0, 0))
        if self.fail:
            raise RuntimeError("endpoint down")
        if not new:
            return
        maya, lisbon = Entity.create("Maya Lin", "person"), Entity.create("Lisbon", "location")
        relation = Relation(source=maya.key, type="lives_in", target=lisbon.key)
        yield make_snapshot([maya, lisbon], [relation], tape=tape, first=new[0].id, last=new[-1].id)

    async def aclose(self) -> None:
        self.closed = True


def user_turns(store: InMemoryTapeStore, *texts: str) -> None:
    for text in texts:
        store.append(TAPE, TapeEntry.message({"role": "user", "content": text}))
        store.append(TAPE, TapeEntry.message({"role": "assistant", "content": "ok"}))


def service(extractor: ScriptedExtractor | None, **policy: Any) -> MemoryService:
    setup = MemorySetup(
        folds_with=ONTOLOGY,
        policy=MemoryPolicy(**{"every_turns": 2, "min_new_tokens": 0, "retry_cooldown": 60.0, **policy}),
    )
    return MemoryService.from_setup(setup, extractor=lambda: extractor)  # type: ignore[arg-type,return-value]


async def settle(memory: MemoryService) -> None:
    while tasks := memory.running():
        await asyncio.gather(*tasks)


async def end_of_turn(memory: MemoryService, store: InMemoryTapeStore) -> None:
    """What the plugin does after each turn (schedule an extraction), then wait for it."""
    memory.schedule(TAPE, store)
    await settle(memory)


async def test_a_due_extraction_is_stored_and_rendered() -> None:
    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    memory = service(extractor)
    user_turns(store, "Hi, I'm Maya Lin.", "I live in Lisbon.")
    await end_of_turn(memory, store)
    assert extractor.calls == [(1, 4)] and memory.stats["snapshots"] == 1
    assert "Maya Lin lives in Lisbon" in memory.block(TAPE, "where does Maya live?")
    stored = await SnapshotStore(store).load_graph(TAPE, ONTOLOGY)
    assert stored.graph.watermark == 4  # the store kept what the graph learned


async def test_a_repeated_question_is_answered_from_the_render_cache_until_the_memory_changes() -> None:
    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    memory = service(extractor)
    user_turns(store, "Hi, I'm Maya Lin.", "I live in Lisbon.")
    await end_of_turn(memory, store)
    first = memory.block(TAPE, "where does Maya live?")
    assert memory.block(TAPE, "where does Maya live?") == first  # a tool round asks again
    memory.block(TAPE, "who is Maya?")
    assert memory.stats["render_cache_hits"] == 1
    user_turns(store, "Maya says hi.", "Maya lives in Porto now.")
    await end_of_turn(memory, store)
    assert memory.stats["snapshots"] == 2
    again = memory.block(TAPE, "where does Maya live?")
    assert memory.stats["render_cache_hits"] == 1  # the memory changed: rendered again
    assert "Maya lives in Porto now." in again and "Porto" not in first


async def test_the_cadence_defers_until_enough_turns_and_drain_flushes() -> None:
    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    memory = service(extractor)
    user_turns(store, "one turn only")
    await end_of_turn(memory, store)
    assert extractor.calls == [] and memory.stats["deferred"] == 1
    await memory.drain(5.0)
    assert extractor.calls == [(1, 2)] and extractor.closed
    assert memory.block(TAPE, "") != ""


def test_the_cadence_rule() -> None:
    memory = service(None, every_turns=3, min_new_tokens=0)
    entries = [
        dataclasses.replace(TapeEntry.message({"role": "user", "content": "x"}), id=i) for i in (1, 2, 3)
    ]
    assert memory.extraction_due(entries, watermark=0)
    assert not memory.extraction_due(entries, watermark=1)  # two new turns
    handoff = dataclasses.replace(TapeEntry.anchor("phase/2"), id=4)
    assert memory.extraction_due([*entries, handoff], watermark=3)
    start = dataclasses.replace(TapeEntry.anchor("session/start"), id=4)
    assert not memory.extraction_due([*entries, start], watermark=3)


async def test_a_failure_is_counted_and_the_tape_cools_down() -> None:
    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    extractor.fail = True
    memory = service(extractor)
    user_turns(store, "a", "b")
    await end_of_turn(memory, store)
    assert memory.stats["extraction_failures"] == 1
    await end_of_turn(memory, store)
    assert memory.stats["cooldown_skips"] == 1 and len(extractor.calls) == 1
    graph = memory.graph(TAPE)
    assert graph is not None and graph.watermark == 0  # nothing stored, nothing skipped


@pytest.mark.parametrize(("tries", "given_up_on_run"), [(2, 2), (1, 1), (0, None)])
async def test_a_window_whose_answers_keep_breaking_the_rules_is_given_up_and_the_memory_goes_on(
    fake_openai: FakeOpenAIServer, tries: int, given_up_on_run: int | None
) -> None:
    bad = tool_call_reply("Extraction", '{"entities": "none"}')  # nothing in it can be kept
    config = ExtractorConfig(
        model="m", base_url=fake_openai.base_url, api_key="k", prompt="extract@1", retry=FAST
    )
    memory = service(Extractor(config), retry_cooldown=0.0, failed_window_tries=tries)  # type: ignore[arg-type]
    store = InMemoryTapeStore()
    user_turns(store, "Hi, I'm Maya Lin.", "I live in Lisbon.")
    for run in (1, 2, 3):
        fake_openai.enqueue(bad, bad, bad)
        await end_of_turn(memory, store)
        graph = memory.graph(TAPE)
        assert graph is not None
        if given_up_on_run is None or run < given_up_on_run:
            assert graph.watermark == 0 and memory.stats["windows_given_up"] == 0
            assert memory.stats["extraction_failures"] == run
        if run == given_up_on_run:
            break
    else:
        assert given_up_on_run is None and len(fake_openai.requests) == 9  # asked again every run
        return
    assert (
        memory.stats["windows_given_up"] == 1 and memory.stats["extraction_failures"] == given_up_on_run - 1
    )
    [stored] = (await SnapshotStore(store).load(TAPE))[0]
    assert (stored.first_entry_id, stored.last_entry_id, stored.entities) == (1, 4, ())
    assert stored.dropped[0].startswith("given up, nothing kept: no valid extraction")
    fake_openai.enqueue(tool_call_reply("Extraction", MAYA))
    user_turns(store, "Maya Lin says hi.", "Maya Lin moved to Porto.")
    await end_of_turn(memory, store)  # the memory goes on past the window
    graph = memory.graph(TAPE)
    assert graph is not None and graph.watermark == 8 and graph.entity("person:maya-lin") is not None


async def test_a_growing_window_gives_up_only_the_entries_every_failing_run_held(
    fake_openai: FakeOpenAIServer,
) -> None:
    bad = tool_call_reply("Extraction", '{"entities": "none"}')
    config = ExtractorConfig(
        model="m", base_url=fake_openai.base_url, api_key="k", prompt="extract@1", retry=FAST
    )
    memory = service(Extractor(config), retry_cooldown=0.0, failed_window_tries=2)  # type: ignore[arg-type]
    store = InMemoryTapeStore()
    user_turns(store, "Hi, I'm Ana Lima.", "I live in Faro.")
    fake_openai.enqueue(bad, bad, bad)
    await end_of_turn(memory, store)  # entries 1-4 fail once
    user_turns(store, "Hi, I'm Maya Lin.", "I live in Lisbon.")
    fake_openai.enqueue(bad, bad, bad, tool_call_reply("Extraction", MAYA))
    await end_of_turn(memory, store)  # entries 1-8 fail: 1-4 failed twice, 5-8 once
    assert [request.transcript_entry_ids()[0] for request in fake_openai.requests[::3]] == [1, 1, 5]
    stored = sorted((await SnapshotStore(store).load(TAPE))[0], key=lambda s: s.first_entry_id)
    assert [(s.first_entry_id, s.last_entry_id, len(s.entities)) for s in stored] == [(1, 4, 0), (5, 8, 1)]
    assert memory.stats["windows_given_up"] == 1


async def test_a_reset_tape_is_extracted_again_from_its_first_entry_and_the_old_memory_is_gone() -> None:
    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    memory = service(extractor)
    user_turns(store, "Hi, I'm Maya Lin.", "I live in Lisbon.")
    await end_of_turn(memory, store)
    assert memory.block(TAPE, "") != ""
    store.reset(TAPE)  # what bub's tape reset does: the tape and its memory sidecar
    store.reset(memory_tape_name(TAPE))
    user_turns(store, "a new start")  # entries 1-2 again, not due yet by the cadence
    await end_of_turn(memory, store)
    assert memory.stats["tape_resets"] == 1
    assert memory.block(TAPE, "") == ""  # the old memory is not shown any more
    user_turns(store, "second turn")
    await end_of_turn(memory, store)
    assert extractor.calls == [(1, 4), (1, 4)]  # the new entries were not skipped
    graph = memory.graph(TAPE)
    assert graph is not None and graph.watermark == 4


async def test_a_reset_tape_whose_memory_survived_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    memory = service(extractor)
    user_turns(store, "Hi, I'm Maya Lin.", "I live in Lisbon.", "more", "and more")
    await end_of_turn(memory, store)
    store.reset(TAPE)  # the sidecar is left as it was
    user_turns(store, "a", "b")
    await end_of_turn(memory, store)
    assert memory.stats["tape_resets"] == 1
    assert "was not reset with it" in caplog.text
    assert extractor.calls == [(1, 8)]
    loads = memory.stats["loads"]
    user_turns(store, "c")
    await end_of_turn(memory, store)
    assert memory.stats["loads"] == loads and memory.stats["tape_resets"] == 1  # not read again each turn


async def test_without_an_extractor_nothing_is_extracted_and_nothing_fails() -> None:
    store = InMemoryTapeStore()
    memory = service(None)
    user_turns(store, "a", "b")
    await end_of_turn(memory, store)
    assert memory.stats["extraction_failures"] == 0 and memory.stats["snapshots"] == 0


@pytest.mark.parametrize("budget", [60, 800])
async def test_a_block_leaves_out_what_was_shown(budget: int) -> None:
    store = InMemoryTapeStore()
    people = [Entity.create(f"Person {i}", "person") for i in range(20)]
    await SnapshotStore(store).append(make_snapshot(people, tape=TAPE))
    memory = service(None, budget=budget)
    await memory.load(TAPE, store)
    first = memory.block(TAPE, "")
    shown = {line for line in first.splitlines() if line.startswith("- ")}
    assert shown
    question = "What about Person 3 and Person 19?"
    later = memory.block(TAPE, question, shown=shown, named_only=True)
    later_lines = {line for line in later.splitlines() if line.startswith("- ")}
    assert not later_lines & shown
    named = {"- Person 3 (person)", "- Person 19 (person)"}
    assert later_lines == named - shown  # only what the question names, and only if new
    topped_up = memory.block(TAPE, question, shown=shown)
    topped_lines = {line for line in topped_up.splitlines() if line.startswith("- ")}
    assert not topped_lines & shown and named - shown <= topped_lines  # the rest of the memory too


class CitesOldEntries(ScriptedExtractor):
    """Extracts the new entries, and cites Maya Lin from entry 2 again (a re-extraction of old entries)."""

    async def iter_extract(
        self, entries: Sequence[Any], *, tape: str, memory: MemoryGraph | None = None
    ) -> AsyncIterator[Snapshot]:
        new = [e for e in entries if e.id > (memory.watermark if memory else 0)]
        self.calls.append((new[0].id, new[-1].id) if new else (0, 0))
        maya = Entity.create("Maya Lin", "person", evidence=[2])
        porto = Entity.create("Porto", "location", evidence=[new[-1].id])
        yield make_snapshot([maya, porto], tape=tape, first=new[0].id, last=new[-1].id)


async def test_a_forget_made_by_another_process_leaves_the_loaded_memory_at_the_next_extraction() -> None:
    from bub_semantic_memory.agent._editor import MemoryEditor

    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    memory = service(extractor)
    user_turns(store, "Hi, I'm Maya Lin.", "I live in Lisbon.")
    await end_of_turn(memory, store)
    assert "Maya Lin" in memory.block(TAPE, "where does Maya live?")
    await MemoryEditor(store, TAPE, ONTOLOGY, by="cli").forget("Maya Lin")  # the CLI, elsewhere
    assert "Maya Lin" in memory.block(TAPE, "where does Maya live?")  # not read yet: no store read per turn
    user_turns(store, "Nice weather.", "Indeed.")
    extractor.fail = True  # the edit is read before the extraction is tried
    await end_of_turn(memory, store)
    assert memory.stats["edits_seen"] == 1 and "Maya Lin" not in memory.block(TAPE, "where does Maya live?")


async def test_after_a_purge_an_extraction_never_stores_the_erased_name(tmp_path: Any) -> None:
    from bub.store import FileTapeStore

    from bub_semantic_memory.agent._editor import MemoryEditor

    store = FileTapeStore(tmp_path)
    first, again = ScriptedExtractor(), CitesOldEntries()
    memory = service(first)
    for text in ("Hi, I'm Maya Lin.", "I live in Lisbon."):
        store.append(TAPE, TapeEntry.message({"role": "user", "content": text}))
    memory.schedule(TAPE, store)
    await settle(memory)
    result = await MemoryEditor(store, TAPE, ONTOLOGY, by="cli").forget("Maya Lin", purge=True)
    assert result.purge is not None and result.purge.snapshots == 1
    memory.scheduler._extractor = again  # type: ignore[assignment]  # the same process extracts on
    for text in ("I moved to Porto.", "It is sunny."):
        store.append(TAPE, TapeEntry.message({"role": "user", "content": text}))
    memory.schedule(TAPE, store)
    await settle(memory)
    raw = (tmp_path / f"{memory_tape_name(TAPE)}.jsonl").read_text(encoding="utf-8")
    assert again.calls == [(3, 4)] and "Maya" not in raw and "Porto" in raw
    graph = memory.graph(TAPE)
    assert (
        graph is not None and graph.lookup("Maya Lin") == [] and graph.lookup("Porto") == ["location:porto"]
    )


async def test_snapshots_another_worker_stored_are_indexed_off_the_model_call_path() -> None:
    store = InMemoryTapeStore()
    worker, other = service(ScriptedExtractor()), service(ScriptedExtractor())
    user_turns(store, "Hi, I'm Maya Lin.", "I live in Lisbon.")
    await end_of_turn(worker, store)
    user_turns(store, "Maya took up the cello.", "She plays it daily.")
    await end_of_turn(other, store)  # the other worker extracts these turns and stores them
    user_turns(store, "One more turn.")
    await end_of_turn(worker, store)  # not due for this worker: it only folds the other's snapshot in
    assert worker.stats["deferred"] == 1 and worker.graph(TAPE).snapshot_count == 2  # type: ignore[union-attr]
    index = worker.index(TAPE)
    assert index is not None and not index.stale  # the next model call does not rebuild it
    assert "Maya took up the cello." in worker.block(TAPE, "does Maya play the cello?")


@pytest.mark.parametrize("result_later", [True, False], ids=["ends-on-the-call", "ends-on-its-result"])
async def test_the_lines_indexed_after_each_extraction_are_those_one_reading_of_the_tape_gives(
    result_later: bool,
) -> None:
    from bub_semantic_memory.stores._store import fetch_tape
    from bub_semantic_memory.tape._transcript import render_transcript

    store, memory = InMemoryTapeStore(), service(ScriptedExtractor())
    user_turns(store, "Hi, I'm Maya Lin.", "I live in Lisbon.")
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city": "Lisbon"}'},
    }
    store.append(TAPE, TapeEntry.tool_call([call]))
    if not result_later:
        store.append(TAPE, TapeEntry.tool_result(["sunny in Lisbon"]))
    await end_of_turn(memory, store)  # the first extraction ends on the call, or on its result
    if result_later:
        store.append(TAPE, TapeEntry.tool_result(["sunny in Lisbon"]))
    user_turns(store, "Thanks.", "Maya moved to Porto.")
    await end_of_turn(memory, store)
    assert memory.stats["snapshots"] == 2
    entries = await fetch_tape(store, TAPE)
    calls = {entry.id for entry in entries if entry.kind == "tool_call"}  # the agent's action, never quoted
    whole = {
        line.entry_id: line.text for line in render_transcript(entries).lines if line.entry_id not in calls
    }
    index = memory.index(TAPE)
    assert index is not None and index.line_count == len(whole) and index.last_line_id == max(whole)
    [result] = index.passages("sunny")
    assert result.text == whole[result.entry_id] and "weather returned: sunny in Lisbon" in result.text
    assert [p.text for p in index.passages("Thanks weather sunny Porto", limit=20)] == [
        whole[p.entry_id] for p in index.passages("Thanks weather sunny Porto", limit=20)
    ]


class HangingExtractor(ScriptedExtractor):
    """Starts extracting and never finishes, as a local model's window does at a shutdown."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()

    async def iter_extract(
        self, entries: Sequence[Any], *, tape: str, memory: MemoryGraph | None = None
    ) -> AsyncIterator[Snapshot]:
        self.started.set()
        await asyncio.Event().wait()
        yield make_snapshot([], [], tape=tape)  # never reached


async def test_drain_names_the_tapes_whose_extraction_it_cut_short() -> None:
    store, extractor = InMemoryTapeStore(), HangingExtractor()
    memory = service(extractor)
    user_turns(store, "Hi, I'm Maya Lin.", "I live in Lisbon.")
    memory.schedule(TAPE, store)
    await extractor.started.wait()
    assert await memory.drain(0.0) == [TAPE]
    assert memory.stats["cancelled_at_shutdown"] == 1 and extractor.closed
    assert await memory.drain(0.0) == []  # nothing left running


async def test_a_tape_another_process_has_claimed_is_left_for_a_later_turn() -> None:
    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    claimed = {TAPE}

    @contextlib.contextmanager
    def claim(tape: str) -> Iterator[bool]:
        yield tape not in claimed

    setup = MemorySetup(folds_with=ONTOLOGY, policy=MemoryPolicy(every_turns=1, min_new_tokens=0))
    memory = MemoryService.from_setup(setup, extractor=lambda: extractor, claim=claim)  # type: ignore[arg-type,return-value]
    user_turns(store, "Hi, I'm Maya Lin.")
    await end_of_turn(memory, store)
    assert extractor.calls == [] and memory.stats["claimed_elsewhere"] == 1
    claimed.clear()  # the other process is done
    assert await memory.catch_up(TAPE, store) == 1
    assert extractor.calls == [(1, 2)]


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": f"call-{name}", "type": "function", "function": {"name": name, "arguments": arguments}}


async def test_a_note_never_quotes_the_agents_own_tool_calls_or_what_the_memory_tools_answered() -> None:
    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    memory = service(extractor)
    user_turns(store, "Hi, I'm Maya Lin.", "Where does Maya live? Check notes.txt")
    store.append(TAPE, TapeEntry.tool_call([_call("memory_search", '{"query": "where does Maya live"}')]))
    store.append(TAPE, TapeEntry.tool_result(['{"query": "where does Maya live", "facts": []}']))
    store.append(
        TAPE, TapeEntry.tool_call([_call("fs_read", '{"path": "notes.txt"}')], content="Let me look.")
    )
    store.append(TAPE, TapeEntry.tool_result(["Maya lives in Lisbon, says notes.txt"]))
    await end_of_turn(memory, store)
    assert memory.stats["snapshots"] == 1

    note = memory.block(TAPE, "where does Maya live")
    assert "memory_search" not in note  # neither the call nor what it returned
    assert "fs_read returned: Maya lives in Lisbon" in note  # another tool's result was said to the agent
    assert "Let me look." in memory.block(TAPE, "did you look?")  # what was said beside a call stays


class LocalScriptedExtractor(ScriptedExtractor):
    """The same, declaring the traits of a model in this process with windows of 1,500 tokens."""

    traits = BackendTraits(in_process=True, grammar_constrained=True, context_tokens=8192)
    chunk_tokens = 1500


def test_a_local_model_waits_for_a_windows_worth_and_an_endpoint_for_six_turns() -> None:
    hosted, local = (
        MemoryPolicy().cadence(HOSTED, 3000),
        MemoryPolicy().cadence(LocalScriptedExtractor.traits, 1500),
    )
    assert (hosted.every_turns, hosted.min_new_tokens) == (6, 1200)
    assert (local.every_turns, local.min_new_tokens) == (None, 1500)
    explicit = MemoryPolicy(every_turns=2, min_new_tokens=0).cadence(LocalScriptedExtractor.traits, 1500)
    assert (explicit.every_turns, explicit.min_new_tokens) == (2, 0)  # what is set wins


async def test_a_local_model_extracts_once_a_windows_worth_of_new_transcript_accumulated() -> None:
    store, extractor = InMemoryTapeStore(), LocalScriptedExtractor()
    setup = MemorySetup(folds_with=ONTOLOGY, policy=MemoryPolicy())
    memory = MemoryService.from_setup(setup, extractor=lambda: extractor)  # type: ignore[arg-type,return-value]
    sentence = "Maya Lin told me about her week in Lisbon and the new studio she rents near the river. "
    for _ in range(6):  # six turns: an endpoint's cadence would extract now
        user_turns(store, sentence * 4)
        await end_of_turn(memory, store)
    assert extractor.calls == [] and memory.stats["deferred"] == 6
    for _ in range(12):
        user_turns(store, sentence * 4)
        await end_of_turn(memory, store)
    assert len(extractor.calls) == 1  # one window of about 1,500 tokens, not three of six turns
    first, last = extractor.calls[0]
    assert first == 1 and last > 24


async def test_a_quoted_line_carries_its_day_and_what_yesterday_meant_on_it() -> None:
    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    memory = service(extractor)
    said_on = "2023-05-08T13:56:00+00:00"  # a Monday
    store.append(
        TAPE, TapeEntry(0, "message", {"role": "user", "content": "Hi, I'm Maya Lin."}, date=said_on)
    )
    store.append(TAPE, TapeEntry(0, "message", {"role": "assistant", "content": "Hello Maya."}, date=said_on))
    store.append(
        TAPE,
        TapeEntry(
            0, "message", {"role": "user", "content": "I went to the pottery class yesterday."}, date=said_on
        ),
    )
    store.append(TAPE, TapeEntry(0, "message", {"role": "assistant", "content": "Nice."}, date=said_on))
    await end_of_turn(memory, store)
    block = memory.block(TAPE, "When did Maya go to the pottery class?")
    lines = block.splitlines()
    day = lines.index("  Monday 8 May 2023:")
    assert "  > [3] user: I went to the pottery class yesterday (Sunday 7 May 2023)." in lines[day + 1 :]


class PotteryExtractor(ScriptedExtractor):
    """Extracts 'Maya Lin attends pottery class', stated by entry 3."""

    async def iter_extract(
        self, entries: Sequence[Any], *, tape: str, memory: MemoryGraph | None = None
    ) -> AsyncIterator[Snapshot]:
        maya, pottery = Entity.create("Maya Lin", "person"), Entity.create("pottery class", "event")
        relation = Relation(source=maya.key, type="attends", target=pottery.key, evidence=(3,))
        yield make_snapshot([maya, pottery], [relation], tape=tape, first=entries[0].id, last=entries[-1].id)


async def test_a_fact_quotes_its_line_with_the_day_it_was_said_and_what_yesterday_meant() -> None:
    store, extractor = InMemoryTapeStore(), PotteryExtractor()
    memory = service(extractor, passage_share=0.0)  # no excerpt: the line can only be quoted under the fact
    said_on = "2023-05-08T13:56:00+00:00"  # a Monday
    for role, text in [
        ("user", "Hi, I'm Maya Lin."),
        ("assistant", "Hello Maya."),
        ("user", "I went to the pottery class yesterday."),
        ("assistant", "Nice."),
    ]:
        store.append(TAPE, TapeEntry(0, "message", {"role": role, "content": text}, date=said_on))
    await end_of_turn(memory, store)
    block = memory.block(TAPE, "When did Maya attend the pottery class?")
    assert "  - Maya Lin attends pottery class" in block.splitlines()
    quote = "    > [3] (Monday 8 May 2023) user: I went to the pottery class yesterday (Sunday 7 May 2023)."
    assert quote in block.splitlines()


async def test_a_question_naming_someone_in_a_group_tape_gets_their_line_before_a_better_match() -> None:
    store, extractor = InMemoryTapeStore(), ScriptedExtractor()
    memory = service(extractor, budget=70)  # room for one of the two lines
    for sender, text in [
        ("Tim", "I collect books, John."),  # short: BM25's best line for "collect" and "John"
        ("John", "Since we moved last spring I collect old vinyl records, mostly jazz."),
    ]:
        content = f"sender_id={sender}|channel=$telegram|chat_id=7\n{text}"
        store.append(TAPE, TapeEntry.message({"role": "user", "content": content}))
        store.append(TAPE, TapeEntry.message({"role": "assistant", "content": "ok"}))
    await end_of_turn(memory, store)
    anyone = memory.block(TAPE, "Who here likes to collect?")
    assert "books" in anyone and "vinyl" not in anyone  # no one named: the better match
    named = memory.block(TAPE, "What does John collect?")
    assert "vinyl records" in named and "books" not in named
