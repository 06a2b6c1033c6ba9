"""Call bounds: decided once, from what the backend declares, the same for every entry point."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from bub_semantic_memory.backends._local import LocalBackend
from bub_semantic_memory.backends._local_models import REGISTRY
from bub_semantic_memory.backends._transport import HOSTED, BackendTraits, ModelClass, RetryPolicy
from bub_semantic_memory.cli._options import extractor_config as cli_config
from bub_semantic_memory.extraction._config import CallBounds, ExtractorConfig
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.plugin._settings import SemanticMemorySettings
from bub_semantic_memory.plugin._settings import extractor_config as plugin_config


def packaged_traits(name: str) -> BackendTraits:
    """What the in-process backend of a packaged model declares (the file need not exist)."""
    return LocalBackend(Path(REGISTRY[name].filename), context_tokens=REGISTRY[name].context_tokens).traits


def configs_of_every_entry_point(model: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, ExtractorConfig]:
    """The configuration the plugin, ``extract`` and ``eval run`` build for ``model`` with no other option."""
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", model)
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_BASE_URL", "http://127.0.0.1:9/v1")
    plugin = plugin_config(SemanticMemorySettings())
    assert plugin is not None
    cli = cli_config(
        model=model, base_url="http://127.0.0.1:9/v1", api_key=None, mode="tools", prompts_dir=None
    )
    # eval run builds the CLI's configuration and runs it once per prompt version
    evals = cli.replace(prompt="extract@4")
    return {"plugin": plugin, "cli": cli, "evals": evals}


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
def test_the_plugin_the_cli_and_the_evals_run_the_same_bounds_for_a_model(
    model: str, traits: BackendTraits, expected: CallBounds, monkeypatch: pytest.MonkeyPatch
) -> None:
    bounds = {
        name: config.resolve(traits)
        for name, config in configs_of_every_entry_point(model, monkeypatch).items()
    }
    assert bounds == {"plugin": expected, "cli": expected, "evals": expected}


def test_a_setting_overrides_one_bound_and_keeps_the_backends_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", "local")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_DEADLINE", "900")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_CHUNK_TOKENS", "800")
    config = plugin_config(SemanticMemorySettings())
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
