"""Fixtures of the reliability suite: a bub rig.

The outcome collector (``outcomes``) and the report it writes on request live in
``tests/conftest.py``: the store matrix's forget tests (``tests/stores/test_forget.py``) count
outcomes for the report too.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bub_semantic_memory.backends._transport import RetryPolicy
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.testing import FakeOpenAIServer
from tests.conftest import FAST
from tests.helpers.bub_env import use_fake_extractor
from tests.reliability._bub import BubRig
from tests.reliability._support import PROMPT


@pytest.fixture
def bub_rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer) -> BubRig:
    """A bub process whose extraction endpoint is a fake server (set its ``responder``).

    Retry cooldown 0, short back-offs (no setting has them: the rig tunes the plugin's
    extractor configuration), a 0.5 s request timeout, the suite's pinned prompt.
    """
    use_fake_extractor(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_REQUEST_TIMEOUT", "0.5")
    monkeypatch.setenv("BUB_SEMANTIC_MEMORY_PROMPT", PROMPT)
    monkeypatch.chdir(tmp_path)
    return BubRig(tmp_path, fake_openai, tmp_path / "workspace", tune_extractor=fast_backoff)


def fast_backoff(config: ExtractorConfig) -> ExtractorConfig:
    """The settings' bounds (timeout, re-asks, attempts) with the suite's short back-offs.

    The settings set single bounds (``reasks``, ``request_timeout_s``...), which
    :meth:`ExtractorConfig.resolve` applies over this policy.
    """
    return config.replace(
        retry=dataclasses.replace(
            RetryPolicy(), backoff_initial_s=FAST.backoff_initial_s, backoff_max_s=FAST.backoff_max_s
        )
    )
