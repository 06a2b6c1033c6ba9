"""Token estimates without a tokenizer download.

Budgets (chunk size, memory block size) need a token count on machines that
cannot fetch tokenizer files, so we estimate: about four ASCII characters per
token, and one token per non-ASCII character (CJK text is close to one token
per character in common BPE vocabularies; accented Latin text is overcounted,
which errs on the safe side of a budget).
"""

from __future__ import annotations

__all__ = ["estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of ``text``; never below 1 for non-empty text."""
    if not text:
        return 0
    ascii_chars = len(text.encode("ascii", "ignore"))
    non_ascii = len(text) - ascii_chars
    return max(1, (ascii_chars + 3) // 4 + non_ascii)
