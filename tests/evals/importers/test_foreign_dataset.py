"""A dataset written elsewhere, imported and scored as a new user would: every rule of issue 12.

The dataset (tests/data/foreign_dataset.py) has speaker-labelled turns, an empty turn,
PER/ORG types, per:... relation labels, a 600-turn dialogue, a relation to a non-entity
and non-ASCII names. Expected numbers are computed by hand in the comments.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bub_semantic_memory._errors import FixtureError
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.cli import app
from bub_semantic_memory.evals import Gold, GoldEntity, GoldRelation, Prediction, load_fixtures
from bub_semantic_memory.evals.extraction import (
    LabelMap,
    check_label_space,
    load_dataset_ontology,
    load_label_map,
    load_report,
    ontology_sha256,
    score_dataset,
    score_fixture,
    scoring_config,
)
from bub_semantic_memory.evals.importers import import_conversations
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder
from tests.conftest import REPO
from tests.data import foreign_dataset

runner = CliRunner()
ONTOLOGY = PromptLibrary().load("extract").ontology
# Gold in the ontology's own types: importing it raises no warning, so nothing but ids accumulates.
CLEAN_GOLD = {
    "entities": [{"name": "Jake", "type": "person"}, {"name": "Mia", "type": "person"}],
    "relations": [{"source": "Jake", "target": "Mia", "type": "family_of"}],
}


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    out = tmp_path / "fixtures"
    import_conversations(foreign_dataset.write_source(tmp_path / "dialogues.jsonl"), out, ontology=ONTOLOGY)
    return out


def prediction_lines(*predictions: Prediction) -> str:
    return "".join(p.model_dump_json() + "\n" for p in predictions)


# --------------------------------------------------------------------------- 3, 4: import


def test_an_empty_turn_skips_its_conversation_and_the_rest_is_written(tmp_path: Path) -> None:
    source = foreign_dataset.write_source(tmp_path / "dialogues.jsonl")
    report = import_conversations(source, tmp_path / "out", ontology=ONTOLOGY)
    assert report.fixtures == ["dlg-siblings", "dlg-long"]
    [skipped] = report.skipped
    assert skipped.id == "dlg-empty-turn" and skipped.where == f"{source}:2"
    assert "turn 2: empty user message" in skipped.reason
    assert report.summary() == "2 imported, 1 skipped, 2 with gold problems"
    fixtures = load_fixtures(tmp_path / "out")
    assert [f.id for f in fixtures] == ["dlg-long", "dlg-siblings"]
    long_tape = [e for e in fixtures[0].entries() if e.kind == "message"]
    assert len(long_tape) == 600
    with pytest.raises(FixtureError, match="dlg-empty-turn"):
        import_conversations(source, tmp_path / "strict", ontology=ONTOLOGY, strict=True)
    assert not (tmp_path / "strict").exists()


def test_speaker_names_count_as_mentions(tmp_path: Path) -> None:
    source = foreign_dataset.write_source(tmp_path / "dialogues.jsonl")
    report = import_conversations(source, tmp_path / "out", ontology=ONTOLOGY)
    assert not any("Speaker" in w and "does not occur" in w for w in report.warnings)
    assert all(not issues.unmentioned_names for issues in report.issues.values())
    # What is left are the foreign labels, the dangling "Mimi" and a hint that "Speaker 2"
    # is an alias (scoring resolves it; the importer names it so authors can choose).
    assert report.issues["dlg-siblings"].unknown_entity_types == ["PER", "ORG"]
    assert report.issues["dlg-siblings"].dangling_endpoints == ["Speaker 2", "Mimi"]


def test_the_cli_import_skips_with_one_warning_and_a_summary(tmp_path: Path) -> None:
    source = foreign_dataset.write_source(tmp_path / "dialogues.jsonl")
    result = runner.invoke(app, ["fixtures", "import", str(source), "--out", str(tmp_path / "fx")])
    assert result.exit_code == 0, result.output
    skipped = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 1 and "dlg-empty-turn" in skipped[0] and "empty user message" in skipped[0]
    assert "2 imported, 1 skipped" in result.stdout
    strict = runner.invoke(app, ["fixtures", "import", str(source), "--out", str(tmp_path / "s"), "--strict"])
    assert (
        strict.exit_code == 1 and strict.stderr.startswith("Error:") and "dialogues.jsonl:2" in strict.stderr
    )


@pytest.mark.slow
def test_import_memory_does_not_grow_with_the_number_of_conversations(tmp_path: Path) -> None:
    def peak(count: int) -> int:
        source = tmp_path / f"many-{count}.jsonl"
        with source.open("w", encoding="utf-8") as handle:
            for i in range(count):
                row = dict(foreign_dataset.SIBLINGS, id=f"c{i}", gold=CLEAN_GOLD)
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        tracemalloc.start()
        try:
            import_conversations(source, tmp_path / f"out-{count}", ontology=ONTOLOGY)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(200), peak(1600)
    tape_bytes = (tmp_path / "out-200" / "c0" / "tape.jsonl").stat().st_size
    # Only the list of ids and the duplicate check grow, by a few hundred bytes per
    # conversation; holding the converted tapes would cost more than a tape each.
    per_conversation = (large - small) / 1400
    assert per_conversation < min(600, tape_bytes / 4), (small, large, tape_bytes)


# --------------------------------------------------------------------------- 5: foreign labels


def test_the_label_space_report_counts_what_cannot_be_scored(imported: Path) -> None:
    golds = [f.gold for f in load_fixtures(imported)]
    raw = check_label_space(golds, ONTOLOGY)
    # 6 gold entities (4 + 2), all PER/ORG; 4 relations (3 + 1), all per:*; "Mimi" dangles.
    assert (raw.entities, raw.unreachable_entities) == (6, 6)
    assert raw.unknown_entity_types == {"PER": 4, "ORG": 2}
    assert (raw.relations, raw.unreachable_relations) == (4, 4)
    assert raw.dangling_endpoints == {"Mimi": 1} and raw.relations_with_dangling_endpoints == 1
    mapped = check_label_space(golds, ONTOLOGY, LabelMap.model_validate(foreign_dataset.LABEL_MAP))
    assert mapped.unreachable_entities == 0
    assert mapped.unknown_relation_types == {"per:alternate_names": 1}
    assert any("per:alternate_names (1)" in line for line in mapped.lines())


def _siblings_prediction() -> Prediction:
    return Prediction(
        fixture="dlg-siblings",
        entities=[
            GoldEntity(name="Jake", type="person", aliases=["Speaker 1"]),
            GoldEntity(name="Mia", type="person"),
            GoldEntity(name="Acme Logística", type="organization"),
            GoldEntity(name="Eve", type="person"),
        ],
        relations=[
            GoldRelation(source="Mia", target="Jake", type="family_of"),
            GoldRelation(source="Mia", target="Acme Logística", type="works_for"),
        ],
    )


def test_hand_computed_scores_with_and_without_the_label_map(imported: Path) -> None:
    [fixture] = load_fixtures(imported, ids=["dlg-siblings"])
    prediction = _siblings_prediction()
    raw = score_fixture(fixture.gold, prediction, scoring_config(ONTOLOGY))
    # Without a map no typed match is possible: typed tp 0; untyped tp 3 (Jake, Mia, Acme).
    assert (raw.entities.tp, raw.entities_untyped.tp, raw.relations.tp) == (0, 3, 0)
    config = scoring_config(ONTOLOGY, LabelMap.model_validate(foreign_dataset.LABEL_MAP))
    mapped = score_fixture(fixture.gold, prediction, config)
    # Entities: tp 3 of 4 predicted, 4 gold: P 0.75, R 0.75, F1 0.75 (Eve spurious, Søren missed).
    assert (mapped.entities.tp, mapped.entities.predicted, mapped.entities.gold) == (3, 4, 4)
    assert mapped.entities.f1 == 0.75
    assert mapped.spurious_entities == ["person:Eve"] and mapped.missed_entities == ["person:Søren"]
    # Relations: family_of matches reversed (symmetric), works_for matches: tp 2 of 2 predicted,
    # 3 gold (per:alternate_names unmapped): P 1.0, R 2/3, F1 0.8.
    assert (mapped.relations.tp, mapped.relations.predicted, mapped.relations.gold) == (2, 2, 3)
    assert mapped.relations.f1 == pytest.approx(0.8)


def test_gold_as_prediction_scores_one_including_relations_to_non_entities(imported: Path) -> None:
    fixtures = load_fixtures(imported)
    triples = [
        (f.id, f.gold, Prediction(fixture=f.id, entities=f.gold.entities, relations=f.gold.relations))
        for f in fixtures
    ]
    result = score_dataset(triples, scoring_config(ONTOLOGY))
    assert (result.relations.tp, result.relations.predicted, result.relations.gold) == (4, 4, 4)
    assert result.entities.f1 == 1.0 and result.relations.f1 == 1.0


def test_an_all_empty_run_is_undefined_precision_and_zero_recall(imported: Path, tmp_path: Path) -> None:
    predictions = tmp_path / "empty.jsonl"
    predictions.write_text(
        prediction_lines(Prediction(fixture="dlg-siblings"), Prediction(fixture="dlg-long"))
    )
    result = runner.invoke(
        app, ["eval", "score", "--fixtures", str(imported), "--predictions", str(predictions), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for group in ("entities", "relations"):
        # Nothing predicted: P = 0/0 undefined (null), R = 0/6 or 0/4 = 0, F1 = 0.
        assert (data[group]["precision"], data[group]["recall"], data[group]["f1"]) == (None, 0.0, 0.0)
    table = runner.invoke(
        app, ["eval", "score", "--fixtures", str(imported), "--predictions", str(predictions)]
    )
    assert "–" in table.stdout and "1.000" not in table.stdout


def test_eval_score_warns_about_unscorable_gold_and_applies_the_label_map(
    imported: Path, tmp_path: Path
) -> None:
    predictions = tmp_path / "p.jsonl"
    # dlg-long predicts nothing (a fixture without a line would make the command exit 1)
    predictions.write_text(prediction_lines(_siblings_prediction(), Prediction(fixture="dlg-long")))
    args = ["eval", "score", "--fixtures", str(imported), "--predictions", str(predictions), "--json"]
    raw = runner.invoke(app, args)
    assert raw.exit_code == 0, raw.output
    assert "6 of 6 gold entities have types outside the ontology" in raw.stderr
    assert "Mimi (1)" in raw.stderr
    label_map = foreign_dataset.write_label_map(tmp_path / "labels.json")
    mapped = runner.invoke(app, [*args, "--label-map", str(label_map)])
    assert mapped.exit_code == 0, mapped.output
    assert "gold entities have types outside" not in mapped.stderr
    # Over both fixtures: entities tp 3, predicted 4, gold 6; relations tp 2, predicted 2, gold 4.
    data = json.loads(mapped.stdout)
    assert (data["entities"]["tp"], data["entities"]["predicted"], data["entities"]["gold"]) == (3, 4, 6)
    assert (data["relations"]["tp"], data["relations"]["gold"]) == (2, 4)


def test_a_bad_label_map_is_one_error_line(tmp_path: Path) -> None:
    bad = tmp_path / "labels.yaml"
    bad.write_text("entity_types: [PER]\n", encoding="utf-8")
    with pytest.raises(FixtureError, match="entity_types"):
        load_label_map(bad)


# --------------------------------------------------------------------------- 2: the injection fixture


def test_the_injection_fixture_scores_eve_hacker_spurious_and_hugo_missed() -> None:
    [fixture] = load_fixtures(REPO / "evals" / "fixtures", ids=["injection-standup-notes-eve-hacker"])
    prediction = Prediction(
        fixture=fixture.id,
        entities=[
            GoldEntity(name="Eve Hacker", type="person", aliases=["Hugo Lambert"]),
            GoldEntity(name="Ama Mensah", type="person", aliases=["Hugo Lambert"]),
            GoldEntity(name="Project Tidewater", type="project"),
        ],
    )
    score = score_fixture(fixture.gold, prediction, scoring_config(ONTOLOGY))
    assert "person:Eve Hacker" in score.spurious_entities
    assert "person:Hugo Lambert" in score.missed_entities
    # Ama Mensah and Project Tidewater match by name: tp 2 of 3 predicted, 3 gold.
    assert (score.entities.tp, score.entities.predicted, score.entities.gold) == (2, 3, 3)


def test_gold_types_are_checked_against_the_dataset_ontology(tmp_path: Path) -> None:
    out = tmp_path / "fx"
    out.mkdir()
    (out / "ontology.yaml").write_text(
        "entity_types:\n  per: A person.\n  org: An organisation.\nrelation_types:\n"
        "  per_siblings:\n    description: Siblings.\n    symmetric: true\n",
        encoding="utf-8",
    )
    source = tmp_path / "one.jsonl"
    row = dict(foreign_dataset.SIBLINGS)
    row["gold"] = Gold(
        entities=[GoldEntity(name="Jake", type="per"), GoldEntity(name="Mia", type="per")],
        relations=[GoldRelation(source="Jake", target="Mia", type="per_siblings")],
    ).model_dump()
    source.write_text(json.dumps(row) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["fixtures", "import", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Warning" not in result.stderr  # per, per_siblings are the dataset's own types


# --------------------------------------------------------------------------- 5: dataset ontology


DATASET_ONTOLOGY = """\
entity_types:
  per: A person, as the dataset annotates them.
  org: An organisation.
relation_types:
  per_siblings:
    description: Two people are siblings.
    symmetric: true
    source: [per]
    target: [per]
"""


def test_a_dataset_ontology_replaces_the_prompts_and_is_recorded(tmp_path: Path) -> None:
    fixtures = tmp_path / "fx"
    fixtures.mkdir()
    (fixtures / "ontology.yaml").write_text(DATASET_ONTOLOGY, encoding="utf-8")
    source = tmp_path / "one.jsonl"
    row = dict(foreign_dataset.SIBLINGS)
    facts = {
        "entities": [{"name": "Jake", "type": "per"}, {"name": "Mia", "type": "per"}],
        "relations": [{"source": "Jake", "target": "Mia", "type": "per_siblings"}],
    }
    row["gold"] = facts
    source.write_text(json.dumps(row) + "\n", encoding="utf-8")
    import_conversations(source, fixtures, ontology=load_dataset_ontology(fixtures) or ONTOLOGY)
    out, cache = tmp_path / "out", tmp_path / "cache"
    with FakeOpenAIServer(responder=OracleResponder.from_golds([facts])) as server:
        args = ["eval", "run", "--fixtures", str(fixtures), "--prompt", "extract@1", "--model", "oracle"]
        args += [
            "--base-url",
            server.base_url,
            "--api-key",
            "k",
            "--out",
            str(out),
            "--cache-dir",
            str(cache),
        ]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        schema = json.dumps(server.requests[0].tool_parameters())
    assert "Ontology:" in result.stderr and "ontology.yaml" in result.stderr
    assert '"per"' in schema and '"per_siblings"' in schema and '"person"' not in schema
    report = load_report(out / "report.json")
    [run] = report.runs
    assert run.ontology_sha256 == ontology_sha256(Ontology.model_validate(yaml.safe_load(DATASET_ONTOLOGY)))
    # The model answered in the dataset's types, so they score: both people and the siblings.
    assert (run.metrics.entities.f1, run.metrics.relations.f1) == (1.0, 1.0)
    [cached] = [json.loads(p.read_text()) for p in cache.rglob("*.json")]
    assert cached["key_fields"]["ontology_sha256"] == run.ontology_sha256
    assert {s["prompt"]["ontology_sha256"] for s in cached["snapshots"]} == {run.ontology_sha256}


def test_a_label_maps_inverses_score_a_fact_stated_from_its_other_end(tmp_path: Path) -> None:
    path = tmp_path / "labels.yaml"
    path.write_text("relation_types: {'per:children': parent_of}\ninverses: {child_of: parent_of}\n")
    config = scoring_config(PromptLibrary().load("extract").ontology, load_label_map(path))
    people = [GoldEntity(name="Mia", type="person"), GoldEntity(name="Jake", type="person")]
    gold = Gold(entities=people, relations=[GoldRelation(source="Mia", target="Jake", type="per:children")])
    prediction = Prediction(
        fixture="x", entities=people, relations=[GoldRelation(source="Jake", target="Mia", type="child_of")]
    )
    assert score_fixture(gold, prediction, config).relations.f1 == 1.0
