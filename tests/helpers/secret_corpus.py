"""A corpus of planted secrets, and where to plant them in a tape.

Each :class:`Secret` is one kind of credential as people paste it: a bare token, a
``.env`` or config line, a URL, a header, a key block, a sentence. Values are made
up but have the real format (prefix, alphabet, length); they are generated from a
seed per kind, so the corpus is the same on every run. ``needle`` is the part that
must never leave the process; the rest of ``text`` (a variable name, a host) may.

:func:`planted_entries` puts every secret in a user message, in tool-call arguments
(a JSON string and an object) and in tool results (a string and an object);
:func:`hits` finds a secret, or any 12-character piece of it, in bytes (raw or
JSON-escaped once or twice).
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CORPUS",
    "CUSTOM",
    "CUSTOM_PATTERN",
    "IDENTIFIERS",
    "ISSUE_AWS_SECRET",
    "PLACES",
    "Identifier",
    "Secret",
    "fragments",
    "hits",
    "needle_of",
    "placed",
    "planted_entries",
    "tape_lines",
]

ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def chars(alphabet: str, n: int, salt: str) -> str:
    """``n`` characters of ``alphabet``, the same for the same salt on every run."""
    rng = random.Random(f"{salt}:{n}:{alphabet}")
    return "".join(rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class Secret:
    kind: str
    text: str  # as pasted
    needle: str = ""  # the part that must never leave the tape; empty: all of ``text``
    marker: str = ""  # the redaction kind expected in its place (checked in tests/tape/test_redact.py)


def needle_of(secret: Secret) -> str:
    return secret.needle or secret.text


def _key_block(label: str, salt: str, lines: int = 3) -> tuple[str, str]:
    body = [chars(B64, 64, f"{salt}{i}") for i in range(lines)]
    block = f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----"
    return block, body[1]


ISSUE_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
"""The AWS secret access key that issue 18 saw sent verbatim when pasted in free text."""

_aws_secret = chars(B64, 40, "aws-secret")
_rsa, _rsa_body = _key_block("RSA PRIVATE KEY", "rsa")
_ssh, _ssh_body = _key_block("OPENSSH PRIVATE KEY", "ssh")
_ec, _ec_body = _key_block("EC PRIVATE KEY", "ec")
_pkcs8, _pkcs8_body = _key_block("PRIVATE KEY", "pkcs8")
_pgp_body = [chars(B64, 64, f"pgp{i}") for i in range(3)]
_pgp = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
    + "\n".join(_pgp_body)
    + "\n=Xq9Z\n-----END PGP PRIVATE KEY BLOCK-----"
)
_gcp_body = chars(B64, 64, "gcp-sa")
_gcp_key_id = chars(HEX, 40, "gcp-key-id")
_azure_account_key = chars(B64, 86, "azure-account") + "=="
_azure_client = chars(ALNUM, 3, "az-c1") + "8Q~" + chars(ALNUM + "_~.-", 34, "az-c2")
_azure_sig = chars(ALNUM, 20, "sas") + "%2B" + chars(ALNUM, 18, "sas2") + "%3D"
_jwt_payload = (
    base64.urlsafe_b64encode(b'{"sub":"marta","role":"admin","iat":1767600000}').decode().rstrip("=")
)
_jwt = f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{_jwt_payload}.{chars(URLSAFE, 43, 'jwt-sig')}"
_basic = base64.b64encode(b"deploy-bot:" + chars(ALNUM, 24, "basic").encode()).decode()
_pypi = "pypi-AgEIcHlwaS5vcmc" + chars(URLSAFE, 120, "pypi")
_uuid_key = "-".join(chars(HEX, n, f"heroku{n}") for n in (8, 4, 4, 4, 12))

CORPUS: tuple[Secret, ...] = (
    # -- cloud: AWS, Google Cloud, Azure
    Secret("AWS access key id", "AKIA" + chars(UPPER_ALNUM, 16, "akia"), marker="aws_key"),
    Secret("AWS temporary access key id", "ASIA" + chars(UPPER_ALNUM, 16, "asia"), marker="aws_key"),
    Secret(
        "AWS secret access key (.env)",
        f"AWS_SECRET_ACCESS_KEY={_aws_secret}",
        _aws_secret,
        marker="secret",
    ),
    Secret(
        "AWS secret access key (free text, issue 18)",
        f"secret {ISSUE_AWS_SECRET}",
        ISSUE_AWS_SECRET,
        marker="high_entropy",
    ),
    Secret(
        "AWS session token (.env)",
        "AWS_SESSION_TOKEN=" + chars(B64, 200, "aws-session"),
        chars(B64, 200, "aws-session"),
        marker="secret",
    ),
    Secret("Google API key", "AIza" + chars(URLSAFE, 35, "aiza"), marker="google_api_key"),
    Secret(
        "Google OAuth client secret",
        "GOCSPX-" + chars(URLSAFE, 28, "gocspx"),
        marker="google_oauth_secret",
    ),
    Secret(
        "GCP service account JSON",
        json.dumps(
            {
                "type": "service_account",
                "project_id": "quillstack-prod",
                "private_key_id": _gcp_key_id,
                "private_key": f"-----BEGIN PRIVATE KEY-----\n{_gcp_body}\n-----END PRIVATE KEY-----\n",
                "client_email": "deployer@quillstack-prod.iam.gserviceaccount.com",
            }
        ),
        _gcp_body,
        marker="private_key",
    ),
    Secret(
        "Azure storage connection string",
        "DefaultEndpointsProtocol=https;AccountName=quillstore;"
        f"AccountKey={_azure_account_key};EndpointSuffix=core.windows.net",
        _azure_account_key,
        marker="azure_storage_account_access_key",
    ),
    Secret("Azure client secret", _azure_client, marker="azure_client_secret"),
    Secret(
        "Azure SAS token in a URL",
        f"https://quillstore.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=o&sp=r&sig={_azure_sig}",
        _azure_sig,
        marker="azure_sas_signature",
    ),
    # -- model providers
    Secret("OpenAI project key", "sk-proj-" + chars(URLSAFE, 56, "sk-proj"), marker="openai_key"),
    Secret(
        "OpenAI legacy key",
        "sk-" + chars(ALNUM, 20, "sk-l1") + "T3BlbkFJ" + chars(ALNUM, 20, "sk-l2"),
        marker="openai_key",
    ),
    Secret("OpenAI service account key", "sk-svcacct-" + chars(URLSAFE, 48, "svcacct"), marker="openai_key"),
    Secret(
        "Anthropic key",
        "sk-ant-api03-" + chars(URLSAFE, 93, "ant") + "AA",
        marker="anthropic_key",
    ),
    Secret("DeepSeek key", "sk-" + chars(HEX, 32, "deepseek"), marker="openai_key"),
    Secret("Hugging Face token", "hf_" + chars(string.ascii_letters, 34, "hf"), marker="huggingface_token"),
    Secret("Groq key", "gsk_" + chars(ALNUM, 52, "groq"), marker="groq_key"),
    Secret("Replicate token", "r8_" + chars(ALNUM, 37, "r8"), marker="replicate_token"),
    Secret("Perplexity key", "pplx-" + chars(ALNUM, 48, "pplx"), marker="perplexity_key"),
    # -- code hosting and package registries
    Secret("GitHub personal access token", "ghp_" + chars(ALNUM, 36, "ghp"), marker="github_token"),
    Secret("GitHub OAuth token", "gho_" + chars(ALNUM, 36, "gho"), marker="github_token"),
    Secret(
        "GitHub fine-grained token",
        "github_pat_11" + chars(UPPER_ALNUM, 20, "ghfg1") + "_" + chars(ALNUM, 59, "ghfg2"),
        marker="github_token",
    ),
    Secret("GitLab personal access token", "glpat-" + chars(URLSAFE, 20, "glpat"), marker="gitlab_token"),
    Secret("npm token", "npm_" + chars(ALNUM, 36, "npm"), marker="npm_token"),
    Secret(
        ".npmrc auth line",
        "//registry.npmjs.org/:_authToken=npm_" + chars(ALNUM, 36, "npmrc"),
        "npm_" + chars(ALNUM, 36, "npmrc"),
        marker="npm_token",
    ),
    Secret("PyPI token", _pypi, marker="pypi_token"),
    Secret(
        "Atlassian API token", "ATATT3xFfGF0" + chars(URLSAFE, 180, "atlassian"), marker="atlassian_token"
    ),
    Secret("Linear API key", "lin_api_" + chars(ALNUM, 40, "linear"), marker="linear_key"),
    Secret(
        "Postman API key",
        "PMAK-" + chars(HEX, 24, "pmak1") + "-" + chars(HEX, 34, "pmak2"),
        marker="postman_key",
    ),
    # -- messaging, payments, mail
    Secret(
        "Slack bot token",
        "xoxb-2048"
        + chars("0123456789", 8, "slack1")
        + "-40961"
        + chars("0123456789", 7, "slack2")
        + "-"
        + chars(ALNUM, 24, "slack3"),
        marker="slack_token",
    ),
    Secret(
        "Slack user token",
        "xoxp-1234"
        + chars("0123456789", 7, "slackp")
        + "-5678"
        + chars("0123456789", 8, "slackq")
        + "-"
        + chars(LOWER_ALNUM, 32, "slackr"),
        marker="slack_token",
    ),
    Secret(
        "Slack webhook URL",
        "https://hooks.slack.com/services/T0"
        + chars(UPPER_ALNUM, 8, "hook1")
        + "/B0"
        + chars(UPPER_ALNUM, 8, "hook2")
        + "/"
        + chars(ALNUM, 24, "hook3"),
        "T0"
        + chars(UPPER_ALNUM, 8, "hook1")
        + "/B0"
        + chars(UPPER_ALNUM, 8, "hook2")
        + "/"
        + chars(ALNUM, 24, "hook3"),
        marker="slack_token",
    ),
    Secret(
        "Discord bot token",
        "MTA"
        + chars(URLSAFE, 21, "discord1")
        + "."
        + chars(URLSAFE, 6, "discord2")
        + "."
        + chars(URLSAFE, 27, "discord3"),
        marker="discord_bot_token",
    ),
    Secret("Telegram bot token", "5123456789:" + chars(URLSAFE, 35, "telegram"), marker="telegram_bot_token"),
    Secret("Stripe live secret key", "sk_live_" + chars(ALNUM, 24, "sk_live"), marker="stripe_key"),
    Secret("Stripe test secret key", "sk_test_" + chars(ALNUM, 24, "sk_test"), marker="stripe_key"),
    Secret("Stripe restricted key", "rk_live_" + chars(ALNUM, 24, "rk_live"), marker="stripe_key"),
    Secret("Square OAuth secret", "sq0csp-" + chars(URLSAFE, 43, "square"), marker="square_oauth_secret"),
    Secret(
        "Twilio auth token (.env)",
        "TWILIO_AUTH_TOKEN=" + chars(HEX, 32, "twilio-auth"),
        chars(HEX, 32, "twilio-auth"),
        marker="secret",
    ),
    Secret("Twilio API key", "SK" + chars(HEX, 32, "twilio-sk"), marker="twilio_api_key"),
    Secret(
        "SendGrid API key",
        "SG." + chars(URLSAFE, 22, "sg1") + "." + chars(URLSAFE, 43, "sg2"),
        marker="sendgrid_api_key",
    ),
    Secret("Mailgun API key", "key-" + chars(HEX, 32, "mailgun"), marker="mailgun_key"),
    Secret("Mailchimp API key", chars(HEX, 32, "mailchimp") + "-us21", marker="mailchimp_access_key"),
    # -- infrastructure
    Secret("DigitalOcean token", "dop_v1_" + chars(HEX, 64, "do"), marker="digitalocean_token"),
    Secret("Shopify access token", "shpat_" + chars(HEX, 32, "shopify"), marker="shopify_token"),
    Secret(
        "Datadog API key (.env)",
        "DD_API_KEY=" + chars(HEX, 32, "datadog"),
        chars(HEX, 32, "datadog"),
        marker="secret",
    ),
    Secret(
        "Heroku API key (a UUID, .env)",
        f"HEROKU_API_KEY={_uuid_key}",
        _uuid_key,
        marker="secret",
    ),
    Secret(
        "HashiCorp Vault token",
        "hvs." + chars(URLSAFE, 90, "vault"),
        chars(URLSAFE, 90, "vault"),
        marker="high_entropy",
    ),
    Secret(
        "Sentry DSN",
        f"https://{chars(HEX, 32, 'sentry')}@o4504.ingest.sentry.io/4504123",
        chars(HEX, 32, "sentry"),
        marker="high_entropy",
    ),
    Secret("JWT", _jwt, marker="jwt"),
    # -- keys
    Secret("RSA private key block", _rsa, _rsa_body, marker="private_key"),
    Secret("OpenSSH private key block", _ssh, _ssh_body, marker="private_key"),
    Secret("EC private key block", _ec, _ec_body, marker="private_key"),
    Secret("PKCS#8 private key block", _pkcs8, _pkcs8_body, marker="private_key"),
    Secret("PGP private key block", _pgp, _pgp_body[1], marker="private_key"),
    # -- URLs and headers
    Secret(
        "Postgres URL with password",
        "postgres://admin:S3cr3tPw-Db99@db.internal:5432/app",
        "S3cr3tPw-Db99",
        marker="url_credentials",
    ),
    Secret(
        "MySQL URL with password",
        "mysql://quill:Vq8-Pl4typus!x@mysql.internal:3306/quill",
        "Vq8-Pl4typus!x",
        marker="url_credentials",
    ),
    Secret(
        "MongoDB SRV URL with password",
        "mongodb+srv://app:Mng0-Hx72kQ@cluster0.ab1cd.mongodb.net/prod",
        "Mng0-Hx72kQ",
        marker="url_credentials",
    ),
    Secret(
        "Redis URL with password only",
        "redis://:R3d1s-Cache-Pw@cache.internal:6379/0",
        "R3d1s-Cache-Pw",
        marker="url_credentials",
    ),
    Secret(
        "Bearer header",
        "Authorization: Bearer tok_" + chars(ALNUM, 30, "bearer"),
        "tok_" + chars(ALNUM, 30, "bearer"),
        marker="bearer_token",
    ),
    Secret("Basic auth header", f"Authorization: Basic {_basic}", _basic, marker="bearer_token"),
    # -- .env, JSON and YAML configs, command lines
    Secret(".env DB_PASSWORD", "DB_PASSWORD=Pl4typ0s-Vault-77", "Pl4typ0s-Vault-77", marker="secret"),
    Secret(
        ".env SECRET_KEY (Django)",
        "SECRET_KEY='dj4ngo-insecure-q8#x!v2@lm0)zr'",
        "dj4ngo-insecure-q8#x!v2@lm0)zr",
        marker="secret",
    ),
    Secret(
        "quoted export API_KEY",
        'export API_KEY="Qv8Lm2Np6Rt0Xz4Bc7Df1Gh"',
        "Qv8Lm2Np6Rt0Xz4Bc7Df1Gh",
        marker="secret",
    ),
    Secret(
        "JSON config password",
        '{"db": {"user": "quill", "password": "Js0n-Conf1g-Pw"}}',
        "Js0n-Conf1g-Pw",
        marker="secret",
    ),
    Secret(
        "JSON config access_token",
        '{"service": "billing", "access_token": "at-Q9x2-Lm7v-Rt4w"}',
        "at-Q9x2-Lm7v-Rt4w",
        marker="secret",
    ),
    Secret("YAML passwd", "passwd: Tr0ub4dor&3xyz", "Tr0ub4dor&3xyz", marker="secret"),
    Secret(
        "YAML client_secret",
        "oauth:\n  client_id: quill-web\n  client_secret: cs-7Hq2-Vw9z-Kp4m",
        "cs-7Hq2-Vw9z-Kp4m",
        marker="secret",
    ),
    Secret(
        "Kubernetes secret (base64 value)",
        "data:\n  password: " + base64.b64encode(b"kube-Pa55word-9").decode(),
        base64.b64encode(b"kube-Pa55word-9").decode(),
        marker="secret",
    ),
    Secret(
        "password on a command line",
        "psql --host db.internal --password=Cl1-Fl4g-Pw9 quill",
        "Cl1-Fl4g-Pw9",
        marker="secret",
    ),
    # -- prose
    Secret("password in prose", "my password is hunter2-Zq9x", "hunter2-Zq9x", marker="secret"),
    Secret(
        "wifi password in prose",
        "the wifi password for the office is Tessera-Guest-2026",
        "Tessera-Guest-2026",
        marker="secret",
    ),
    Secret("token in prose", "the staging token is now qT7-vX2-mP9-kL4", "qT7-vX2-mP9-kL4", marker="secret"),
    Secret(
        "passphrase in prose",
        'the passphrase was "correct-horse-battery-42"',
        "correct-horse-battery-42",
        marker="secret",
    ),
)
"""The planted-secret corpus: one entry per kind."""

CUSTOM = Secret("custom pattern (configured)", "ACME-493021", "ACME-493021", marker="custom")
CUSTOM_PATTERN = r"ACME-[0-9]{6}"
PLACES = (
    "user message",
    "tool-call arguments (string)",
    "tool-call arguments (object)",
    "tool result (string)",
    "tool result (object)",
)


def placed(secret: Secret, place: str, entry_id: int = 1) -> dict[str, Any]:
    """One tape row holding ``secret`` in one of :data:`PLACES` only."""
    payload: dict[str, Any]
    match place:
        case "user message":
            kind, payload = "message", {"role": "user", "content": f"Quillstack staging uses:\n{secret.text}"}
        case "tool-call arguments (string)":
            arguments: str | dict[str, Any] = json.dumps({"cmd": f"deploy --env staging '{secret.text}'"})
            kind, payload = (
                "tool_call",
                {"calls": [{"id": "c1", "function": {"name": "shell", "arguments": arguments}}]},
            )
        case "tool-call arguments (object)":
            arguments = {"headers": {"X-Api": secret.text}}
            kind, payload = (
                "tool_call",
                {"calls": [{"id": "c1", "function": {"name": "http", "arguments": arguments}}]},
            )
        case "tool result (string)":
            kind, payload = "tool_result", {"results": [f"deployed Quillstack with {secret.text}"]}
        case "tool result (object)":
            kind, payload = "tool_result", {"results": [{"stdout": f"config: {secret.text}\n", "code": 0}]}
        case _:
            raise ValueError(place)
    return {"id": entry_id, "kind": kind, "payload": payload, "meta": {}, "date": "2026-01-05T09:00:00+00:00"}


@dataclass(frozen=True)
class Identifier:
    """An ordinary value conversations carry, and whether redaction keeps it (and why)."""

    label: str
    text: str
    kept: bool
    why: str


IDENTIFIERS: tuple[Identifier, ...] = (
    Identifier(
        "git commit id in `git log` output",
        "commit 3b98398c1e2f4a5b6c7d8e9f0a1b2c3d4e5f6a7b\nAuthor: Marta",
        True,
        "40/64 hex after a git word",
    ),
    Identifier(
        "git id after `rev-parse HEAD`",
        "git rev-parse HEAD returned 3b98398c1e2f4a5b6c7d8e9f0a1b2c3d4e5f6a7b",
        True,
        "40/64 hex after a git word",
    ),
    Identifier(
        "merge commit in prose",
        "merged in 5e0c1f2a3b4c5d6e7f8091a2b3c4d5e6f7081920 yesterday",
        True,
        "40/64 hex after a git word",
    ),
    Identifier("short commit ids", "3b98398 fix: cut long lines; a7b539e docs", True, "hex under 32 digits"),
    Identifier(
        "container image digest",
        "image sha256:9b2f6c1d0e8a7b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4",
        True,
        "64 hex after `sha256`",
    ),
    Identifier(
        "UUID", "request 123e4567-e89b-12d3-a456-426614174000 failed", True, "dashed groups are short hex"
    ),
    Identifier("ticket ids", "QUILL-4821, PROJ-42 and #1234 are open", True, "low entropy, no pattern"),
    Identifier(
        "dates and times", "due 2026-03-14T09:30:00Z, moved to 14/03/2026 at 9:30", True, "low entropy"
    ),
    Identifier("version numbers", "upgrade from v2.14.3 to 3.0.0-rc.1", True, "low entropy"),
    Identifier("MongoDB ObjectId", "ObjectId 507f1f77bcf86cd799439011", True, "hex under 32 digits"),
    Identifier(
        "file path",
        "/home/marta/src/quillstack/services/billing_worker/handlers.py",
        True,
        "entropy under 4.5",
    ),
    Identifier(
        "URL with a fragment",
        "https://github.com/quillstack/api/pull/4821#discussion_r1234567890",
        True,
        "entropy under 4.5",
    ),
    Identifier("e-mail address", "write to marta.kowalski@quillstack.example", True, "no pattern"),
    Identifier("host names and ports", "db.internal:5432 and api.quillstack.example:443", True, "no pattern"),
    Identifier(
        "IP addresses", "10.0.3.17 and 52.14.200.1", True, "detect-secrets' PublicIP detector not run"
    ),
    Identifier(
        "long identifier", "AbstractSingletonProxyFactoryBeanConfigurationProvider", True, "entropy under 4.5"
    ),
    Identifier(
        "snake_case name", "test_a_bub_turn_with_secrets_stores_and_sends_none", True, "entropy under 4.5"
    ),
    Identifier(
        "keyword inside another word",
        "secretary: Maria Lopez; passwordless login for Ana",
        True,
        "keyword glued to a lower-case word",
    ),
    Identifier("working directory", "pwd: /work/quillstack", True, "`pwd:` followed by a path"),
    Identifier(
        "a secret's state in prose",
        "the token is expired, ask Ana for a new one",
        True,
        "state words are not values",
    ),
    Identifier("a word after 'secret'", "secret santa is on 2026-12-18", True, "no assignment, no 'is'"),
    Identifier(
        "40 hex digits with no git word before them",
        "3b98398c1e2f4a5b6c7d8e9f0a1b2c3d4e5f6a7b",
        False,
        "cannot be told from a 40-hex token",
    ),
    Identifier(
        "UUID without dashes", "id 123e4567e89b12d3a456426614174000", False, "32 hex digits: a token's length"
    ),
)
"""Ordinary identifiers, and the decision per kind (tested in ``tests/tape/test_redact.py``)."""


def fragments(needle: str) -> list[str]:
    """The needle and its 12-character windows: a partial leak (a cut key) is a leak too."""
    if len(needle) <= 12:
        return [needle]
    return [needle, *(needle[i : i + 12] for i in range(0, len(needle) - 11, 3))]


def hits(blob: bytes, secret: Secret) -> int:
    """How many forms of the secret occur in ``blob`` (raw, JSON-escaped once or twice)."""
    found = 0
    for fragment in fragments(needle_of(secret)):
        once = json.dumps(fragment)[1:-1]
        twice = json.dumps(once)[1:-1]
        found += any(form.encode() in blob for form in {fragment, once, twice})
    return found


def planted_entries(
    secrets: Iterable[Secret], first_id: int = 1, *, long_texts: bool = True
) -> list[dict[str, Any]]:
    """Bub tape rows: each secret in a user message, in tool-call arguments, in tool results.

    With ``long_texts`` the first secret is also planted where a long tool result and a
    long message are cut (the cut must not leave a fragment behind).
    """
    secrets = list(secrets)
    rows: list[dict[str, Any]] = []
    n = first_id

    def add(kind: str, payload: dict[str, Any]) -> None:
        nonlocal n
        rows.append(
            {"id": n, "kind": kind, "payload": payload, "meta": {}, "date": "2026-01-05T09:00:00+00:00"}
        )
        n += 1

    for index, secret in enumerate(secrets):
        who = "Marta Kowalski" if index % 2 else "Derek Chu"
        add(
            "message",
            {"role": "user", "content": f"{who} set up Quillstack staging with this:\n{secret.text}\nthanks"},
        )
        add("message", {"role": "assistant", "content": "I'll check the Quillstack config."})
        add(
            "tool_call",
            {
                "calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {
                            "name": "shell",
                            "arguments": json.dumps({"cmd": f"deploy --env staging '{secret.text}'"}),
                        },
                    },
                    {
                        "id": f"d{n}",
                        "type": "function",
                        "function": {"name": "http", "arguments": {"headers": {"X-Api": secret.text}}},
                    },
                ]
            },
        )
        add(
            "tool_result",
            {
                "results": [
                    f"deployed Quillstack with {secret.text}",
                    {"stdout": f"config: {secret.text}\n", "code": 0},
                ]
            },
        )
    if long_texts and secrets:
        key = secrets[0]
        add("tool_result", {"results": ["x" * 1485 + f" {key.text} tail"]})
        add("message", {"role": "user", "content": "y" * 3982 + f" {key.text}"})
    return rows


def tape_lines(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)
