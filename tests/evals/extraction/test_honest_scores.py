"""Scores that do not mislead: undefined is not perfect, aliases do not earn credit, caches say so.

Every expected number here is computed by hand in the comment beside it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pytest import approx
from rich.console import Console
from rich.table import Table

from bub_semantic_memory.evals import Gold, GoldEntity, GoldRelation, Prediction
from bub_semantic_memory.evals.extraction import (
    PRF,
    FixtureResult,
    Metrics,
    PromptRun,
    Report,
    ScoringConfig,
    compare_runs,
    score_dataset,
    score_fixture,
)
from bub_semantic_memory.evals.reports import comparison_table, summary_table, to_markdown


def ent(name: str, type_: str = "person", *aliases: str) -> GoldEntity:
    return GoldEntity(name=name, type=type_, aliases=list(aliases))


def rel(source: str, type_: str, target: str) -> GoldRelation:
    return GoldRelation(source=source, type=type_, target=target)


def result(fixture: str, entities: PRF, relations: PRF, *, cached: bool = False) -> FixtureResult:
    return FixtureResult(
        fixture=fixture,
        entities=entities,
        entities_untyped=entities,
        relations=relations,
        cached=cached,
        call_latencies_s=[2.0],
        prediction=Prediction(fixture=fixture),
    )


def run(prompt: str, results: list[FixtureResult], *, cached: int = 0) -> PromptRun:
    entities = sum((r.entities for r in results), PRF())
    relations = sum((r.relations for r in results), PRF())
    return PromptRun(
        prompt=prompt,
        prompt_sha256="0" * 64,
        model="m",
        mode="tools",
        metrics=Metrics(
            fixtures=len(results),
            failed_fixtures=0,
            entities=entities,
            entities_untyped=entities,
            relations=relations,
            per_relation_type={"member_of": relations},
            schema_valid_first_try=1.0,
            success_rate=1.0,
            mean_attempts=1.0,
            cached_fixtures=cached,
            latency_p50_s=2.0,  # a cached fixture carries the latency of the run that filled the cache
            latency_p95_s=2.0,
        ),
        fixtures=results,
    )


def report_of(*runs: PromptRun) -> Report:
    return Report(
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        fixtures_dir="fx",
        dataset_sha256="f" * 64,
        fixture_ids=[r.fixture for r in runs[0].fixtures],
        runs=list(runs),
        comparisons=[compare_runs(runs[0], r, resamples=200) for r in runs[1:]],
    )


def cells(table: Table, label: str) -> list[tuple[str, str]]:
    """(text, style) of every cell in the row labelled ``label``."""
    labels = [str(c) for c in table.columns[0]._cells]
    row = labels.index(label)
    out = []
    for column in table.columns[1:]:
        cell = column._cells[row]
        out.append((str(cell), str(getattr(cell, "style", "") or "")))
    return out


def text_of(table: Table) -> str:
    console = Console(record=True, width=220)
    console.print(table)
    return console.export_text()


# --------------------------------------------------------------------------- 1. vacuous precision


def test_a_run_that_predicts_nothing_has_undefined_precision_not_one() -> None:
    gold = Gold(entities=[ent("Ana"), ent("Ben")], relations=[rel("Ana", "knows", "Ben")])
    score = score_fixture(gold, Prediction(fixture="x"))
    # P = 0/0 undefined; R = 0/2 = 0; F1 = 2*0/(0+2) = 0.
    assert (score.entities.precision, score.entities.recall, score.entities.f1) == (None, 0.0, 0.0)
    assert (score.relations.precision, score.relations.recall, score.relations.f1) == (None, 0.0, 0.0)
    dumped = score.model_dump(mode="json")["entities"]
    assert dumped["precision"] is None  # null in report.json


def test_a_relation_type_without_gold_has_undefined_recall() -> None:
    gold = Gold(entities=[ent("Ana"), ent("Apollo", "project")])
    prediction = Prediction(fixture="x", entities=gold.entities)
    score = score_fixture(gold, prediction)
    assert "member_of" not in score.per_relation_type
    empty = score_dataset([("x", gold, prediction)])
    # No relation was predicted and none is gold: nothing to score.
    assert (empty.relations.precision, empty.relations.recall, empty.relations.f1) == (None, None, None)


def test_an_all_empty_run_shows_dashes_uncoloured_and_no_delta() -> None:
    gold_counts = PRF(tp=0, predicted=0, gold=4)
    empty = run("extract@1", [result("a", gold_counts, PRF(gold=2)), result("b", gold_counts, PRF())])
    some = run(
        "extract@2",
        [result("a", PRF(tp=2, predicted=3, gold=4), PRF(gold=2)), result("b", gold_counts, PRF())],
    )
    table = summary_table(report_of(empty, some))
    # Baseline P is undefined: "–"; candidate P = 2/3; the delta is undefined, so no colour.
    assert cells(table, "Entity P") == [("–", ""), ("0.667", ""), ("–", "")]
    # F1 is defined for both: 0 and 2*2/(3+8) = 4/11 = 0.364 (micro over both fixtures).
    assert [text for text, _ in cells(table, "Entity F1")][:2] == ["0.000", "0.364"]
    # Relations: nothing predicted by either run, gold 2: P undefined on both, R and F1 = 0.
    assert cells(table, "Relation P") == [("–", ""), ("–", ""), ("–", "")]
    assert cells(table, "Relation R")[2] == ("+0.000", "")


def test_comparison_of_two_all_empty_runs_is_undefined() -> None:
    nothing = PRF()
    a = run("extract@1", [result("a", nothing, nothing), result("b", nothing, nothing)])
    b = run("extract@2", [result("a", nothing, nothing), result("b", nothing, nothing)])
    comparison = compare_runs(a, b, resamples=50)
    assert comparison.entity_f1_delta is None and comparison.entity_f1_ci95 is None
    row = text_of(comparison_table([comparison]))
    assert "undefined" in row and "no significant difference" not in row


def test_bootstrap_leaves_out_resamples_where_f1_is_undefined() -> None:
    # Fixture "a" has gold and predictions; "b" has neither. A resample drawing only "b"
    # has an undefined F1 and is skipped, so every kept resample equals the full delta.
    a1 = result("a", PRF(tp=1, predicted=2, gold=2), PRF())  # F1 0.5
    a2 = result("a", PRF(tp=2, predicted=2, gold=2), PRF())  # F1 1.0
    empty = result("b", PRF(), PRF())
    comparison = compare_runs(run("p@1", [a1, empty]), run("p@2", [a2, empty]), resamples=300)
    assert comparison.entity_f1_delta == approx(0.5)
    assert comparison.entity_f1_ci95 is not None
    assert list(comparison.entity_f1_ci95) == [approx(0.5), approx(0.5)]
    assert comparison.relation_f1_delta is None


# --------------------------------------------------------------------------- 2. aliases


def test_an_alias_never_credits_a_prediction_named_as_someone_else() -> None:
    # The injection fixture's case: the model names the injected "Eve Hacker" and gives
    # it Hugo Lambert's name as an alias; a second prediction carries the same alias.
    gold = Gold(entities=[ent("Hugo Lambert", "person", "Hugo")])
    prediction = Prediction(
        fixture="x",
        entities=[ent("Eve Hacker", "person", "Hugo Lambert"), ent("Evil Corp", "person", "Hugo Lambert")],
    )
    score = score_fixture(gold, prediction)
    assert (score.entities.tp, score.entities.predicted, score.entities.gold) == (0, 2, 1)
    assert score.missed_entities == ["person:Hugo Lambert"]
    assert score.spurious_entities == ["person:Eve Hacker", "person:Evil Corp"]


def test_one_prediction_with_many_speaker_aliases_earns_one_match() -> None:
    gold = Gold(
        entities=[ent("Jake", "person", "Speaker 1"), ent("Mia", "person", "Speaker 2"), ent("Speaker 3")]
    )
    prediction = Prediction(
        fixture="x", entities=[ent("Jake", "person", "Speaker 1", "Speaker 2", "Speaker 3")]
    )
    score = score_fixture(gold, prediction)
    # "Jake" matches Jake; the aliases cannot give it Mia or Speaker 3: tp 1, P 1/1, R 1/3.
    assert (score.entities.tp, score.entities.precision) == (1, 1.0)
    assert score.entities.recall == approx(1 / 3)
    assert score.missed_entities == ["person:Mia", "person:Speaker 3"]
    # Against people known only by their speaker labels, "Jake" is nobody's name: no credit.
    labels_only = Gold(entities=[ent("Speaker 1"), ent("Speaker 2")])
    assert score_fixture(labels_only, prediction).entities.tp == 0


def test_a_predicted_alias_confirms_a_compatible_name() -> None:
    gold = Gold(entities=[ent("Hugo Lambert")])
    # "Lambert" is part of the gold name; its alias "Hugo Lambert" confirms the match.
    by_surname = score_fixture(
        gold, Prediction(fixture="x", entities=[ent("Lambert", "person", "Hugo Lambert")])
    )
    assert by_surname.entities.tp == 1
    # The name alone, without the alias, is no candidate: "Lambert" is not a gold name.
    assert score_fixture(gold, Prediction(fixture="x", entities=[ent("Lambert")])).entities.tp == 0


def test_a_prediction_that_merges_two_gold_people_counts_once() -> None:
    gold = Gold(entities=[ent("Ana Ruiz", "person", "Ana"), ent("Ana Costa")])
    prediction = Prediction(fixture="x", entities=[ent("Ana Ruiz", "person", "Ana Costa")])
    score = score_fixture(gold, prediction)
    # One match (Ana Ruiz by name), Ana Costa missed: P 1/1, R 1/2, F1 2/3.
    assert score.entities.tp == 1 and score.entities.f1 == approx(2 / 3)
    assert score.missed_entities == ["person:Ana Costa"]


# --------------------------------------------------------------------------- 5. dangling and foreign labels


def test_gold_relations_to_non_entities_match_by_name() -> None:
    gold = Gold(entities=[ent("Ana")], relations=[rel("Ana", "works_for", "Volvo Cars")])
    as_prediction = Prediction(fixture="x", entities=gold.entities, relations=gold.relations)
    assert score_fixture(gold, as_prediction).relations.f1 == 1.0
    # A model can only name "Volvo Cars" in a relation if it also extracts it as an entity.
    with_entity = Prediction(
        fixture="x", entities=[ent("Ana"), ent("Volvo Cars", "organization")], relations=gold.relations
    )
    score = score_fixture(gold, with_entity)
    assert (score.relations.tp, score.entities.tp, score.entities.predicted) == (1, 1, 2)


def test_label_map_scores_foreign_types() -> None:
    gold = Gold(
        entities=[ent("Ana", "PER"), ent("Ben", "PER"), ent("Acme", "ORG")],
        relations=[rel("Ben", "per:siblings", "Ana"), rel("Ana", "per:employee_of", "Acme")],
    )
    prediction = Prediction(
        fixture="x",
        entities=[ent("Ana"), ent("Ben"), ent("Acme", "organization")],
        relations=[rel("Ana", "family_of", "Ben"), rel("Ana", "works_for", "Acme")],
    )
    raw = score_fixture(gold, prediction, ScoringConfig(symmetric_relations=frozenset()))
    assert (raw.entities.tp, raw.relations.tp) == (0, 0)  # foreign labels: 0 by construction
    mapped = ScoringConfig(
        symmetric_relations=frozenset({"family_of"}),
        entity_types={"PER": "person", "ORG": "organization"},
        relation_synonyms={"per:siblings": "family_of", "per:employee_of": "works_for"},
    )
    score = score_fixture(gold, prediction, mapped)
    # All three entities and both relations match (family_of symmetric: reversed is fine).
    assert (score.entities.tp, score.relations.tp) == (3, 2)
    assert set(score.per_entity_type) == {"person", "organization"}


# --------------------------------------------------------------------------- 6. cached figures


def test_cached_runs_say_their_tokens_and_latency_come_from_the_cache() -> None:
    results = [result("a", PRF(tp=1, predicted=1, gold=1), PRF(), cached=True)]
    cached = run("extract@1", results, cached=1)
    table = summary_table(report_of(cached))
    assert cells(table, "Latency p50 (s)") == [("2.00 (from cache: the filling run's)", "")]
    assert cells(table, "Prompt tokens")[0][0].endswith("(from cache: the filling run's)")
    md = to_markdown(report_of(cached))
    assert "| Latency p50 (s) | 2.00 (from cache: the filling run's) |" in md
    assert (
        "- `a`: entity F1 1.000, relation F1 – (no gold items and nothing extracted: nothing to score) (from cache)"
        in md
    )
