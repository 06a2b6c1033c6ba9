"""What several commands share: options declared once, the extractor configuration, fixtures and reports."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from bub_semantic_memory.agent import MemoryPolicy, default_cadence
from bub_semantic_memory.cli._common import API_KEY_ENV, print_table, stderr, stdout
from bub_semantic_memory.extraction import ExtractorConfig, default_bounds

if TYPE_CHECKING:
    from bub_semantic_memory.agent import MemorySetup
    from bub_semantic_memory.evals import Fixture
    from bub_semantic_memory.evals.extraction import Report

_DEFAULT = default_bounds()
_CADENCE = default_cadence()


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
CHUNK_TOKENS = _setting(
    None,
    "--chunk-tokens",
    min=200,
    help=f"Transcript tokens per extraction call (default: {_DEFAULT['chunk_tokens']}).",
    show_default=False,
)
TRANSPORT_ATTEMPTS = _setting(
    None,
    "--transport-attempts",
    min=1,
    max=10,
    help="Requests per call against an endpoint that keeps failing "
    f"(default: {_DEFAULT['transport_attempts']}).",
    show_default=False,
)
REDACT_PATTERNS = _setting(
    [], "--redact-patterns", help="An extra regular expression to redact (repeatable).", show_default=False
)
REDACT_ALLOWLIST = _setting(
    [],
    "--redact-allowlist",
    help="A regular expression of finds to keep unredacted, matched in full (repeatable).",
    show_default=False,
)
EVERY_TURNS = _setting(
    None,
    "--every-turns",
    min=1,
    help=f"With --cadence plugin: extract after every N-th user turn (default: {_CADENCE['every_turns']}).",
    show_default=False,
)
MIN_NEW_TOKENS = _setting(
    None,
    "--min-new-tokens",
    min=0,
    help="With --cadence plugin: or once the new transcript reaches this many tokens, 0: off "
    f"(default: {_CADENCE['min_new_tokens']}).",
    show_default=False,
)
BUDGET = _setting(
    MemoryPolicy.budget,
    "--budget",
    "-b",
    min=50,
    help="Token budget of a memory note (the plugin's setting).",
)
PASSAGE_SHARE = _setting(
    MemoryPolicy.passage_share,
    "--passage-share",
    min=0.0,
    max=1.0,
    help="Share of the budget for the transcript lines that match the question best (the plugin's setting).",
)
CACHE_DIR = typer.Option(Path(".cache/eval"), "--cache-dir", help="Response cache directory.")
LOCOMO = _setting(
    None,
    "--locomo",
    help="A JSON file of LoCoMo conversations (e.g. ../shared/datasets/locomo/locomo8.json): run on them "
    "instead of --fixtures, read where the file lies and imported once under .cache/locomo.",
    show_default=False,
)
SPLIT = typer.Option(
    None, "--split", help="With --locomo: tune or test, the fixed split by conversation.", show_default=False
)
SAMPLES = typer.Option(
    [], "--sample", help="With --locomo: only this conversation (repeatable), e.g. conv-30."
)
SESSIONS = typer.Option(
    None,
    "--sessions",
    min=1,
    help="With --locomo: each conversation's first N sessions only, and the questions they answer.",
    show_default=False,
)
LOCOMO_CACHE = Path(".cache/locomo")


def extractor_config(params: Mapping[str, Any] | None = None, /, **options: Any) -> ExtractorConfig:
    """The extractor configuration of a command's options (the CLI builds it nowhere else).

    ``params`` are the command's parsed options (``ctx.params``), ``options`` the same by
    name; both by the settings' names (``--deadline`` is ``deadline``), read by
    :meth:`ExtractorConfig.from_settings`, the plugin's builder too. Options that are not
    settings are ignored; bounds not given stay ``None``: the backend's defaults apply, as in
    the plugin.
    """
    return ExtractorConfig.from_settings(params or {}, **options)


def memory_setup(
    params: Mapping[str, Any] | None = None, /, *, extract: bool = True, **options: Any
) -> MemorySetup:
    """The memory setup of a command's options (the CLI builds one nowhere else): what
    :meth:`MemorySetup.from_settings`, the plugin's builder too, makes of them. ``extract=False`` for
    the verbs that read and edit memory and never extract."""
    from bub_semantic_memory.agent import MemorySetup

    return MemorySetup.from_settings(params or {}, extract=extract, **options)


FOLDING_PROMPT = typer.Option(
    None,
    "--prompt",
    "-p",
    help="Prompt version whose ontology folds the memory (default: the version that extracted the tape).",
    show_default=False,
)


async def tape_setup(
    store: Any, tape: str, *, prompt: str | None, prompts_dir: Path | None, **policy: Any
) -> MemorySetup:
    """The setup of a verb that reads or edits ``tape``'s memory (it never extracts): folding with
    ``--prompt``'s ontology when given, else with the version that extracted the tape (see
    :meth:`MemorySetup.for_tape`), so every verb reads a memory as the plugin that made it does."""
    setup = memory_setup({"prompt": prompt, "prompts_dir": prompts_dir, **policy}, extract=False)
    if prompt is not None:
        return setup.replace(folds_with=setup.ontology)
    return await setup.for_tape(store, tape)


def load_selected(
    directory: Path,
    tags: list[str],
    ids: list[str],
    *,
    locomo: Path | None = None,
    split: str | None = None,
    samples: list[str] | None = None,
    sessions: int | None = None,
) -> list[Fixture]:
    """The fixtures of ``directory`` that ``--tag`` and ``--fixture`` select; or, with ``--locomo``,
    the LoCoMo conversations ``--split``, ``--sample`` and ``--sessions`` select."""
    from bub_semantic_memory.evals import load_fixtures

    if locomo is None:
        if split is not None or samples or sessions is not None:
            raise typer.BadParameter("--split, --sample and --sessions need --locomo FILE")
        return load_fixtures(directory, tags=tags, ids=ids)
    from bub_semantic_memory.evals.importers import locomo_fixtures

    folder, chosen = locomo_fixtures(
        locomo, LOCOMO_CACHE, split=split, samples=samples or (), sessions=sessions
    )
    return load_fixtures(folder, tags=tags, ids=[i for i in chosen if not ids or i in ids])


def print_report(report: Report, out: Path | None) -> None:
    """The summary and comparison tables on stdout; the report files under ``out``."""
    from bub_semantic_memory.evals.reports import comparison_table, summary_table, write_report_files

    print_table(stdout, summary_table(report), attached="Δ")
    if report.comparisons:
        print_table(stdout, comparison_table(report.comparisons), key_columns=2)
    if out is not None:
        paths = write_report_files(report, out)
        stderr.print("Wrote " + ", ".join(str(p) for p in paths.values()), markup=False)
