"""Reading Bub tapes and rendering them as numbered transcripts for the extractor.

Two jobs, both tolerant of bad input:

* :func:`read_tape_file` reads a Bub tape JSONL file (or :func:`coerce_entries`
  takes in-memory ``bub.tape.Entry`` objects or dicts). A malformed line, an
  unknown kind, a missing field, a non-dict payload or undecodable bytes never
  stops the reader: the line is skipped, and a :class:`ReadIssue` naming it is
  recorded in the :class:`ReadReport` and logged.
* :func:`render_transcript` turns entries into :class:`TranscriptLine` objects,
  one per entry that carries conversation: user and assistant messages (with
  bub's ``sender_id=...|channel=...`` header and date line stripped), tool calls,
  tool results and anchors. System prompts, loop events and errors are dropped.
  Each line starts with ``[<entry id>]`` so the model's evidence can point back.
  Secrets are redacted before a long text is cut (so a cut never leaves part of a
  key behind), and the tags that delimit the transcript in the prompts
  (``<transcript>``, ``<context>``) are neutralised, so conversation text cannot
  close its data block and speak outside it.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bub_semantic_memory._errors import TapeReadError

__all__ = [
    "KNOWN_KINDS",
    "LINE_BREAK",
    "Entry",
    "LineLimits",
    "ReadIssue",
    "ReadReport",
    "Transcript",
    "TranscriptLine",
    "coerce_entries",
    "parse_tape_lines",
    "read_tape_file",
    "render_transcript",
    "strip_bub_header",
]

logger = logging.getLogger(__name__)

KNOWN_KINDS = frozenset({"anchor", "event", "system", "message", "tool_call", "tool_result", "error"})
_HEADER_LINE = re.compile(r"^[A-Za-z_][\w]*=[^|\n]*(?:\|[A-Za-z_][\w]*=[^|\n]*)*$")
_DATE_LINE = re.compile(r"^---Date: [^\n]*---$")
_DEFAULT_SENDERS = frozenset({"", "human", "user", "default"})
LINE_BREAK = " ⏎ "
"""How a line break inside one entry is shown, so that every entry stays one numbered line."""
# The tags the prompt templates wrap conversation in; in conversation text they become ‹...›.
_DELIMITER_TAG = re.compile(r"<\s*(/?)\s*(transcript|context)\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class Entry:
    """One tape entry: the same shape as ``bub.tape.Entry``.

    Kept separate so that reading and extracting tapes does not import bub (whose
    import loads a ``.env`` file); bub's own entries are accepted wherever these are.
    """

    id: int
    kind: str
    payload: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    date: str = ""


@dataclass(frozen=True)
class ReadIssue:
    """One skipped or degraded piece of input: where it was and why."""

    reason: str
    message: str
    line: int | None = None
    entry_id: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else f"entry {self.entry_id}"
        return f"{where}: {self.message}"


_REASON_LABELS = {"malformed_json": "malformed JSON", "invalid_utf8": "invalid UTF-8"}


@dataclass
class ReadReport:
    """What a read or render skipped, truncated or repaired, counted by reason."""

    source: str = "<memory>"
    entries: int = 0
    issues: list[ReadIssue] = field(default_factory=list)
    log_level: int = logging.WARNING
    """Level at which each issue is logged (a CLI that prints a summary logs them at DEBUG)."""

    def add(self, issue: ReadIssue) -> None:
        """Record and log one issue."""
        self.issues.append(issue)
        logger.log(self.log_level, "%s: %s", self.source, issue)

    def summary(self) -> str:
        """The issues in one line: ``4 lines skipped or repaired: 3 malformed JSON, 1 not an object``."""
        lines = len({(issue.line, issue.entry_id) for issue in self.issues})
        counts = ", ".join(
            f"{n} {_REASON_LABELS.get(reason, reason.replace('_', ' '))}"
            for reason, n in self.counts.most_common()
        )
        return f"{lines} line(s) skipped or repaired: {counts}"

    @property
    def counts(self) -> Counter[str]:
        """Issues by reason (``malformed_json``, ``unknown_kind``, ``truncated``...)."""
        return Counter(issue.reason for issue in self.issues)


def read_tape_file(path: Path, *, report: ReadReport | None = None) -> tuple[list[Entry], ReadReport]:
    """Read a Bub tape JSONL file, skipping (and reporting) what cannot be used.

    Raises:
        TapeReadError: the file cannot be opened at all.
    """
    report = report if report is not None else ReadReport(source=str(path))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TapeReadError(f"cannot read tape {path}: {exc.strerror or exc}") from exc
    entries = parse_tape_lines(enumerate(raw.split(b"\n"), start=1), report=report)
    report.entries = len(entries)
    return entries, report


def parse_tape_lines(lines: Iterable[tuple[int, bytes]], *, report: ReadReport) -> list[Entry]:
    """Parse ``(line number, bytes)`` pairs of a tape file as tolerantly as :func:`read_tape_file`."""
    entries: list[Entry] = []
    for number, raw_line in lines:
        if not raw_line.strip():
            continue
        try:
            line = raw_line.decode("utf-8")
        except UnicodeDecodeError as exc:
            report.add(
                ReadIssue(
                    "invalid_utf8", f"invalid UTF-8 at byte {exc.start}; undecodable bytes replaced", number
                )
            )
            line = raw_line.decode("utf-8", errors="replace")
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            report.add(ReadIssue("malformed_json", f"not valid JSON ({exc.msg}); line skipped", number))
            continue
        entry = _entry_from_dict(data, report, line=number)
        if entry is not None:
            entries.append(entry)
    return entries


def coerce_entries(
    items: Iterable[Any], *, report: ReadReport | None = None
) -> tuple[list[Entry], ReadReport]:
    """Accept :class:`Entry` or ``bub.tape.TapeEntry`` objects, or dicts (validated like file lines)."""
    report = report if report is not None else ReadReport()
    entries: list[Entry] = []
    for index, item in enumerate(items, start=1):
        data = item if isinstance(item, Mapping) else _fields_of(item)
        entry = _entry_from_dict(data, report, line=index)
        if entry is not None:
            entries.append(entry)
    report.entries = len(entries)
    return entries, report


def _fields_of(item: object) -> object:
    if all(hasattr(item, name) for name in ("id", "kind", "payload")):
        return {name: getattr(item, name, None) for name in ("id", "kind", "payload", "meta", "date")}
    return item


def _entry_from_dict(data: object, report: ReadReport, *, line: int) -> Entry | None:
    if not isinstance(data, Mapping):
        report.add(
            ReadIssue("not_an_object", f"expected a JSON object, got {type(data).__name__}; skipped", line)
        )
        return None
    entry_id, kind, payload = data.get("id"), data.get("kind"), data.get("payload")
    if not isinstance(entry_id, int) or isinstance(entry_id, bool):
        report.add(ReadIssue("missing_field", "missing or non-integer 'id'; skipped", line))
        return None
    if not isinstance(kind, str):
        report.add(ReadIssue("missing_field", "missing or non-string 'kind'; skipped", line, entry_id))
        return None
    if kind not in KNOWN_KINDS:
        report.add(ReadIssue("unknown_kind", f"unknown kind {kind!r}; skipped", line, entry_id))
        return None
    if not isinstance(payload, Mapping):
        report.add(
            ReadIssue(
                "bad_payload", f"payload is {type(payload).__name__}, not an object; skipped", line, entry_id
            )
        )
        return None
    meta = data.get("meta")
    date = data.get("date")
    return Entry(
        id=entry_id,
        kind=kind,
        payload=dict(payload),
        meta=dict(meta) if isinstance(meta, Mapping) else {},
        date=date if isinstance(date, str) else "",
    )


@dataclass(frozen=True)
class LineLimits:
    """Character limits per rendered line; longer text is cut with a marker."""

    message: int = 4000
    tool_arguments: int = 600
    tool_result: int = 1500
    anchor_state: int = 300


@dataclass(frozen=True)
class TranscriptLine:
    """One rendered entry: ``[<entry_id>] <speaker>: <text>``, and its parts.

    Attributes:
        entry_id: the tape entry the line renders.
        text: the whole line, as sent to the model.
        sender: the named sender of a user message (bub's ``sender_id``), if any.
        body: what the entry says, without the ``[n] user:`` / ``assistant called`` /
            ``tool:`` prefix the renderer adds (those words are not conversation, so
            they must not ground an entity); ``None``: the whole ``text``.
        date: the entry's date (ISO-8601, as the tape wrote it; "" when it has none).
        paragraphs: the body as the entry broke it: the lines of a message, a tool call's
            text and its calls, the lines of each tool result. The line's text joins them
            with :data:`LINE_BREAK`; they are kept as rendered, never split out of the text
            again (the conversation may hold that marker itself). A line built without them
            is one paragraph.
    """

    entry_id: int
    text: str
    sender: str | None = None
    body: str | None = None
    date: str = ""
    paragraphs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.paragraphs:
            object.__setattr__(self, "paragraphs", (self.text if self.body is None else self.body,))

    @property
    def speech(self) -> str:
        """The sender's name (when named) and the body: the words a name can be grounded in."""
        body = self.text if self.body is None else self.body
        return f"{self.sender} {body}" if self.sender else body

    def shortened(self, characters: int) -> TranscriptLine:
        """The line's head (``characters`` of it) marked as cut."""
        text = self.text[:characters] + " …"
        if self.body is None:
            return TranscriptLine(self.entry_id, text, self.sender, None, self.date)
        kept = max(0, characters - len(self.text) + len(self.body))
        paragraphs = _cut_parts(self.paragraphs, kept)
        return TranscriptLine(self.entry_id, text, self.sender, self.body[:kept], self.date, paragraphs)


@dataclass(frozen=True)
class Transcript:
    """Rendered lines in tape order."""

    lines: tuple[TranscriptLine, ...]

    @property
    def entry_ids(self) -> list[int]:
        return [line.entry_id for line in self.lines]

    def text(self, *, dated: bool = False) -> str:
        """The lines joined with newlines, as sent to the model.

        Args:
            dated: put a day line (``--- Monday, 2023-05-08 ---``) before the first line of each
                day, so that a model reading "last Friday" knows which Friday (prompts opt in
                with ``dates: true``: the transcript of older prompt versions stays as measured).
        """
        if not dated:
            return "\n".join(line.text for line in self.lines)
        out: list[str] = []
        day = ""
        for line in self.lines:
            line_day = line.date[:10]
            if line_day and line_day != day:
                out.append(_day_line(line_day))
                day = line_day
            out.append(line.text)
        return "\n".join(out)

    def __bool__(self) -> bool:
        return bool(self.lines)


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _day_line(day: str) -> str:
    """``--- Monday, 2023-05-08 ---`` (weekday names in English whatever the locale)."""
    try:
        weekday = _WEEKDAYS[datetime.date.fromisoformat(day).weekday()]
    except ValueError:
        return f"--- {day} ---"
    return f"--- {weekday}, {day} ---"


def strip_bub_header(content: str) -> tuple[str, str | None]:
    """Remove bub's ``key=value|...`` context line and ``---Date: ...---`` line from user content.

    Returns the remaining text and the ``sender_id`` from the header, if any.
    """
    lines = content.split("\n")
    sender: str | None = None
    if lines and _HEADER_LINE.match(lines[0]) and "=" in lines[0]:
        fields = dict(part.split("=", 1) for part in lines[0].split("|"))
        sender = fields.get("sender_id")
        lines = lines[1:]
    if lines and _DATE_LINE.match(lines[0]):
        lines = lines[1:]
    return "\n".join(lines).strip(), sender


def render_transcript(
    entries: Iterable[Entry],
    *,
    limits: LineLimits | None = None,
    redact: Callable[[str], str] | None = None,
    report: ReadReport | None = None,
) -> Transcript:
    """Render conversation-bearing entries as numbered lines.

    Args:
        limits: per-line character limits; oversize text is truncated and reported.
        redact: applied to every line before it leaves this function, and to long texts
            before they are cut (secrets).
        report: collects truncation notes.
    """
    limits = limits or LineLimits()
    report = report if report is not None else ReadReport()
    clean = _cleaner(redact)
    lines: list[TranscriptLine] = []
    pending_calls: list[str] = []
    for entry in entries:
        rendered: _Rendered | None = None
        match entry.kind:
            case "message":
                rendered = _render_message(entry, limits, report, clean)
            case "tool_call":
                rendered, pending_calls = _render_tool_call(entry, limits, report, clean)
            case "tool_result":
                rendered = _render_tool_result(entry, pending_calls, limits, report, clean)
                pending_calls = []
            case "anchor":
                rendered = _render_anchor(entry, limits, report, clean)
        if rendered is not None:
            lines.append(rendered.line(entry.id, clean, entry.date))
    return Transcript(lines=tuple(lines))


@dataclass(frozen=True)
class _Rendered:
    """An entry's line in parts: the renderer's prefix (with its separator) and the body's paragraphs."""

    prefix: str
    paragraphs: tuple[str, ...]
    sender: str | None = None

    def line(self, entry_id: int, clean: Callable[[str], str], date: str = "") -> TranscriptLine:
        head = f"[{entry_id}] {self.prefix}"
        first, *rest = _clean_parts((head + self.paragraphs[0], *self.paragraphs[1:]), clean)
        text = LINE_BREAK.join((first, *rest))
        if first.startswith(head):
            paragraphs = (first[len(head) :], *rest)
        else:  # a find took in the prefix: the body is cleaned alone
            paragraphs = _clean_parts(self.paragraphs, clean)
        body = LINE_BREAK.join(paragraphs)
        return TranscriptLine(entry_id, text, self.sender, body, date, paragraphs)


def _cleaner(redact: Callable[[str], str] | None) -> Callable[[str], str]:
    """Neutralise delimiter tags, then redact; applied before truncation and to each whole line."""

    def clean(text: str) -> str:
        text = _DELIMITER_TAG.sub(r"‹\1\2›", text)
        return redact(text) if redact is not None else text

    return clean


def _clean_parts(parts: tuple[str, ...], clean: Callable[[str], str]) -> tuple[str, ...]:
    """``clean`` applied to paragraphs as one text (a secret may span lines), the paragraphs kept.

    They are joined with a mark shaped like :data:`LINE_BREAK` (a space, a symbol that occurs
    in no paragraph, a space), so the redactor reads what the model will read, and the result
    is split at that mark. A secret redacted across a mark merges the paragraphs it spanned.
    """
    mark = _unused_mark(parts)
    return tuple(clean(mark.join(parts)).split(mark))


def _unused_mark(parts: tuple[str, ...]) -> str:
    """A stand-in for :data:`LINE_BREAK` around a private-use character none of ``parts`` holds."""
    joined = "".join(parts)
    symbol = next(chr(code) for code in range(0xE000, 0xF900) if chr(code) not in joined)
    return f" {symbol} "


def _cut_parts(parts: tuple[str, ...], characters: int, tail: str = "") -> tuple[str, ...]:
    """The paragraphs whose join is the first ``characters`` of the join of ``parts``, then ``tail``.

    A cut inside a line break leaves the break's start on the paragraph before it.
    """
    kept: list[str] = []
    left = characters
    for index, part in enumerate(parts):
        if index:
            if left < len(LINE_BREAK):
                kept[-1] += LINE_BREAK[:left]
                break
            left -= len(LINE_BREAK)
        kept.append(part[:left])
        left -= len(kept[-1])
    kept[-1] += tail
    return tuple(kept)


def _truncate(text: str, limit: int, entry_id: int, what: str, report: ReadReport) -> str:
    return _truncate_parts((text,), limit, entry_id, what, report)[0]


def _truncate_parts(
    parts: tuple[str, ...], limit: int, entry_id: int, what: str, report: ReadReport
) -> tuple[str, ...]:
    """Paragraphs cut to ``limit`` characters of their joined text; the cut is marked and reported."""
    length = len(LINE_BREAK.join(parts))
    if length <= limit:
        return parts
    report.add(
        ReadIssue("truncated", f"{what} of {length:,} characters truncated to {limit:,}", entry_id=entry_id)
    )
    return _cut_parts(parts, limit, f" …[{length - limit:,} characters truncated]")


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n".join(str(p) for p in parts)
    return ""


def _render_message(
    entry: Entry, limits: LineLimits, report: ReadReport, clean: Callable[[str], str]
) -> _Rendered | None:
    role = entry.payload.get("role")
    text = _content_text(entry.payload.get("content")).strip()
    named: str | None = None
    if role == "user":
        text, sender = strip_bub_header(text)
        named = None if sender is None or sender.lower() in _DEFAULT_SENDERS else sender
        speaker = f"user ({named})" if named else "user"
    elif role == "assistant":
        speaker = "assistant"
    else:
        return None
    paragraphs = _lines(text)
    if not paragraphs:
        return None
    body = _truncate_parts(_clean_parts(paragraphs, clean), limits.message, entry.id, "message", report)
    return _Rendered(f"{speaker}: ", body, named)


def _lines(text: str) -> tuple[str, ...]:
    """The text's non-blank lines, stripped: the paragraphs of one rendered line.

    Each entry stays on one line (its paragraphs joined with :data:`LINE_BREAK`), so the
    ``[id]`` prefixes stay unambiguous.
    """
    return tuple(part.strip() for part in text.splitlines() if part.strip())


def _render_tool_call(
    entry: Entry, limits: LineLimits, report: ReadReport, clean: Callable[[str], str]
) -> tuple[_Rendered | None, list[str]]:
    calls = entry.payload.get("calls")
    rendered: list[str] = []
    names: list[str] = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        name = str(function.get("name") or "?")
        arguments = function.get("arguments")
        args_text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        names.append(name)
        shown = _truncate(clean(args_text), limits.tool_arguments, entry.id, "tool arguments", report)
        rendered.append(f"{name}({shown})")
    content = _content_text(entry.payload.get("content")).strip()
    if not rendered and not content:
        return None, names
    calls_text = "; ".join(rendered)
    if content:
        return _Rendered("assistant: ", (*_lines(content), f"called {calls_text}")), names
    return _Rendered("assistant called ", (calls_text,)), names


def _render_tool_result(
    entry: Entry,
    pending_calls: list[str],
    limits: LineLimits,
    report: ReadReport,
    clean: Callable[[str], str],
) -> _Rendered | None:
    results = entry.payload.get("results")
    if not isinstance(results, list) or not results:
        return None
    parts: list[str] = []
    for index, result in enumerate(results):
        name = pending_calls[index] if index < len(pending_calls) else "tool"
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
        first, *rest = _truncate_parts(
            _clean_parts(_lines(text) or ("",), clean), limits.tool_result, entry.id, "tool result", report
        )
        parts += [f"{name} returned: {first}", *rest]
    return _Rendered("tool: ", tuple(parts))


def _render_anchor(
    entry: Entry, limits: LineLimits, report: ReadReport, clean: Callable[[str], str]
) -> _Rendered | None:
    name = entry.payload.get("name")
    state = entry.payload.get("state")
    if not isinstance(name, str) or not name:
        return None
    if name == "session/start" and (not isinstance(state, Mapping) or set(state) <= {"owner"}):
        return None  # bub's bootstrap anchor carries nothing to remember.
    summary = ""
    if isinstance(state, Mapping) and state and set(state) != {"owner"}:
        summary = ": " + _truncate(
            clean(json.dumps(state, ensure_ascii=False, default=str)),
            limits.anchor_state,
            entry.id,
            "anchor state",
            report,
        )
    return _Rendered("", (f"anchor {name}{summary}",))
