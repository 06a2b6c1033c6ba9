"""The store matrix: bub's file store, SQLite and PostgreSQL (SQLAlchemy plugin), Redis (Redis plugin).

PostgreSQL and Redis run as real servers for the session (``tests/stores/servers.py``; the
session fixtures ``postgres_server`` and ``redis_server`` live in ``tests/conftest.py``, shared
with the erasure matrix of ``tests/reliability``); each test gets its own PostgreSQL database
and its own Redis key prefix. A server that
cannot start skips its store's tests on a developer machine and fails them under
``CI=true``: in CI no store test may be skipped.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from bub.store import AsyncTapeStore, FileTapeStore, TapeStore

from tests.conftest import STORE_PLUGINS
from tests.helpers.store_plugins import mask_store_plugins
from tests.stores.servers import PostgresServer, RedisServer, Server, unavailable

STORES = ("file", "sqlite", "postgresql", "redis")
_NUMBERS = itertools.count(1)


@dataclass
class Backend:
    """One store of the matrix, configured the way a bub process reads it (environment variables).

    Attributes:
        name: ``file``, ``sqlite``, ``postgresql`` or ``redis``.
        env: the ``BUB_TAPESTORE_*`` settings that select this store's database.
        masks: a ``PYTHONPATH`` entry hiding the store plugins this store does not use.
        server: the PostgreSQL or Redis server behind it (None for file and SQLite).
    """

    name: str
    home: Path
    env: dict[str, str]
    masks: Path
    server: PostgresServer | RedisServer | None = None
    _opened: list[Any] = field(default_factory=list)

    def process_env(self) -> dict[str, str]:
        """The environment of a bub subprocess on this store (this process's, which the fixture set)."""
        return dict(os.environ)

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[TapeStore | AsyncTapeStore]:
        """A new client of this store (what another process would open), closed on exit."""
        if self.name == "file":
            yield FileTapeStore(self.home / "tapes")
            return
        if self.name == "redis":
            import redis.asyncio as redis
            from bub_tapestore_redis.store import RedisTapeStore

            client = redis.Redis.from_url(self.env["BUB_TAPESTORE_REDIS_URL"])
            try:
                yield RedisTapeStore(client, key_prefix=self.env["BUB_TAPESTORE_REDIS_KEY_PREFIX"])
            finally:
                await client.aclose()
            return
        from bub_tapestore_sqlalchemy.store import SQLAlchemyTapeStore

        store = SQLAlchemyTapeStore(self.env["BUB_TAPESTORE_SQLALCHEMY_URL"])
        try:
            yield store
        finally:
            store._engine.dispose()

    def restart(self) -> None:
        """Stop and start the database server (file and SQLite: nothing runs, nothing to do)."""
        if self.server is not None:
            self.server.stop()
            self.server.start()


def _create_database(server: PostgresServer, name: str) -> str:
    import psycopg

    with psycopg.connect(
        f"host=127.0.0.1 port={server.port} user=postgres dbname=postgres", autocommit=True
    ) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    return server.url.rsplit("/", 1)[0] + f"/{name}"


def make_backend(
    name: str,
    tmp_path: Path,
    postgres_server: Server[PostgresServer],
    redis_server: Server[RedisServer],
) -> Backend:
    home = Path(os.environ["BUB_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    number = next(_NUMBERS)
    if name == "file":
        return Backend(name, home, {}, mask_store_plugins(tmp_path / "masks-file"))
    plugin = "bub_tapestore_redis" if name == "redis" else "bub_tapestore_sqlalchemy"
    if importlib.util.find_spec(plugin) is None:
        unavailable(
            f"bub's {name} tape store",
            RuntimeError(
                f"{plugin} is not in {STORE_PLUGINS}: run 'make stores VENDOR=DIR' "
                "with bub-contrib's store packages in DIR"
            ),
        )
    masks = mask_store_plugins(tmp_path / f"masks-{name}", keep="redis" if name == "redis" else "sqlalchemy")
    if name == "sqlite":
        url = f"sqlite+pysqlite:///{home / 'tapes.db'}"
        return Backend(name, home, {"BUB_TAPESTORE_SQLALCHEMY_URL": url}, masks)
    if name == "postgresql":
        server = postgres_server.get()
        url = _create_database(server, f"test_{os.getpid()}_{number}")
        return Backend(name, home, {"BUB_TAPESTORE_SQLALCHEMY_URL": url}, masks, server)
    redis = redis_server.get()
    env = {
        "BUB_TAPESTORE_REDIS_URL": redis.url,
        "BUB_TAPESTORE_REDIS_KEY_PREFIX": f"test-{os.getpid()}-{number}",
    }
    return Backend(name, home, env, masks, redis)


@pytest.fixture(params=STORES)
def backend(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    postgres_server: Server[PostgresServer],
    redis_server: Server[RedisServer],
    file_store_only: Path,
) -> Backend:
    """Each store of the matrix, its settings in this process's environment too."""
    chosen = make_backend(str(request.param), tmp_path, postgres_server, redis_server)
    for key, value in chosen.env.items():
        monkeypatch.setenv(key, value)
    # Replace the suite's file-store-only mask (tests/conftest.py) with this store's.
    monkeypatch.setattr(sys, "path", [str(chosen.masks), *(p for p in sys.path if p != str(file_store_only))])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(chosen.masks), str(STORE_PLUGINS)]))
    return chosen
