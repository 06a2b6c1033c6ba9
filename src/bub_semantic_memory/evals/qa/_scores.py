"""How a context, or a model's answer from it, is scored against a question's gold answer.

Three rules, from strict to lenient, all on text folded the same way (:func:`normalize`: case,
accents and punctuation):

* :func:`contains_answer` (context recall, strict): the whole answer, or an accepted form, occurs
  as whole words. Right for short answers written from the tape's own words ("Lisbon").
* :func:`answer_word_recall` (context recall, word-level): the share of the answer's content words
  that occur in the context. Answers written by annotators ("pottery, camping, painting,
  swimming", "the week before 9 June 2023") often hold what a context says without holding those
  words in that order; the strict rule counts such a context as empty.
* :func:`token_f1` (answer accuracy, LoCoMo's own measure): the F1 of the answer's and the gold's
  word stems, after LoCoMo's normalisation; a list answer (LoCoMo's multi-hop category) is scored
  item by item; an adversarial question scores 1 when the answer declines.

:func:`judge` is the project's fixed rule for an answer (the gold as whole words, or "unknown"
for a question the tape does not answer).
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections import Counter

import snowballstemmer

from bub_semantic_memory.evals._dataset import UNKNOWN, Question

__all__ = ["answer_word_recall", "contains_answer", "judge", "normalize", "token_f1"]

_STOPWORDS = frozenset(
    """a an and are as at be been but by for from had has have he her his i in is it its of on or our she
    that the their them they this to was we were what which who will with you your""".split()  # noqa: SIM905
)
"""Words that carry no answer: left out of an answer's content words (never all of them)."""
_LOCOMO_DROPPED = re.compile(r"\b(a|an|the|and)\b")
_DECLINES = ("no information available", "not mentioned", UNKNOWN)
"""What counts as declining to answer an adversarial question: LoCoMo's two phrases, and the
project's own "unknown" (its answering prompt asks for that word)."""
_STEMMER = snowballstemmer.stemmer("porter")


@functools.lru_cache(maxsize=512)
def normalize(text: str) -> str:
    """Case, accents and punctuation folded, words separated by single spaces (for answer matching).

    Remembered for the last texts: a context is scored twice (the whole answer, its words), and the
    whole conversation is the same context for every question about it."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return " ".join(re.findall(r"\w+", plain))


def _whole_words(needle: str, haystack: str) -> bool:
    return bool(needle) and f" {needle} " in f" {haystack} "


def contains_answer(text: str, question: Question) -> bool:
    """Whether ``text`` holds the answer or one of its accepted forms, as whole words (normalised)."""
    folded = normalize(text)
    return any(_whole_words(normalize(form), folded) for form in question.answers)


def judge(answer: str, question: Question) -> bool:
    """Whether ``answer`` is right: the gold (or an accepted form) and no "unknown"; or, for an
    unanswerable question, "unknown" alone."""
    folded = normalize(answer)
    says_unknown = _whole_words(UNKNOWN, folded)
    if question.category == "unanswerable":
        return says_unknown and len(folded.split()) <= 3
    return not says_unknown and contains_answer(answer, question)


def _content_words(text: str) -> list[str]:
    words = normalize(text).split()
    content = [w for w in words if w not in _STOPWORDS]
    return content or words


def answer_word_recall(text: str, question: Question) -> float | None:
    """The share of the answer's content words that ``text`` holds (the best accepted form's);
    None for a question the tape does not answer."""
    if question.category == "unanswerable":
        return None
    held = set(normalize(text).split())
    shares = [
        sum(word in held for word in words) / len(words)
        for form in question.answers
        if (words := _content_words(form))
    ]
    return max(shares, default=0.0)


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def _locomo_tokens(text: str) -> list[str]:
    """LoCoMo's normalisation: lower case, punctuation and commas out, articles and "and" out, stems."""
    lowered = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return [_stem(word) for word in _LOCOMO_DROPPED.sub(" ", lowered).split()]


def _f1(prediction: str, gold: str) -> float:
    predicted, wanted = _locomo_tokens(prediction), _locomo_tokens(gold)
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if not same:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def token_f1(answer: str, question: Question) -> float:
    """LoCoMo's F1 of ``answer`` against the gold (the best accepted form).

    A multi-hop answer is a list: each gold item is matched with its best-scoring answer item
    (both split at commas) and the item scores averaged. An adversarial question (the tape does not
    answer it) scores 1 when the answer declines and 0 otherwise.
    """
    if question.category == "unanswerable":
        said = answer.casefold()
        return 1.0 if any(phrase in said for phrase in _DECLINES) else 0.0
    if question.source_category == "1 multi-hop":
        parts = [p.strip() for p in answer.split(",")] or [""]
        return max(
            sum(max(_f1(part, item) for part in parts) for item in items) / len(items)
            for form in question.answers
            if (items := [g.strip() for g in form.split(",") if g.strip()])
        )
    return max(_f1(answer, form) for form in question.answers)
