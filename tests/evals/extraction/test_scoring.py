from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from bub_semantic_memory._ontology import Ontology, RelationType
from bub_semantic_memory.evals import (
    PRF,
    Gold,
    GoldEntity,
    GoldRelation,
    Prediction,
    ScoringConfig,
    load_fixtures,
    score_dataset,
    score_fixture,
)
from bub_semantic_memory.evals.extraction._matching import min_cost_matching
from bub_semantic_memory.extraction._prompts import PromptLibrary
from tests.conftest import REPO


def ent(name: str, type: str, *aliases: str) -> GoldEntity:
    return GoldEntity(name=name, type=type, aliases=list(aliases))


def rel(source: str, type: str, target: str) -> GoldRelation:
    return GoldRelation(source=source, target=target, type=type)


def approx(value: float) -> object:
    return pytest.approx(value, abs=1e-12)


GOLD = Gold(
    id="g",
    entities=[
        ent("Alice Chen", "person", "Ali"),
        ent("Apollo", "project", "Project Apollo"),
        ent("Globex", "organization"),
    ],
    relations=[rel("Alice Chen", "works_on", "Apollo"), rel("Alice Chen", "works_for", "Globex")],
)

# one exact match (after normalisation), one alias match, one wrong type, one spurious.
PREDICTION = Prediction(
    fixture="g",
    entities=[
        ent("the alice chen!", "person", "Ali"),
        ent("Project Apollo", "project"),
        ent("Globex", "project"),
        ent("Zeta", "person"),
    ],
    relations=[
        rel("Ali", "works_on", "project apollo"),  # both endpoints through names/aliases
        rel("Alice Chen", "works_for", "Globex"),  # Globex is mistyped: no type-aware alignment
    ],
)


def test_prf_with_a_zero_denominator_is_undefined_not_perfect() -> None:
    assert PRF(tp=0, predicted=0, gold=0).model_dump() == {
        "tp": 0,
        "predicted": 0,
        "gold": 0,
        "precision": None,
        "recall": None,
        "f1": None,
    }
    empty_gold = PRF(tp=0, predicted=2, gold=0)
    assert (empty_gold.precision, empty_gold.recall, empty_gold.f1) == (0.0, None, 0.0)
    nothing_found = PRF(tp=0, predicted=0, gold=3)
    assert (nothing_found.precision, nothing_found.recall, nothing_found.f1) == (None, 0.0, 0.0)
    # F1 = 2tp / (predicted + gold): the harmonic mean of P and R wherever both exist.
    assert PRF(tp=2, predicted=3, gold=5).f1 == approx(2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5))
    assert PRF(tp=1, predicted=2, gold=3) + PRF(tp=2, predicted=2, gold=2) == PRF(tp=3, predicted=4, gold=5)
    with pytest.raises(ValidationError):
        PRF(tp=2, predicted=1, gold=5)


def test_hand_computed_entity_scores_type_aware_and_untyped() -> None:
    score = score_fixture(GOLD, PREDICTION, ScoringConfig(symmetric_relations=frozenset({"knows"})))
    assert score.fixture == "g"
    typed = score.entities
    assert (typed.tp, typed.predicted, typed.gold) == (2, 4, 3)
    assert typed.precision == approx(0.5)
    assert typed.recall == approx(2 / 3)
    assert typed.f1 == approx(4 / 7)
    untyped = score.entities_untyped
    assert (untyped.tp, untyped.predicted, untyped.gold) == (3, 4, 3)
    assert untyped.precision == approx(0.75)
    assert untyped.recall == approx(1.0)
    assert untyped.f1 == approx(6 / 7)
    assert score.missed_entities == ["organization:Globex"]
    assert score.spurious_entities == ["project:Globex", "person:Zeta"]
    assert score.per_entity_type == {
        "organization": PRF(tp=0, predicted=0, gold=1),
        "person": PRF(tp=1, predicted=2, gold=1),
        "project": PRF(tp=1, predicted=2, gold=1),
    }


def test_relations_match_through_aliases_and_use_the_type_aware_alignment() -> None:
    score = score_fixture(GOLD, PREDICTION, ScoringConfig(symmetric_relations=frozenset()))
    assert (score.relations.tp, score.relations.predicted, score.relations.gold) == (1, 2, 2)
    assert score.relations.f1 == approx(0.5)
    assert score.missed_relations == ["Alice Chen -works_for-> Globex"]
    assert score.spurious_relations == ["Alice Chen -works_for-> Globex"]
    assert score.per_relation_type == {
        "works_for": PRF(tp=0, predicted=1, gold=1),
        "works_on": PRF(tp=1, predicted=1, gold=1),
    }


def test_type_agnostic_config_aligns_relations_without_types() -> None:
    score = score_fixture(GOLD, PREDICTION, ScoringConfig(type_aware=False))
    assert score.entities == score.entities_untyped
    assert score.relations.tp == 2
    # Per-type counts stay type-aware.
    assert score.per_entity_type["organization"] == PRF(tp=0, predicted=0, gold=1)


def test_symmetric_relations_match_reversed_and_others_do_not() -> None:
    people = [ent("Ana", "person"), ent("Ben", "person"), ent("Apollo", "project")]
    gold = Gold(entities=people, relations=[rel("Ana", "knows", "Ben"), rel("Ana", "works_on", "Apollo")])
    reversed_prediction = Prediction(
        fixture="x", entities=people, relations=[rel("Ben", "knows", "Ana"), rel("Apollo", "works_on", "Ana")]
    )
    ontology = PromptLibrary().load("extract").ontology
    score = score_fixture(gold, reversed_prediction, ScoringConfig.from_ontology(ontology))
    assert score.relations.tp == 1
    assert score.missed_relations == ["Ana -works_on-> Apollo"]
    assert score.spurious_relations == ["Apollo -works_on-> Ana"]
    no_symmetry = score_fixture(gold, reversed_prediction)  # the default assumes no ontology
    assert no_symmetry.relations.tp == 0


TEAM = [ent("Ana", "person"), ent("Ben", "person"), ent("T-12", "task"), ent("Apollo", "project")]
INVERSE = ScoringConfig(
    symmetric_relations=frozenset({"knows"}), inverse_relations={"assigned_to": "works_on"}
)


def test_a_prediction_stating_the_inverse_of_a_gold_fact_is_a_true_positive() -> None:
    gold = Gold(
        entities=TEAM, relations=[rel("T-12", "assigned_to", "Ana"), rel("Ana", "works_on", "Apollo")]
    )
    prediction = Prediction(
        fixture="x",
        entities=TEAM,
        relations=[rel("Ana", "works_on", "T-12"), rel("Ana", "works_on", "Apollo")],
    )
    score = score_fixture(gold, prediction, INVERSE)
    assert score.relations == PRF(tp=2, predicted=2, gold=2)
    assert not score.missed_relations and not score.spurious_relations
    # counted under the gold relation's type, so no type has more true positives than predictions
    assert score.per_relation_type == {
        "assigned_to": PRF(tp=1, predicted=1, gold=1),
        "works_on": PRF(tp=1, predicted=1, gold=1),
    }
    assert score_fixture(gold, prediction, ScoringConfig()).relations.tp == 1  # no inverses declared


def test_the_ontologys_inverses_are_used_by_the_scoring_config() -> None:
    ontology = PromptLibrary().load("extract").ontology
    config = ScoringConfig.from_ontology(ontology)
    assert config.oriented("works_on") == ("assigned_to", True)
    assert config.oriented("manages") == ("reports_to", True)
    assert config.oriented("assigned_to") == ("assigned_to", False)


def test_a_fact_stated_twice_counts_once_in_prediction_and_gold() -> None:
    gold = Gold(
        entities=TEAM,
        relations=[
            rel("T-12", "assigned_to", "Ana"),
            rel("Ana", "works_on", "T-12"),
            rel("Ana", "knows", "Ben"),
        ],
    )
    prediction = Prediction(
        fixture="x",
        entities=TEAM,
        relations=[rel("Ana", "knows", "Ben"), rel("Ben", "knows", "Ana"), rel("T-12", "assigned_to", "Ana")],
    )
    score = score_fixture(gold, prediction, INVERSE)
    assert score.relations == PRF(tp=2, predicted=2, gold=2)
    assert score.relations_lenient == PRF(tp=2, predicted=2, gold=2)
    assert not score.spurious_relations and not score.missed_relations


def test_missed_relations_are_told_apart_by_reason() -> None:
    people = [*TEAM, ent("Globex", "organization"), ent("Carla", "person")]
    gold = Gold(
        entities=people,
        relations=[
            rel("Ana", "works_on", "Apollo"),  # matched
            rel("Ana", "works_for", "Globex"),  # related as member_of: mislabelled
            rel("Ben", "manages", "Apollo"),  # related the wrong way round: mislabelled
            rel("Ana", "knows", "Ben"),  # both extracted, not related
            rel("Carla", "works_for", "Globex"),  # Carla never extracted
            rel("Ana", "uses", "Figma"),  # dangling endpoint, not named by the prediction
        ],
    )
    extracted = [e for e in people if e.name != "Carla"]
    prediction = Prediction(
        fixture="x",
        entities=extracted,
        relations=[
            rel("Ana", "works_on", "Apollo"),
            rel("Ana", "member_of", "Globex"),
            rel("Apollo", "manages", "Ben"),
            rel("Ben", "works_on", "T-12"),  # spurious, and no gold relation has these ends
        ],
    )
    score = score_fixture(gold, prediction, INVERSE)
    assert score.relations == PRF(tp=1, predicted=4, gold=6)
    assert score.relations_lenient == PRF(tp=3, predicted=4, gold=6)
    assert score.relation_misses is not None
    assert score.relation_misses.model_dump() == {"no_endpoint": 2, "unrelated": 1, "mislabelled": 2}
    assert score.relations_given_endpoints is not None
    assert score.relations_given_endpoints.model_dump() == {"tp": 1, "gold": 4, "recall": 0.25}
    dataset = score_dataset([("x", gold, prediction), ("y", gold, None)], INVERSE)
    assert dataset.relation_misses is not None and dataset.relation_misses.no_endpoint == 2 + 6
    assert dataset.relations_given_endpoints is not None and dataset.relations_given_endpoints.gold == 4
    assert dataset.relations_lenient == PRF(tp=3, predicted=4, gold=12)


def test_a_dangling_endpoint_named_by_a_prediction_counts_as_extracted() -> None:
    gold = Gold(entities=[ent("Ana", "person")], relations=[rel("Ana", "uses", "Figma")])
    prediction = Prediction(
        fixture="x", entities=[ent("Ana", "person"), ent("Figma", "technology")], relations=[]
    )
    score = score_fixture(gold, prediction, INVERSE)
    assert score.relation_misses is not None and score.relation_misses.unrelated == 1
    assert score.relations_given_endpoints is not None and score.relations_given_endpoints.recall == 0.0


def test_relation_synonyms_map_both_sides_to_a_canonical_type() -> None:
    entities = [ent("Ana", "person"), ent("Globex", "organization")]
    gold = Gold(entities=entities, relations=[rel("Ana", "works_for", "Globex")])
    prediction = Prediction(fixture="x", entities=entities, relations=[rel("Ana", "employed_by", "Globex")])
    assert score_fixture(gold, prediction).relations.tp == 0
    synonyms = {"employed_by": "works_for"}
    config = ScoringConfig(relation_synonyms=synonyms)
    synonyms["employed_by"] = "something_else"  # the config keeps its own copy
    score = score_fixture(gold, prediction, config)
    assert score.relations == PRF(tp=1, predicted=1, gold=1)
    assert score.per_relation_type == {"works_for": PRF(tp=1, predicted=1, gold=1)}


def test_alignment_is_one_to_one() -> None:
    gold = Gold(entities=[ent("Alice Chen", "person", "Alice")])
    prediction = Prediction(fixture="x", entities=[ent("Alice", "person"), ent("Alice Chen", "person")])
    score = score_fixture(gold, prediction)
    assert score.entities == PRF(tp=1, predicted=2, gold=1)
    # The primary-name match wins; the alias-only one is the spurious duplicate.
    assert score.spurious_entities == ["person:Alice"]


def test_duplicate_relations_count_once() -> None:
    entities = [ent("Ana", "person"), ent("Ben", "person")]
    gold = Gold(entities=entities, relations=[rel("Ana", "knows", "Ben")])
    prediction = Prediction(
        fixture="x", entities=entities, relations=[rel("Ana", "knows", "Ben"), rel("Ben", "knows", "Ana")]
    )
    assert score_fixture(gold, prediction).relations == PRF(tp=1, predicted=2, gold=1)


def test_alignment_is_maximum_and_prefers_primary_names() -> None:
    gold = Gold(entities=[ent("Sam", "person", "Samuel Lee"), ent("Samuel Lee", "person")])
    # A greedy primary-name pass would pair "Samuel Lee" with "Samuel Lee" and leave "Samuel"
    # out; "Samuel" may match "Samuel Lee" through its alias because its name is compatible.
    prediction = Prediction(
        fixture="x", entities=[ent("Samuel Lee", "person"), ent("Samuel", "person", "Samuel Lee")]
    )
    assert score_fixture(gold, prediction).entities.tp == 2
    gold = Gold(entities=[ent("Sam", "person"), ent("Samuel Lee", "person")])
    # With one prediction matching both, the primary-name match is chosen.
    only = Prediction(fixture="x", entities=[ent("Sam", "person", "Samuel Lee")])
    assert score_fixture(gold, only).missed_entities == ["person:Samuel Lee"]


def test_empty_gold() -> None:
    empty = score_fixture(Gold(), Prediction(fixture="x"))
    for prf in (empty.entities, empty.entities_untyped, empty.relations):
        assert (prf.precision, prf.recall, prf.f1) == (None, None, None)
    spurious = score_fixture(
        Gold(), Prediction(fixture="x", entities=[ent("A", "person"), ent("B", "person")])
    )
    assert (spurious.entities.precision, spurious.entities.recall, spurious.entities.f1) == (0.0, None, 0.0)
    assert spurious.relations.f1 is None


def test_gold_against_itself_scores_one_on_every_generated_fixture() -> None:
    fixtures = load_fixtures(REPO / "evals" / "fixtures")
    assert len(fixtures) >= 40
    triples = [
        (f.id, f.gold, Prediction(fixture=f.id, entities=f.gold.entities, relations=f.gold.relations))
        for f in fixtures
    ]
    result = score_dataset(triples)
    prfs = [result.entities, result.entities_untyped, result.relations]
    prfs += [*result.per_entity_type.values(), *result.per_relation_type.values()]
    for fixture in result.fixtures:
        prfs += [fixture.entities, fixture.entities_untyped, fixture.relations]
        prfs += [*fixture.per_entity_type.values(), *fixture.per_relation_type.values()]
        assert not (fixture.missed_entities or fixture.spurious_entities)
        assert not (fixture.missed_relations or fixture.spurious_relations)
    # A fixture without relations has them undefined; every defined score is perfect.
    assert all((p.precision, p.recall, p.f1) in {(1.0, 1.0, 1.0), (None, None, None)} for p in prfs)
    assert (result.relations.precision, result.relations.recall, result.relations.f1) == (1.0, 1.0, 1.0)
    assert result.entities.gold == sum(len(f.gold.entities) for f in fixtures)
    assert result.relations.gold == sum(len(f.gold.relations) for f in fixtures)


def test_dataset_scores_are_micro_averaged() -> None:
    a = Gold(entities=[ent("Ana", "person")])
    a_pred = Prediction(fixture="a", entities=[ent("Ana", "person")])
    b = Gold(entities=[ent("Ben", "person"), ent("Cy", "person"), ent("Di", "person")])
    b_pred = Prediction(
        fixture="b",
        entities=[ent("Ben", "person"), ent("X", "person"), ent("Y", "person"), ent("Z", "person")],
    )
    result = score_dataset([("a", a, a_pred), ("b", b, b_pred)])
    assert [f.fixture for f in result.fixtures] == ["a", "b"]
    assert result.fixtures[0].entities.f1 == 1.0
    assert result.fixtures[1].entities.f1 == approx(2 / 7)  # P 1/4, R 1/3
    # Micro: tp 2, predicted 5, gold 4 -> P 0.4, R 0.5, F1 4/9.
    assert result.entities == PRF(tp=2, predicted=5, gold=4)
    assert result.entities.precision == approx(0.4)
    assert result.entities.recall == approx(0.5)
    assert result.entities.f1 == approx(4 / 9)
    per_fixture_mean = (1.0 + 2 / 7) / 2
    assert per_fixture_mean == approx(9 / 14)
    assert result.entities.f1 != approx(per_fixture_mean)
    assert result.per_entity_type == {"person": PRF(tp=2, predicted=5, gold=4)}


def test_a_missing_prediction_scores_as_empty() -> None:
    gold = Gold(entities=[ent("Ana", "person")], relations=[])
    result = score_dataset([("a", gold, None)])
    assert result.entities == PRF(tp=0, predicted=0, gold=1)
    assert result.fixtures[0].fixture == "a"
    assert result.fixtures[0].missed_entities == ["person:Ana"]
    assert result.entities.recall == 0.0


def test_scores_serialise_with_derived_ratios() -> None:
    score = score_fixture(GOLD, PREDICTION)
    dumped = score.model_dump(mode="json")
    assert dumped["entities"]["precision"] == 0.5
    assert set(dumped) >= {"per_entity_type", "missed_relations", "entities_untyped"}


def test_config_is_hashable_and_comparable() -> None:
    one = ScoringConfig(symmetric_relations=frozenset({"knows"}), relation_synonyms={"a": "b"})
    two = ScoringConfig(symmetric_relations=frozenset({"knows"}), relation_synonyms={"a": "b"})
    assert one == two and hash(one) == hash(two)
    assert ScoringConfig.from_ontology(
        Ontology(
            entity_types={"person": "a human"},
            relation_types={"knows": RelationType(description="", symmetric=True)},
        )
    ).symmetric_relations == frozenset({"knows"})


def _brute_force(n_left: int, n_right: int, costs: dict[tuple[int, int], int]) -> tuple[int, int]:
    best = (0, 0)  # (size, -cost), maximised

    def walk(left: int, used: frozenset[int], size: int, cost: int) -> None:
        nonlocal best
        if left == n_left:
            best = max(best, (size, -cost))
            return
        walk(left + 1, used, size, cost)
        for right in range(n_right):
            if right not in used and (left, right) in costs:
                walk(left + 1, used | {right}, size + 1, cost + costs[(left, right)])

    walk(0, frozenset(), 0, 0)
    return best[0], -best[1]


def test_matching_is_maximum_then_cheapest_against_brute_force() -> None:
    rng = random.Random(20260105)
    for _ in range(300):
        n_left, n_right = rng.randint(0, 5), rng.randint(0, 5)
        costs = {
            (left, right): rng.choice([0, 1, 2, 3])
            for left in range(n_left)
            for right in range(n_right)
            if rng.random() < 0.5
        }
        matching = min_cost_matching(n_left, n_right, costs)
        assert len(set(matching.values())) == len(matching)
        assert all(pair in costs for pair in matching.items())
        size_and_cost = (len(matching), sum(costs[pair] for pair in matching.items()))
        assert size_and_cost == _brute_force(n_left, n_right, costs)
