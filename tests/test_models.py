from __future__ import annotations

import pytest
from pydantic import ValidationError

from bub_semantic_memory._models import Entity, PromptRef, Snapshot, Usage, entity_key, normalize_name


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Alice Chen", "alice chen"),
        ("  ALICE   chen!! ", "alice chen"),
        ("The Apollo-Project", "apollo project"),
        ("the", "the"),
        ("O'Brien", "o brien"),
        ("张伟", "张伟"),
        ("Ｆｕｌｌｗｉｄｔｈ", "fullwidth"),
    ],
)
def test_normalize_name_folds_case_punctuation_and_articles(raw: str, expected: str) -> None:
    assert normalize_name(raw) == expected


def test_entity_key_is_deterministic_from_type_and_name() -> None:
    assert entity_key("person", "Alice Chen") == "person:alice-chen"
    assert entity_key("person", "alice  CHEN.") == entity_key("person", "Alice Chen")
    assert entity_key("project", "Alice Chen") != entity_key("person", "Alice Chen")


def test_entity_key_rejects_names_without_letters() -> None:
    with pytest.raises(ValueError, match="no letters or digits"):
        entity_key("person", "?!")


def test_entity_create_drops_aliases_equal_to_the_name_and_sorts_evidence() -> None:
    entity = Entity.create("Alice Chen", "person", aliases=["alice chen", "Ali", "Ali"], evidence=[5, 2, 5])
    assert entity.key == "person:alice-chen"
    assert entity.aliases == ("Ali",)
    assert entity.evidence == (2, 5)


def _snapshot(**overrides: object) -> Snapshot:
    fields: dict[str, object] = {
        "tape": "t",
        "first_entry_id": 1,
        "last_entry_id": 5,
        "prompt": PromptRef(name="extract", version=1, sha256="ab" * 32),
        "model": "m",
        "mode": "tools",
    }
    fields.update(overrides)
    return Snapshot.model_validate(fields)


def test_snapshot_id_is_derived_from_tape_range_prompt_and_model() -> None:
    assert _snapshot().id == _snapshot().id
    assert _snapshot().id != _snapshot(last_entry_id=6).id
    assert _snapshot().id != _snapshot(model="other").id


def test_snapshot_round_trips_through_json() -> None:
    snapshot = _snapshot(
        entities=[Entity.create("Alice", "person", evidence=[2])], usage=Usage(prompt_tokens=3)
    )
    assert Snapshot.model_validate_json(snapshot.model_dump_json()) == snapshot


def test_snapshot_refuses_an_empty_range() -> None:
    with pytest.raises(ValidationError, match="range is empty"):
        _snapshot(first_entry_id=6, last_entry_id=5)


def test_usage_adds_every_counter() -> None:
    total = Usage(
        prompt_tokens=1, completion_tokens=2, requests=3, attempts=4, reasks=1, latency_s=0.5
    ) + Usage(prompt_tokens=10, completion_tokens=20, requests=30, attempts=40, reasks=2, latency_s=1.0)
    assert total == Usage(
        prompt_tokens=11, completion_tokens=22, requests=33, attempts=44, reasks=3, latency_s=1.5
    )
