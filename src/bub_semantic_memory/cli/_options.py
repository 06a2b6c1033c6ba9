"""What several commands share: options declared once, the extractor configuration, fixtures and reports."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from bub_semantic_memory.cli._common import API_KEY_ENV, print_table, stderr, stdout

if TYPE_CHECKING:
    from bub_semantic_memory.evals.dataset import Fixture
    from bub_semantic_memory.evals.report import Report
    from bub_semantic_memory.extraction._config import ExtractorConfig

MODEL = typer.Option(
    ...,
    "--model",
    "-m",
    envvar="BUB_SEMANTIC_MEMORY_MODEL",
    help="Model name at the endpoint, or 'local' (the embedded model; see 'semantic-memory models').",
)
BASE_URL = typer.Option(
    None, "--base-url", envvar="BUB_SEMANTIC_MEMORY_BASE_URL", help="OpenAI-compatible endpoint."
)
API_KEY = typer.Option(None, "--api-key", envvar=API_KEY_ENV, help="Endpoint key.", show_default=False)
MODE = typer.Option("tools", "--mode", help="Instructor mode: tools, json_schema, md_json, json.")
PROMPTS_DIR = typer.Option(
    None,
    "--prompts-dir",
    envvar="BUB_SEMANTIC_MEMORY_PROMPTS_DIR",
    help="Prompt directory (default: bundled).",
)
FIXTURES = typer.Option(Path("evals/fixtures"), "--fixtures", "-f", help="Fixture directory.")
TAGS = typer.Option([], "--tag", "-t", help="Only fixtures with this tag (repeatable; any of).")
CONCURRENCY = typer.Option(4, "--concurrency", "-c", min=1, help="Fixtures extracted at once.")
REASKS = typer.Option(
    None,
    "--reasks",
    min=0,
    help="Re-asks after an answer that breaks a rule (default: 1 for a local model, 2 otherwise).",
    show_default=False,
)
DEADLINE = typer.Option(
    None,
    "--deadline",
    min=1,
    help="Seconds one extraction call may take, retries included (default: 600 local, 180 otherwise).",
    show_default=False,
)
REQUEST_TIMEOUT = typer.Option(
    None,
    "--request-timeout",
    min=1,
    help="Seconds per HTTP request to the endpoint (default: 60).",
    show_default=False,
)
CACHE_DIR = typer.Option(Path(".cache/eval"), "--cache-dir", help="Response cache directory.")


def extractor_config(
    *,
    model: str,
    base_url: str | None,
    api_key: str | None,
    mode: str,
    prompts_dir: Path | None,
    prompt: str = "extract",
    reasks: int | None = None,
    deadline: float | None = None,
    request_timeout: float | None = None,
) -> ExtractorConfig:
    """The extractor configuration of a command's options (the CLI builds it nowhere else).

    Bounds not given stay ``None``: the backend's defaults apply, as in the plugin.
    """
    from bub_semantic_memory.extraction._config import ExtractorConfig

    return ExtractorConfig(
        model=model,
        base_url=base_url,
        api_key=api_key,
        mode=mode,
        prompt=prompt,
        prompts_dir=prompts_dir,
        reasks=reasks,
        deadline_s=deadline,
        request_timeout_s=request_timeout,
    )


def load_selected(directory: Path, tags: list[str], ids: list[str]) -> list[Fixture]:
    """The fixtures of ``directory`` that ``--tag`` and ``--fixture`` select."""
    from bub_semantic_memory.evals.dataset import load_fixtures

    return load_fixtures(directory, tags=tags, ids=ids)


def print_report(report: Report, out: Path | None) -> None:
    """The summary and comparison tables on stdout; the report files under ``out``."""
    from bub_semantic_memory.evals.render import comparison_table, summary_table, write_report_files

    print_table(stdout, summary_table(report), attached="Δ")
    if report.comparisons:
        print_table(stdout, comparison_table(report.comparisons), key_columns=2)
    if out is not None:
        paths = write_report_files(report, out)
        stderr.print("Wrote " + ", ".join(str(p) for p in paths.values()), markup=False)
