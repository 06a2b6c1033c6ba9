"""The mention rule (``mentions.is_mentioned``) on accented, CJK, Thai, Cyrillic and mixed-script
names, whole-word matching in spaced scripts, and that the three callers of the rule agree with
it: the response validator (``schema``), the eval importer and the oracle test double.

(``tests/evals/importers/test_importer.py`` already checks one Chinese case through the importer and
``tests/test_models.py`` checks ``normalize_name``.)
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from pydantic import ValidationError

from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.evals.importers import import_conversations
from bub_semantic_memory.extraction._responses import build_response_model
from bub_semantic_memory.extraction._validation import ValidationScope
from bub_semantic_memory.tape._transcript import Transcript
from bub_semantic_memory.testing import OracleResponder
from bub_semantic_memory.testing._fake_openai import CHAT_COMPLETIONS_PATH, CompletionReply, RecordedRequest
from tests.conftest import rendered_lines

# (name, text, whether the text mentions the name)
CASES: list[tuple[str, str, bool]] = [
    # Accents are letters: matched when written, kept apart from the unaccented spelling.
    ("José Núñez", "I met josé núñez yesterday.", True),
    ("José Núñez", "I MET JOSÉ NÚÑEZ YESTERDAY.", True),
    ("José Núñez", "I met Jose Nunez yesterday.", False),
    ("José", "Josefina called.", False),
    ("José", unicodedata.normalize("NFD", "José said hi."), True),  # decomposed accents
    ("Straße", "it is on STRASSE 5", True),  # case folding turns ß into ss
    ("Zoë", "that is Zoë's bike", True),  # the apostrophe is a word boundary
    # CJK and other scripts without spaces: a substring is enough.
    ("王小明", "我昨天见到了王小明和他的朋友", True),
    ("王小明", "我昨天见到了王小和他的朋友", False),
    ("田中", "田中さんは東京に住んでいます", True),
    ("トヨタ", "ﾄﾖﾀの車を買った", True),  # half-width katakana folds to full width
    ("สมชาย", "คุณสมชายไปตลาด", True),
    # Mixed-script names hold an unspaced script, so they too match as substrings.
    ("iPhone手机", "我的iPhone手机坏了", True),
    ("Acme公司", "我在Acme公司工作", True),
    ("Acme公司", "我在Acme工作", False),
    # A spaced-script name next to unspaced letters: those letters are its word boundary.
    ("Acme", "张伟在北京的Acme工作", True),
    ("Acme", "张伟在Acmeco工作", False),
    # Vowel signs are combining marks and belong to their word.
    ("राम", "राम घर गया", True),
    ("राम", "रामायण पढ़ो", False),
    # Spaced scripts: whole words only, a prefix of a longer word does not count.
    ("Al", "Alice went home.", False),
    ("Alice", "alice went home.", True),
    ("Ann", "Anne-Marie is here.", False),
    ("Marie", "Anne-Marie is here.", True),  # the hyphen separates words
    ("Иван", "Иванов пришёл.", False),
    ("Иван", "Иван пришёл.", True),
    ("Νίκος", "ο Νίκος ήρθε", True),
    ("Νίκος", "ο Νικόλαος ήρθε", False),
    ("ＡＢＣ", "we work at abc corp", True),  # full-width Latin folds to ASCII
    ("The Beatles", "I love beatles songs", True),  # a leading article does not matter
]


def case_id(case: tuple[str, str, bool]) -> str:
    name, text, expected = case
    return f"{name}-in-{text[:12]}-{expected}"


def case_params() -> list[object]:
    return [pytest.param(*case, id=case_id(case)) for case in CASES]


@pytest.mark.parametrize(("name", "text", "expected"), case_params())
def test_the_mention_rule(name: str, text: str, expected: bool) -> None:
    assert is_mentioned(name, fold_text(text)) is expected


def test_an_empty_or_punctuation_only_name_is_never_mentioned() -> None:
    folded = fold_text("anything at all - !!")
    assert not is_mentioned("", folded)
    assert not is_mentioned(" - !! ", folded)


def test_a_name_is_found_at_the_very_start_and_end_of_the_text() -> None:
    assert is_mentioned("Maya", fold_text("Maya"))
    assert is_mentioned("Maya Lin", fold_text("I am Maya Lin"))
    assert is_mentioned("Maya Lin", fold_text("Maya Lin here"))


# --- the callers agree with the rule -----------------------------------------------------------------


def transcript(text: str) -> Transcript:
    return Transcript(rendered_lines((1, "user", text)))


def validator_accepts(name: str, text: str, ontology: Ontology) -> bool:
    """Whether the extractor's response validator grounds an entity called ``name`` in ``text``."""
    scope = ValidationScope(ontology=ontology, lines=transcript(text).lines)
    answer = {"entities": [{"name": name, "type": "person"}], "relations": []}
    try:
        build_response_model(ontology).model_validate(answer, context={"scope": scope})
    except ValidationError as exc:
        assert "does not occur in the transcript" in str(exc)
        return False
    return True


def importer_accepts(name: str, text: str, ontology: Ontology, tmp_path: Path) -> bool:
    """Whether the eval importer finds the gold name ``name`` in a conversation saying ``text``."""
    conversation = {
        "id": "case",
        "turns": [{"speaker": "user", "text": text}],
        "gold": {"entities": [{"name": name, "type": "person"}], "relations": []},
    }
    source = tmp_path / "source.jsonl"
    source.write_text(json.dumps(conversation, ensure_ascii=False) + "\n", encoding="utf-8")
    report = import_conversations(source, tmp_path / "out", ontology=ontology)
    assert report.fixtures == ["case"]
    issues = report.issues.get("case")
    return issues is None or name not in issues.unmentioned_names


def oracle_answers(name: str, text: str) -> bool:
    """Whether the oracle test double answers with the entity ``name`` for a transcript of ``text``."""
    prompt = f"Extract.\n<transcript>\n{transcript(text).text()}\n</transcript>"
    request = RecordedRequest(
        method="POST",
        path=CHAT_COMPLETIONS_PATH,
        headers={},
        body={"model": "oracle", "messages": [{"role": "user", "content": prompt}]},
        raw=b"",
        received_at=0.0,
    )
    reply = OracleResponder(entities=[{"name": name, "type": "person"}])(request)
    assert isinstance(reply, CompletionReply)
    arguments = json.loads(reply.tool_calls[0].arguments)
    return [e["name"] for e in arguments["entities"]] == [name]


@pytest.mark.parametrize(("name", "text", "expected"), case_params())
def test_the_validator_agrees_with_the_rule(name: str, text: str, expected: bool, ontology: Ontology) -> None:
    assert validator_accepts(name, text, ontology) is expected


@pytest.mark.parametrize(("name", "text", "expected"), case_params())
def test_the_validator_fills_evidence_from_the_lines_the_rule_finds(
    name: str, text: str, expected: bool, ontology: Ontology
) -> None:
    lines = rendered_lines((1, "user", text), (2, "assistant", "Noted."), (3, "user", text))
    scope = ValidationScope(ontology=ontology, lines=lines)
    assert scope.mentions([name]) == ([1, 3] if expected else [])


@pytest.mark.parametrize(("name", "text", "expected"), case_params())
def test_the_importer_agrees_with_the_rule(
    name: str, text: str, expected: bool, ontology: Ontology, tmp_path: Path
) -> None:
    assert importer_accepts(name, text, ontology, tmp_path) is expected


@pytest.mark.parametrize(("name", "text", "expected"), case_params())
def test_the_oracle_agrees_with_the_rule(name: str, text: str, expected: bool) -> None:
    assert oracle_answers(name, text) is expected


def test_the_validator_grounds_a_name_in_its_sender_but_not_in_the_speaker_label(ontology: Ontology) -> None:
    scope = ValidationScope(ontology=ontology, lines=rendered_lines((4, "José Núñez", "hola a todos")))
    assert scope.occurs("José Núñez")
    assert not scope.occurs("user")


# --- scripts whose words join without spaces, next to other scripts --------------------------------


def test_a_devanagari_name_is_not_found_in_a_longer_word() -> None:
    # Vowel signs are combining marks: they belong to the word, so "राम" does not match
    # the first letters of "रामायण".
    assert not is_mentioned("राम", fold_text("रामायण पढ़ो"))
    assert is_mentioned("राम", fold_text("राम घर गया"))


def test_a_latin_name_inside_chinese_text_is_found() -> None:
    assert is_mentioned("Acme", fold_text("张伟在北京的Acme工作"))
    assert is_mentioned("Acme", fold_text("Acme的工程师"))  # at the very start


def test_a_latin_name_inside_chinese_text_is_still_a_whole_word() -> None:
    assert not is_mentioned("Acme", fold_text("张伟在Acmeco工作"))
    assert not is_mentioned("Acme", fold_text("张伟在TheAcme工作"))


def test_a_thai_name_keeps_its_vowel_marks() -> None:
    assert is_mentioned("สมชาย", fold_text("คุณสมชายไปตลาด"))
    assert not is_mentioned("สมชาย", fold_text("คุณสมชิไปตลาด"))


def test_an_unpadded_text_is_checked_at_its_ends_too() -> None:
    assert is_mentioned("Acme", "acme工作")
    assert is_mentioned("Acme", "工作acme")
