"""What is read from a tape and how it is shown to a model.

Tape entries (from a Bub JSONL file, bub's own entries or dicts), the numbered transcript
lines rendered from them, and the secret redaction applied before any text leaves the
process. Nothing here imports bub.
"""

from __future__ import annotations

from bub_semantic_memory.tape._dates import resolve_when
from bub_semantic_memory.tape._redact import Redactor
from bub_semantic_memory.tape._relative import anchor_relative, anchored_line
from bub_semantic_memory.tape._transcript import (
    Entry,
    LineLimits,
    ReadIssue,
    ReadReport,
    Transcript,
    TranscriptLine,
    coerce_entries,
    parse_tape_lines,
    read_tape_file,
    render_transcript,
    strip_bub_header,
)

__all__ = [
    "Entry",
    "LineLimits",
    "ReadIssue",
    "ReadReport",
    "Redactor",
    "Transcript",
    "TranscriptLine",
    "anchor_relative",
    "anchored_line",
    "coerce_entries",
    "parse_tape_lines",
    "read_tape_file",
    "render_transcript",
    "resolve_when",
    "strip_bub_header",
]
