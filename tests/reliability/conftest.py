"""Fixtures of the reliability suite: the outcome collector (and the report it writes on request), a bub rig.

``RELIABILITY_REPORT=docs/reliability.md uv run pytest tests/reliability`` writes the
counted outcomes of the run as Markdown; without the variable nothing is written.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bub_semantic_memory.backends._transport import RetryPolicy
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.testing import FakeOpenAIServer
from tests.conftest import FAST
from tests.helpers.bub_env import use_fake_extractor
from tests.reliability._bub import BubRig
from tests.reliability._report import Outcomes
from tests.reliability._support import PROMPT

_COLLECTED: list[Outcomes] = []


@pytest.fixture(scope="session", autouse=True)
def outcomes() -> Iterator[Outcomes]:
    """Counted outcomes of this session; written to ``$RELIABILITY_REPORT`` at the end, if set."""
    target = os.environ.get("RELIABILITY_REPORT")
    path = Path(target).resolve() if target else None  # resolved now: tests may chdir
    collected = Outcomes()
    _COLLECTED.append(collected)
    started = time.monotonic()
    yield collected
    _COLLECTED.remove(collected)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        previous = path.read_text(encoding="utf-8") if path.exists() else ""
        path.write_text(
            collected.render(wall_s=time.monotonic() - started, previous=previous), encoding="utf-8"
        )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count the suite's passes and failures for the report header."""
    for collected in _COLLECTED:
        if hasattr(report, "wasxfail"):
            if report.when == "call":
                collected.xfailed.append((report.nodeid.split("::")[-1], str(report.wasxfail)))
        elif report.when == "call" or (report.when == "setup" and report.failed):
            collected.passed += report.passed
            collected.failed += report.failed


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
