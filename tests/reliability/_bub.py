"""A real bub framework with the plugin, a stub agent model and an error observer.

The agent never calls a provider (the stub finishes every LLM call), so the fake
server only sees the plugin's extraction requests. Back-offs are shortened through the
plugin's ``tune_extractor`` argument (there is no setting for them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bub.channels.message import ChannelMessage
from bub.framework import BubFramework
from bub.hooks import hookimpl
from bub.store import FileTapeStore

from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.plugin import SemanticMemoryPlugin
from bub_semantic_memory.stores._store import SnapshotStore, session_tape_name
from bub_semantic_memory.testing import FakeOpenAIServer
from tests.helpers.bub_env import StubModel, make_framework

__all__ = ["BubRig", "ErrorObserver"]


class ErrorObserver:
    """Records every error bub reports through its ``on_error`` hook."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, BaseException]] = []

    @hookimpl
    def on_error(self, stage: str, error: Exception, message: Any) -> None:
        self.errors.append((stage, error))


@dataclass
class BubRig:
    """One bub process: framework, plugin, stub model, observer; turns inside one lifespan."""

    tmp_path: Path
    server: FakeOpenAIServer
    workspace: Path
    tune_extractor: Callable[[ExtractorConfig], ExtractorConfig] | None = None
    framework: BubFramework = field(init=False)
    plugin: SemanticMemoryPlugin = field(init=False)
    stub: StubModel = field(init=False)
    observer: ErrorObserver = field(init=False)
    unhandled: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.framework, self.plugin, self.stub = make_framework(
            self.tmp_path / "config.yml", self.workspace, self.tune_extractor
        )
        self.observer = ErrorObserver()
        self.framework.plugin_manager.register(self.observer, name="error-observer")

    def tape(self, session_id: str = "cli:test") -> str:
        return session_tape_name(session_id, self.framework.workspace)

    @property
    def tapes_dir(self) -> Path:
        """bub's file store directory (``$BUB_HOME/tapes``)."""
        import bub

        return Path(bub.home) / "tapes"

    def watch_the_loop(self) -> None:
        """Record exceptions nobody retrieved (a background task that died loudly)."""
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: self.unhandled.append(context))

    async def turn(self, text: str, session_id: str = "cli:test") -> Any:
        message = ChannelMessage(session_id=session_id, channel="cli", chat_id="test", content=text)
        return await self.framework.process_inbound(message)

    async def idle(self) -> None:
        """Wait until no extraction runs in the background."""
        while running := self.plugin.memory.running():
            await asyncio.gather(*running, return_exceptions=True)

    def reader(self) -> SnapshotStore:
        """A separate reader of the memory sidecars (what another process would see)."""
        return SnapshotStore(FileTapeStore(self.tapes_dir))
