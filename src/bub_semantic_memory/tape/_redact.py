"""Secret redaction, applied to transcript text before it reaches a model or the store.

People paste keys into chats and tools print them. Every secret found is replaced by
``[REDACTED:<kind>]`` before any text leaves the transcript renderer, so neither the
extractor's requests nor the stored snapshots (nor the eval cache and reports) carry it.

What finds secrets, in order of precedence (overlapping finds are merged; the first
finder names the kind):

1. **Private key blocks** (own pattern): ``-----BEGIN ... PRIVATE KEY-----`` or
   ``PGP PRIVATE KEY BLOCK`` through its ``END`` line, body included.
   detect-secrets' ``PrivateKeyDetector`` only reports the ``BEGIN`` line.
2. **detect-secrets' provider detectors** (Yelp's maintained list, read from the
   installed package so new detectors apply on upgrade): AWS access key ids and quoted
   secret keys, Azure storage keys, GitHub, GitLab, Slack tokens and webhooks, Stripe
   live keys, Twilio, SendGrid, Mailchimp, npm (``.npmrc``), PyPI, JWTs, Discord,
   Telegram, Square, Artifactory, IBM, Cloudant, SoftLayer, credentials in URLs, OpenAI
   keys of the legacy ``T3BlbkFJ`` form. Its ``PublicIP`` detector is left out: an
   address is not a credential, and a memory may well need it.
3. **Own provider patterns**, only where detect-secrets has no detector: OpenAI
   project/service/admin keys and other ``sk-`` keys (DeepSeek and the other
   OpenAI-compatible providers), Anthropic, Google API keys and OAuth client secrets,
   Azure client secrets and SAS signatures, Hugging Face, GitHub fine-grained tokens,
   bare npm tokens, Stripe test and restricted keys, Mailgun, DigitalOcean, Shopify,
   Atlassian, Linear, Groq, Replicate, Perplexity, Postman, GitHub tokens of other
   lengths than the 36 characters detect-secrets expects, ``Authorization: Bearer`` and
   ``Basic`` headers, URL credentials without a user name (``redis://:pw@host``).
4. **detect-secrets' keyword detector**: ``password: x``, ``api_key = "x"``,
   ``secret_key => 'x'`` and its other assignment forms (its config-file and
   quoted-code rules). A keyword glued to a longer lower-case word (``secretary:``)
   does not count; an unquoted value ends at the first space.
5. **Own assignment pattern**, for what the keyword detector misses: keys it does not
   know (``token``, ``access_token``, ``client_secret``, ``passphrase`` ...) and
   assignments inside JSON text that was encoded again (``{\\"password\\": \\"x\\"}``).
6. **Own prose pattern**: "my password is x", "the token for staging was x" (but not
   "the token is expired": a short list of state words is not taken for a value).
7. **Entropy** (detect-secrets' Shannon entropy and its default limits: 4.5 bits per
   character for base64-like strings, 3.0 for hex): any run of base64 characters of 20
   or more, and any hex run of 32 or more, above the limit. This is what catches a key
   no pattern knows, such as an AWS secret access key pasted in free text.
   detect-secrets only looks at quoted strings outside its ad-hoc mode; the runs are
   cut here (the 20 and 32 floors are this module's), the measure and limits are its.
8. ``extra_patterns`` from the configuration (kind ``custom``); the allowlist does not
   apply to them.

detect-secrets' ``scan_line`` is not used: it reconfigures the library's global settings
and runs its file filters on every call. The plugins' compiled patterns and entropy
function are used directly, so a :class:`Redactor` has no global state and finds spans
(what to replace), not just values.

What is kept, by kind (see ``docs/reliability.md`` and ``tests/tape/test_redact.py``):

- Git object ids: a 40- or 64-character hex id within 80 characters after a git word
  (``commit``, ``merge``, ``sha``, ``tree``, ``parent``, ``revert``, ``HEAD``, ...).
  Short ids (7-12 hex) are below the hex length floor. A bare 40-hex string with no git
  word before it is masked: it cannot be told from a 40-hex token.
- UUIDs written with dashes (their hex groups are short and their base64 entropy low);
  32 hex digits without dashes are masked.
- Ticket ids (``PROJ-1234``), dates, times, version numbers, file paths, e-mail
  addresses, host names, public IP addresses, names and ordinary words: no finder
  matches them.
- Anything matching an ``allowlist`` pattern in full.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin

__all__ = ["DEFAULT_PATTERNS", "OwnPattern", "Redactor"]

_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")

_PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)"
)

_ASSIGNMENT_KEYS = (
    r"password|passwd|pwd|passphrase|passcode|pass|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token"
)


@dataclass(frozen=True)
class OwnPattern:
    """One of the project's own patterns.

    Attributes:
        kind: the marker kind (``[REDACTED:<kind>]``).
        regex: the pattern; its whole match is the secret.
        needles: lower-case strings one of which every match contains; the pattern only runs
            on text (lower-cased) that holds one, since a case-sensitive literal search is
            far cheaper than the pattern's scan.
    """

    kind: str
    regex: str
    needles: tuple[str, ...]


DEFAULT_PATTERNS: tuple[OwnPattern, ...] = (
    OwnPattern("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{16,}", ("sk-ant-",)),
    OwnPattern("openai_key", r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}", ("sk-",)),
    OwnPattern(
        "github_token",
        r"\bgithub_pat_[A-Za-z0-9_]{20,}|\bgh[pousr]_[A-Za-z0-9]{30,}",
        ("github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    OwnPattern("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b", ("aiza",)),
    OwnPattern("google_oauth_secret", r"\bGOCSPX-[A-Za-z0-9_\-]{20,}", ("gocspx-",)),
    OwnPattern(
        "azure_client_secret", r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}", ("q~",)
    ),
    OwnPattern("azure_sas_signature", r"(?<=[?&]sig=)[A-Za-z0-9%+/=]{20,}", ("sig=",)),
    OwnPattern("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),
    OwnPattern("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    OwnPattern("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", ("_live_", "_test_")),
    OwnPattern("mailgun_key", r"\bkey-[0-9a-f]{32}\b", ("key-",)),
    OwnPattern("digitalocean_token", r"\bdo[pro]_v1_[0-9a-f]{64}\b", ("_v1_",)),
    OwnPattern("shopify_token", r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b", ("shp",)),
    OwnPattern("atlassian_token", r"\bATATT3[A-Za-z0-9_\-=]{30,}", ("atatt3",)),
    OwnPattern("linear_key", r"\blin_api_[A-Za-z0-9]{32,}", ("lin_api_",)),
    OwnPattern("groq_key", r"\bgsk_[A-Za-z0-9]{40,}", ("gsk_",)),
    OwnPattern("replicate_token", r"\br8_[A-Za-z0-9]{30,}", ("r8_",)),
    OwnPattern("perplexity_key", r"\bpplx-[A-Za-z0-9]{40,}", ("pplx-",)),
    OwnPattern("postman_key", r"\bPMAK-[0-9a-f]{24}-[0-9a-f]{34}\b", ("pmak-",)),
    OwnPattern(
        "bearer_token",
        r"(?i)(?<=\bbearer\s)[A-Za-z0-9\-._~+/]{12,}=*|(?<=\bbasic\s)[A-Za-z0-9+/]{12,}=*",
        ("bearer", "basic"),
    ),
    OwnPattern("url_credentials", r"(?<=://)[^\s:/@]*:[^\s@/]+(?=@)", ("://",)),
)
"""The project's own patterns: providers and forms detect-secrets has no detector for."""

_ASSIGNMENT = re.compile(
    # Key and value may be quoted; inside JSON-encoded text (tool arguments and results,
    # possibly encoded twice) the quotes are escaped: {\"password\": \"hunter2\"}.
    rf"""(?ix)(?<![A-Za-z0-9])(?P<key>{_ASSIGNMENT_KEYS})(?:\\*["'])?\s*[:=]\s*"""
    r"""(?:(?P<esc>\\+)"(?P<v1>[^"\\\n]{3,})(?P=esc)"|"(?P<v2>[^"\n]{3,})"|'(?P<v3>[^'\n]{3,})'"""
    r"""|(?P<v4>[^\s"',;}{)\]\\]{3,}))"""
)
_PROSE = re.compile(
    r"(?i)\b(?:password|passphrase|passcode|passwd|pin|secret|token|api[ _-]?key|access[ _-]?key)"
    r"(?:\s+(?:for|of|to|on|at)(?:\s+[^\s]{1,40}){1,3}?)?\s+(?:is|was|is\s+now|was\s+set\s+to|:)\s+"
    r"(?:\\*[\"'“‘`])?(?P<value>[^\s\"'”’`\\]{4,})"
)
_PROSE_WORD = re.compile(r"pass|pin|secret|token|key")  # on lower-cased text: a cheap first check
# Words that say what state a secret is in ("the token is expired"), not what it is.
_PROSE_STATES = frozenset(
    {
        "expired",
        "invalid",
        "missing",
        "wrong",
        "correct",
        "valid",
        "revoked",
        "required",
        "needed",
        "ready",
        "here",
        "there",
        "fine",
        "stored",
        "saved",
        "rotated",
        "empty",
        "unset",
        "blank",
        "same",
        "different",
        "changed",
        "compromised",
        "leaked",
        "broken",
        "working",
        "available",
        "attached",
        "encrypted",
        "hashed",
        "hidden",
        "private",
        "public",
        "weak",
        "strong",
        "still",
        "case-sensitive",
        "shared",
    }
)
_SENTENCE_END = ".,;:!?)"  # after an unquoted value: the sentence's, not the secret's
# Every match of a keyword or assignment rule (detect-secrets' and the own one) also matches
# this: a secret-sounding word followed by an assignment or a call, or compared with ==.
# One search decides whether the dozen slower rules need to run; most lines need none.
_HINT_WORDS = r"(?:pass|pwd|secret|key|token|contrase)"
_HINT_WORD = re.compile(_HINT_WORDS)  # on lower-cased text: a cheap first check
_ASSIGNMENT_HINT = re.compile(
    rf"""(?i){_HINT_WORDS}\w*(?:\[[0-9]*\]|\\*[]'"`]){{0,3}}\s*(?:[:=]|!=|\(|\.assign)"""
    rf"""|[!=]=\s*\w*{_HINT_WORDS}|{_HINT_WORDS}\S{{0,60}}\s*["'`].*["'`];"""
)
_GIT_WORD = re.compile(
    r"(?i)\b(?:commit|commits|merge|merged|sha|sha1|sha256|tree|parent|revert|reverts|reverted|cherry-pick"
    r"|rebase|HEAD|checkout|git|rev|revision|tag|hash)\b[^\n]{0,80}$"
)
# "=" only as padding: otherwise ``NAME=value`` would be one run and the name masked with the value.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{20,}={0,2}")
_HEX_RUN = re.compile(r"(?<![A-Za-z0-9])[0-9a-fA-F]{32,}(?![A-Za-z0-9])")
_GIT_ID_LENGTHS = frozenset({40, 64})
# detect-secrets' secret types, renamed as marker kinds; unlisted types are slugified.
_KIND_OF_TYPE = {
    "AWS Access Key": "aws_key",
    "Basic Auth Credentials": "url_credentials",
    "JSON Web Token": "jwt",
    "OpenAI Token": "openai_key",
    "Stripe Access Key": "stripe_key",
    "NPM tokens": "npm_token",
    "Secret Keyword": "secret",
}
# detect-secrets plugins this module does not run as provider detectors, and why.
_NOT_PROVIDER_DETECTORS = frozenset(
    {
        "Secret Keyword",  # run as step 4, with its own filter
        "Base64 High Entropy String",  # run as step 7, without the quotes it requires
        "Hex High Entropy String",
        "Private Key",  # reports the BEGIN line only; step 1 takes the whole block
        "Public IP (ipv4)",  # an address is not a credential
    }
)


class _Find(NamedTuple):
    start: int
    end: int
    rank: int  # lower wins the kind when finds overlap
    kind: str


@dataclass(frozen=True)
class _Finders:
    """The compiled finders; built once per process (detect-secrets loads its plugins on first use)."""

    providers: tuple[tuple[str, re.Pattern[str]], ...]
    own: tuple[tuple[str, re.Pattern[str]], ...]
    own_needles: tuple[tuple[str, ...], ...]
    keyword: tuple[tuple[re.Pattern[str], int], ...]
    keyword_word: re.Pattern[str]
    base64: HighEntropyStringsPlugin
    hex: HighEntropyStringsPlugin


@functools.cache
def _finders() -> _Finders:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins import keyword
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

    providers: list[tuple[str, re.Pattern[str]]] = []
    plugins: Mapping[str, type[object]] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin in plugins.items():
        if secret_type in _NOT_PROVIDER_DETECTORS:
            continue
        kind = _KIND_OF_TYPE.get(secret_type) or re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")
        providers.extend((kind, pattern) for pattern in getattr(plugin, "denylist", ()))
    keyword_rules = {
        **keyword.CONFIG_DENYLIST_REGEX_TO_GROUP,
        **keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
    }
    return _Finders(
        providers=tuple(providers),
        own=tuple((own.kind, re.compile(own.regex)) for own in DEFAULT_PATTERNS),
        own_needles=tuple(own.needles for own in DEFAULT_PATTERNS),
        keyword=tuple(keyword_rules.items()),
        keyword_word=re.compile("|".join(keyword.DENYLIST), re.IGNORECASE),
        base64=Base64HighEntropyString(),
        hex=HexHighEntropyString(),
    )


@dataclass
class Redactor:
    """Replaces secrets in text with ``[REDACTED:<kind>]``.

    Args:
        extra_patterns: additional regular expressions (their whole match is redacted,
            reported as kind ``custom``).
        enabled: ``False`` turns redaction off (not recommended).
        allowlist: regular expressions; a find that one of them matches in full is kept
            (for example an internal id format that entropy would mask). They never
            un-mask an ``extra_patterns`` match.

    Attributes:
        counts: how many secrets of each kind were redacted so far.

    Raises:
        ConfigurationError: a pattern of ``extra_patterns`` or ``allowlist`` does not compile.
    """

    extra_patterns: Iterable[str] = ()
    enabled: bool = True
    allowlist: Iterable[str] = ()
    counts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.extra_patterns = tuple(self.extra_patterns)
        self.allowlist = tuple(self.allowlist)
        self._custom = tuple(_compile(p, "redaction") for p in self.extra_patterns)
        self._allowed = tuple(_compile(p, "allowlist") for p in self.allowlist)

    def __call__(self, text: str) -> str:
        """Return ``text`` with every secret replaced."""
        if not self.enabled or not text:
            return text
        finds = _merge(self._finds(text))
        if not finds:
            return text
        parts: list[str] = []
        position = 0
        for find in finds:
            parts.append(text[position : find.start])
            parts.append(f"[REDACTED:{find.kind}]")
            self.counts[find.kind] += 1
            position = find.end
        parts.append(text[position:])
        return "".join(parts)

    def _finds(self, text: str) -> Iterator[_Find]:
        markers = [m.span() for m in _MARKER.finditer(text)]

        def fresh(start: int, end: int) -> bool:
            return start < end and not any(start < m_end and m_start < end for m_start, m_end in markers)

        for find in _candidates(text, _finders()):
            if fresh(find.start, find.end) and not self._is_allowed(text[find.start : find.end]):
                yield find
        for pattern in self._custom:
            for match in pattern.finditer(text):
                if fresh(*match.span()):
                    yield _Find(match.start(), match.end(), 0, "custom")

    def _is_allowed(self, found: str) -> bool:
        return any(pattern.fullmatch(found) for pattern in self._allowed)


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        from bub_semantic_memory._errors import ConfigurationError

        raise ConfigurationError(f"invalid {what} pattern {pattern!r}: {exc}") from exc


def _candidates(text: str, finders: _Finders) -> Iterator[_Find]:
    """Every find of the built-in finders, ranked by precedence (see the module docstring)."""
    for match in _PRIVATE_KEY_BLOCK.finditer(text):
        yield _Find(match.start(), match.end(), 1, "private_key")
    for kind, pattern in finders.providers:
        for match in pattern.finditer(text):
            yield _Find(*_secret_span(match), 2, kind)
    lowered = text.lower()
    for (kind, pattern), needles in zip(finders.own, finders.own_needles, strict=True):
        if not any(needle in lowered for needle in needles):
            continue
        for match in pattern.finditer(text):
            yield _Find(match.start(), match.end(), 3, kind)
    if _HINT_WORD.search(lowered) and _ASSIGNMENT_HINT.search(text):
        yield from _assignment_finds(text, finders)
    for match in _PROSE.finditer(text) if _PROSE_WORD.search(lowered) else ():
        start, end = match.span("value")
        end = start + len(text[start:end].rstrip(_SENTENCE_END))
        if end - start >= 4 and text[start:end] not in _PROSE_STATES:
            yield _Find(start, end, 6, "secret")
    yield from _entropy_finds(text, finders)


def _assignment_finds(text: str, finders: _Finders) -> Iterator[_Find]:
    """Values assigned to secret-sounding names."""
    for pattern, group in finders.keyword:
        for match in pattern.finditer(text):
            span = _keyword_value(match, group, finders.keyword_word)
            if span is not None:
                yield _Find(*span, 4, "secret")
    for match in _ASSIGNMENT.finditer(text):
        value = next(name for name in ("v1", "v2", "v3", "v4") if match.group(name) is not None)
        if match.group("key").lower() == "pwd" and match.group(value)[0] in "/~":
            continue  # the shell's working directory
        start, end = match.span(value)
        if value == "v4":
            end = start + len(text[start:end].rstrip(_SENTENCE_END))
        yield _Find(start, end, 5, "secret")


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    """The secret inside a detector's match.

    detect-secrets' patterns capture either the secret (AWS secret keys, URL passwords,
    npm tokens) or only a prefix (``glpat``, ``ghp``): a group of 6 or more characters
    is taken as the secret, otherwise the whole match, without the delimiters some
    patterns include. An unquoted value ends at the first space.
    """
    groups = [i for i in range(1, (match.re.groups or 0) + 1) if match.group(i)]
    best = max(groups, key=lambda i: len(match.group(i)), default=None)
    if best is not None and len(match.group(best)) >= 6:
        start, end = match.span(best)
    else:
        start, end = match.span()
        text = match.string
        while start < end and text[start] in " \t=:\"'":
            start += 1
        while end > start and text[end - 1] in " \t\"'":
            end -= 1
    space = re.search(r"\s", match.string[start:end])
    return (start, start + space.start()) if space else (start, end)


def _keyword_value(match: re.Match[str], group: int, word: re.Pattern[str]) -> tuple[int, int] | None:
    """The value of a keyword assignment, or None when the keyword is part of another word.

    detect-secrets lets any word characters follow the keyword (``password_hash``,
    ``secretKey``); a lower-case letter other than a plural ``s`` makes another word
    (``secretary``, ``passwordless``), which is not a credential. ``pwd: /path`` is a
    working directory.
    """
    keyword_group = next(
        i for i in range(1, (match.re.groups or 0) + 1) if match.group(i) and word.fullmatch(match.group(i))
    )
    keyword_end = match.end(keyword_group)
    if match.group(keyword_group).lower() == "pwd" and match.string[match.start(group)] in "/~":
        return None  # the shell's working directory, not a password
    rest = match.string[keyword_end : keyword_end + 2]
    if rest[:1].islower() and not (rest[:1] == "s" and not rest[1:2].isalnum()):
        return None
    start, end = match.span(group)
    quoted = start > 0 and match.string[start - 1] in "\"'`"
    if not quoted:
        space = re.search(r"\s", match.string[start:end])
        end = start + space.start() if space else end
        end = start + len(match.string[start:end].rstrip(_SENTENCE_END))
    return (start, end) if end > start else None


def _entropy_finds(text: str, finders: _Finders) -> Iterator[_Find]:
    """Random-looking strings, by detect-secrets' entropy measure and limits."""
    for match in _BASE64_RUN.finditer(text):
        token = match.group().strip("=")
        if finders.base64.calculate_shannon_entropy(token) > finders.base64.entropy_limit:
            yield _Find(match.start(), match.end(), 7, "high_entropy")
    for match in _HEX_RUN.finditer(text):
        if finders.hex.calculate_shannon_entropy(match.group()) <= finders.hex.entropy_limit:
            continue
        if not _is_git_object_id(match):
            yield _Find(match.start(), match.end(), 7, "high_entropy")


def _is_git_object_id(match: re.Match[str]) -> bool:
    """A 40- or 64-hex run that a git word shortly before names as a commit, tree or tag."""
    if len(match.group()) not in _GIT_ID_LENGTHS:
        return False
    return _GIT_WORD.search(match.string, max(0, match.start() - 100), match.start()) is not None


def _merge(finds: Iterable[_Find]) -> list[_Find]:
    """Overlapping finds become one span; the best-ranked find among them names the kind."""
    merged: list[_Find] = []
    for find in sorted(finds):
        if merged and find.start < merged[-1].end:
            last = merged[-1]
            kind = last.kind if last.rank <= find.rank else find.kind
            merged[-1] = _Find(last.start, max(last.end, find.end), min(last.rank, find.rank), kind)
        else:
            merged.append(find)
    return merged
