"""Whether a name is mentioned in a text: the one rule the validator, the importer and the oracle share.

Both sides go through :func:`~bub_semantic_memory._models.normalize_name` (case, width,
punctuation and a leading article do not matter). A name written in a script that puts
spaces between words must occur as whole words ("Al" is not in "Alice"); a name holding
letters of a script written without spaces (Chinese, Japanese, Thai...) only has to occur
as a substring, since its words have no boundaries to check. Next to such letters a word
of a spaced script ends without a space, so "Acme" is found in "我在Acme工作" but still
not in "Acmeco工作". Accents and vowel signs are part of their word, so "José" is not found
in "Josefina", nor "राम" in "रामायण".

The **forms of a name** (:func:`name_forms`) are the other ways people write a name the rule
above then finds: for a person, the first name, the surname alone and after an honorific ("Ms.
Chen"), the initial and surname ("A. Chen"), the first name and initial ("Alice C."); for any
entity, each name run together ("AliceChen") and each form as a possessive ("Alice's", which
folds to ``alice s``). Case, spacing, punctuation and a line break inside a name are already
folded away by :func:`~bub_semantic_memory._models.normalize_name`. A forget recognises what it
forgot by these forms, in entities, facts, attributes and transcript lines alike.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Iterator

from bub_semantic_memory._models import normalize_name

__all__ = ["HONORIFICS", "SHARED_FORMS", "fold_text", "has_unspaced_script", "is_mentioned", "name_forms"]

# Unicode character-name prefixes of scripts written without spaces between words.
_UNSPACED_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "HALFWIDTH KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR")


def fold_text(text: str) -> str:
    """``text`` normalised and padded with spaces, ready for :func:`is_mentioned`."""
    return f" {normalize_name(text)} "


def is_mentioned(name: str, folded_text: str) -> bool:
    """Whether ``name`` occurs in ``folded_text`` (a :func:`fold_text` result); see the module docstring."""
    needle = normalize_name(name)
    if not needle:
        return False
    if f" {needle} " in folded_text:
        return True
    if has_unspaced_script(needle):
        return needle in folded_text
    return any(_bounded(folded_text, start, len(needle)) for start in _occurrences(needle, folded_text))


def _occurrences(needle: str, text: str) -> Iterator[int]:
    start = text.find(needle)
    while start != -1:
        yield start
        start = text.find(needle, start + 1)


def _bounded(text: str, start: int, length: int) -> bool:
    """Whether the match at ``start`` has a boundary on each side: a space, an unspaced letter or an end."""
    before = text[start - 1] if start > 0 else " "
    after = text[start + length] if start + length < len(text) else " "
    return _is_boundary(before) and _is_boundary(after)


def _is_boundary(ch: str) -> bool:
    return ch == " " or has_unspaced_script(ch)


@functools.lru_cache(maxsize=4096)
def has_unspaced_script(folded_name: str) -> bool:
    """Whether the text holds a letter of a script written without spaces between words."""
    return any(unicodedata.name(ch, "").startswith(_UNSPACED_SCRIPTS) for ch in folded_name)


HONORIFICS = (
    "mr",
    "mrs",
    "ms",
    "miss",
    "mx",
    "dr",
    "prof",
    "sir",
    "dame",
    "madam",
    "mme",
    "mlle",
    "herr",
    "frau",
)
"""Titles written before a surname (folded: "Ms." is ``ms``)."""

SHARED_FORMS = frozenset({"first name", "surname", "honorific", "initials"})
"""Kinds of form another person may have too (two Alices): a forget leaves such a form alone when
someone else in the memory has it (see :func:`name_forms`)."""

_MIN_FORM = 2  # a one-letter form ("A.C." folds to "c") would find every such letter


def name_forms(names: Iterable[str], *, person: bool) -> dict[str, str]:
    """Every folded form by which a text may name the entity called ``names`` (a name and its
    aliases), each with its kind: ``name`` (a name or alias as such), ``first name``, ``surname``,
    ``honorific`` ("ms chen"), ``initials`` ("a chen" folds to "chen"; "alice c"), ``joined``
    ("alicechen") or ``possessive`` ("alice s", of any other form).

    ``person``: the first name, surname, honorific and initial forms are those of a person's name;
    other entities get their names, joined and possessive forms only. A name that starts with an
    honorific ("Dr. Alice Chen") gives the forms of the name after it too.
    """
    forms: dict[str, str] = {}

    def add(text: str, kind: str) -> None:
        folded = normalize_name(text)
        if len(folded) >= _MIN_FORM and folded not in forms:
            forms[folded] = kind

    folded_names = [normalize_name(name) for name in names]
    for folded in folded_names:
        add(folded, "name")
    for folded in folded_names:
        words = folded.split()
        if person and len(words) > 1 and words[0] in HONORIFICS:
            words = words[1:]
            add(" ".join(words), "name")
        if len(words) > 1 and not has_unspaced_script(folded):
            add("".join(words), "joined")
        if not person or len(words) < 2 or has_unspaced_script(folded):
            continue
        first, last = words[0], words[-1]
        add(first, "first name")
        add(last, "surname")
        for title in HONORIFICS:
            add(f"{title} {last}", "honorific")
        add(f"{first[0]} {last}", "initials")
        add(f"{first} {last[0]}", "initials")
    for form, kind in list(forms.items()):
        if kind != "joined":
            add(f"{form} s", "possessive" if kind == "name" else kind)
    return forms
