"""Secret redaction counted: corpus kinds caught per place, fixture gold masked, identifiers kept.

The same invariants are asserted case by case in ``tests/tape/test_redact.py``; here they are
counted for ``docs/reliability.md``. Leaks through the extractor, the eval runner and a
bub turn are counted in ``test_security.py``.
"""

from __future__ import annotations

from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.tape._redact import Redactor
from bub_semantic_memory.tape._transcript import Entry, render_transcript
from tests.conftest import REPO
from tests.helpers.secret_corpus import CORPUS, IDENTIFIERS, PLACES, hits, placed
from tests.reliability._report import Outcomes, measured_block


def test_redaction_catches_every_corpus_kind_in_every_place(outcomes: Outcomes) -> None:
    caught: dict[str, int] = {}
    for place in PLACES:
        caught[place] = 0
        for secret in CORPUS:
            row = placed(secret, place)
            entry = Entry(row["id"], row["kind"], row["payload"])
            assert hits(render_transcript([entry]).text().encode(), secret) > 0  # it was planted
            caught[place] += hits(render_transcript([entry], redact=Redactor()).text().encode(), secret) == 0
    assert all(n == len(CORPUS) for n in caught.values()), caught

    table = outcomes.table("redaction", "Planted-secret corpus", ["", "kinds caught"])
    for place, n in caught.items():
        table.add(f"in the {place}", f"{n}/{len(CORPUS)}")
    table.notes.append(
        f"{len(CORPUS)} kinds: AWS, Google Cloud and Azure keys and secrets (the free-text AWS secret of "
        "issue 18 among them), OpenAI, Anthropic, DeepSeek, Hugging Face, Groq and other model providers, "
        "GitHub, GitLab, npm, PyPI, Atlassian tokens, Slack, Discord, Telegram, Stripe, Twilio, SendGrid, "
        "Mailgun, Mailchimp keys, JWTs, RSA/OpenSSH/EC/PKCS#8/PGP private keys, database and cache URLs with "
        "passwords, bearer and basic headers, .env, JSON and YAML config lines, a command-line password and "
        "secrets told in prose. A kind counts as caught when no 12-character piece of it is left in the "
        "rendered transcript, raw or JSON-escaped."
    )


def test_redaction_masks_no_gold_name_or_attribute_of_any_fixture(outcomes: Outcomes) -> None:
    fixtures = load_fixtures(REPO / "evals" / "fixtures")
    checked = masked = changed = lines = redacted_lines = 0
    for fixture in fixtures:
        plain = render_transcript(fixture.entries()).text()
        redacted = render_transcript(fixture.entries(), redact=Redactor()).text()
        lines += plain.count("\n") + 1
        redacted_lines += sum(a != b for a, b in zip(plain.splitlines(), redacted.splitlines(), strict=True))
        for entity in fixture.gold.entities:
            for value in (entity.name, *entity.aliases, *entity.attributes.values()):
                checked += 1
                masked += Redactor()(value) != value
                changed += redacted.count(value) != plain.count(value)
    assert masked == 0 and changed == 0
    assert redacted_lines > 0  # the fixtures with planted secrets

    table = outcomes.table("redaction", "False positives on the eval fixtures' gold", ["", "value"])
    table.add("fixtures / transcript lines", f"{len(fixtures)} / {lines:,}")
    table.add("gold names, aliases and attribute values checked", checked)
    table.add("masked when redacted on their own (goal 0)", masked)
    table.add("with a different count in the redacted transcript (goal 0)", changed)
    table.add("transcript lines changed by redaction (all hold planted secrets)", redacted_lines)


def test_redaction_keeps_ordinary_identifiers_as_decided(outcomes: Outcomes) -> None:
    table = outcomes.table(
        "redaction", "Ordinary identifiers", ["identifier", "decision", "why", "as decided"]
    )
    for identifier in IDENTIFIERS:
        redacted = Redactor()(identifier.text)
        as_decided = (redacted == identifier.text) == identifier.kept
        assert as_decided, identifier.label
        table.add(identifier.label, "kept" if identifier.kept else "masked", identifier.why, "yes")


def test_the_measured_block_is_carried_over_or_asked_for() -> None:
    previous = "x\n<!-- measured:redaction-cost -->\n| 1 | 2 |\n<!-- /measured:redaction-cost -->\ny"
    assert measured_block("redaction-cost", previous) == (
        "<!-- measured:redaction-cost -->\n| 1 | 2 |\n<!-- /measured:redaction-cost -->"
    )
    assert "Not measured yet: run `python -m benchmarks.redaction" in measured_block("redaction-cost", "")
