"""Environment for a bub process whose agent model is stubbed and whose extractor is a fake server."""

from __future__ import annotations

import pytest


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
