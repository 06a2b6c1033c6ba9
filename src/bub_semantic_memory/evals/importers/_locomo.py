"""Importing conversations in the LoCoMo layout as eval fixtures with dated sessions and questions.

LoCoMo is a benchmark of long conversations between two people, in sessions days or weeks
apart, with questions about them. Its file is one JSON array of samples::

    [{"sample_id": "conv-1",
      "conversation": {"speaker_a": "Ana", "speaker_b": "Ben",
                       "session_1_date_time": "1:56 pm on 8 May, 2023",
                       "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "..."},
                                     {"speaker": "Ben", "dia_id": "D1:2", "text": "...",
                                      "img_url": ["..."], "blip_caption": "a photo of a dog"}],
                       "session_2_date_time": "...", "session_2": [...]},
      "qa": [{"question": "...", "answer": "...", "evidence": ["D1:2"], "category": 4},
             {"question": "...", "adversarial_answer": "...", "evidence": [], "category": 5}],
      "event_summary": {...}, "observation": {...}, "session_summary": {...}}]

:func:`import_locomo` writes each sample as the fixture ``locomo-<sample_id>`` through the
plain-conversation importer's :class:`~bub_semantic_memory.evals.importers._plain.TapeBuilder`:

* **Both speakers are senders.** The tape is an agent's record of a conversation between two
  people, so every turn is a user message with bub's ``sender_id=<speaker>`` header (as in the
  group-chat fixtures); there is no assistant message. Each message opens a run that ends
  without a reply, as when the agent listens in a group chat.
* **Dates.** Every entry of session N is dated with that session's ``session_N_date_time``
  (read as UTC), one second apart; the user message's ``---Date: ...---`` header carries the
  same date. Sessions follow each other in the order of N; the bootstrap entries belong to the
  first session.
* **Photos.** A turn's ``blip_caption`` becomes text after its words: ``[shares a photo: <caption>]``.
  The image URL is dropped.
* **Questions.** Evidence ``dia_id``\\ s become the entry ids of those turns' messages; a
  ``dia_id`` that names no turn is reported in :attr:`FixtureIssues.unknown_evidence` and the
  question is kept without it. Categories: 1 multi-hop, 2 temporal, 3 (open-domain, it also
  needs knowledge from outside the conversation) multi-hop as well, 4 single-hop, 5 (adversarial)
  unanswerable, with the answer ``unknown`` and no evidence; its ``adversarial_answer`` is the
  trap, not an accepted form, and is dropped. A question that cannot be converted (no answer, a
  category outside 1-5) is dropped and reported in :attr:`FixtureIssues.dropped_questions`.
* **Gold.** LoCoMo annotates no entities or relations, so the gold has none (its description
  says so); tags ``locomo`` and ``foreign``. ``event_summary``, ``observation`` and
  ``session_summary`` are ignored.

A sample that cannot be imported (a missing field, a session without a readable date, a turn
from a third speaker, a ``dia_id`` used twice, sessions dated out of order) is skipped and
counted in :attr:`ImportReport.skipped` with the reason. The file is read whole (LoCoMo's are a
few megabytes); the output is byte-identical for the same input.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from bub_semantic_memory._errors import FixtureError
from bub_semantic_memory.evals._dataset import (
    UNKNOWN,
    Gold,
    Question,
    QuestionCategory,
    describe_validation_error,
)
from bub_semantic_memory.evals.importers._plain import (
    ConvertedFixture,
    FixtureIssues,
    ImportReport,
    SkippedConversation,
    TapeBuilder,
    check_fixture_id,
    write_fixtures,
)

__all__ = ["CATEGORIES", "FIXTURE_PREFIX", "TAGS", "import_locomo"]

FIXTURE_PREFIX = "locomo-"
"""A sample's fixture id is this prefix and its ``sample_id``."""
TAGS = ("locomo", "foreign")
"""The tags of every imported fixture."""
CATEGORIES: dict[int, QuestionCategory] = {
    1: "multi-hop",
    2: "temporal",
    3: "multi-hop",  # open-domain (the conversation plus world knowledge): Question has no slot for it
    4: "single-hop",
    5: "unanswerable",
}
"""LoCoMo's question categories and the categories of :class:`~bub_semantic_memory.evals.Question`."""

_SECOND = timedelta(seconds=1)
_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_KEY = re.compile(r"session_(\d+)_date_time")
_DATE_FORMATS = (
    "%I:%M %p on %d %B, %Y",
    "%I:%M %p on %d %b, %Y",
    "%I:%M %p on %d %B %Y",
    "%I:%M %p on %d %b %Y",
)
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")  # "D8:6; D9:17" in one string names two turns


class _Turn(BaseModel):
    model_config = ConfigDict(extra="ignore")  # img_url and whatever else a turn carries

    speaker: StrictStr = Field(min_length=1)
    dia_id: StrictStr = Field(min_length=1)
    text: StrictStr = ""
    blip_caption: StrictStr | None = None

    def message(self) -> str:
        """The turn as the tape shows it: its words, then the photo it shares as text."""
        text = self.text.strip()
        caption = (self.blip_caption or "").strip()
        if not caption:
            return text
        photo = f"[shares a photo: {caption}]"
        return f"{text} {photo}" if text else photo


_TURNS = TypeAdapter(list[_Turn])


class _Conversation(BaseModel):
    model_config = ConfigDict(extra="allow")  # session_N and session_N_date_time, read below

    speaker_a: StrictStr = Field(min_length=1)
    speaker_b: StrictStr = Field(min_length=1)


class _Sample(BaseModel):
    model_config = ConfigDict(extra="ignore")  # event_summary, observation, session_summary

    sample_id: StrictStr = Field(min_length=1)
    conversation: _Conversation
    qa: list[Any]


class _Question(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question: StrictStr = Field(min_length=1)
    answer: StrictStr | StrictInt | StrictFloat | None = None
    adversarial_answer: Any = None
    evidence: list[StrictStr] = Field(default_factory=list)
    category: Literal[1, 2, 3, 4, 5]


@dataclass(frozen=True)
class _Session:
    number: int
    date: datetime
    turns: list[_Turn]


def import_locomo(path: Path, out: Path, *, strict: bool = False) -> ImportReport:
    """Convert the samples of a LoCoMo-layout JSON file into fixture directories under ``out``.

    Each sample becomes ``out/locomo-<sample_id>/{tape.jsonl,gold.json}`` (see the module
    docstring for what is kept and how). Existing fixture directories with the same ids are
    overwritten; others are left alone.

    Args:
        path: the JSON file: an array of LoCoMo samples.
        out: the fixtures directory (created if needed).
        strict: fail on any problem (a sample that cannot be imported, an evidence
            reference to no turn, a question dropped), writing nothing.

    Returns:
        The ids written, the samples skipped with their reasons, each fixture's issues,
        and one warning line per problem.

    Raises:
        FixtureError: the file cannot be read, is not JSON or is not an array; a fixture
            cannot be written; with ``strict``, the first problem found.
    """
    samples = _read_samples(path)
    report = ImportReport()
    converted: list[ConvertedFixture] = []
    seen: dict[str, str] = {}
    for index, raw in enumerate(samples):
        where = f"{path}[{index}]"
        sample_id = raw.get("sample_id") if isinstance(raw, dict) else None
        try:
            item = _convert(raw, where, seen)
        except FixtureError as exc:
            if strict:
                raise
            report.skipped.append(
                SkippedConversation(
                    where=where, id=sample_id if isinstance(sample_id, str) else None, reason=str(exc)
                )
            )
            report.warnings.append(f"skipped {exc}")
            continue
        if strict and item.warnings:
            raise FixtureError(item.warnings[0])
        seen[item.id] = where
        converted.append(item)
    write_fixtures(converted, out, report)
    return report


def _read_samples(path: Path) -> list[Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FixtureError(f"cannot read LoCoMo file {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise FixtureError(
            f"LoCoMo file {path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc
    except UnicodeDecodeError as exc:
        raise FixtureError(f"LoCoMo file {path} is not UTF-8 text: {exc.reason}") from exc
    if not isinstance(data, list):
        raise FixtureError(f"LoCoMo file {path} must hold a JSON array of samples, not {_json_kind(data)}")
    return data


def _convert(raw: Any, where: str, seen: dict[str, str]) -> ConvertedFixture:
    if not isinstance(raw, dict):
        raise FixtureError(f"{where}: a sample must be a JSON object, not {_json_kind(raw)}")
    try:
        sample = _Sample.model_validate(raw)
    except ValidationError as exc:
        raise FixtureError(f"{where}: malformed sample: {describe_validation_error(exc)}") from exc
    fixture_id = FIXTURE_PREFIX + sample.sample_id
    where = f"{where}: sample {sample.sample_id!r}"
    check_fixture_id(fixture_id, f"{where}: fixture")
    if fixture_id in seen:
        raise FixtureError(f"{where}: duplicate sample_id (first at {seen[fixture_id]})")
    sessions = _sessions(sample.conversation, where)
    tape, entry_of = _tape(sample.conversation, sessions, where)
    issues = FixtureIssues()
    warnings: list[str] = []
    questions: list[Question] = []
    for index, item in enumerate(sample.qa):
        question = _question(item, entry_of, f"qa[{index}]", fixture_id, issues, warnings)
        if question is not None:
            questions.append(question)
    conversation = sample.conversation
    first, last = sessions[0].date.date().isoformat(), sessions[-1].date.date().isoformat()
    turns = sum(len(s.turns) for s in sessions)
    gold = Gold(
        id=fixture_id,
        description=(
            f"LoCoMo sample {sample.sample_id}: {conversation.speaker_a} and {conversation.speaker_b} "
            f"talk in {_count(len(sessions), 'dated session')} from {first} to {last}, "
            f"{_count(turns, 'turn')}. "
            "LoCoMo annotates no entities or relations, so the gold has none: only its questions "
            "(its open-domain category is filed as multi-hop)."
        ),
        tags=list(TAGS),
        questions=questions,
    )
    gold_json = gold.model_dump(mode="json", exclude={"forbidden"})
    gold_bytes = (json.dumps(gold_json, indent=2, ensure_ascii=False) + "\n").encode()
    return ConvertedFixture(id=fixture_id, tape=tape, gold=gold_bytes, issues=issues, warnings=warnings)


def _sessions(conversation: _Conversation, where: str) -> list[_Session]:
    """The sessions that hold turns, in the order of their numbers, each with its parsed date."""
    extra = conversation.model_extra or {}
    dates = {int(m[1]): value for key, value in extra.items() if (m := _DATE_KEY.fullmatch(key))}
    sessions: list[_Session] = []
    for key, value in extra.items():
        match = _SESSION_KEY.fullmatch(key)
        if match is None:
            continue
        number = int(match[1])
        try:
            turns = _TURNS.validate_python(value)
        except ValidationError as exc:
            raise FixtureError(
                f"{where}: malformed conversation.{key}: {describe_validation_error(exc)}"
            ) from exc
        if not turns:
            continue  # a session without turns has nothing to date
        if number not in dates:
            raise FixtureError(f"{where}: {key} has turns but no {key}_date_time")
        sessions.append(
            _Session(number=number, date=_parse_date(dates[number], f"{key}_date_time", where), turns=turns)
        )
    if not sessions:
        raise FixtureError(f"{where}: the conversation has no session with turns")
    return sorted(sessions, key=lambda s: s.number)


def _parse_date(value: Any, key: str, where: str) -> datetime:
    if isinstance(value, str):
        text = " ".join(value.split())
        for layout in _DATE_FORMATS:
            try:
                return datetime.strptime(text, layout).replace(tzinfo=UTC)
            except ValueError:
                continue
    raise FixtureError(f"{where}: {key} {value!r} is not a date like '1:56 pm on 8 May, 2023'")


def _tape(conversation: _Conversation, sessions: list[_Session], where: str) -> tuple[bytes, dict[str, int]]:
    """The tape of the sessions, and the entry id of each turn's message by ``dia_id``."""
    speakers = {conversation.speaker_a.strip(), conversation.speaker_b.strip()}
    builder = TapeBuilder(where)
    builder.restart_clock(sessions[0].date, _SECOND)
    builder.begin()
    entry_of: dict[str, int] = {}
    previous: _Session | None = None
    for session in sessions:
        builder.close_run()  # the last run of a session ends in that session
        if previous is not None:
            ends = builder.next_date()
            if session.date < ends:
                raise FixtureError(
                    f"{where}: session_{session.number} ({session.date.isoformat()}) begins before "
                    f"session_{previous.number} ends ({ends.isoformat()})"
                )
            builder.restart_clock(session.date, _SECOND)
        for turn in session.turns:
            speaker = turn.speaker.strip()
            if speaker not in speakers:
                raise FixtureError(
                    f"{where}: turn {turn.dia_id}: speaker {turn.speaker!r} is neither speaker_a "
                    f"{conversation.speaker_a!r} nor speaker_b {conversation.speaker_b!r}"
                )
            if turn.dia_id in entry_of:
                raise FixtureError(f"{where}: dia_id {turn.dia_id!r} names two turns")
            entry_of[turn.dia_id] = builder.user(turn.dia_id, turn.message(), speaker)
        previous = session
    return builder.tape(), entry_of


def _question(
    item: Any,
    entry_of: dict[str, int],
    label: str,
    fixture_id: str,
    issues: FixtureIssues,
    warnings: list[str],
) -> Question | None:
    """One LoCoMo question as a :class:`Question`, or None (recorded in ``issues``) when it cannot be."""

    def drop(reason: str) -> None:
        issues.dropped_questions.append(f"{label}: {reason}")
        warnings.append(f"{fixture_id}: {label}: question dropped: {reason}")

    try:
        source = _Question.model_validate(item)
    except ValidationError as exc:
        drop(describe_validation_error(exc))
        return None
    category = CATEGORIES[source.category]
    evidence: list[int] = []
    if category == "unanswerable":
        answer = UNKNOWN  # the adversarial answer is the trap, never a right answer
    else:
        answer = _answer_text(source.answer)
        if not answer:
            drop(f"no answer (category {source.category})")
            return None
        for reference in _references(source.evidence):
            entry_id = entry_of.get(reference)
            if entry_id is None:
                warnings.append(
                    f"{fixture_id}: {label} ({source.question!r}): evidence {reference!r} names no turn"
                )
                if reference not in issues.unknown_evidence:
                    issues.unknown_evidence.append(reference)
            elif entry_id not in evidence:
                evidence.append(entry_id)
    try:
        return Question(question=source.question.strip(), answer=answer, category=category, evidence=evidence)
    except ValidationError as exc:
        drop(describe_validation_error(exc))
        return None


def _answer_text(answer: str | int | float | None) -> str:
    if answer is None:
        return ""
    if isinstance(answer, float) and answer.is_integer():
        return str(int(answer))  # JSON 2022.0 is the year 2022
    return str(answer).strip()


def _references(evidence: list[str]) -> list[str]:
    return [part for value in evidence for part in _EVIDENCE_SEPARATORS.split(value) if part]


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _json_kind(value: Any) -> str:
    match value:
        case dict():
            return "an object"
        case list():
            return "an array"
        case str():
            return "a string"
        case bool() | None:
            return json.dumps(value)
        case _:
            return "a number"
