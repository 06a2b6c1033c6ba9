"""Turning plain annotated conversations into eval fixtures (a Bub tape plus gold).

A source file is JSONL, one conversation per line::

    {"id": "aliases-bob", "description": "...", "tags": ["people"],
     "turns": [{"speaker": "user", "text": "Call Robert, he goes by Bob."},
               {"speaker": "assistant", "text": "", "tool_calls": [{"name": "crm.lookup", "arguments": {}}]},
               {"speaker": "tool", "name": "crm.lookup", "text": "{...}"},
               {"speaker": "assistant", "text": "Done."}],
     "gold": {"entities": [...], "relations": [...],
              "questions": [{"question": "...", "answer": "Bob", "evidence_turns": [0]}],
              "facts": [{"statement": "Robert goes by Bob", "kind": "state", "about": ["Robert"],
                         "evidence_turns": [0]}]}}

``description``, ``tags``, ``tool_calls``, ``name``, ``date``, ``questions`` and ``facts`` are optional.
Speakers: ``assistant`` (or ``agent``, ``bot``) is the assistant; ``tool`` is the
result of the preceding assistant turn's tool calls (consecutive tool turns answer
the calls of one assistant turn, and every call must be answered); ``user`` or any
other name is a user message from that sender (a group chat).

:func:`import_conversations` writes ``<out>/<id>/tape.jsonl`` shaped like a real
Bub 0.5 tape (bootstrap anchor and handoff; per user turn ``loop.start``, a system
prompt and the user message with bub's ``sender_id=...`` header; assistant messages,
tool calls and results; a ``run`` event closing each run) and ``<out>/<id>/gold.json``.
Entry dates are synthetic (2026-01-05T09:00:00+00:00, one minute apart), so the same
input always gives byte-identical output. A user turn may carry a ``date`` (ISO 8601 with
an offset): the run it opens starts then, and the entries after it follow one minute apart,
so a conversation can hold sessions days apart. Dates are written in UTC and never go back.

A source question names the turns that state its answer (``evidence_turns``, 0-based
indices into ``turns``); the gold gets the ids of those turns' entries as ``evidence``
(a user or assistant message, a tool call, or the tool result entry that holds a tool
turn's text). Entry ids are the importer's to assign, so a source never gives ``evidence``.
A source fact (:class:`~bub_semantic_memory.evals.GoldFact`) names its turns the same
way, and must name at least one; a conversation with facts also gets ``<out>/<id>/facts.json``
(and one without loses a ``facts.json`` left from an earlier import).

Import streams: conversations are read, converted and written one at a time, so a
file of any size imports in bounded memory. A conversation that cannot be converted
(malformed JSON, an empty turn, a tool result without a call...) is skipped with one
warning naming its file, line and id and the reason, and counted in
:attr:`ImportReport.skipped`; the others are written. With ``strict=True`` the first such
conversation raises :class:`FixtureError` instead, and nothing is written (the source is
checked in a first pass, then written in a second).

Gold problems (types outside the ontology, relation endpoints that are not entity names,
names that never occur in the conversation) are kept as written and reported in the
:class:`ImportReport`. Speaker names count as mentions: the transcript shows each user
line with its sender (``[5] user (Speaker 1): ...``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, model_validator

from bub_semantic_memory._errors import FixtureError
from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory._models import normalize_name
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.evals._dataset import (
    FACTS_FILE,
    GOLD_FILE,
    TAPE_FILE,
    Gold,
    GoldFact,
    GoldFacts,
    Question,
    describe_validation_error,
)

__all__ = [
    "ConvertedFixture",
    "FixtureIssues",
    "ImportReport",
    "SkippedConversation",
    "TapeBuilder",
    "check_fixture_id",
    "import_conversations",
    "write_fixtures",
]

ASSISTANT_SPEAKERS = frozenset({"assistant", "agent", "bot"})
TOOL_SPEAKER = "tool"
_HUMAN_SPEAKERS = frozenset({"user", "human"})
_FIXTURE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
_STEP = timedelta(minutes=1)
_MODEL = "fixture"
_SYSTEM_PROMPT = "You are Bub, a helpful assistant. Answer the user; call tools when you need facts."
_BOOTSTRAP_STATE = {"owner": "human"}


class _SourceToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: Any = Field(default_factory=dict)


class _SourceTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    speaker: str = Field(min_length=1)
    text: str = ""
    tool_calls: list[_SourceToolCall] = Field(default_factory=list)
    name: str | None = None
    date: AwareDatetime | None = None


class _SourceQuestion(Question):
    """A gold question as a source writes it: evidence as turn indices, never entry ids."""

    evidence_turns: list[int] = Field(default_factory=list)

    @model_validator(mode="after")
    def _evidence_as_turns(self) -> _SourceQuestion:
        if self.evidence:
            raise ValueError(
                "give evidence_turns (0-based turn indices): entry ids are assigned by the importer"
            )
        if self.category == "unanswerable" and self.evidence_turns:
            raise ValueError("an unanswerable question has no evidence_turns")
        return self


class _SourceFact(GoldFact):
    """A gold fact as a source writes it: evidence as turn indices (at least one), never entry ids."""

    evidence_turns: list[int] = Field(default_factory=list)

    @model_validator(mode="after")
    def _evidence_as_turns(self) -> _SourceFact:
        if self.evidence:
            raise ValueError(
                "give evidence_turns (0-based turn indices): entry ids are assigned by the importer"
            )
        if not self.evidence_turns:
            raise ValueError("a fact names the turns that state it in evidence_turns")
        return self


class _SourceGold(Gold):
    questions: list[_SourceQuestion] = Field(default_factory=list)  # type: ignore[assignment]
    facts: list[_SourceFact] = Field(default_factory=list)


class _SourceConversation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    description: str | None = None
    tags: list[str] | None = None
    turns: list[_SourceTurn] = Field(min_length=1)
    gold: _SourceGold


class FixtureIssues(BaseModel):
    """Gold problems found in one imported conversation (all kept in the output).

    Attributes:
        unknown_entity_types: entity types the ontology does not define.
        unknown_relation_types: relation types the ontology does not define.
        dangling_endpoints: relation endpoints that are not the name of a gold entity
            (compared through :func:`~bub_semantic_memory._models.normalize_name`; an alias is not enough).
        unmentioned_names: gold names, aliases and forbidden names that never occur in the
            conversation text (turn texts, tool arguments and tool results, compared as
            normalised whole words).
        forbidden_gold_names: forbidden names that are also gold names or aliases.
        unknown_evidence: evidence references of a question that name no turn of the
            conversation (the question is kept without them).
        dropped_questions: questions that could not be converted, each with its reason.
        dangling_fact_entities: names in a fact's ``about`` that are no gold entity's name or
            alias (the fact is kept; a memory cannot hold it, nor a prediction match it).
        beyond_cut: questions left out because a cut of the conversation (its first sessions)
            ends before the turns that answer them.
    """

    unknown_entity_types: list[str] = Field(default_factory=list)
    unknown_relation_types: list[str] = Field(default_factory=list)
    dangling_endpoints: list[str] = Field(default_factory=list)
    unmentioned_names: list[str] = Field(default_factory=list)
    forbidden_gold_names: list[str] = Field(default_factory=list)
    unknown_evidence: list[str] = Field(default_factory=list)
    dropped_questions: list[str] = Field(default_factory=list)
    beyond_cut: list[str] = Field(default_factory=list)
    dangling_fact_entities: list[str] = Field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(
            self.unknown_entity_types
            or self.unknown_relation_types
            or self.dangling_endpoints
            or self.unmentioned_names
            or self.forbidden_gold_names
            or self.unknown_evidence
            or self.dropped_questions
            or self.dangling_fact_entities
        )


class SkippedConversation(BaseModel):
    """A conversation that was not imported: where it is and why."""

    where: str
    id: str | None = None
    reason: str


class ImportReport(BaseModel):
    """What an import (:func:`import_conversations`, ``import_locomo``) wrote and what looked wrong.

    Attributes:
        fixtures: ids of the fixtures written, in source order.
        skipped: conversations that could not be imported, in source order.
        issues: per fixture id, the gold problems found (fixtures without problems are absent).
        warnings: one human-readable line per skipped conversation and per gold problem.
    """

    fixtures: list[str] = Field(default_factory=list)
    skipped: list[SkippedConversation] = Field(default_factory=list)
    issues: dict[str, FixtureIssues] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)

    def summary(self) -> str:
        """One line: how many were imported and skipped."""
        line = f"{len(self.fixtures)} imported"
        if self.skipped:
            line += f", {len(self.skipped)} skipped"
        problems = sum(1 for issues in self.issues.values() if issues)
        if problems:
            line += f", {problems} with gold problems"
        return line


@dataclass
class ConvertedFixture:
    """One converted conversation, ready to be written: its id, tape and gold bytes, what looked wrong.

    ``facts`` holds the bytes of its ``facts.json`` (None: it has no gold facts).
    """

    id: str
    tape: bytes
    gold: bytes
    issues: FixtureIssues
    warnings: list[str]
    facts: bytes | None = None


def write_fixtures(items: Iterable[ConvertedFixture], out: Path, report: ImportReport) -> None:
    """Write each converted fixture as ``out/<id>/{tape.jsonl,gold.json}`` and record it in ``report``.

    A fixture with gold facts also gets ``facts.json``; one without loses any ``facts.json`` an
    earlier import left (stale facts would be scored against the new tape). Existing fixture
    directories with the same ids are overwritten; others are left alone.

    Args:
        items: the fixtures, written in this order (consumed lazily, one at a time).
        out: the fixtures directory (created if needed).
        report: receives each id, its issues (when it has any) and its warnings.

    Raises:
        FixtureError: a directory or file cannot be written.
    """
    for item in items:
        folder = out / item.id
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / TAPE_FILE).write_bytes(item.tape)
            (folder / GOLD_FILE).write_bytes(item.gold)
            if item.facts is not None:
                (folder / FACTS_FILE).write_bytes(item.facts)
            else:
                (folder / FACTS_FILE).unlink(missing_ok=True)
        except OSError as exc:
            raise FixtureError(f"cannot write fixture {folder}: {exc.strerror or exc}") from exc
        report.fixtures.append(item.id)
        if item.issues or item.issues.beyond_cut:  # a cut is no problem, but it is said
            report.issues[item.id] = item.issues
        report.warnings.extend(item.warnings)


def check_fixture_id(fixture_id: str, what: str) -> None:
    """Check that ``fixture_id`` can name a fixture directory (no path separators, no leading dot).

    Args:
        fixture_id: the id to check.
        what: what the id belongs to, with its place (``"src.jsonl:3: conversation"``);
            the error message starts with it.

    Raises:
        FixtureError: the id cannot name a directory.
    """
    if not _FIXTURE_ID.match(fixture_id):
        raise FixtureError(
            f"{what} id {fixture_id!r} must be 1-128 letters, digits, "
            "'.', '_' or '-' (it names the fixture directory)"
        )


def import_conversations(
    source: Path, out: Path, *, ontology: Ontology, strict: bool = False
) -> ImportReport:
    """Convert plain conversations into fixture directories under ``out``, one at a time.

    Existing fixture directories with the same ids are overwritten; others are left alone.

    Args:
        source: a JSONL file, or a directory whose ``*.jsonl`` files are read in name order.
        out: the fixtures directory (created if needed).
        ontology: types to check the gold against: the dataset's own ``ontology.yaml``
            or the ontology of the prompt the fixtures will be evaluated with.
        strict: fail on the first conversation that cannot be imported, writing nothing.

    Raises:
        FixtureError: the source is missing or empty; with ``strict``, a conversation
            cannot be imported (the message names the file and line).
    """
    files = _source_files(source)
    if strict:
        for _ in _conversions(files, ontology, ImportReport(), strict=True):
            pass  # first pass: everything must convert before anything is written
    report = ImportReport()
    write_fixtures(_conversions(files, ontology, report, strict=strict), out, report)
    return report


def _conversions(
    files: list[Path], ontology: Ontology, report: ImportReport, *, strict: bool
) -> Iterator[ConvertedFixture]:
    """Convert conversations one by one; skip (and record in ``report``) those that fail."""
    seen: dict[str, str] = {}
    for path in files:
        for number, line in _lines(path):
            where = f"{path}:{number}"
            conversation_id: str | None = None
            try:
                conversation = _parse(line, where)
                conversation_id = conversation.id
                if conversation.id in seen:
                    raise FixtureError(
                        f"{where}: duplicate conversation id {conversation.id!r} "
                        f"(first at {seen[conversation.id]})"
                    )
                converted = _convert(conversation, ontology, where)
            except FixtureError as exc:
                if strict:
                    raise
                report.skipped.append(SkippedConversation(where=where, id=conversation_id, reason=str(exc)))
                report.warnings.append(f"skipped {exc}")
                continue
            seen[conversation.id] = where
            yield converted


def _source_files(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    if source.is_dir():
        files = sorted(p for p in source.glob("*.jsonl") if p.is_file())
        if not files:
            raise FixtureError(f"no *.jsonl files in {source}")
        return files
    raise FixtureError(f"conversation source {source} does not exist")


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines of ``path`` with their numbers, read lazily."""
    try:
        with path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield number, line
    except OSError as exc:
        raise FixtureError(f"cannot read conversations {path}: {exc.strerror or exc}") from exc


def _parse(line: bytes, where: str) -> _SourceConversation:
    try:
        conversation = _SourceConversation.model_validate_json(line)
    except ValidationError as exc:
        raise FixtureError(f"{where}: malformed conversation: {describe_validation_error(exc)}") from exc
    check_fixture_id(conversation.id, f"{where}: conversation")
    return conversation


def _convert(conversation: _SourceConversation, ontology: Ontology, where: str) -> ConvertedFixture:
    builder = TapeBuilder(f"{where}: conversation {conversation.id!r}")
    tape = builder.build(conversation.turns)
    questions = [
        _gold_question(question, builder.turn_entries, f"{where}: conversation {conversation.id!r}")
        for question in conversation.gold.questions
    ]
    facts = [
        _gold_fact(fact, builder.turn_entries, f"{where}: conversation {conversation.id!r}")
        for fact in conversation.gold.facts
    ]
    gold = Gold.model_validate(conversation.gold.model_dump(exclude={"questions", "facts"})).model_copy(
        update={
            "id": conversation.id,
            "questions": questions,
            "description": (
                conversation.description
                if conversation.description is not None
                else conversation.gold.description
            ),
            "tags": list(conversation.tags if conversation.tags is not None else conversation.gold.tags),
        }
    )
    optional_empty = {"forbidden"} if not gold.forbidden else set()  # only where a fixture needs it
    gold_json = gold.model_dump(mode="json", exclude=optional_empty)
    gold_bytes = (json.dumps(gold_json, indent=2, ensure_ascii=False) + "\n").encode()
    issues, warnings = _check_gold(conversation, gold, ontology)
    warnings.extend(_check_facts(conversation.id, gold, facts, issues))
    return ConvertedFixture(
        id=conversation.id,
        tape=tape,
        gold=gold_bytes,
        issues=issues,
        warnings=warnings,
        facts=_facts_bytes(facts) if facts else None,
    )


def _gold_question(question: _SourceQuestion, turn_entries: list[int], where: str) -> Question:
    """The gold form of a source question: its evidence turns become the ids of their entries."""
    evidence = _entries_of(question.evidence_turns, turn_entries, f"{where}: question {question.question!r}")
    data = question.model_dump(exclude={"evidence_turns"})
    return Question.model_validate({**data, "evidence": evidence})


def _gold_fact(fact: _SourceFact, turn_entries: list[int], where: str) -> GoldFact:
    """The gold form of a source fact: its evidence turns become the ids of their entries."""
    evidence = _entries_of(fact.evidence_turns, turn_entries, f"{where}: fact {fact.statement!r}")
    return GoldFact.model_validate({**fact.model_dump(exclude={"evidence_turns"}), "evidence": evidence})


def _entries_of(turns: list[int], turn_entries: list[int], where: str) -> list[int]:
    """The sorted ids of the entries holding ``turns`` (0-based turn indices)."""
    evidence: set[int] = set()
    for turn in turns:
        if not 0 <= turn < len(turn_entries):
            raise FixtureError(
                f"{where}: evidence turn {turn} is not a turn "
                f"(the conversation has turns 0-{len(turn_entries) - 1})"
            )
        evidence.add(turn_entries[turn])
    return sorted(evidence)


def _facts_bytes(facts: list[GoldFact]) -> bytes:
    """``facts.json``: fields left at their defaults (no topic, no date) are not written."""
    data = GoldFacts(facts=facts).model_dump(mode="json", exclude_defaults=True)
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


@dataclass
class TapeBuilder:
    """Accumulates the entries of one Bub tape; raises FixtureError naming ``where``.

    :meth:`build` turns a whole plain conversation into a tape. Importers of other layouts
    drive the parts instead: :meth:`begin`, :meth:`restart_clock` where the dates jump,
    :meth:`user` per message, :meth:`close_run`, then :meth:`tape`.

    Entry ``n`` is dated ``origin + step * (n - first)``, where ``first`` is the entry at
    which the clock was last restarted (entry 1 by default): one minute apart from
    2026-01-05T09:00:00+00:00 unless restarted.
    """

    where: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    run_open: bool = False
    call_counter: int = 0
    pending: list[tuple[str, str]] = field(default_factory=list)  # (call id, tool name), in call order
    answers: dict[int, str] = field(default_factory=dict)  # index into pending -> result text
    origin: datetime = _START
    step: timedelta = _STEP
    first: int = 1
    turn_entries: list[int] = field(default_factory=list)  # per turn, the id of the entry holding it
    result_turns: list[int] = field(default_factory=list)  # tool turns waiting for their result entry

    def build(self, turns: list[_SourceTurn]) -> bytes:
        """The tape of a plain conversation: bootstrap, then each turn in its role.

        A user turn's ``date`` starts a session: its run and those after it are dated from it.
        :attr:`turn_entries` then holds, per turn, the id of the entry that holds it.

        Raises:
            FixtureError: a turn cannot be converted (the message names it by number).
        """
        if turns and turns[0].date is not None:
            # bub writes its bootstrap entries just before the first message, not weeks earlier
            self.restart_clock(turns[0].date.astimezone(UTC) - 2 * _STEP, _STEP)
        self.begin()
        for number, turn in enumerate(turns, start=1):
            role = _role(turn.speaker)
            if role != "assistant" and turn.tool_calls:
                self._fail(number, f"only assistant turns can have tool_calls (speaker {turn.speaker!r})")
            if role != "tool" and turn.name is not None:
                self._fail(number, f"only tool turns can have a name (speaker {turn.speaker!r})")
            if role != "user" and turn.date is not None:
                self._fail(number, f"only user turns can have a date (speaker {turn.speaker!r})")
            if role == "tool":
                self._tool_result(number, turn)
                self.turn_entries.append(0)  # the result entry is written when the round is complete
                self.result_turns.append(number - 1)
                continue
            self._flush_results(number)
            if role == "assistant":
                self.turn_entries.append(self._assistant(number, turn))
            else:
                self.turn_entries.append(self._user_turn(number, turn))
        self._flush_results(None)
        return self.tape()

    def begin(self) -> None:
        """Add bub's bootstrap: the ``session/start`` anchor and its handoff event."""
        self._add("anchor", {"name": "session/start", "state": dict(_BOOTSTRAP_STATE)})
        self._add(
            "event",
            {"name": "handoff", "data": {"name": "session/start", "state": dict(_BOOTSTRAP_STATE)}},
        )

    def restart_clock(self, origin: datetime, step: timedelta) -> None:
        """Date the next entry ``origin`` and each one after it ``step`` later."""
        self.origin, self.step, self.first = origin, step, len(self.entries) + 1

    def next_date(self) -> datetime:
        """The date the next entry will get."""
        return self._date(len(self.entries) + 1)

    def user(self, turn: int | str, text: str, sender: str) -> int:
        """Add a user message from ``sender`` as bub records it; returns the message's entry id.

        The run of the previous message is closed first; the message opens one
        (``loop.start``, the system prompt, the message with bub's ``sender_id`` header).

        Args:
            turn: how error messages name the turn (its number, or the source's own id).
            text: the message.
            sender: the ``sender_id`` of bub's header (``human`` is bub's unnamed user).

        Raises:
            FixtureError: the text is blank, or the sender holds ``|`` or a line break.
        """
        if not text.strip():
            self._fail(turn, "empty user message")
        if any(ch in sender for ch in "|\n\r"):
            self._fail(turn, f"speaker {sender!r} cannot contain '|' or a line break")
        self.close_run()
        # The loop.start entry comes first; the header's date is that of the user message, two entries later.
        message_date = self._date(len(self.entries) + 3).isoformat()
        content = f"sender_id={sender}|channel=$cli|chat_id=fixture\n---Date: {message_date}---\n{text}"
        self._add("event", {"name": "loop.start", "data": {"model": _MODEL, "prompt": content}})
        self._add("system", {"content": _SYSTEM_PROMPT})
        entry_id = self._add("message", {"role": "user", "content": content})
        self.run_open = True
        return entry_id

    def close_run(self) -> None:
        """End the open run, if any, with bub's ``run`` event (status ok)."""
        if self.run_open:
            self._add("event", {"name": "run", "data": {"status": "ok"}})
            self.run_open = False

    def tape(self) -> bytes:
        """The tape so far, with any open run closed: one JSON entry per line."""
        self.close_run()
        return "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in self.entries).encode()

    def _user_turn(self, number: int, turn: _SourceTurn) -> int:
        """A plain conversation's user turn; its ``date``, if any, starts a session."""
        speaker = turn.speaker.strip()
        self.close_run()  # the previous run ends in its own session, before a new date applies
        if turn.date is not None:
            session = turn.date.astimezone(UTC)
            if session < self.next_date():
                self._fail(
                    number,
                    f"date {turn.date.isoformat()} is earlier than the entry before it "
                    f"({(self.next_date() - self.step).isoformat()}): dates never go back",
                )
            self.restart_clock(session, _STEP)
        return self.user(number, turn.text, "human" if speaker.casefold() in _HUMAN_SPEAKERS else speaker)

    def _fail(self, turn: int | str | None, message: str) -> NoReturn:
        where = f"turn {turn}" if turn is not None else "end of conversation"
        raise FixtureError(f"{self.where}: {where}: {message}")

    def _date(self, entry_id: int) -> datetime:
        return self.origin + self.step * (entry_id - self.first)

    def _add(self, kind: str, payload: dict[str, Any]) -> int:
        entry_id = len(self.entries) + 1
        date = self._date(entry_id).isoformat()
        self.entries.append({"id": entry_id, "kind": kind, "payload": payload, "meta": {}, "date": date})
        return entry_id

    def _assistant(self, number: int, turn: _SourceTurn) -> int:
        if not turn.tool_calls:
            if not turn.text.strip():
                self._fail(number, "empty assistant message without tool_calls")
            return self._add("message", {"role": "assistant", "content": turn.text})
        calls: list[dict[str, Any]] = []
        for call in turn.tool_calls:
            self.call_counter += 1
            call_id = f"call_{self.call_counter}"
            self.pending.append((call_id, call.name))
            arguments = json.dumps(call.arguments, ensure_ascii=False)
            calls.append(
                {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": arguments}}
            )
        payload: dict[str, Any] = {"calls": calls}
        if turn.text.strip():
            payload["content"] = turn.text
        return self._add("tool_call", payload)

    def _tool_result(self, number: int, turn: _SourceTurn) -> None:
        unanswered = [i for i in range(len(self.pending)) if i not in self.answers]
        if not unanswered:
            what = "an earlier tool turn already answered every call" if self.pending else "no tool call"
            self._fail(number, f"tool result without a preceding tool call ({what})")
        if turn.name is None:
            index = unanswered[0]
        else:
            matching = [i for i in unanswered if self.pending[i][1] == turn.name]
            if not matching:
                names = ", ".join(self.pending[i][1] for i in unanswered)
                self._fail(
                    number, f"tool result named {turn.name!r} matches no pending call (pending: {names})"
                )
            index = matching[0]
        self.answers[index] = turn.text

    def _flush_results(self, number: int | None) -> None:
        if not self.pending:
            return
        missing = [name for i, (_, name) in enumerate(self.pending) if i not in self.answers]
        if missing:
            self._fail(number, f"tool call(s) never answered by a tool turn: {', '.join(missing)}")
        entry_id = self._add("tool_result", {"results": [self.answers[i] for i in range(len(self.pending))]})
        for turn in self.result_turns:
            self.turn_entries[turn] = entry_id
        self.pending = []
        self.answers = {}
        self.result_turns = []


def _role(speaker: str) -> str:
    folded = speaker.strip().casefold()
    if folded in ASSISTANT_SPEAKERS:
        return "assistant"
    if folded == TOOL_SPEAKER:
        return "tool"
    return "user"


def _check_gold(
    conversation: _SourceConversation, gold: Gold, ontology: Ontology
) -> tuple[FixtureIssues, list[str]]:
    fid = conversation.id
    issues = FixtureIssues()
    warnings: list[str] = []

    for entity in gold.entities:
        if entity.type not in ontology.entity_types:
            warnings.append(f"{fid}: entity {entity.name!r} has unknown type {entity.type!r}")
            if entity.type not in issues.unknown_entity_types:
                issues.unknown_entity_types.append(entity.type)

    primary = {normalize_name(e.name) for e in gold.entities}
    alias_of = {normalize_name(a): e.name for e in gold.entities for a in e.aliases}
    for relation in gold.relations:
        label = f"{relation.source} -{relation.type}-> {relation.target}"
        if relation.type not in ontology.relation_types:
            warnings.append(f"{fid}: relation {label!r} has unknown type {relation.type!r}")
            if relation.type not in issues.unknown_relation_types:
                issues.unknown_relation_types.append(relation.type)
        for endpoint in (relation.source, relation.target):
            folded = normalize_name(endpoint)
            if folded in primary:
                continue
            hint = f" (an alias of {alias_of[folded]!r})" if folded in alias_of else ""
            warnings.append(f"{fid}: relation {label!r}: {endpoint!r} is not a gold entity name{hint}")
            if endpoint not in issues.dangling_endpoints:
                issues.dangling_endpoints.append(endpoint)

    haystack = fold_text(_conversation_text(conversation.turns))
    for entity in gold.entities:
        for name in (entity.name, *entity.aliases):
            if name in issues.unmentioned_names or is_mentioned(name, haystack):
                continue
            kind = "name" if name == entity.name else f"alias of {entity.name!r}"
            warnings.append(f"{fid}: gold {kind} {name!r} does not occur in the conversation")
            issues.unmentioned_names.append(name)

    for name in gold.forbidden:
        if normalize_name(name) in primary or normalize_name(name) in alias_of:
            warnings.append(f"{fid}: forbidden name {name!r} is also a gold name")
            issues.forbidden_gold_names.append(name)
        elif not is_mentioned(name, haystack):
            warnings.append(f"{fid}: forbidden name {name!r} does not occur in the conversation")
            issues.unmentioned_names.append(name)
    return issues, warnings


def _check_facts(fixture_id: str, gold: Gold, facts: list[GoldFact], issues: FixtureIssues) -> list[str]:
    """Warn about, and record in ``issues``, fact ``about`` names that are no gold entity name or alias."""
    names = {normalize_name(n) for e in gold.entities for n in (e.name, *e.aliases)}
    warnings: list[str] = []
    for fact in facts:
        for name in fact.about:
            if normalize_name(name) in names:
                continue
            warnings.append(f"{fixture_id}: fact {fact.statement!r} is about {name!r}: no gold entity")
            if name not in issues.dangling_fact_entities:
                issues.dangling_fact_entities.append(name)
    return warnings


def _conversation_text(turns: list[_SourceTurn]) -> str:
    """What the transcript shows of the conversation: texts, tool arguments, and user speakers."""
    parts: list[str] = []
    for turn in turns:
        if _role(turn.speaker) == "user":
            parts.append(turn.speaker)  # rendered as "[n] user (<speaker>): ..."
        parts.append(turn.text)
        parts.extend(json.dumps(call.arguments, ensure_ascii=False) for call in turn.tool_calls)
    return "\n".join(parts)
