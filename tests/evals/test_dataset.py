from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bub_semantic_memory._errors import FixtureError, TapeReadError
from bub_semantic_memory.evals import (
    Gold,
    GoldEntity,
    Prediction,
    dataset_hash,
    load_fixtures,
    load_predictions,
)
from bub_semantic_memory.evals.extraction import ScoringConfig, score_fixture
from bub_semantic_memory.extraction._prompts import PromptLibrary
from tests.conftest import DATA, REPO

TAPE = (DATA / "bub_run_tape.jsonl").read_bytes()


def make_fixture(
    root: Path, fixture_id: str, *, tags: list[str] | None = None, gold: str | None = None
) -> Path:
    folder = root / fixture_id
    folder.mkdir(parents=True)
    (folder / "tape.jsonl").write_bytes(TAPE)
    if gold is None:
        gold = json.dumps(
            {
                "description": f"fixture {fixture_id}",
                "tags": tags or [],
                "entities": [{"name": "Maya Lin", "type": "person"}],
            }
        )
    (folder / "gold.json").write_text(gold, encoding="utf-8")
    return folder


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "fixtures"
    make_fixture(root, "c-people", tags=["people", "quick"])
    make_fixture(root, "a-tools", tags=["tool-facts"])
    make_fixture(root, "b-smalltalk", tags=["smalltalk", "quick"])
    (root / "notes").mkdir()  # neither file: ignored
    (root / "README.md").write_text("not a fixture")
    return root


def test_fixtures_load_sorted_with_gold(dataset: Path) -> None:
    fixtures = load_fixtures(dataset)
    assert [f.id for f in fixtures] == ["a-tools", "b-smalltalk", "c-people"]
    first = fixtures[0]
    assert first.gold.id == "a-tools"  # filled in from the directory name
    assert first.description == "fixture a-tools"
    assert first.tags == ["tool-facts"]
    assert first.gold.entities == [GoldEntity(name="Maya Lin", type="person")]
    assert len(first.entries()) == 29


def test_tapes_are_read_only_when_asked(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path) -> None:
        raise AssertionError(f"read {path} at load time")

    with monkeypatch.context() as patch:
        patch.setattr("bub_semantic_memory.evals._dataset.read_tape_file", refuse)
        fixtures = load_fixtures(dataset)
    first = fixtures[0]
    first.tape_path.write_bytes(TAPE.split(b"\n", 1)[0] + b"\n")
    assert [e.kind for e in first.entries()] == ["anchor"]
    first.tape_path.unlink()
    with pytest.raises(TapeReadError):
        first.entries()


def test_tag_and_id_filters(dataset: Path) -> None:
    assert [f.id for f in load_fixtures(dataset, tags=["quick"])] == ["b-smalltalk", "c-people"]
    assert [f.id for f in load_fixtures(dataset, tags=["tool-facts", "smalltalk"])] == [
        "a-tools",
        "b-smalltalk",
    ]
    assert [f.id for f in load_fixtures(dataset, ids=["c-people", "a-tools"])] == ["a-tools", "c-people"]
    assert [f.id for f in load_fixtures(dataset, ids=["c-people", "a-tools"], tags=["quick"])] == ["c-people"]
    with pytest.raises(FixtureError, match=r"no fixture in .* has any of the tags: nope"):
        load_fixtures(dataset, tags=["nope"])


def test_a_missing_id_is_an_error(dataset: Path) -> None:
    with pytest.raises(FixtureError, match=r"no such fixture in .*: zz-missing"):
        load_fixtures(dataset, ids=["a-tools", "zz-missing"])


def test_malformed_gold_names_the_file(dataset: Path) -> None:
    make_fixture(dataset, "d-broken", gold='{"entities": [{"name": "Maya Lin"}]}')
    with pytest.raises(FixtureError) as caught:
        load_fixtures(dataset)
    message = str(caught.value)
    assert str(dataset / "d-broken" / "gold.json") in message
    assert "entities.0.type" in message and "Field required" in message


def test_gold_that_is_not_json_names_the_file(dataset: Path) -> None:
    make_fixture(dataset, "d-broken", gold="{oops")
    with pytest.raises(FixtureError, match=r"d-broken/gold\.json"):
        load_fixtures(dataset)


def test_gold_with_an_unknown_field_or_another_id_is_rejected(tmp_path: Path) -> None:
    make_fixture(tmp_path / "one", "x", gold='{"entity": []}')
    with pytest.raises(FixtureError, match="Extra inputs are not permitted"):
        load_fixtures(tmp_path / "one")
    make_fixture(tmp_path / "two", "x", gold='{"id": "y"}')
    with pytest.raises(FixtureError, match="gold id 'y' does not match"):
        load_fixtures(tmp_path / "two")


def test_empty_missing_or_incomplete_directories_are_errors(tmp_path: Path) -> None:
    with pytest.raises(FixtureError, match="does not exist"):
        load_fixtures(tmp_path / "nope")
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(FixtureError, match="no fixtures in"):
        load_fixtures(tmp_path / "empty")
    half = tmp_path / "half" / "x"
    half.mkdir(parents=True)
    (half / "gold.json").write_text("{}")
    with pytest.raises(FixtureError, match=r"has no tape\.jsonl"):
        load_fixtures(tmp_path / "half")


def test_predictions_load_by_fixture(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    lines = [
        Prediction(fixture="a", entities=[GoldEntity(name="Maya", type="person")]).model_dump_json(),
        "",
        json.dumps({"fixture": "b", "relations": [{"source": "A", "target": "B", "type": "knows"}]}),
    ]
    path.write_text("\n".join(lines) + "\n")
    predictions = load_predictions(path)
    assert list(predictions) == ["a", "b"]
    assert predictions["a"].entities[0].name == "Maya"
    assert predictions["b"].relations[0].type == "knows"


def test_malformed_or_duplicate_predictions_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text('{"fixture": "a"}\n{"fixture": "b", "entities": [{"name": 3}]}\n')
    with pytest.raises(FixtureError, match=r"predictions\.jsonl:2: malformed prediction"):
        load_predictions(path)
    path.write_text('{"fixture": "a"}\n\n{"fixture": "a"}\n')
    with pytest.raises(
        FixtureError, match=r"predictions\.jsonl:3: duplicate prediction for fixture 'a' \(first on line 1\)"
    ):
        load_predictions(path)
    with pytest.raises(FixtureError, match="cannot read predictions"):
        load_predictions(tmp_path / "missing.jsonl")


def test_dataset_hash_tracks_tapes_and_gold(dataset: Path) -> None:
    fixtures = load_fixtures(dataset)
    digest = dataset_hash(fixtures)
    assert len(digest) == 64
    assert dataset_hash(list(reversed(fixtures))) == digest
    assert dataset_hash(fixtures[:2]) != digest
    gold = fixtures[0].path / "gold.json"
    gold.write_text(gold.read_text().replace("Maya Lin", "Maya L."))
    assert dataset_hash(fixtures) != digest
    gold_changed = dataset_hash(fixtures)
    with (fixtures[1].path / "tape.jsonl").open("ab") as tape:
        tape.write(b"\n")
    assert dataset_hash(fixtures) != gold_changed


def test_gold_defaults() -> None:
    gold = Gold()
    assert (gold.id, gold.entities, gold.relations, gold.questions, gold.tags) == ("", [], [], [], [])


def test_the_evals_package_imports_neither_bub_nor_the_cli_or_plugin() -> None:
    code = (
        "import sys, bub_semantic_memory.evals\n"
        "bad = sorted(m for m in sys.modules if m == 'bub' or m.startswith('bub.')\n"
        "    or m.startswith(('bub_semantic_memory.cli', 'bub_semantic_memory.plugin')))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_a_question_has_accepted_forms_a_category_and_evidence() -> None:
    from bub_semantic_memory.evals import Question

    question = Question(
        question="Who fixed the build?",
        answer="Robert Castillo",
        accepted=["Bob"],
        category="single-hop",
        evidence=[4],
    )
    assert question.answers == ["Robert Castillo", "Bob"]
    assert Question(
        question="What is Bob's blood type?", answer="unknown", category="unanswerable"
    ).answers == ["unknown"]
    with pytest.raises(ValueError, match="unanswerable question has the answer 'unknown'"):
        Question(question="Who?", answer="Bob", category="unanswerable")
    with pytest.raises(ValueError, match="unanswerable"):
        Question(question="Who?", answer="unknown", category="single-hop")
    # written without the fields it does not use, so older gold files are rewritten byte for byte
    assert Question(question="Q?", answer="A").model_dump(mode="json") == {"question": "Q?", "answer": "A"}


def test_an_unanswerable_question_has_no_evidence_and_evidence_ids_start_at_one() -> None:
    from bub_semantic_memory.evals import Question

    with pytest.raises(ValueError, match="an unanswerable question has no evidence"):
        Question(question="How old is Bob?", answer="unknown", category="unanswerable", evidence=[5])
    with pytest.raises(ValueError, match="evidence holds tape entry ids, which start at 1"):
        Question(question="Who?", answer="Bob", category="single-hop", evidence=[0, 5])


def test_every_committed_fixture_is_in_one_split_and_every_kind_is_in_both() -> None:
    """Prompts are tuned on ``tune`` and the gate decides on ``test`` (evals/README.md, "Splits")."""
    fixtures = load_fixtures(REPO / "evals" / "fixtures")
    kinds: dict[str, set[str]] = {}
    for fixture in fixtures:
        [split] = [tag for tag in fixture.tags if tag in ("tune", "test")]
        kinds.setdefault(fixture.id.split("-")[0], set()).add(split)
    # a kind of one fixture (de-, es-, family-) cannot be in both; every larger kind is
    assert {kind for kind, splits in kinds.items() if splits != {"tune", "test"}} <= {"de", "es", "family"}
    tuned = [f for f in fixtures if "tune" in f.tags]
    assert len(tuned) >= 20 and len(fixtures) - len(tuned) >= 25


def test_no_committed_gold_states_one_fact_twice() -> None:
    """A fact stated from both ends of an inverse pair, or both ways of a symmetric type, counts once
    (evals/README.md, "Inverse types"): a gold that holds both is scored on fewer relations than it lists."""
    config = ScoringConfig.from_ontology(PromptLibrary().load("extract").ontology)
    twice: dict[str, int] = {}
    for fixture in load_fixtures(REPO / "evals" / "fixtures"):
        gold = fixture.gold
        itself = Prediction(fixture=fixture.id, entities=gold.entities, relations=gold.relations)
        counted = score_fixture(gold, itself, config).relations.gold
        if counted != len(gold.relations):
            twice[fixture.id] = len(gold.relations) - counted
    assert twice == {}
