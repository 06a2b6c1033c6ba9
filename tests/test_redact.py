"""Secret redaction: the planted-secret corpus, the fixtures' gold, ordinary identifiers, configuration.

The end-to-end checks (request bodies, stored snapshots, eval cache and report, a bub
turn) are in ``tests/reliability/test_security.py``; they plant the same corpus.
"""

from __future__ import annotations

import pytest

from bub_semantic_memory.errors import ConfigurationError
from bub_semantic_memory.evals.dataset import load_fixtures
from bub_semantic_memory.redact import Redactor
from bub_semantic_memory.transcript import Entry, render_transcript
from tests.conftest import REPO
from tests.helpers.secret_corpus import CORPUS, ISSUE_AWS_SECRET, Secret, hits, planted_entries

FIXTURES = load_fixtures(REPO / "evals" / "fixtures")


def rendered(secret: Secret, *, redact: Redactor | None) -> str:
    rows = planted_entries([secret])
    entries = [Entry(row["id"], row["kind"], row["payload"]) for row in rows]
    return render_transcript(entries, redact=redact).text()


def test_the_corpus_has_at_least_fifty_kinds() -> None:
    assert len({secret.kind for secret in CORPUS}) == len(CORPUS) >= 50


@pytest.mark.parametrize("secret", CORPUS, ids=lambda s: s.kind)
def test_redaction_removes_every_corpus_kind_from_every_place(secret: Secret) -> None:
    plain = rendered(secret, redact=None)
    assert hits(plain.encode(), secret) > 0  # planted where the renderer shows it
    redacted = rendered(secret, redact=Redactor())
    assert hits(redacted.encode(), secret) == 0, redacted


@pytest.mark.parametrize("secret", CORPUS, ids=lambda s: s.kind)
def test_redaction_names_the_kind_it_found(secret: Secret) -> None:
    redactor = Redactor()
    assert f"[REDACTED:{secret.marker}]" in redactor(secret.text)
    assert redactor.counts[secret.marker] >= 1


def test_redaction_catches_the_free_text_aws_secret_of_issue_18() -> None:
    line = f"[13] user: AWS AKIAIOSFODNN7EXAMPLE secret {ISSUE_AWS_SECRET} ok"
    assert Redactor()(line) == "[13] user: AWS [REDACTED:aws_key] secret [REDACTED:high_entropy] ok"


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.id)
def test_redaction_keeps_every_gold_name_and_attribute_of_the_fixture(fixture: object) -> None:
    from bub_semantic_memory.evals.dataset import Fixture

    assert isinstance(fixture, Fixture)
    plain = render_transcript(fixture.entries()).text()
    redacted = render_transcript(fixture.entries(), redact=Redactor()).text()
    masked = []
    for entity in fixture.gold.entities:
        for value in (entity.name, *entity.aliases, *entity.attributes.values()):
            if Redactor()(value) != value or redacted.count(value) != plain.count(value):
                masked.append(value)
    assert masked == []


def test_the_fixtures_with_planted_secrets_are_redacted() -> None:
    """The gold test above would pass with redaction off; these fixtures show it is on."""
    planted = [f for f in FIXTURES if f.id.startswith("secrets-")]
    assert planted
    for fixture in planted:
        redacted = render_transcript(fixture.entries(), redact=Redactor()).text()
        assert "[REDACTED:" in redacted
        assert "hunter2" not in redacted


KEPT = {
    "git commit in git log output": "commit 3b98398c1e2f4a5b6c7d8e9f0a1b2c3d4e5f6a7b\nAuthor: Marta",
    "git sha after rev-parse HEAD": "git rev-parse HEAD returned 3b98398c1e2f4a5b6c7d8e9f0a1b2c3d4e5f6a7b",
    "merge commit in prose": "merged in 5e0c1f2a3b4c5d6e7f8091a2b3c4d5e6f7081920 yesterday",
    "short commit hashes": "3b98398 fix: cut long lines; a7b539e docs",
    "container digest": "image sha256:9b2f6c1d0e8a7b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4",
    "UUID": "request 123e4567-e89b-12d3-a456-426614174000 failed",
    "ticket ids": "QUILL-4821, PROJ-42 and #1234 are open",
    "dates and times": "due 2026-03-14T09:30:00Z, moved to 14/03/2026 at 9:30",
    "version numbers": "upgrade from v2.14.3 to 3.0.0-rc.1",
    "MongoDB ObjectId": "ObjectId 507f1f77bcf86cd799439011",
    "file path": "/home/marta/src/quillstack/services/billing_worker/handlers.py",
    "URL with a fragment": "https://github.com/quillstack/api/pull/4821#discussion_r1234567890",
    "e-mail address": "write to marta.kowalski@quillstack.example",
    "IP addresses": "10.0.3.17 and 52.14.200.1",
    "long identifier": "AbstractSingletonProxyFactoryBeanConfigurationProvider",
    "snake_case test name": "test_a_bub_turn_with_secrets_stores_and_sends_none",
    "keyword inside another word": "secretary: Maria Lopez; passwordless login for Ana",
    "working directory": "pwd: /work/quillstack",
    "secret in a state sentence": "the token is expired, ask Ana for a new one",
    "a word after 'secret'": "secret santa is on 2026-12-18",
}


@pytest.mark.parametrize("label", list(KEPT))
def test_redaction_keeps_ordinary_identifiers(label: str) -> None:
    redactor = Redactor()
    assert redactor(KEPT[label]) == KEPT[label]
    assert sum(redactor.counts.values()) == 0


MASKED = {
    "40 hex digits with no git word before them": "3b98398c1e2f4a5b6c7d8e9f0a1b2c3d4e5f6a7b",
    "a UUID without dashes (32 hex digits)": "id 123e4567e89b12d3a456426614174000",
}


@pytest.mark.parametrize("label", list(MASKED))
def test_redaction_masks_identifiers_it_cannot_tell_from_tokens(label: str) -> None:
    assert "[REDACTED:high_entropy]" in Redactor()(MASKED[label])


def test_redaction_is_idempotent() -> None:
    text = "\n".join(secret.text for secret in CORPUS)
    once = Redactor()(text)
    redactor = Redactor()
    assert redactor(once) == once
    assert sum(redactor.counts.values()) == 0


def test_redaction_keeps_the_sentence_around_a_secret() -> None:
    redactor = Redactor()
    assert redactor("Wifi: password=hunter2. Door code is 4471#.") == (
        "Wifi: password=[REDACTED:secret]. Door code is 4471#."
    )
    assert redactor("AWS_SECRET_ACCESS_KEY=wJp3Kq8Zr1Vx6Nm9Bt4Lc7Hs2Fd5Gy0Qe3Ua8Ti ok") == (
        "AWS_SECRET_ACCESS_KEY=[REDACTED:secret] ok"
    )
    assert redactor.counts == {"secret": 2}


def test_allowlist_keeps_a_find_that_matches_in_full() -> None:
    build_id = "bld_Q7vN2xLk9PzR4tYb8WcE1mAa6HdJ3s"
    assert Redactor()(f"build {build_id}") == "build [REDACTED:high_entropy]"
    assert Redactor(allowlist=[r"bld_[A-Za-z0-9]{30}"])(f"build {build_id}") == f"build {build_id}"
    # A partial match keeps nothing.
    assert Redactor(allowlist=[r"bld_"])(f"build {build_id}") == "build [REDACTED:high_entropy]"


def test_allowlist_never_unmasks_extra_patterns() -> None:
    redactor = Redactor(extra_patterns=[r"ACME-[0-9]{6}"], allowlist=[r"ACME-[0-9]{6}"])
    assert redactor("ticket ACME-493021") == "ticket [REDACTED:custom]"


def test_extra_patterns_are_redacted_as_custom() -> None:
    redactor = Redactor(extra_patterns=[r"ACME-[0-9]{6}"])
    assert redactor("ACME-493021 and ACME-12") == "[REDACTED:custom] and ACME-12"
    assert redactor.counts == {"custom": 1}


@pytest.mark.parametrize("field", ["extra_patterns", "allowlist"])
def test_an_invalid_pattern_is_a_configuration_error(field: str) -> None:
    with pytest.raises(ConfigurationError, match=r"invalid .*pattern '\('"):
        Redactor(**{field: ["("]})  # type: ignore[arg-type]


def test_disabled_redaction_returns_the_text_unchanged() -> None:
    secret = CORPUS[0].text
    assert Redactor(enabled=False)(secret) == secret
    assert Redactor()(secret) != secret
