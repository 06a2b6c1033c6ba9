"""A bub process whose agent model is stubbed and whose extractor is a fake server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bub.framework import BubFramework
from bub.hooks import hookimpl
from bub.hooks.interception import LlmCallDecision, LlmCallRequest

from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.plugin import SemanticMemoryPlugin


class StubModel:
    """Finishes every agent LLM call without a provider, recording what the model would have seen."""

    def __init__(self) -> None:
        self.requests: list[LlmCallRequest] = []

    @hookimpl
    def before_llm_call(self, request: LlmCallRequest, state: dict[str, Any]) -> LlmCallDecision:
        self.requests.append(request)
        return LlmCallDecision.finish("ok")


def make_framework(
    config_file: Path,
    workspace: Path,
    tune_extractor: Callable[[ExtractorConfig], ExtractorConfig] | None = None,
) -> tuple[BubFramework, SemanticMemoryPlugin, StubModel]:
    """bub with its builtin hooks, the plugin and the stub model, in ``workspace`` (created)."""
    framework = BubFramework(config_file=config_file)
    framework.workspace = workspace.resolve()
    framework.workspace.mkdir(parents=True, exist_ok=True)
    framework.load_builtin_hooks()
    plugin = SemanticMemoryPlugin(framework, tune_extractor=tune_extractor)
    stub = StubModel()
    framework.plugin_manager.register(plugin, name="semantic-memory")
    framework.plugin_manager.register(stub, name="stub-model")
    return framework, plugin, stub


def use_fake_extractor(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    """Point the plugin at ``base_url``, with no retry cooldown and one extraction per turn.

    Tests count extraction requests per turn, so the plugin's batching cadence is off.
    """
    monkeypatch.setenv("BUB_MODEL", "openai:agent-model")
    monkeypatch.setenv("BUB_API_KEY", "agent-key")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_MODEL", "fake-extractor")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_BASE_URL", base_url)
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_API_KEY", "extractor-key")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_RETRY_COOLDOWN", "0")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_EVERY_TURNS", "1")
    # The fake endpoint is a hosted model, whose promoted version changes with the gate: name the
    # version these tests were written against.
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PROMPT", "extract@9")
