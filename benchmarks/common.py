"""Shared pieces of the benchmark suite: result rows, sections, timing and isolation helpers.

A section returns a :class:`Section`: summary :class:`Row` objects (metric, value, target,
met yes/no/none, notes), detail tables and notes, rendered into ``RESULTS.md`` by
:mod:`benchmarks.__main__`. Rows say whether their value is an absolute time (indicative
only: it depends on this machine and its load) or a ratio/count/size (the figures to compare).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bub_semantic_memory.evals.extraction import percentile
from bub_semantic_memory.extraction._prompts import PromptLibrary

__all__ = [
    "BENCH_DIR",
    "FIXTURES",
    "REPO",
    "BenchConfig",
    "FileOpenCounter",
    "Row",
    "Section",
    "Table",
    "isolated_env",
    "md_cell",
    "ms",
    "percentile",
    "summarise",
    "temp_dir",
]

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
FIXTURES = REPO / "evals" / "fixtures"

type Kind = Literal["time", "ratio", "count", "size", "share", "info"]


@dataclass(frozen=True)
class BenchConfig:
    """What a run measures.

    Attributes:
        quick: shrink every size for a smoke run of a few seconds.
        prompt: the extraction prompt version for sections 1, 2 and 5 (a resolved reference
            such as ``extract@2``; by default the one the plugin would use).
        prompts_dir: the prompt directory (its versions and its manifest's promotions;
            ``None``: the bundled one), as the plugin's ``prompts_dir`` setting.
    """

    quick: bool = False
    prompt: str = "extract"
    prompts_dir: Path | None = None

    def library(self) -> PromptLibrary:
        """The prompt library the run reads."""
        return PromptLibrary(self.prompts_dir)

    def plugin_settings(self) -> dict[str, str]:
        """The plugin's settings that name this run's prompts (for a bub with the plugin)."""
        settings = {"BUB_SEMANTIC_MEMORY_PROMPT": self.prompt}
        if self.prompts_dir is not None:
            settings["BUB_SEMANTIC_MEMORY_PROMPTS_DIR"] = str(self.prompts_dir)
        return settings


@dataclass(frozen=True)
class Row:
    """One figure of the summary table.

    Attributes:
        metric: what was measured.
        value: the measured value, formatted.
        target: the issue's target, or "" for an informational figure.
        met: whether the target is met (None: no target).
        notes: how to read the value.
        kind: ``time`` marks an absolute time (indicative only); other kinds are ratios,
            counts, sizes or shares measured side by side in the same run.
        check: a target CI holds: ``python -m benchmarks --check`` exits 1 when it is missed.
    """

    metric: str
    value: str
    target: str = ""
    met: bool | None = None
    notes: str = ""
    kind: Kind = "info"
    check: bool = False


def repo_relative(text: str) -> str:
    """``text`` with the repository's absolute path taken out of the paths it names (RESULTS.md is
    read on other machines)."""
    return text.replace(f"{REPO}/", "")


def md_cell(value: Any) -> str:
    """``value`` as the text of one Markdown table cell."""
    return str(value).replace("|", "\\|").replace("\n", " ")


@dataclass
class Table:
    """A detail table (Markdown)."""

    title: str
    header: Sequence[str]
    rows: list[Sequence[Any]] = field(default_factory=list)

    def markdown(self) -> str:
        lines = [f"**{self.title}**", "", "| " + " | ".join(self.header) + " |"]
        lines.append("|" + "|".join("---" for _ in self.header) + "|")
        lines.extend("| " + " | ".join(md_cell(v) for v in row) + " |" for row in self.rows)
        return "\n".join(lines)


@dataclass
class Section:
    """The result of one benchmark section."""

    number: int
    title: str
    method: str = ""
    rows: list[Row] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    skipped: str = ""

    def row(self, *args: Any, **kwargs: Any) -> Row:
        row = Row(*args, **kwargs)
        self.rows.append(row)
        return row


@dataclass(frozen=True)
class Summary:
    """p50 / p95 of a sample (same unit as the sample) and its size."""

    p50: float
    p95: float
    n: int


def summarise(values: Sequence[float]) -> Summary:
    return Summary(p50=percentile(values, 0.5), p95=percentile(values, 0.95), n=len(values))


def ms(seconds: float, digits: int = 3) -> str:
    """Seconds formatted as milliseconds."""
    return f"{seconds * 1000:.{digits}f} ms"


@contextlib.contextmanager
def temp_dir(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"bench-{prefix}-") as name:
        yield Path(name)


@contextlib.contextmanager
def isolated_env(home: Path, **settings: str) -> Iterator[None]:
    """Point ``HOME`` and ``BUB_HOME`` at ``home``, drop other ``BUB_*`` / ``OPENAI_*`` variables,
    set ``settings`` (names as given), and restore everything afterwards."""
    saved = dict(os.environ)
    try:
        for name in list(os.environ):
            if name.startswith(("BUB_", "OPENAI_")):
                del os.environ[name]
        os.environ["HOME"] = str(home)
        os.environ["BUB_HOME"] = str(home / ".bub")
        os.environ.update(settings)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class FileOpenCounter:
    """Counts file opens (``open``/``io.open``/``os.open``) while active, and which paths.

    Used to show that a code path reads no file: wrap the timed loop in it and check
    :attr:`opens` (and :meth:`opens_matching` for a specific file such as the sidecar).
    """

    def __init__(self) -> None:
        self.paths: list[str] = []
        self._saved: tuple[Any, Any, Any] | None = None

    @property
    def opens(self) -> int:
        return len(self.paths)

    def opens_matching(self, fragment: str) -> int:
        return sum(1 for path in self.paths if fragment in path)

    def __enter__(self) -> FileOpenCounter:
        original_open, original_io_open, original_os_open = builtins.open, io.open, os.open
        self._saved = (original_open, original_io_open, original_os_open)
        paths = self.paths

        def counted_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            paths.append(os.fsdecode(file) if isinstance(file, str | bytes | os.PathLike) else repr(file))
            return original_open(file, *args, **kwargs)

        def counted_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
            paths.append(os.fsdecode(path))
            return original_os_open(path, *args, **kwargs)

        builtins.open = counted_open
        io.open = counted_open
        os.open = counted_os_open
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._saved is not None
        builtins.open, io.open, os.open = self._saved
        self._saved = None


def answer_main(description: str, answer: Callable[[Any], Awaitable[None]]) -> None:
    """``python -m benchmarks.<section> --answer``: open the embedded model and let ``answer`` ask it
    what the committed answer cache lacks (after a change to what a note shows)."""
    import argparse
    import asyncio

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--answer", action="store_true", help="answer what the committed cache lacks (the embedded model)"
    )
    if not parser.parse_args().answer:
        parser.print_help()
        return

    async def with_model() -> None:
        from bub_semantic_memory.extraction import ExtractorConfig

        backend = ExtractorConfig(model="local").open_backend()
        try:
            await answer(backend)
        finally:
            await backend.aclose()

    asyncio.run(with_model())
