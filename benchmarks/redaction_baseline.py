"""The baseline of section 7: the hand-written list of 15 patterns that redacted secrets before issue 18.

Kept here only to time the detect-secrets based :class:`~bub_semantic_memory.tape._redact.Redactor`
side by side with what it replaced (it missed an AWS secret key written in free text,
among others; see ``docs/reliability.md``).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["PatternListRedactor"]

_ASSIGNMENT_KEYS = (
    r"password|passwd|pwd|passphrase|passcode|pass|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token"
)

PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "private_key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)",
    ),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("aws_access_key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("stripe_key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("bearer_token", r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{12,}=*"),
    ("url_credentials", r"(?<=://)[^\s:/@]+:[^\s@/]+(?=@)"),
    (
        "assignment",
        # Key and value may be quoted; inside JSON-encoded text (tool arguments and results,
        # possibly encoded twice) the quotes are escaped: {\"password\": \"hunter2\"}.
        rf"""(?ix)(?<![A-Za-z0-9])(?P<key>{_ASSIGNMENT_KEYS})(?P<sep>(?:\\*["'])?\s*[:=]\s*)"""
        r"""(?P<value>(?P<esc>\\+)"[^"\\\n]{3,}(?P=esc)"|"[^"\n]{3,}"|'[^'\n]{3,}'|[^\s"',;}{)\]]{3,})""",
    ),
)


@dataclass
class PatternListRedactor:
    """The redactor before issue 18: the patterns above, applied in turn."""

    counts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._patterns = [(kind, re.compile(pattern)) for kind, pattern in PATTERNS]

    def __call__(self, text: str) -> str:
        if not text:
            return text
        for kind, pattern in self._patterns:
            text = pattern.sub(functools.partial(self._replace, kind), text)
        return text

    def _replace(self, kind: str, match: re.Match[str]) -> str:
        if "[REDACTED:" in match.group(0):
            return match.group(0)
        self.counts[kind] += 1
        if kind == "assignment":
            value = match.group("value")
            escaped = match.group("esc")
            quote = f'{escaped}"' if escaped else (value[0] if value[0] in "\"'" else "")
            return f"{match.group('key')}{match.group('sep')}{quote}[REDACTED:secret]{quote}"
        return f"[REDACTED:{kind}]"
