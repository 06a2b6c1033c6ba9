"""Whether a name is mentioned in a text: the one rule the validator, the importer and the oracle share.

Both sides go through :func:`~bub_semantic_memory._models.normalize_name` (case, width,
punctuation and a leading article do not matter). A name written in a script that puts
spaces between words must occur as whole words ("Al" is not in "Alice"); a name holding
letters of a script written without spaces (Chinese, Japanese, Thai...) only has to occur
as a substring, since its words have no boundaries to check. Next to such letters a word
of a spaced script ends without a space, so "Acme" is found in "我在Acme工作" but still
not in "Acmeco工作". Accents and vowel signs are part of their word, so "José" is not found
in "Josefina", nor "राम" in "रामायण".
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterator

from bub_semantic_memory._models import normalize_name

__all__ = ["fold_text", "has_unspaced_script", "is_mentioned"]

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
