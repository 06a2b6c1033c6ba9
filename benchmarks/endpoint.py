"""A fake extraction endpoint in a separate process, so its CPU work is not billed to the client.

The in-process :class:`FakeOpenAIServer` answers from threads of the benchmark's own process;
parsing each request and running the oracle then competes with the client for the GIL, which
a real (remote) endpoint never does. For throughput figures the benchmarks run it here, in a
child process: ``python -m benchmarks.endpoint --latency 0.2`` starts a server answering from
the eval fixtures' gold (:class:`OracleResponder`, trimmed to each request's schema by
:class:`SchemaFollowingOracle`), prints its base URL, and then answers
commands on stdin: ``count`` prints the number of chat-completion requests received so far,
``latency <seconds>`` changes the latency, end of input stops it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from types import TracebackType
from typing import IO, Self

__all__ = ["EndpointProcess", "main"]


class EndpointProcess:
    """The parent's handle on ``python -m benchmarks.endpoint`` (use as a context manager)."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.base_url = ""
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Self:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.endpoint", "--latency", str(self.latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self._read_line()
        if not self.base_url.startswith("http"):
            raise RuntimeError(f"the fake endpoint did not start: {self.base_url!r}")
        return self

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self._process is not None and self._process.stdin and self._process.stdout
        return self._process.stdin, self._process.stdout

    def _read_line(self) -> str:
        return self._pipes()[1].readline().strip()

    def _command(self, text: str) -> str:
        stdin, _ = self._pipes()
        stdin.write(text + "\n")
        stdin.flush()
        return self._read_line()

    def requests(self) -> int:
        """Chat-completion requests the endpoint received so far."""
        return int(self._command("count"))

    def set_latency(self, seconds: float) -> None:
        self._command(f"latency {seconds}")

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._process is not None:
            stdin, _ = self._pipes()
            stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.endpoint")
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()

    from benchmarks.common import FIXTURES
    from bub_semantic_memory.evals import load_fixtures
    from bub_semantic_memory.testing import (
        CHAT_COMPLETIONS_PATH,
        FakeOpenAIServer,
        OracleResponder,
        SchemaFollowingOracle,
    )

    golds = [f.gold for f in load_fixtures(FIXTURES)]
    responder = SchemaFollowingOracle(OracleResponder.from_golds(golds))
    with FakeOpenAIServer(latency=args.latency, responder=responder) as server:
        print(server.base_url, flush=True)
        for line in sys.stdin:
            command, _, value = line.strip().partition(" ")
            if command == "count":
                print(len(server.requests_to(CHAT_COMPLETIONS_PATH)), flush=True)
            elif command == "latency":
                server.latency = float(value)
                print("ok", flush=True)
            else:
                print(f"unknown command {command!r}", flush=True)


if __name__ == "__main__":
    main()
