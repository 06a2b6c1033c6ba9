"""Comparing statements by their content words: one rule for the validator and the scorer.

A fact is a sentence in the speaker's terms, so two wordings of it rarely match letter for letter:
"Caroline went to an LGBTQ support group" and "I went to a LGBTQ support group yesterday" share their
content words, not their function words. A statement's *content words* are its folded words
(:func:`~bub_semantic_memory._models.normalize_name`) of three letters or more that are not common
function words, each cut to its first five letters (a cheap stem: "lessons" and "lesson",
"supports" and "support" meet). A statement written without spaces (Chinese) is compared by its
characters instead.

* :func:`support` -- the share of a statement's content words that a text contains (the validator
  asks that a fact's evidence lines hold at least half of them);
* :func:`similarity` -- the Jaccard index of two statements' content words (the scorer matches a
  predicted fact to a gold one by it, the names of the entities they are about left out).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from bub_semantic_memory._mentions import fold_text, has_unspaced_script, is_mentioned
from bub_semantic_memory._models import normalize_name

__all__ = ["MIN_SUPPORT", "content_words", "grounding_problem", "name_words", "similarity", "support"]

MIN_SUPPORT = 0.5
"""The share of a fact's content words its evidence lines must hold."""

_STEM = 5
_FUNCTION_WORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "his",
        "her",
        "hers",
        "him",
        "she",
        "they",
        "them",
        "their",
        "theirs",
        "this",
        "that",
        "these",
        "those",
        "with",
        "from",
        "into",
        "onto",
        "about",
        "over",
        "under",
        "than",
        "then",
        "there",
        "here",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "will",
        "would",
        "shall",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "not",
        "but",
        "also",
        "very",
        "just",
        "now",
        "yet",
        "any",
        "all",
        "each",
        "some",
        "such",
        "only",
        "own",
        "our",
        "ours",
        "your",
        "yours",
        "its",
        "you",
        "our",
        "out",
        "off",
        "too",
        "did",
        "does",
        "doing",
        "done",
        "been",
        "being",
        "is",
        "am",
        "be",
        "to",
        "of",
        "in",
        "on",
        "at",
        "by",
        "as",
        "or",
        "an",
        "a",
        "it",
        "we",
        "he",
        "me",
        "my",
        "i",
        "so",
        "no",
        "up",
        "do",
        "der",
        "die",
        "das",
        "und",
        "ist",
        "sind",
        "war",
        "ein",
        "eine",
        "einen",
        "dem",
        "den",
        "des",
        "mit",
        "von",
        "für",
        "auf",
        "nicht",
        "sich",
        "los",
        "las",
        "el",
        "la",
        "un",
        "una",
        "unos",
        "unas",
        "del",
        "con",
        "por",
        "para",
        "que",
        "está",
        "son",
        "fue",
    ]
)


@functools.lru_cache(maxsize=16_384)
def content_words(text: str) -> frozenset[str]:
    """The stems of ``text``'s content words (its characters, for a text written without spaces)."""
    folded = normalize_name(text)
    if has_unspaced_script(folded):
        return frozenset(ch for ch in folded if not ch.isspace())
    return frozenset(
        word[:_STEM] for word in folded.split() if len(word) >= 3 and word not in _FUNCTION_WORDS
    )


def name_words(names: Iterable[str]) -> frozenset[str]:
    """The content words of entity names: left out when statements about those entities are compared."""
    return frozenset().union(*(content_words(name) for name in names))


def support(statement: str, text: str, *, ignore: frozenset[str] = frozenset()) -> float:
    """The share of ``statement``'s content words (less ``ignore``) found among ``text``'s (1.0: no words)."""
    wanted = content_words(statement) - ignore
    if not wanted:
        return 1.0
    return len(wanted & content_words(text)) / len(wanted)


def similarity(first: str, second: str, *, ignore: frozenset[str] = frozenset()) -> float:
    """The Jaccard index of two statements' content words less ``ignore`` (0.0 when either has none)."""
    a, b = content_words(first) - ignore, content_words(second) - ignore
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def grounding_problem(statement: str, names: Sequence[str], speech: str) -> str | None:
    """Why ``speech`` (a fact's evidence lines) does not state ``statement`` about ``names``; None if it does.

    The lines must name one of the entities the fact is about (a named sender counts: it is part of
    a line's speech) and hold at least :data:`MIN_SUPPORT` of the statement's content words besides
    those names.
    """
    if not any(is_mentioned(name, fold_text(speech)) for name in names):
        return "its evidence lines name none of the entities it is about"
    if support(statement, speech, ignore=name_words(names)) < MIN_SUPPORT:
        return "it is not what its evidence lines say"
    return None
