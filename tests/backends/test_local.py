"""The in-process local backend: what it does without the extra, and how it shapes requests.

The default run never loads a model. ``-m local_model`` opts in to one real extraction
with the packaged smoke-test model (needs ``make setup-local``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from bub_semantic_memory._errors import ConfigurationError
from bub_semantic_memory._models import normalize_name
from bub_semantic_memory.backends._local import INSTALL_HINT, AlignedPrefixReuse, LocalBackend
from bub_semantic_memory.cli import app
from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.tape._transcript import render_transcript
from tests.conftest import DATA, REPO


@pytest.fixture
def without_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import llama_cpp`` fail, as on an install without the ``local`` extra."""
    monkeypatch.setitem(sys.modules, "llama_cpp", None)


@pytest.mark.usefixtures("without_llama_cpp")
@pytest.mark.parametrize("spec", ["local", "local:/models/any.gguf"])
def test_without_the_extra_local_fails_with_the_install_hint(spec: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Extractor(ExtractorConfig(model=spec))
    assert str(caught.value) == INSTALL_HINT
    assert "\n" not in INSTALL_HINT and "[local]" in INSTALL_HINT


@pytest.mark.usefixtures("without_llama_cpp")
def test_cli_model_local_without_the_extra_prints_one_line() -> None:
    result = CliRunner().invoke(app, ["extract", str(DATA / "bub_run_tape.jsonl"), "--model", "local"])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "'local' extra" in lines[0]
    assert "Traceback" not in result.output


def test_a_missing_gguf_file_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", type(sys)("llama_cpp"))  # installed, never used
    missing = tmp_path / "nope.gguf"
    with pytest.raises(ConfigurationError, match="local model file not found"):
        ExtractorConfig(model=f"local:{missing}").open_backend()


class RecordingModel:
    """Stands in for ``llama_cpp.Llama``: records each request, answers after a short pause."""

    def __init__(self, *, content: str = '{"entities": []}', finish_reason: str = "stop") -> None:
        self.requests: list[dict[str, Any]] = []
        self.running = 0
        self.most_at_once = 0
        self.content = content
        self.finish_reason = finish_reason

    def create_chat_completion_openai_v1(self, **request: Any) -> dict[str, Any]:
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        time.sleep(0.02)
        self.requests.append(request)
        self.running -= 1
        return {"answered": len(self.requests)}

    def create_chat_completion(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        return {
            "id": "cmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "x.gguf",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.content},
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


class FakeGrammar:
    """Stands in for ``llama_cpp.LlamaGrammar``: remembers the schema it was built from."""

    def __init__(self, schema: str) -> None:
        self.schema = json.loads(schema)

    @classmethod
    def from_json_schema(cls, schema: str, verbose: bool = True) -> FakeGrammar:
        return cls(schema)


@pytest.fixture
def fake_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``llama_cpp`` module holding only the grammar class the backend uses."""
    module = type(sys)("llama_cpp")
    module.LlamaGrammar = FakeGrammar  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp", module)


def _backend(model: RecordingModel, *, chat_format: str | None = None) -> LocalBackend:
    backend = LocalBackend(Path("unused.gguf"), chat_format=chat_format)
    backend._llm = model  # skip loading a real file
    return backend


async def test_gemma_requests_fold_system_into_the_first_user_message_and_drop_endpoint_fields() -> None:
    model = RecordingModel()
    await _backend(model, chat_format="gemma").create(
        model="local",
        timeout=30,
        max_tokens=64,
        messages=[
            {"role": "system", "content": "RULES"},
            {"role": "assistant", "content": "earlier"},
            {"role": "user", "content": "TEXT"},
        ],
    )
    (request,) = model.requests
    assert "model" not in request and "timeout" not in request
    assert request["messages"] == [
        {"role": "assistant", "content": "earlier"},
        {"role": "user", "content": "RULES\n\nTEXT"},
    ]
    assert request["max_tokens"] == 64
    assert request["repeat_penalty"] == 1.1 and request["temperature"] == 0.0


async def test_a_gemma_system_only_request_becomes_a_user_message() -> None:
    model = RecordingModel()
    await _backend(model, chat_format="gemma").create(
        messages=[{"role": "system", "content": "RULES"}], temperature=0.3
    )
    assert model.requests[0]["messages"] == [{"role": "user", "content": "RULES"}]
    assert model.requests[0]["temperature"] == 0.3  # a caller's setting wins over the default


async def test_a_model_with_its_own_template_keeps_the_system_role() -> None:
    model = RecordingModel()
    messages = [{"role": "system", "content": "RULES"}, {"role": "user", "content": "TEXT"}]
    await _backend(model).create(messages=messages)
    assert model.requests[0]["messages"] == messages


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "Extraction",
            "parameters": {"type": "object", "properties": {"entities": {"type": "array"}}},
        },
    }
]
FORCED = {"type": "function", "function": {"name": "Extraction"}}


@pytest.mark.usefixtures("fake_llama_cpp")
async def test_a_forced_tool_call_is_decoded_under_its_schema_without_the_schema_in_the_prompt() -> None:
    model = RecordingModel(content='{"entities": []}')
    messages = [{"role": "system", "content": "RULES"}, {"role": "user", "content": "TEXT"}]
    response = await _backend(model).create(messages=messages, tools=TOOLS, tool_choice=FORCED, max_tokens=99)
    (request,) = model.requests
    assert "tools" not in request and "tool_choice" not in request  # nothing for the template to render
    assert request["messages"] == messages
    assert request["grammar"].schema == cast("dict[str, Any]", TOOLS[0]["function"])["parameters"]
    assert request["max_tokens"] == 99
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.tool_calls is not None
    call: Any = choice.message.tool_calls[0]
    assert (call.function.name, call.function.arguments) == ("Extraction", '{"entities": []}')


@pytest.mark.usefixtures("fake_llama_cpp")
async def test_the_grammar_reads_the_properties_in_alphabetical_order() -> None:
    """The model fills properties in the order the grammar reads them: sorted, whatever order the
    schema gives (a relation's ends before its type; a reasoning note after "entities")."""
    parameters = {
        "type": "object",
        "properties": {"type": {"type": "string"}, "source": {"type": "string"}},
        "required": ["type", "source"],
    }
    tools = [{"type": "function", "function": {"name": "Extraction", "parameters": parameters}}]
    model = RecordingModel(content='{"source": "", "type": ""}')
    await _backend(model).create(messages=[], tools=tools, tool_choice=FORCED)
    assert list(model.requests[0]["grammar"].schema["properties"]) == ["source", "type"]


@pytest.mark.usefixtures("fake_llama_cpp")
async def test_an_answer_cut_at_the_output_limit_says_length() -> None:
    model = RecordingModel(content='{"entities": [{"na', finish_reason="length")
    response = await _backend(model).create(messages=[], tools=TOOLS, tool_choice=FORCED)
    assert response.choices[0].finish_reason == "length"


async def test_one_request_at_a_time() -> None:
    model = RecordingModel()
    backend = _backend(model)
    answers = await asyncio.gather(
        *(backend.create(messages=[{"role": "user", "content": str(i)}]) for i in range(5))
    )
    assert model.most_at_once == 1
    assert sorted(cast("dict[str, int]", a)["answered"] for a in answers) == [1, 2, 3, 4, 5]


Batch = tuple[int, tuple[int, ...]]  # (first position, tokens) of one evaluated batch


class FakeLlama:
    """Stands in for ``llama_cpp.Llama``'s prefix reuse: the prompt bookkeeping of ``generate``.

    ``computed_by`` holds, for each cached position, the batch that computed it: a token's
    numbers in llama.cpp depend on that batch, so two evaluations agree when every position
    was computed by the same batch. ``batches`` lists every evaluated batch.
    """

    def __init__(self, n_batch: int) -> None:
        self.n_batch = n_batch
        self.n_tokens = 0
        self.input_ids: list[int] = []
        self.computed_by: list[Batch] = []
        self.batches: list[Batch] = []

    @property
    def _input_ids(self) -> list[int]:
        return self.input_ids[: self.n_tokens]

    def eval(self, tokens: list[int]) -> None:
        del self.input_ids[self.n_tokens :], self.computed_by[self.n_tokens :]
        for i in range(0, len(tokens), self.n_batch):
            batch = (self.n_tokens, tuple(tokens[i : i + self.n_batch]))
            self.batches.append(batch)
            self.input_ids.extend(batch[1])
            self.computed_by.extend([batch] * len(batch[1]))
            self.n_tokens += len(batch[1])

    def generate(self, tokens: list[int]) -> Any:
        shared = 0
        for cached, new in zip(self._input_ids, tokens[:-1], strict=False):
            if cached != new:
                break
            shared += 1
        if shared:
            self.n_tokens, tokens = shared, tokens[shared:]
        else:
            self.reset()
        self.eval(tokens)
        for token in (900, 901):  # generated tokens are evaluated one at a time
            yield token
            self.eval([token])

    def reset(self) -> None:
        self.n_tokens = 0

    def save_state(self) -> Any:
        return type("State", (), {"ids": self._input_ids, "computed_by": self.computed_by[: self.n_tokens]})()

    def load_state(self, state: Any) -> None:
        self.input_ids, self.computed_by = list(state.ids), list(state.computed_by)
        self.n_tokens = len(state.ids)


class ReusingLlama(AlignedPrefixReuse, FakeLlama):
    pass


def _complete(llm: FakeLlama, prompt: list[int]) -> list[Batch]:
    """Run one request; the batch that computed each prompt position."""
    list(llm.generate(prompt))
    return llm.computed_by[: len(prompt)]


def _cold(prompt: list[int], n_batch: int) -> list[Batch]:
    return _complete(ReusingLlama(n_batch), prompt)


STATIC = list(range(1, 24))  # a static prefix of 23 tokens, not a multiple of the batch


@pytest.mark.parametrize(
    "earlier",
    [
        [*STATIC, 50, 51, 52],  # shares the static prefix
        [*STATIC, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69],  # shares it and is longer
        [
            *STATIC,
            70,
            71,
            72,
            73,
            74,
            75,
            76,
            77,
            78,
            79,
            80,
            81,
            82,
            83,
        ],  # the prompt of this one is its prefix
        [99, *STATIC],  # shares nothing
    ],
)
def test_prefix_reuse_evaluates_every_prompt_token_in_the_batch_a_cold_run_uses(earlier: list[int]) -> None:
    prompt = [*STATIC, 70, 71, 72, 73, 74]
    llm = ReusingLlama(n_batch=8)
    _complete(llm, earlier)
    llm.batches.clear()
    warm = _complete(llm, prompt)
    assert warm == _cold(prompt, 8)


def test_prefix_reuse_still_skips_whole_batches_of_the_shared_prefix() -> None:
    llm = ReusingLlama(n_batch=8)
    _complete(llm, [*STATIC, 50, 51])
    llm.batches.clear()
    _complete(llm, [*STATIC, 60, 61])
    assert llm.batches[0][0] == 16  # 23 shared tokens: batches 0-7 and 8-15 are kept
    assert sum(len(batch) for _, batch in llm.batches) == 9 + 2  # 7 replayed + 2 new, then 2 generated


def test_generated_tokens_are_never_reused_as_prompt() -> None:
    """A re-ask repeats the model's answer in its prompt; those positions were computed one by one."""
    llm = ReusingLlama(n_batch=4)
    first = [1, 2, 3, 4, 5, 6, 7, 8]
    _complete(llm, first)  # generates 900, 901 at positions 8 and 9
    reask = [*first, 900, 901, 902, 903, 904]
    llm.batches.clear()
    assert _complete(llm, reask) == _cold(reask, 4)
    assert llm.batches[0][0] == 8


def test_a_state_restored_from_the_cache_is_resumed_under_the_same_rule() -> None:
    earlier, prompt = [*STATIC, 50, 51], [*STATIC, 60, 61]
    llm = ReusingLlama(n_batch=8)
    _complete(llm, earlier)
    state = llm.save_state()
    _complete(llm, [99, 98, 97])  # something else evaluated in between
    llm.load_state(state)
    llm.batches.clear()
    assert _complete(llm, prompt) == _cold(prompt, 8)
    assert llm.batches[0][0] == 16


def test_the_fingerprint_names_the_file_and_the_batch_size(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(60))
    small, large = LocalBackend(model, n_batch=64), LocalBackend(model, n_batch=512)
    assert small.traits.fingerprint["file"] == "m.gguf" and small.traits.fingerprint["bytes"] == 64
    assert small.traits.fingerprint != large.traits.fingerprint


# The user's bub home, read before the autouse fixture points BUB_HOME at a temp dir: the
# packaged model is assembled there once (253 MB), not again for every test run.
USER_BUB_HOME = os.environ.get("BUB_HOME") or str(Path.home() / ".bub")


@pytest.mark.local_model
@pytest.mark.timeout(900)  # the bound it asserts (600 s) and the model's assembly and load
async def test_real_local_extraction_finds_the_fixtures_people_within_a_time_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real run of the default local model (Qwen2.5-Coder 1.5B) with the promoted prompt.

    Asserts content, not only shape: every gold person of the fixture is found, typed person.
    Without the ``local`` extra this fails with the install hint: opting in means wanting it run.
    """
    monkeypatch.setenv("BUB_HOME", USER_BUB_HOME)
    (fixture,) = load_fixtures(REPO / "evals" / "fixtures", ids=["correction-migration-owner"])
    entries = fixture.entries()
    config = ExtractorConfig(model="local")
    backend = config.open_backend()  # assembling the model is not timed
    started = time.monotonic()
    async with Extractor(config, backend=backend) as extractor:
        snapshots = await extractor.extract(entries, tape=fixture.id)
    elapsed = time.monotonic() - started
    assert elapsed < 600, f"local extraction took {elapsed:.0f} s"
    assert snapshots and snapshots[-1].last_entry_id == entries[-1].id  # every entry was covered
    found = {(normalize_name(e.name), e.type) for s in snapshots for e in s.entities}
    people = {normalize_name(e.name) for e in fixture.gold.entities if e.type == "person"}
    assert people and {(name, "person") for name in people} <= found, found
    transcript = normalize_name(render_transcript(entries).text())
    for snapshot in snapshots:
        for entity in snapshot.entities:
            assert any(normalize_name(n) in transcript for n in entity.names())


# -- stopping a request inside llama.cpp ---------------------------------------------------------


@pytest.fixture
def computing_llama(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """The stand-in llama-cpp-python whose requests compute until stopped (tests/helpers/fake_llama_cpp);
    freeing a model under a computing thread is recorded instead of killing the test process."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "llama_cpp", REPO / "tests" / "helpers" / "fake_llama_cpp" / "llama_cpp" / "__init__.py"
    )
    assert spec is not None and spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    freed_while_computing: list[bool] = []
    module.on_free_while_computing = lambda: freed_while_computing.append(True)
    module.freed_while_computing = freed_while_computing
    monkeypatch.setitem(sys.modules, "llama_cpp", module)
    monkeypatch.setenv("FAKE_LLAMA_LOG", str(tmp_path / "llama.log"))
    from bub_semantic_memory.backends import _local

    _local._reproducible_llama_class.cache_clear()
    yield module
    _local._reproducible_llama_class.cache_clear()


async def _started(tmp_path: Path) -> None:
    """Wait until the stand-in model's thread computes a request (its log's first line)."""
    for _ in range(1000):
        if (tmp_path / "llama.log").exists():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the request never started")


def _events(tmp_path: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in (tmp_path / "llama.log").read_text().splitlines()]


async def test_a_cancelled_request_is_stopped_inside_the_model_and_the_next_one_is_answered(
    computing_llama: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = LocalBackend(tmp_path / "fake.gguf")
    request = asyncio.create_task(backend.create(messages=[], tools=TOOLS, tool_choice=FORCED))
    await _started(tmp_path)
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    assert _events(tmp_path) == ["start", "aborted"]  # the thread is out of the model when cancel returns
    assert backend.stopped_requests == 1

    monkeypatch.setenv("FAKE_LLAMA_SECONDS", "0")
    response = await backend.create(messages=[], tools=TOOLS, tool_choice=FORCED)
    assert response.choices[0].message.tool_calls is not None  # the stop flag did not outlive its request
    await backend.aclose()
    assert _events(tmp_path)[-2:] == ["answered", "closed"]
    assert computing_llama.freed_while_computing == []


async def test_closing_the_backend_while_a_request_computes_stops_it_before_freeing_the_model(
    computing_llama: Any, tmp_path: Path
) -> None:
    backend = LocalBackend(tmp_path / "fake.gguf")
    request = asyncio.create_task(backend.create(messages=[], tools=TOOLS, tool_choice=FORCED))
    await _started(tmp_path)
    await backend.aclose()  # as at shutdown: the extraction's task is not cancelled first
    assert _events(tmp_path) == ["start", "aborted", "closed"]
    assert computing_llama.freed_while_computing == []
    with pytest.raises(RuntimeError, match="llama_decode returned 2"):
        await request  # the request ends as a stopped llama.cpp call does
