"""Whether a name is mentioned in a text: the one rule the validator, the importer and the oracle share.

Both sides go through :func:`~bub_semantic_memory.models.normalize_name` (case, width,
punctuation and a leading article do not matter). A name written in a script that puts
spaces between words must occur as whole words ("Al" is not in "Alice"); a name holding
letters of a script written without spaces (Chinese, Japanese, Thai...) only has to occur
as a substring, since its words have no boundaries to check. Accents are letters, so
"José" is a whole word and is not found in "Josefina".
"""

from __future__ import annotations

import functools
import unicodedata

from bub_semantic_memory.models import normalize_name

__all__ = ["fold_text", "is_mentioned"]

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
    return _has_unspaced_script(needle) and needle in folded_text


@functools.lru_cache(maxsize=4096)
def _has_unspaced_script(folded_name: str) -> bool:
    return any(unicodedata.name(ch, "").startswith(_UNSPACED_SCRIPTS) for ch in folded_name)
