"""Fact scores: a predicted fact matches a gold one about a common entity that says the same thing."""

from __future__ import annotations

from bub_semantic_memory.evals import Gold, GoldEntity, GoldFact, Prediction, score_dataset, score_fixture

GOLD = Gold(
    id="f",
    entities=[
        GoldEntity(name="Caroline Reyes", type="person", aliases=["Caroline"]),
        GoldEntity(name="Melanie", type="person"),
    ],
)
SUPPORT_GROUP = GoldFact(
    statement="Caroline went to an LGBTQ support group",
    kind="event",
    about=["Caroline Reyes"],
    when="2023-05-05",
    evidence=[3],
)
READING = GoldFact(
    statement="Melanie is reading Charlotte's Web", kind="state", about=["Melanie"], evidence=[7]
)


def predicted(*facts: GoldFact) -> Prediction:
    return Prediction(fixture="f", entities=GOLD.entities, facts=list(facts))


def test_a_reworded_fact_about_the_same_entity_matches_and_its_date_is_checked() -> None:
    reworded = GoldFact(
        statement="Caroline attended the LGBTQ support group",
        kind="event",
        about=["Caroline"],  # an alias lands on the same gold entity
        when="2023-05-05",
        evidence=[3],
    )
    wrong_day = reworded.model_copy(update={"when": "2023-05-12"})
    right = score_fixture(GOLD, predicted(reworded), facts=[SUPPORT_GROUP, READING])
    assert right.facts is not None and (right.facts.tp, right.facts.predicted, right.facts.gold) == (1, 1, 2)
    assert right.fact_dates is not None and right.fact_dates.tp == 1
    assert right.missed_facts == [READING.statement]
    late = score_fixture(GOLD, predicted(wrong_day), facts=[SUPPORT_GROUP])
    assert (
        late.facts is not None
        and late.facts.tp == 1
        and late.fact_dates is not None
        and late.fact_dates.tp == 0
    )


def test_a_fact_about_another_entity_or_saying_something_else_is_spurious() -> None:
    other_entity = SUPPORT_GROUP.model_copy(update={"about": ["Melanie"]})
    other_words = GoldFact(
        statement="Caroline felt proud afterwards", kind="opinion", about=["Caroline"], evidence=[9]
    )
    score = score_fixture(GOLD, predicted(other_entity, other_words), facts=[SUPPORT_GROUP])
    assert score.facts is not None and score.facts.tp == 0 and len(score.spurious_facts) == 2


def test_two_facts_of_one_turn_stay_two_and_each_prediction_counts_once() -> None:
    same_turn = GoldFact(
        statement="Caroline found the LGBTQ group powerful", kind="opinion", about=["Caroline"], evidence=[3]
    )
    score = score_fixture(GOLD, predicted(SUPPORT_GROUP), facts=[same_turn])
    assert score.facts is not None and score.facts.tp == 0  # one turn, different things said
    twice = score_fixture(GOLD, predicted(SUPPORT_GROUP, SUPPORT_GROUP), facts=[SUPPORT_GROUP])
    assert twice.facts is not None and (twice.facts.tp, twice.facts.predicted) == (1, 2)


def test_facts_are_scored_only_where_a_fixture_has_gold_facts() -> None:
    result = score_dataset(
        [("f", GOLD, predicted(SUPPORT_GROUP)), ("g", GOLD.model_copy(update={"id": "g"}), None)],
        facts={"f": [SUPPORT_GROUP]},
    )
    assert result.facts is not None and (result.facts.tp, result.facts.gold) == (1, 1)
    assert result.fixtures[1].facts is None
    assert score_dataset([("g", GOLD, None)]).facts is None
