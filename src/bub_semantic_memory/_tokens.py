"""Token estimates without a tokenizer download.

Budgets (chunk size, memory block size) need a token count on machines that
cannot fetch tokenizer files, so we estimate: about four ASCII characters per
token, and one token per non-ASCII character (CJK text is close to one token
per character in common BPE vocabularies; accented Latin text is overcounted,
which errs on the safe side of a budget).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TextSize", "estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of ``text``; never below 1 for non-empty text."""
    if text.isascii():  # the common case, counted without encoding a copy (rendering calls this per line)
        return _weigh(len(text), 0)
    ascii_chars = len(text.encode("ascii", "ignore"))
    return _weigh(ascii_chars, len(text) - ascii_chars)


def _weigh(ascii_chars: int, other_chars: int) -> int:
    # Kept apart from TextSize so the hot path (rendering on every model call) builds no object.
    if not (ascii_chars or other_chars):
        return 0
    return max(1, (ascii_chars + 3) // 4 + other_chars)


@dataclass(frozen=True, slots=True)
class TextSize:
    """Characters counted the way :func:`estimate_tokens` weighs them, so texts can be summed.

    The estimate rounds per text, so the estimates of lines do not add up to the estimate
    of the lines joined; sizes do: ``TextSize.of(a) + TextSize.of("\\n") + TextSize.of(b)``
    has the tokens of ``a + "\\n" + b``.
    """

    ascii_chars: int = 0
    other_chars: int = 0

    @classmethod
    def of(cls, text: str) -> TextSize:
        ascii_chars = len(text.encode("ascii", "ignore"))
        return cls(ascii_chars, len(text) - ascii_chars)

    def __add__(self, other: TextSize) -> TextSize:
        return TextSize(self.ascii_chars + other.ascii_chars, self.other_chars + other.other_chars)

    @property
    def tokens(self) -> int:
        return _weigh(self.ascii_chars, self.other_chars)
