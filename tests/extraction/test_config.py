"""Call bounds: decided once, from what the backend declares, the same for every entry point."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from bub.framework import BubFramework

from bub_semantic_memory.backends._local import LocalBackend
from bub_semantic_memory.backends._local_models import REGISTRY
from bub_semantic_memory.backends._transport import (
    HOSTED,
    BackendTraits,
    ModelClass,
    OpenAIBackend,
    RetryPolicy,
)
from bub_semantic_memory.cli import app
from bub_semantic_memory.cli._options import extractor_config as cli_config
from bub_semantic_memory.evals import load_fixtures
from bub_semantic_memory.evals.extraction import RunOptions, run_eval
from bub_semantic_memory.extraction._config import CallBounds, ExtractorConfig, default_bounds
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.plugin import SemanticMemoryPlugin
from bub_semantic_memory.plugin._settings import SemanticMemorySettings, memory_setup
from bub_semantic_memory.testing import FakeOpenAIServer, OracleResponder, SchemaFollowingOracle
from tests.conftest import DATA, REPO


def packaged_traits(name: str) -> BackendTraits:
    """What the in-process backend of a packaged model declares (the file need not exist)."""
    return LocalBackend(Path(REGISTRY[name].filename), context_tokens=REGISTRY[name].context_tokens).traits


PINNED = "extract@9"
"""The version the bounds are compared with, named so that every class runs the same one."""


class Posing(OpenAIBackend):
    """The fake endpoint, behind a backend declaring the traits of the one the model spec opens."""

    def __init__(self, server: FakeOpenAIServer, traits: BackendTraits) -> None:
        super().__init__(base_url=server.base_url, api_key="k", timeout_s=10)
        self.traits = traits


def parsed_options(path: tuple[str, ...], argv: list[str]) -> dict[str, Any]:
    """A command's options as the real CLI parses them (defaults and environment included)."""
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    with command.make_context(" ".join(path), argv) as ctx:
        return dict(ctx.params)


def cached_bounds(cache_dir: Path) -> CallBounds:
    """The bounds an eval run recorded in its response cache (part of every entry's key)."""
    (entry,) = cache_dir.rglob("*.json")
    recorded = json.loads(entry.read_text(encoding="utf-8"))["key_fields"]["bounds"]
    return CallBounds(**{**recorded, "retry": RetryPolicy(**recorded["retry"])})


async def bounds_of_every_entry_point(
    model: str, traits: BackendTraits, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, CallBounds]:
    """The bounds the plugin, ``extract`` and ``eval run`` extract ``model`` with, no other option given.

    Each entry point builds its configuration as it does for a user (the plugin from bub's
    settings, the commands from their parsed options), then opens the fake endpoint behind a
    backend declaring ``traits`` (a local model cannot be loaded here).
    """
    (fixture,) = load_fixtures(REPO / "evals" / "fixtures", ids=["aliases-robert-goes-by-bob"])
    oracle = SchemaFollowingOracle(OracleResponder.from_golds([fixture.gold]))
    with FakeOpenAIServer(responder=oracle) as server:
        monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", model)
        monkeypatch.setenv("BUB_SEMANTIC_MEMORY_BASE_URL", server.base_url)
        monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PROMPT", PINNED)
        plugin = SemanticMemoryPlugin(BubFramework(), open_backend=lambda config: Posing(server, traits))
        assert isinstance(plugin.memory.extractor, Extractor)
        extract = parsed_options(("extract",), [str(DATA / "bub_run_tape.jsonl"), "--prompt", PINNED])
        cli = Extractor(cli_config(extract), backend=Posing(server, traits))
        cache = tmp_path / f"cache-{model}"
        run = parsed_options(("eval", "run"), ["--cache-dir", str(cache)])
        config = cli_config(run)
        template = config.library().load(PINNED)
        options = RunOptions(
            extractor=config, backend=Posing(server, traits), cache_dir=run["cache_dir"], progress=False
        )
        report = await run_eval([fixture], [template], options)
    assert report.runs[0].metrics.success_rate == 1.0
    return {"plugin": plugin.memory.extractor.bounds, "cli": cli.bounds, "evals": cached_bounds(cache)}


@pytest.mark.parametrize(
    ("model", "traits", "expected"),
    [
        # The bounds the README's local figures were measured with.
        (
            "local",
            packaged_traits("qwen2.5-coder-1.5b"),
            CallBounds(
                retry=RetryPolicy(reasks=1, deadline_s=600.0), max_output_tokens=1024, chunk_tokens=1500
            ),
        ),
        # 4,096 tokens of context: 4096 - 1024 - 2000 - 250 - 20 x 12 leaves 582 for the window.
        (
            "local:gemma-3-270m",
            packaged_traits("gemma-3-270m"),
            CallBounds(
                retry=RetryPolicy(reasks=1, deadline_s=600.0), max_output_tokens=1024, chunk_tokens=582
            ),
        ),
        ("gpt-4o-mini", HOSTED, CallBounds(retry=RetryPolicy(), max_output_tokens=2048, chunk_tokens=3000)),
    ],
)
async def test_the_plugin_the_cli_and_the_evals_run_the_same_bounds_for_a_model(
    model: str,
    traits: BackendTraits,
    expected: CallBounds,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bounds = await bounds_of_every_entry_point(model, traits, tmp_path, monkeypatch)
    assert bounds == {"plugin": expected, "cli": expected, "evals": expected}


async def test_a_bound_set_in_the_environment_applies_to_every_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``BUB_SEMANTIC_MEMORY_DEADLINE`` and ``_REASKS`` are the plugin's settings and the commands' options."""
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_DEADLINE", "900")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_REASKS", "3")
    bounds = await bounds_of_every_entry_point(
        "local", packaged_traits("qwen2.5-coder-1.5b"), tmp_path, monkeypatch
    )
    expected = CallBounds(
        retry=RetryPolicy(reasks=3, deadline_s=900.0), max_output_tokens=1024, chunk_tokens=1500
    )
    assert bounds == {"plugin": expected, "cli": expected, "evals": expected}


def test_eval_run_on_the_command_line_runs_the_plugins_bounds_for_a_hosted_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole command (options parsed, the endpoint opened by it) against the plugin's extractor."""
    from typer.testing import CliRunner

    (fixture,) = load_fixtures(REPO / "evals" / "fixtures", ids=["aliases-robert-goes-by-bob"])
    oracle = SchemaFollowingOracle(OracleResponder.from_golds([fixture.gold]))
    with FakeOpenAIServer(responder=oracle) as server:
        argv = ["eval", "run", "--model", "gpt-4o-mini", "--base-url", server.base_url, "--prompt", PINNED]
        argv += ["--fixture", fixture.id]
        argv += ["--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")]
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 0, result.output
        monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", "gpt-4o-mini")
        monkeypatch.setenv("BUB_SEMANTIC_MEMORY_BASE_URL", server.base_url)
        monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PROMPT", PINNED)
        plugin = SemanticMemoryPlugin(BubFramework())
        assert plugin.memory.extractor is not None
    assert cached_bounds(tmp_path / "cache") == plugin.memory.extractor.bounds


def test_the_defaults_the_help_and_the_readme_state_are_the_resolved_ones() -> None:
    """Settings' descriptions, the CLI's help and the README's settings table word ``default_bounds``."""
    import re

    from bub_semantic_memory.cli._options import DEADLINE, REASKS, REQUEST_TIMEOUT

    defaults = default_bounds()
    assert defaults["deadline"] == "180; 600 for a local model"  # RetryPolicy's and the local model's
    fields = SemanticMemorySettings.model_fields
    settings = ("chunk_tokens", "request_timeout", "deadline", "reasks", "transport_attempts")
    for name in settings:
        assert f"(default: {defaults[name]})" in str(fields[name].description), name
    for name, option in (("reasks", REASKS), ("deadline", DEADLINE), ("request_timeout", REQUEST_TIMEOUT)):
        assert f"(default: {defaults[name]})" in str(option.help), name
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    cells = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", readme, flags=re.MULTILINE))
    for name in settings:
        assert cells[name].replace("`", "").strip() == defaults[name], name


def test_a_setting_overrides_one_bound_and_keeps_the_backends_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", "local")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_DEADLINE", "900")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_CHUNK_TOKENS", "800")
    config = memory_setup(SemanticMemorySettings()).extractor
    assert config is not None
    bounds = config.resolve(packaged_traits("qwen2.5-coder-1.5b"))
    assert bounds.retry == RetryPolicy(reasks=1, deadline_s=900.0)
    assert bounds.chunk_tokens == 800 and bounds.max_output_tokens == 1024


def test_single_bounds_apply_over_a_whole_policy() -> None:
    fast = RetryPolicy(backoff_initial_s=0.01, reasks=3)
    config = ExtractorConfig(model="m", retry=fast, request_timeout_s=2.0)
    assert config.resolve(HOSTED).retry == dataclasses.replace(fast, request_timeout_s=2.0)
    assert config.resolve(packaged_traits("qwen2.5-coder-1.5b")).retry == dataclasses.replace(
        fast, request_timeout_s=2.0
    ), "a whole policy given is the base for any backend"


def test_windows_fit_a_context_the_backend_declares() -> None:
    config = ExtractorConfig(model="m")
    # 8192 - 2048 (a hosted answer) - 2000 - 250 - 240 = 3654: a known context gets windows of 1500 at most
    assert config.resolve(BackendTraits(context_tokens=8192)).chunk_tokens == 1500
    assert config.resolve(BackendTraits(context_tokens=4096)).chunk_tokens == 300  # never below the floor
    assert config.resolve(BackendTraits()).chunk_tokens == 3000


class InProcess:
    """An in-process backend that is never asked anything (it only declares its traits)."""

    traits = packaged_traits("qwen2.5-coder-1.5b")

    async def create(self, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    async def aclose(self) -> None:
        return None


def test_the_plugins_extractor_has_the_clis_bounds_for_the_same_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bub.framework import BubFramework

    from bub_semantic_memory.plugin import SemanticMemoryPlugin

    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", "local")
    plugin = SemanticMemoryPlugin(BubFramework(), open_backend=lambda config: InProcess())
    extractor = plugin.memory.extractor
    assert isinstance(extractor, Extractor)
    cli = Extractor(
        cli_config(model="local", base_url=None, api_key=None, mode="tools", prompts_dir=None),
        backend=InProcess(),
    )
    assert extractor.bounds == cli.bounds
    assert extractor.bounds.retry.deadline_s == 600.0  # not the 180 s a hosted endpoint gets


def test_the_settings_that_decide_answers_are_derived_from_the_fields() -> None:
    inputs = ExtractorConfig(model="m", api_key="secret", base_url="http://x/v1").answer_inputs()
    # every field but the endpoint, the key, the prompt reference and the bounds (those count resolved)
    assert set(inputs) == {
        "model",
        "mode",
        "temperature",
        "redact_patterns",
        "redact_allowlist",
        "line_limits",
    }
    assert "secret" not in repr(inputs)


@pytest.fixture
def promoted_per_class(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A prompt directory promoting extract@9 for local models and extract@5 for hosted ones."""
    import shutil

    from bub_semantic_memory.extraction._prompts import PromptLibrary
    from tests.conftest import REPO

    root = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", root)
    library = PromptLibrary(root)
    promotions: list[tuple[str, ModelClass]] = [("extract@9", "local"), ("extract@5", "hosted")]
    for ref, model_class in promotions:
        library.promote(
            library.load(ref), model="m", model_class=model_class, scores={}, baseline=None, tolerance=None
        )
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PROMPTS_DIR", str(root))
    return root


@pytest.mark.parametrize(("model", "version"), [("local", 9), ("gpt-4o-mini", 5)])
def test_the_plugin_extracts_with_the_version_promoted_for_its_models_class(
    model: str, version: int, promoted_per_class: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bub.framework import BubFramework

    from bub_semantic_memory.plugin import SemanticMemoryPlugin

    monkeypatch.setenv("BUB_MODEL", "openai:gpt-4o-mini")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", model)
    in_process = {"open_backend": lambda config: InProcess()} if model == "local" else {}
    plugin = SemanticMemoryPlugin(BubFramework(), **in_process)  # type: ignore[arg-type]
    extractor = plugin.memory.extractor
    assert extractor is not None and extractor.prompt.version == version
    assert plugin.ontology == extractor.prompt.ontology


def test_extract_against_a_base_url_uses_the_hosted_promotion(
    promoted_per_class: Path, tmp_path: Path
) -> None:
    import json

    from typer.testing import CliRunner

    from bub_semantic_memory.cli import app
    from bub_semantic_memory.testing import FakeOpenAIServer, tool_call_reply
    from tests.conftest import DATA

    answer = {"reasoning": "", "entities": [], "relations": []}
    with FakeOpenAIServer(responder=lambda request: tool_call_reply("Extraction", answer)) as server:
        result = CliRunner().invoke(
            app,
            [
                "extract",
                str(DATA / "bub_run_tape.jsonl"),
                "--model",
                "m",
                "--base-url",
                server.base_url,
                "--json",
            ],
        )
    assert result.exit_code == 0, result.output
    assert {snapshot["prompt"]["version"] for snapshot in json.loads(result.stdout)} == {5}


def test_from_settings_reads_the_settings_by_name_and_ignores_the_rest() -> None:
    config = ExtractorConfig.from_settings(
        {"model": "m", "deadline": 30, "request_timeout": None, "fixtures": "evals/fixtures", "json": True},
        reasks=0,
        redact_patterns=["x+"],
    )
    assert config == ExtractorConfig(model="m", deadline_s=30, reasks=0, redact_patterns=("x+",))
    from bub_semantic_memory._errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="no model given"):
        ExtractorConfig.from_settings({"model": None})


@pytest.fixture
def promoted_for_local_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A prompt directory whose only promotion is extract@9 for local models (the plugin's and CLI's)."""
    import shutil

    from bub_semantic_memory.extraction._prompts import PromptLibrary

    root = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", root)
    library = PromptLibrary(root)
    manifest = library.manifest()
    manifest.promoted = {}
    library.save_manifest(manifest)
    library.promote(
        library.load("extract@9"),
        model="local",
        model_class="local",
        scores={},
        baseline=None,
        tolerance=None,
    )
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PROMPTS_DIR", str(root))
    return root


NOT_PROMOTED = "no version of 'extract' is promoted for hosted models (promoted: extract@9 for local models)"


def test_the_plugin_does_not_extract_for_a_hosted_model_with_a_local_promotion_only(
    promoted_for_local_only: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_BASE_URL", "http://127.0.0.1:9/v1")
    plugin = SemanticMemoryPlugin(BubFramework())
    with caplog.at_level("WARNING"):
        assert plugin.memory.extractor is None
    assert plugin.stats["configuration_errors"] == 1
    [warning] = [r.getMessage() for r in caplog.records if "extraction is off" in r.getMessage()]
    assert NOT_PROMOTED in warning and "semantic-memory prompts promote extract@N" in warning
    # memory already stored is still folded and injected (with a promoted version's ontology)
    assert plugin.ontology.relation_types
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PROMPT", "extract@12")  # a version named is a choice
    named = SemanticMemoryPlugin(BubFramework())
    assert named.memory.extractor is not None and named.memory.extractor.prompt.version == 12


@pytest.mark.parametrize("command", [["extract", str(DATA / "bub_run_tape.jsonl")], ["eval", "run"]])
def test_extract_and_eval_run_refuse_a_hosted_model_with_a_local_promotion_only(
    command: list[str], promoted_for_local_only: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    with FakeOpenAIServer() as server:
        argv = [*command, "--model", "gpt-4o-mini", "--base-url", server.base_url]
        if command[0] == "eval":
            argv += ["--fixture", "aliases-robert-goes-by-bob", "--cache-dir", str(tmp_path / "c")]
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 1
        [line] = result.stderr.splitlines()
        assert line.startswith(f"Error: {NOT_PROMOTED}") and "--prompt extract@N" in line
        assert not server.requests, "nothing was sent with a version chosen for another class"
