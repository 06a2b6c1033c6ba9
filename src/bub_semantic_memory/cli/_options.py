"""What several commands share: options declared once, the extractor configuration, fixtures and reports."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from bub_semantic_memory.cli._common import API_KEY_ENV, print_table, stderr, stdout
from bub_semantic_memory.extraction._config import ExtractorConfig, default_bounds

if TYPE_CHECKING:
    from bub_semantic_memory.evals import Fixture
    from bub_semantic_memory.evals.extraction import Report

_DEFAULT = default_bounds()


def _setting(default: Any, *flags: str, **kwargs: Any) -> Any:
    """An option that is also the plugin's setting: ``--request-timeout`` reads
    ``BUB_SEMANTIC_MEMORY_REQUEST_TIMEOUT`` (one word in three spellings)."""
    name = flags[0].removeprefix("--").replace("-", "_").upper()
    return typer.Option(default, *flags, envvar=f"BUB_SEMANTIC_MEMORY_{name}", **kwargs)


MODEL = _setting(
    ...,
    "--model",
    "-m",
    help="Model name at the endpoint, or 'local' (the embedded model; see 'semantic-memory models').",
)
BASE_URL = _setting(None, "--base-url", help="OpenAI-compatible endpoint.")
API_KEY = typer.Option(None, "--api-key", envvar=API_KEY_ENV, help="Endpoint key.", show_default=False)
MODE = _setting("tools", "--mode", help="Instructor mode: tools, json_schema, md_json, json.")
PROMPTS_DIR = _setting(None, "--prompts-dir", help="Prompt directory (default: bundled).")
FIXTURES = typer.Option(Path("evals/fixtures"), "--fixtures", "-f", help="Fixture directory.")
TAGS = typer.Option([], "--tag", "-t", help="Only fixtures with this tag (repeatable; any of).")
CONCURRENCY = typer.Option(4, "--concurrency", "-c", min=1, help="Fixtures extracted at once.")
REASKS = _setting(
    None,
    "--reasks",
    min=0,
    help=f"Re-asks after an answer that breaks a rule (default: {_DEFAULT['reasks']}).",
    show_default=False,
)
DEADLINE = _setting(
    None,
    "--deadline",
    min=1,
    help=f"Seconds one extraction call may take, retries included (default: {_DEFAULT['deadline']}).",
    show_default=False,
)
REQUEST_TIMEOUT = _setting(
    None,
    "--request-timeout",
    min=1,
    help=f"Seconds per HTTP request to the endpoint (default: {_DEFAULT['request_timeout']}).",
    show_default=False,
)
CACHE_DIR = typer.Option(Path(".cache/eval"), "--cache-dir", help="Response cache directory.")


def extractor_config(params: Mapping[str, Any] | None = None, /, **options: Any) -> ExtractorConfig:
    """The extractor configuration of a command's options (the CLI builds it nowhere else).

    ``params`` are the command's parsed options (``ctx.params``), ``options`` the same by
    name; both by the settings' names (``--deadline`` is ``deadline``), read by
    :meth:`ExtractorConfig.from_settings`, the plugin's builder too. Options that are not
    settings are ignored; bounds not given stay ``None``: the backend's defaults apply, as in
    the plugin.
    """
    return ExtractorConfig.from_settings(params or {}, **options)


def load_selected(directory: Path, tags: list[str], ids: list[str]) -> list[Fixture]:
    """The fixtures of ``directory`` that ``--tag`` and ``--fixture`` select."""
    from bub_semantic_memory.evals import load_fixtures

    return load_fixtures(directory, tags=tags, ids=ids)


def print_report(report: Report, out: Path | None) -> None:
    """The summary and comparison tables on stdout; the report files under ``out``."""
    from bub_semantic_memory.evals.reports import comparison_table, summary_table, write_report_files

    print_table(stdout, summary_table(report), attached="Δ")
    if report.comparisons:
        print_table(stdout, comparison_table(report.comparisons), key_columns=2)
    if out is not None:
        paths = write_report_files(report, out)
        stderr.print("Wrote " + ", ".join(str(p) for p in paths.values()), markup=False)
