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
  question is kept without it. Each question keeps LoCoMo's own category as LoCoMo numbers and
  names it (``source_category``: ``1 multi-hop``, ``2 temporal``, ``3 open-domain``, ``4
  single-hop``, ``5 adversarial``; some harnesses mislabel them), beside the project's category:
  multi-hop, temporal, open-domain (it also needs knowledge from outside the conversation),
  single-hop and unanswerable, with the answer ``unknown`` and no evidence; an adversarial
  question's ``adversarial_answer`` is the trap, not an accepted form, and is dropped. An
  open-domain answer that lists alternatives after a ``;`` keeps the first as the answer and the
  others as accepted forms. A question that cannot be converted (no answer, a category outside
  1-5) is dropped and reported in :attr:`FixtureIssues.dropped_questions`.
* **A cut.** ``sessions=N`` keeps a conversation's first N sessions, for quick loops: the tape
  ends with session N, and a question whose evidence lies in a later session is left out (counted
  in :attr:`FixtureIssues.beyond_cut`, never reported as dropped).
* **Gold.** LoCoMo annotates no entities or relations, so the gold has none (its description
  says so); tags ``locomo`` and ``foreign``. ``event_summary``, ``observation`` and
  ``session_summary`` are ignored.

A sample that cannot be imported (a missing field, a session without a readable date, a turn
from a third speaker, a ``dia_id`` used twice, sessions dated out of order) is skipped and
counted in :attr:`ImportReport.skipped` with the reason. The file is read whole (LoCoMo's are a
few megabytes); the output is byte-identical for the same input.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection
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
    QUESTIONS_ONLY,
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

__all__ = [
    "CATEGORIES",
    "FIXTURE_PREFIX",
    "SOURCE_CATEGORIES",
    "SPLITS",
    "TAGS",
    "import_locomo",
    "locomo_fixtures",
]

FIXTURE_PREFIX = "locomo-"
"""A sample's fixture id is this prefix and its ``sample_id``."""
TAGS = ("locomo", "foreign", QUESTIONS_ONLY)
"""The tags of every imported fixture."""
CATEGORIES: dict[int, QuestionCategory] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "unanswerable",
}
"""LoCoMo's question categories and the categories of :class:`~bub_semantic_memory.evals.Question`."""
SOURCE_CATEGORIES: dict[int, str] = {
    1: "1 multi-hop",
    2: "2 temporal",
    3: "3 open-domain",
    4: "4 single-hop",
    5: "5 adversarial",
}
"""LoCoMo's categories as LoCoMo numbers and names them (a question's ``source_category``)."""
SPLITS: dict[str, tuple[str, ...]] = {
    "tune": ("conv-30", "conv-41", "conv-42", "conv-43"),
    "test": ("conv-44", "conv-47", "conv-48", "conv-50"),
}
"""The fixed split of the eight LoCoMo conversations the project uses, by ``sample_id``: prompts,
ranking and rendering are decided on ``tune``; ``test`` is only reported on."""

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


def import_locomo(
    path: Path,
    out: Path,
    *,
    samples: Collection[str] | None = None,
    sessions: int | None = None,
    strict: bool = False,
) -> ImportReport:
    """Convert the samples of a LoCoMo-layout JSON file into fixture directories under ``out``.

    Each sample becomes ``out/locomo-<sample_id>/{tape.jsonl,gold.json}`` (see the module
    docstring for what is kept and how). Existing fixture directories with the same ids are
    overwritten; others are left alone.

    Args:
        path: the JSON file: an array of LoCoMo samples.
        out: the fixtures directory (created if needed).
        samples: only these ``sample_id``\\ s (None: all); one the file lacks is an error.
        sessions: keep each conversation's first N sessions and the questions they answer
            (None: all of it).
        strict: fail on any problem (a sample that cannot be imported, an evidence
            reference to no turn, a question dropped), writing nothing.

    Returns:
        The ids written, the samples skipped with their reasons, each fixture's issues,
        and one warning line per problem.

    Raises:
        FixtureError: the file cannot be read, is not JSON or is not an array; a fixture
            cannot be written; with ``strict``, the first problem found.
    """
    if sessions is not None and sessions < 1:
        raise FixtureError(f"a cut keeps at least one session, not {sessions}")
    raw_samples = _read_samples(path)
    wanted = set(samples) if samples is not None else None
    if wanted is not None:
        present = {raw.get("sample_id") for raw in raw_samples if isinstance(raw, dict)}
        if missing := sorted(wanted - present):
            raise FixtureError(f"LoCoMo file {path} has no sample {', '.join(missing)}")
    report = ImportReport()
    converted: list[ConvertedFixture] = []
    seen: dict[str, str] = {}
    for index, raw in enumerate(raw_samples):
        where = f"{path}[{index}]"
        sample_id = raw.get("sample_id") if isinstance(raw, dict) else None
        if wanted is not None and sample_id not in wanted:
            continue
        try:
            item = _convert(raw, where, seen, sessions)
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


def _convert(raw: Any, where: str, seen: dict[str, str], cut: int | None = None) -> ConvertedFixture:
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
    every_session = _sessions(sample.conversation, where)
    sessions = every_session[:cut] if cut is not None else every_session
    tape, entry_of = _tape(sample.conversation, sessions, where)
    later = {turn.dia_id for session in every_session[len(sessions) :] for turn in session.turns}
    issues = FixtureIssues()
    warnings: list[str] = []
    questions: list[Question] = []
    for index, item in enumerate(sample.qa):
        if later and _answered_later(item, later):
            issues.beyond_cut.append(f"qa[{index}]")
            continue
        question = _question(item, entry_of, f"qa[{index}]", fixture_id, issues, warnings)
        if question is not None:
            questions.append(question)
    conversation = sample.conversation
    first, last = sessions[0].date.date().isoformat(), sessions[-1].date.date().isoformat()
    turns = sum(len(s.turns) for s in sessions)
    shown = f"the first {_count(len(sessions), 'session')} of {len(every_session)}: " if later else ""
    gold = Gold(
        id=fixture_id,
        description=(
            f"LoCoMo sample {sample.sample_id}: {conversation.speaker_a} and {conversation.speaker_b} "
            f"talk in {shown}{_count(len(sessions), 'dated session')} from {first} to {last}, "
            f"{_count(turns, 'turn')}. "
            "LoCoMo annotates no entities or relations, so the gold has none: only its questions "
            "(each keeps LoCoMo's own category)."
        ),
        tags=list(TAGS),
        questions=questions,
    )
    gold_json = gold.model_dump(mode="json", exclude={"forbidden"})
    gold_bytes = (json.dumps(gold_json, indent=2, ensure_ascii=False) + "\n").encode()
    return ConvertedFixture(id=fixture_id, tape=tape, gold=gold_bytes, issues=issues, warnings=warnings)


def _answered_later(item: Any, later: set[str]) -> bool:
    """Whether a question's evidence names a turn of a session a cut left out."""
    evidence = item.get("evidence") if isinstance(item, dict) else None
    values = [value for value in evidence if isinstance(value, str)] if isinstance(evidence, list) else []
    return any(reference in later for reference in _references(values))


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
    accepted: list[str] = []
    if category == "unanswerable":
        answer = UNKNOWN  # the adversarial answer is the trap, never a right answer
    else:
        answer = _answer_text(source.answer)
        if category == "open-domain" and ";" in answer:  # alternatives, the first is LoCoMo's own
            answer, *accepted = [part.strip() for part in answer.split(";") if part.strip()]
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
        return Question(
            question=source.question.strip(),
            answer=answer,
            accepted=accepted,
            category=category,
            evidence=evidence,
            source_category=SOURCE_CATEGORIES[source.category],
        )
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


_IMPORTED = "imported.json"


def locomo_fixtures(
    path: Path,
    cache_dir: Path,
    *,
    split: str | None = None,
    samples: Collection[str] = (),
    sessions: int | None = None,
) -> tuple[Path, list[str]]:
    """LoCoMo's conversations as fixtures, read from ``path`` where it lies (the data set is not the
    project's to copy), imported once under ``cache_dir`` and reused while the file is unchanged.

    Args:
        split: ``tune`` or ``test`` (:data:`SPLITS`); or ``samples`` by ``sample_id``; neither: all.
        sessions: each conversation's first N sessions only (see :func:`import_locomo`).

    Returns:
        The fixture directory and the ids of the fixtures selected.

    Raises:
        FixtureError: both ``split`` and ``samples``, an unknown split, a sample the file lacks, or
            a file that cannot be read.
    """
    if split is not None and samples:
        raise FixtureError("give --split or --sample, not both")
    if split is not None and split not in SPLITS:
        raise FixtureError(f"unknown split {split!r}: choose from {', '.join(SPLITS)}")
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError as exc:
        raise FixtureError(f"cannot read LoCoMo file {path}: {exc.strerror or exc}") from exc
    out = cache_dir / f"{digest}-{'all' if sessions is None else f'first-{sessions}-sessions'}"
    if not (out / _IMPORTED).exists():
        report = import_locomo(path, out, sessions=sessions)
        (out / _IMPORTED).write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    chosen = SPLITS[split] if split is not None else tuple(samples)
    imported = ImportReport.model_validate_json((out / _IMPORTED).read_bytes()).fixtures
    ids = [fixture for fixture in imported if not chosen or fixture.removeprefix(FIXTURE_PREFIX) in chosen]
    if missing := sorted(set(chosen) - {fixture.removeprefix(FIXTURE_PREFIX) for fixture in ids}):
        raise FixtureError(f"LoCoMo file {path} has no sample {', '.join(missing)}")
    return out, ids
