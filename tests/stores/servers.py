"""Real database servers for the store matrix: PostgreSQL and Redis in temporary directories.

Each server listens on a free loopback port, keeps its data in a temporary directory
and is stopped (and the directory removed) by its owner. PostgreSQL refuses to run as
root, so under root it runs as the ``postgres`` user (``runuser``). A server that cannot
start raises :class:`ServerUnavailable`; the fixtures turn that into a skip on a
developer machine and a failure under ``CI=true`` (a skipped store test counts as failed there).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["PostgresServer", "RedisServer", "Server", "ServerUnavailable", "free_port", "unavailable"]

PG_BIN = Path("/usr/lib/postgresql/15/bin")
_START_TIMEOUT_S = 30.0


class ServerUnavailable(RuntimeError):
    """A database server could not be started on this machine."""


def unavailable(what: str, exc: Exception) -> None:
    """Skip (developer machine) or fail (``CI=true``) a test whose server cannot start."""
    message = f"{what} is unavailable: {exc}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: store tests must run, not skip)", pytrace=False)
    pytest.skip(message)


@dataclass
class Server[T]:
    """A session server started on first use; a failed start is remembered (not retried per test)."""

    factory: Callable[[], T]
    what: str
    instance: T | None = None
    error: ServerUnavailable | None = None

    def get(self) -> T:
        if self.instance is None and self.error is None:
            try:
                self.instance = self.factory()
            except ServerUnavailable as exc:
                self.error = exc
        if self.error is not None:
            unavailable(self.what, self.error)
        assert self.instance is not None
        return self.instance


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pg_tool(name: str) -> str:
    """A PostgreSQL server binary: on PATH, else Debian's ``/usr/lib/postgresql/<version>/bin`` (15 first)."""
    candidates = [PG_BIN, *sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)]
    found = shutil.which(name) or next((str(d / name) for d in candidates if (d / name).exists()), None)
    if found is None:
        raise ServerUnavailable(
            f"PostgreSQL's {name} is not installed (looked on PATH and in /usr/lib/postgresql)"
        )
    return found


class PostgresServer:
    """A throw-away PostgreSQL cluster (trust auth, fsync off) on 127.0.0.1."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="bsm-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            runuser = shutil.which("runuser")
            if runuser is None:
                raise ServerUnavailable("running as root and runuser is missing: PostgreSQL refuses root")
            self._as_user = [runuser, "-u", "postgres", "--"]
            shutil.chown(self.root, user="postgres")
        self._run(
            _pg_tool("initdb"),
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
        )
        self.start()

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of the ``postgres`` database."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        result = subprocess.run([*self._as_user, *command], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise ServerUnavailable(
                f"{Path(command[0]).name} failed: {result.stderr.strip() or result.stdout.strip()}"
            )

    def start(self) -> None:
        options = f"-k {self.root} -p {self.port} -h 127.0.0.1 -c fsync=off -c max_connections=200"
        self._run(
            _pg_tool("pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        self._run(_pg_tool("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def close(self) -> None:
        with contextlib.suppress(ServerUnavailable, subprocess.SubprocessError):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class RedisServer:
    """A throw-away ``redis-server`` on 127.0.0.1; its append-only file (``<root>/appendonlydir``)
    survives a stop and start."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServerUnavailable("redis-server is not installed (apt-get install redis-server)")
        self.binary = binary
        self.root = Path(tempfile.mkdtemp(prefix="bsm-redis-"))
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        # redis-py 8 gives up reading after 5 s; on a shared CI machine with several bub
        # processes starting at once, an event loop can be starved that long.
        return f"redis://127.0.0.1:{self.port}/0?socket_timeout=60"

    def start(self) -> None:
        command = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "no",  # SIGTERM still flushes the file; no fsync stalls on a busy disk
            "--aof-use-rdb-preamble",
            "no",  # a rewritten append-only file stays commands, not compressed RDB: its bytes can be searched
        ]
        command += ["--dir", str(self.root), "--logfile", str(self.root / "log")]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerUnavailable(
                    f"redis-server exited with {self.process.returncode}; see {self.root / 'log'}"
                )
            if self._ping():
                return
            time.sleep(0.05)
        self.stop()
        raise ServerUnavailable(f"redis-server did not answer on port {self.port}")

    def _ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as connection:
                connection.sendall(b"PING\r\n")
                return connection.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server (SIGTERM: Redis flushes its append-only file first)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
