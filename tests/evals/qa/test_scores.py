"""The three scores of a context or an answer: the strict rule, word-level recall, LoCoMo's token F1."""

from __future__ import annotations

import pytest

from bub_semantic_memory.evals import Question
from bub_semantic_memory.evals.qa import answer_word_recall, contains_answer, token_f1


def q(
    answer: str, *, category: str = "single-hop", source: str | None = None, accepted: tuple[str, ...] = ()
) -> Question:
    return Question.model_validate(
        {
            "question": "?",
            "answer": answer,
            "category": category,
            "source_category": source,
            "accepted": list(accepted),
        }
    )


ACTIVITIES = q("pottery, camping, painting, swimming", category="multi-hop", source="1 multi-hop")


@pytest.mark.parametrize(
    ("context", "share"),
    [
        ("Melanie took up pottery in May. She went camping with the kids.", 0.5),
        ("Swimming, painting, camping and pottery: Melanie's summer.", 1.0),
        ("Melanie likes none of that.", 0.0),
    ],
)
def test_word_level_recall_is_the_share_of_the_answers_content_words_the_context_holds(
    context: str, share: float
) -> None:
    assert answer_word_recall(context, ACTIVITIES) == share
    assert contains_answer(context, ACTIVITIES) is False  # the strict rule wants the whole list in order


def test_a_date_answer_counts_its_words_wherever_the_context_has_them() -> None:
    question = q("7 May 2023", category="temporal")
    assert (
        answer_word_recall("[2023-05-08] Caroline: I went to the group yesterday, on May 7.", question) == 1.0
    )
    assert answer_word_recall("She went in June 2023.", question) == pytest.approx(1 / 3)


def test_stop_words_do_not_count_unless_the_answer_is_nothing_else() -> None:
    assert answer_word_recall("a book about the sea", q("the sea")) == 1.0
    assert answer_word_recall("it is", q("it is")) == 1.0  # only stop words: they are its words
    assert answer_word_recall("whatever", q("unknown", category="unanswerable")) is None


@pytest.mark.parametrize(
    ("answer", "gold", "score"),
    [
        ("Lisbon", "Lisbon", 1.0),
        ("the city of Lisbon", "Lisbon", 0.5),  # 1 of 3 words: precision 1/3, recall 1
        ("running", "runs", 1.0),  # Porter stems
        ("Porto and Leeds", "Leeds, Porto", 1.0),  # commas, "and" and order do not count
        ("Madrid", "Lisbon", 0.0),
    ],
)
def test_token_f1_is_locomos_f1_of_word_stems(answer: str, gold: str, score: float) -> None:
    assert token_f1(answer, q(gold)) == pytest.approx(score)


def test_a_multi_hop_answer_is_scored_item_by_item() -> None:
    # each gold item takes its best answer item: pottery 1, camping 1, painting 0, swimming 0
    assert token_f1("pottery, camping", ACTIVITIES) == pytest.approx(0.5)
    assert token_f1("camping, pottery, swimming, painting", ACTIVITIES) == pytest.approx(1.0)


def test_an_adversarial_question_scores_one_when_the_answer_declines() -> None:
    trap = q("unknown", category="unanswerable", source="5 adversarial")
    assert token_f1("unknown", trap) == 1.0
    assert token_f1("Not mentioned in the conversation.", trap) == 1.0
    assert token_f1("a beagle", trap) == 0.0


def test_an_accepted_form_scores_as_the_answer() -> None:
    question = q(
        "Likely yes", category="open-domain", source="3 open-domain", accepted=("he hikes every weekend",)
    )
    assert token_f1("he hikes every weekend", question) == 1.0
    assert answer_word_recall("He hikes every weekend.", question) == 1.0
