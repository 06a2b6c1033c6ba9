"""A purge on Redis rewrites the append-only file from the data as it is after the purge."""

from __future__ import annotations

import asyncio
from typing import Any

from bub_semantic_memory.stores._purge import _rewrite_aof


class RedisWithARewriteRunning:
    """Redis's answers when an automatic rewrite, begun before the purge's writes, is running."""

    def __init__(self) -> None:
        self.requests = 0
        self.running = True  # the earlier rewrite: its file would hold the old values

    async def bgrewriteaof(self) -> None:
        self.requests += 1
        if self.running:
            raise RuntimeError("Background append only file rewriting already in progress")
        self.running = True

    async def info(self, section: str) -> dict[str, Any]:
        running, self.running = self.running, False  # each rewrite ends by the next look
        return {"aof_rewrite_in_progress": int(running), "aof_rewrite_scheduled": 0}


def test_a_rewrite_running_before_the_purge_is_followed_by_one_of_the_purged_data() -> None:
    redis = RedisWithARewriteRunning()
    said = asyncio.run(_rewrite_aof(redis))
    assert redis.requests == 2  # the running one was let finish, then one was asked for again
    assert said.startswith("BGREWRITEAOF")


def test_a_rewrite_that_cannot_be_asked_for_says_not_compacted() -> None:
    class Refusing(RedisWithARewriteRunning):
        async def bgrewriteaof(self) -> None:
            raise RuntimeError("ERR background rewrite refused")

    assert asyncio.run(_rewrite_aof(Refusing())).startswith("not compacted")
