"""The eval response cache: ``cache_key``, ``ResponseCache`` (round trip, layout, corrupt files as
misses) and ``CachedFailure`` (which failures are cached and how they come back).

The cache policies (``use``, ``off``, ``replay``) live in the runner and are tested in
``tests/evals/extraction/test_runner.py``; the cache itself has no modes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bub_semantic_memory._errors import (
    ExtractionError,
    OutputTruncatedError,
    ReplayMissError,
    TransportError,
    ValidationExhaustedError,
)
from bub_semantic_memory._models import Entity, Snapshot, Usage
from bub_semantic_memory.evals.extraction._cache import (
    CACHE_FORMAT,
    EXTRACTION_ENTRY,
    CachedFailure,
    PartialReplay,
    ResponseCache,
    _reached_modules,
    cache_key,
    code_shape,
    extraction_code_sha256,
)
from tests.conftest import make_snapshot

# The fields the runner keys an extraction on (see ``_PromptRunner._key``).
FIELDS: dict[str, Any] = {
    "prompt_sha256": "a" * 64,
    "model": "gpt-test",
    "mode": "tools",
    "transcript_sha256": "b" * 64,
    "chunk_tokens": 3000,
    "overlap": (4, 250),
    "max_output_tokens": 4096,
    "reasks": 2,
    "extraction_code_sha256": "f" * 64,
}


def _snapshots() -> list[Snapshot]:
    maya = Entity.create("Maya Lin", "person", evidence=[2])
    globex = Entity.create("Globex", "organization", evidence=[2, 5])
    first = make_snapshot([maya], first=1, last=4).model_copy(
        update={"usage": Usage(prompt_tokens=900, cached_tokens=512, completion_tokens=80, requests=2)}
    )
    return [first, make_snapshot([globex], first=5, last=9)]


SNAPSHOTS = _snapshots()


def stored(cache: ResponseCache, **fields: Any) -> str:
    key, key_fields = cache_key(**(FIELDS | fields))
    cache.put(key, key_fields, SNAPSHOTS)
    return key


def cache_file(cache: ResponseCache, key: str) -> Path:
    [path] = cache.directory.rglob(f"{key}.json")
    return path


# --- cache_key ---------------------------------------------------------------------------------------


def test_a_key_is_a_sha256_and_its_fields_carry_the_cache_format() -> None:
    key, fields = cache_key(**FIELDS)
    assert len(key) == 64 and int(key, 16) >= 0
    assert fields == {"cache_format": CACHE_FORMAT, **FIELDS}


def test_the_key_does_not_depend_on_the_order_of_the_fields() -> None:
    assert cache_key(**FIELDS)[0] == cache_key(**dict(reversed(FIELDS.items())))[0]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("prompt_sha256", "c" * 64),
        ("model", "gpt-other"),
        ("mode", "json"),
        ("transcript_sha256", "d" * 64),
        ("chunk_tokens", 2000),
        ("overlap", (4, 100)),
        ("max_output_tokens", 1024),
        ("reasks", 0),
        ("extraction_code_sha256", "0" * 64),
    ],
)
def test_every_field_is_part_of_the_key(field: str, value: object) -> None:
    assert cache_key(**(FIELDS | {field: value}))[0] != cache_key(**FIELDS)[0]


def test_an_extra_field_such_as_a_substituted_ontology_changes_the_key() -> None:
    assert cache_key(ontology_sha256="e" * 64, **FIELDS)[0] != cache_key(**FIELDS)[0]


# --- extraction_code_sha256: the extractor's code is part of the key -----------------------------------

ORIGINAL = '''"""A module."""

def keep(item):
    """Keep an item when it has a name."""
    return bool(item.name)  # a comment
'''


@pytest.mark.parametrize(
    "edited",
    [
        ORIGINAL.replace("# a comment", "# another comment"),
        ORIGINAL.replace("Keep an item when it has a name.", "Say whether to keep it."),
        ORIGINAL.replace('"""A module."""\n', ""),
        ORIGINAL.replace("return bool(item.name)", "return bool(\n        item.name\n    )"),
    ],
    ids=["comment", "docstring", "module docstring removed", "layout"],
)
def test_comments_docstrings_and_layout_leave_the_code_shape_alone(edited: str) -> None:
    assert code_shape(edited) == code_shape(ORIGINAL)


@pytest.mark.parametrize(
    "edited",
    [
        ORIGINAL.replace("bool(item.name)", "bool(item.name.strip())"),
        ORIGINAL.replace("def keep", "def kept"),
        ORIGINAL + "\nLIMIT = 3\n",
    ],
    ids=["behaviour", "name", "new constant"],
)
def test_any_other_edit_changes_the_code_shape(edited: str) -> None:
    assert code_shape(edited) != code_shape(ORIGINAL)


def test_a_function_holding_only_a_docstring_still_has_a_shape() -> None:
    assert code_shape('def f():\n    """Nothing yet."""\n') == code_shape("def f():\n    pass\n")


def test_the_revision_covers_every_module_the_extractor_reaches_and_nothing_of_the_evals() -> None:
    reached = set(_reached_modules(EXTRACTION_ENTRY))
    package = "bub_semantic_memory"
    # the validators, the candidate and planted-name heuristics, windows, and both backends
    # (the local one is imported inside a function, only when it is used)
    for module in (
        "extraction._extractor",
        "extraction._responses",
        "extraction._validation",
        "extraction._strategies",
        "extraction._candidates",
        "extraction._planted",
        "extraction._window",
        "backends._transport",
        "backends._local",
    ):
        assert f"{package}.{module}" in reached
    assert not {
        m for m in reached if m.startswith((f"{package}.evals", f"{package}.cli", f"{package}.plugin"))
    }


def test_the_revision_is_a_stable_sha256() -> None:
    revision = extraction_code_sha256()
    assert len(revision) == 64 and int(revision, 16) >= 0
    extraction_code_sha256.cache_clear()
    assert extraction_code_sha256() == revision


# --- ResponseCache round trip -----------------------------------------------------------------------


def test_a_stored_extraction_reads_back_equal(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    key = stored(cache)
    hit = cache.get(key)
    assert hit is not None
    assert hit.key == key
    assert hit.snapshots == SNAPSHOTS
    assert hit.snapshots[0].usage.cached_tokens == 512
    assert hit.failure is None
    assert hit.key_fields == json.loads(json.dumps(cache_key(**FIELDS)[1]))


def test_a_missing_key_is_a_miss_even_without_a_cache_directory(tmp_path: Path) -> None:
    assert ResponseCache(tmp_path / "never-created").get(cache_key(**FIELDS)[0]) is None


def test_entries_are_kept_apart_by_key(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    stored(cache)
    other, other_fields = cache_key(**(FIELDS | {"model": "gpt-other"}))
    assert cache.get(other) is None
    cache.put(other, other_fields, [])
    hit = cache.get(other)
    assert hit is not None and hit.snapshots == []
    first = cache.get(cache_key(**FIELDS)[0])
    assert first is not None and len(first.snapshots) == 2


def test_files_are_sharded_by_key_prefix_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = stored(cache)
    assert cache_file(cache, key) == tmp_path / key[:2] / f"{key}.json"
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [f"{key}.json"]


def test_putting_the_same_key_again_replaces_the_entry(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = stored(cache)
    cache.put(key, cache_key(**FIELDS)[1], SNAPSHOTS[:1])
    hit = cache.get(key)
    assert hit is not None and len(hit.snapshots) == 1


# --- corrupt files are misses ------------------------------------------------------------------------


def truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


@pytest.mark.parametrize(
    "damage",
    [
        truncate,
        lambda data: b"",
        lambda data: b"not json at all",
        lambda data: b"\xff\xfe\x00garbage",
        lambda data: b"[1, 2, 3]",
        lambda data: data.replace(b'"snapshots":', b'"snapshotz":'),
        lambda data: data.replace(b'"first_entry_id":1,', b'"first_entry_id":99,'),  # empty range
    ],
    ids=["truncated", "empty", "not-json", "bad-utf8", "wrong-shape", "missing-field", "invalid-snapshot"],
)
def test_a_damaged_file_is_a_miss(tmp_path: Path, damage: Any) -> None:
    cache = ResponseCache(tmp_path)
    key = stored(cache)
    path = cache_file(cache, key)
    damaged = damage(path.read_bytes())
    assert damaged != path.read_bytes()
    path.write_bytes(damaged)
    assert cache.get(key) is None


def test_a_file_stored_under_another_key_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = stored(cache)
    other = cache_key(**(FIELDS | {"reasks": 5}))[0]
    target = tmp_path / other[:2] / f"{other}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(cache_file(cache, key).read_bytes())
    assert cache.get(other) is None


def test_a_damaged_file_is_repaired_by_the_next_put(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = stored(cache)
    cache_file(cache, key).write_bytes(b"{")
    stored(cache)
    assert cache.get(key) is not None


# --- cached failures ---------------------------------------------------------------------------------


def spent() -> Usage:
    return Usage(
        prompt_tokens=1200, cached_tokens=300, completion_tokens=400, requests=3, attempts=3, reasks=2
    )


def test_a_validation_failure_round_trips_through_the_cache(tmp_path: Path) -> None:
    error = ValidationExhaustedError(
        "still invalid",
        usage=spent(),
        model="gpt-test",
        attempts=3,
        last_output='{"secret": 1}',
        too_many_items=True,
    )
    failure = CachedFailure.of(error)
    assert failure is not None
    cache = ResponseCache(tmp_path)
    key, fields = cache_key(**FIELDS)
    cache.put(key, fields, SNAPSHOTS[:1], failure)
    hit = cache.get(key)
    assert hit is not None and hit.failure is not None
    again = hit.failure.error()
    assert type(again) is ValidationExhaustedError
    assert (again.reason, again.model, again.attempts, again.usage) == (
        "still invalid",
        "gpt-test",
        3,
        spent(),
    )
    assert again.too_many_items is True
    assert again.last_output is None
    assert b"secret" not in cache_file(cache, key).read_bytes()  # the raw model output is not kept


def test_a_truncated_output_failure_comes_back_as_the_same_error() -> None:
    failure = CachedFailure.of(OutputTruncatedError("hit the limit", usage=spent(), model="m", attempts=1))
    assert failure is not None
    again = failure.error()
    assert type(again) is OutputTruncatedError
    assert str(again) == str(OutputTruncatedError("hit the limit", usage=spent(), model="m", attempts=1))


class _StricterValidation(ValidationExhaustedError):
    pass


@pytest.mark.parametrize(
    "error",
    [
        TransportError("HTTP 503", usage=spent()),
        ReplayMissError("no cached extraction"),
        ExtractionError("generic"),
        _StricterValidation("a subclass is not the model's answer"),
    ],
    ids=["transport", "replay-miss", "base", "subclass"],
)
def test_failures_that_are_not_the_models_answer_are_not_cached(error: ExtractionError) -> None:
    assert CachedFailure.of(error) is None


def test_a_cache_that_cannot_be_read_or_written_is_a_miss_and_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be", encoding="utf-8")
    cache = ResponseCache(blocked)
    key = "ab" + "0" * 62
    cache.put(key, {}, [])  # the run goes on without its cache
    assert cache.get(key) is None
    readable = ResponseCache(tmp_path / "cache")
    (tmp_path / "cache" / key[:2] / f"{key}.json").mkdir(parents=True)  # a directory in the file's place
    assert readable.get(key) is None
    assert sum("eval cache: cannot" in r.getMessage() for r in caplog.records) == 3  # put, get, get


# --- partial replays ----------------------------------------------------------------------------------


def _partial(key: str, key_fields: dict[str, Any], snapshots: list[Snapshot]) -> PartialReplay:
    return PartialReplay(key=key, key_fields=key_fields, snapshots=snapshots, replayed_entries=9, failures=1)


def test_a_partial_replay_reads_back_beside_its_key_and_the_complete_entry_replaces_it(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path)
    key, fields = cache_key(**FIELDS)
    cache.put_partial(_partial(key, fields, SNAPSHOTS[:1]))
    assert cache.get(key) is None  # a partial replay is no extraction to replay
    partial = cache.get_partial(key)
    assert partial is not None
    assert (partial.snapshots, partial.replayed_entries, partial.failures) == (SNAPSHOTS[:1], 9, 1)
    other, _ = cache_key(**(FIELDS | {"model": "another"}))
    assert cache.get_partial(other) is None
    cache.put(key, fields, SNAPSHOTS)
    assert cache.get_partial(key) is None and cache.get(key) is not None
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [f"{key}.json"]


def test_a_purge_reaches_partial_replays_that_name_what_was_forgotten(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    maya, globex = SNAPSHOTS
    naming, _ = cache_key(**FIELDS)
    silent, _ = cache_key(**(FIELDS | {"model": "another"}))
    cache.put_partial(_partial(naming, {}, [maya]))
    cache.put_partial(_partial(silent, {}, [globex]))
    assert cache.purge(maya.tape, lambda text: "Maya Lin" in text) == 1
    assert cache.get_partial(naming) is None and cache.get_partial(silent) is not None
