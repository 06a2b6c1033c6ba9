"""Counted outcomes of the reliability suite, and their rendering as ``docs/reliability.md``.

Tests add rows to named tables while they run; the session fixture ``outcomes`` in
``tests/conftest.py`` writes the Markdown when ``RELIABILITY_REPORT`` names a file (and writes
nothing otherwise). Sections come out in a fixed order, whatever order the tests ran in. The
suite under ``tests/reliability`` and the store matrix's forget tests fill them.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

__all__ = ["COMMAND", "MEASURED", "SECTIONS", "Outcomes", "Table", "measured_block"]

COMMAND = (
    "RELIABILITY_REPORT=docs/reliability.md pytest tests/reliability tests/stores/test_forget.py "
    "tests/plugin/test_forget_tool.py"
)

# (key, heading, what the section shows); the order of the document.
SECTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "endpoint",
        "Endpoint faults",
        "Extraction calls against the in-process fake OpenAI-compatible server on 127.0.0.1 "
        "(`tests/reliability/test_endpoint_faults.py`). Per fault kind, each call's first *k* requests "
        "meet the fault and the later ones get a correct answer from the oracle responder; *k* runs "
        "1, 2, 3, 4 (transient) or never stops (always failing for that call). A call is the "
        "extraction of a 4-line tape (`Extractor.iter_extract`); calls run 8 at a time. Requests are counted on the wire (by the client "
        "transport) and in the usage the call reports; tokens are counted as served by the server "
        "and as reported by the snapshot or by the error's `usage`. Bounds: at most "
        "`transport_attempts` = 5 requests against an endpoint that keeps failing, at most "
        "`max_requests` = 8 per call, `reasks` = 2 validation re-asks.",
    ),
    (
        "convergence",
        "Convergence after faults",
        "The same tapes extracted once without faults and once under a seeded random fault schedule "
        "until the faults stop: in each extraction run a burst of one fault kind (kinds taken in turn) "
        "starts early and often lasts to the end of the run, and any request may meet a stray fault. "
        "Failed tapes are re-run incrementally like the plugin does: the graph is rebuilt from the "
        "`SnapshotStore` and only the entries after its watermark are extracted. Graphs are compared "
        "by value (`repr` of entities and relations).",
    ),
    (
        "plugin",
        "Plugin under faults",
        "A real bub framework with the plugin and a stub agent model, running turns while the "
        "extraction endpoint fails (`tests/reliability/test_plugin_faults.py`). The fault kind rotates "
        "per request; on a few turns the endpoint works. After the last turn the endpoint recovers.",
    ),
    (
        "storage",
        "Storage faults",
        "Writer processes are forked from the test process (no re-import) and appended snapshots to a "
        "memory sidecar in bub's file store (`tests/reliability/test_storage_faults.py`). "
        "Disk full and a read-only directory are simulated (the suite may run as root, which "
        "ignores permission bits): the write fails with ENOSPC after writing half a line, or "
        "opening the files fails with EROFS.",
    ),
    (
        "bad_tapes",
        "Bad tapes",
        "A tape file with planted defects, read with `read_tape_file` and extracted "
        "(`tests/reliability/test_bad_tapes.py`); a corrupt memory sidecar read by the plugin.",
    ),
    (
        "redaction",
        "Secret redaction",
        "What the redactor (`src/bub_semantic_memory/redact.py`: detect-secrets' detectors, keyword rules "
        "and entropy, plus the project's own patterns) finds in a planted-secret corpus "
        "(`tests/helpers/secret_corpus.py`), and what it leaves alone: the gold names, aliases and "
        "attribute values of every eval fixture, and ordinary identifiers "
        "(`tests/reliability/test_redaction.py`). The time it adds is measured by a benchmark, not by "
        "the suite; its last figures are carried over when this file is regenerated.",
    ),
    (
        "security",
        "Secrets, isolation and prompt injection",
        "Secrets planted in user messages, tool-call arguments (string and object) and tool results "
        "(string and object) of a tape, extracted by the `Extractor`, by the eval runner (with its "
        "response cache) and by the plugin through a bub turn, against a responder that echoes the "
        "transcript back into names, aliases and attributes. Every recorded request body and every "
        "file under the memory and cache directories is searched for each secret "
        "(`tests/reliability/test_security.py`).",
    ),
    (
        "forget",
        "Forget and erasure",
        "A person's edits on every store of the matrix (bub's file store, SQLite and PostgreSQL through "
        "the SQLAlchemy plugin, Redis through the Redis plugin; `tests/stores/test_forget.py`): a forget "
        "that must survive a restart of the database and a checkpointed load, `forget --purge` followed "
        "by a search of the raw storage (the sidecar's rows, keys or files, its archives and the eval "
        "cache) for the forgotten name, two bub processes on one tape (one extracting, a CLI forgetting "
        "in the middle), the GraphML export read back with the standard library's XML parser, and "
        "export then import into a new tape.",
    ),
    (
        "erasure",
        "Erasure that holds",
        "A person purged with `forget --purge` (issue 45), searched for afterwards in the raw storage of every "
        "store and in every output, after every path that writes memory (`tests/reliability/test_erasure.py`). "
        'The tape names Alice Chen by her full name, her alias Ali, her first name, "Ms. Chen" in a tool '
        "result, her name split over a line break, her surname alone and a possessive, and holds a private fact "
        "(an allergy to `penicillin-zx9`). A trace is a match of `alice` or `chen` (any case, anywhere), `Ali` "
        "as a word, or `zx9` or `penicillin`. In a file the conversation shares with the memory (SQLite's "
        "database file and log, PostgreSQL's heap and TOAST files found with `pg_relation_filepath` after a "
        "`CHECKPOINT`, Redis's append-only files) a trace counts unless the bytes from its JSON object's start "
        "to it are those of the conversation's own rows: the conversation is bub's and is not rewritten. For "
        "the search to see every byte, the test database stores `payload` uncompressed (`SET STORAGE "
        "EXTERNAL`) and the test Redis rewrites its append-only file without an RDB preamble.",
    ),
)


MEASURED: dict[str, str] = {"redaction": "redaction-cost"}
"""Sections that end with a block a benchmark writes (section key: block name).

The suite does not time anything; ``python -m benchmarks.redaction --reliability <file>``
writes its figures between ``<!-- measured:NAME -->`` markers, and a regenerated report
carries the block of the file it replaces over (or says how to fill it)."""
_MEASURED_BLOCK = re.compile(
    r"<!-- measured:(?P<name>[\w-]+) -->\n(?P<body>.*?)\n<!-- /measured:(?P=name) -->", re.S
)


def measured_block(name: str, previous: str) -> str:
    """The block ``name`` of ``previous`` (the report being replaced), or a placeholder."""
    found = {m.group("name"): m.group("body") for m in _MEASURED_BLOCK.finditer(previous)}
    body = found.get(name) or (
        "Not measured yet: run `python -m benchmarks.redaction --reliability docs/reliability.md`."
    )
    return f"<!-- measured:{name} -->\n{body}\n<!-- /measured:{name} -->"


@dataclass
class Table:
    """One Markdown table: a title, column names, rows and notes printed under it."""

    title: str
    columns: Sequence[str]
    rows: list[list[object]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def markdown(self) -> str:
        lines = [f"**{self.title}**", ""]
        lines.append("| " + " | ".join(self.columns) + " |")
        numeric = [all(_numeric(row[i]) for row in self.rows) for i in range(len(self.columns))]
        lines.append("|" + "|".join("--:" if n and i else "---" for i, n in enumerate(numeric)) + "|")
        lines.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in self.rows)
        lines.extend(["", *self.notes] if self.notes else [])
        return "\n".join(lines)


def _numeric(value: object) -> bool:
    """Numbers, and counts written as ``3 / 4`` or ``1,206+289``: right-aligned."""
    return isinstance(value, int | float) or bool(re.fullmatch(r"[\d,.]+(?:\s*[/+]\s*[\d,.]+)*", str(value)))


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value).replace("|", "\\|")


@dataclass
class Outcomes:
    """Tables collected during a session, by section."""

    tables: dict[str, list[Table]] = field(default_factory=dict)
    passed: int = 0
    failed: int = 0
    xfailed: list[tuple[str, str]] = field(default_factory=list)
    load: float = field(default_factory=lambda: os.getloadavg()[0])

    def table(self, section: str, title: str, columns: Sequence[str]) -> Table:
        """The table ``title`` of ``section`` (one of :data:`SECTIONS`), created on first use."""
        if section not in {key for key, _, _ in SECTIONS}:
            raise KeyError(section)
        tables = self.tables.setdefault(section, [])
        for table in tables:
            if table.title == title:
                return table
        table = Table(title, list(columns))
        tables.append(table)
        return table

    def render(self, *, wall_s: float, previous: str = "") -> str:
        """The report as Markdown; measured blocks are carried over from ``previous``."""
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        head = [
            "# Reliability and security: outcomes of the last run",
            "",
            "Memory is an enhancement: whatever the model endpoint, the disk or the conversation does, "
            "the agent's turn completes, no extracted fact is lost or duplicated, nothing private "
            "leaks where it does not belong, and what a person asks to forget is gone. The suite under "
            "`tests/reliability/` (and the store matrix's `tests/stores/test_forget.py`) checks these "
            "invariants by counting outcomes; it is part of the default `pytest` run (and so of "
            "`.ci/run`). This file is generated by the suite; regenerate it with:",
            "",
            "```sh",
            COMMAND,
            "```",
            "",
            "Without `RELIABILITY_REPORT` nothing is written.",
            "",
            f"- Date: {now}",
            f"- Machine: {os.cpu_count()} cores, {platform.system()} {platform.machine()}, "
            f"Python {sys.version.split()[0]}; load average {self.load:.2f} when the run started",
            f"- Tests: {self.passed} passed, {self.failed} failed, {len(self.xfailed)} known gaps (strict xfail); "
            f"wall time of the run {wall_s:.1f} s",
            "",
        ]
        body: list[str] = []
        for key, heading, about in SECTIONS:
            tables = self.tables.get(key)
            if not tables:
                continue
            body.extend([f"## {heading}", "", about, ""])
            for table in tables:
                body.extend([table.markdown(), ""])
            if key in MEASURED:
                body.extend([measured_block(MEASURED[key], previous), ""])
        if self.xfailed:
            body.extend(
                [
                    "## Known gaps",
                    "",
                    "Invariants the suite checks but the code does not meet yet, as strict `xfail` tests "
                    "(they fail the run once the code is fixed, so the marker gets removed):",
                    "",
                ]
            )
            body.extend(f"- `{name}`: {reason}" for name, reason in self.xfailed)
        return "\n".join(head + body).rstrip() + "\n"
