"""Secret redaction: the planted-secret corpus, the fixtures' gold, ordinary identifiers, configuration.

The end-to-end checks (request bodies, stored snapshots, eval cache and report, a bub
turn) are in ``tests/reliability/test_security.py``; they plant the same corpus.
"""

from __future__ import annotations

import re

import pytest

from bub_semantic_memory._errors import ConfigurationError
from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.tape._redact import DEFAULT_PATTERNS, OwnPattern, Redactor
from bub_semantic_memory.tape._transcript import Entry, render_transcript
from tests.conftest import REPO
from tests.helpers.secret_corpus import (
    CORPUS,
    IDENTIFIERS,
    ISSUE_AWS_SECRET,
    PLACES,
    Identifier,
    Secret,
    hits,
    placed,
    planted_entries,
)

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
    from bub_semantic_memory.evals import Fixture

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


@pytest.mark.parametrize("identifier", IDENTIFIERS, ids=lambda i: i.label)
def test_redaction_decides_ordinary_identifiers_per_kind(identifier: Identifier) -> None:
    redactor = Redactor()
    redacted = redactor(identifier.text)
    if identifier.kept:
        assert redacted == identifier.text
        assert sum(redactor.counts.values()) == 0
    else:
        assert "[REDACTED:high_entropy]" in redacted


@pytest.mark.parametrize("place", PLACES)
def test_redaction_removes_the_corpus_from_each_place_alone(place: str) -> None:
    for secret in CORPUS:
        row = placed(secret, place)
        entry = Entry(row["id"], row["kind"], row["payload"])
        assert hits(render_transcript([entry]).text().encode(), secret) > 0, secret.kind
        assert hits(render_transcript([entry], redact=Redactor()).text().encode(), secret) == 0, secret.kind


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


@pytest.mark.parametrize("own", DEFAULT_PATTERNS, ids=lambda o: o.kind)
def test_every_own_pattern_is_in_the_corpus_and_its_needles_gate_it(own: OwnPattern) -> None:
    planted = [s for s in CORPUS if s.marker == own.kind]
    assert planted, f"no corpus kind for {own.kind}"
    for secret in planted:
        for match in re.finditer(own.regex, secret.text):
            window = secret.text[max(0, match.start() - 10) : match.end()].lower()
            assert any(needle in window for needle in own.needles), (own.kind, secret.kind)
