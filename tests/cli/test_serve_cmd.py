"""``semantic-memory serve``: the llama.cpp server it starts goes when it goes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FAKE_SERVER = """
import os, sys, time
if __name__ == "__main__":
    with open(os.environ["FAKE_SERVER_PID"], "w") as f:
        f.write(f"{os.getpid()} {' '.join(sys.argv[1:])}")
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_stopping_serve_with_sigterm_stops_the_server_it_started(tmp_path: Path) -> None:
    fake = tmp_path / "fake" / "llama_cpp"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("", encoding="utf-8")
    (fake / "server.py").write_text(FAKE_SERVER, encoding="utf-8")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    pid_file = tmp_path / "server.pid"
    env = {**os.environ, "PYTHONPATH": str(fake.parent), "FAKE_SERVER_PID": str(pid_file)}
    command = ["serve", "--model", f"local:{model}", "--port", "8123"]
    serve = subprocess.Popen(
        [sys.executable, "-c", "from bub_semantic_memory.cli import main; main()", *command],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text(encoding="utf-8"):
            assert serve.poll() is None and time.monotonic() < deadline, "the server never started"
            time.sleep(0.1)
        server_pid, argv = pid_file.read_text(encoding="utf-8").split(" ", 1)
        assert f"--model {model}" in argv and "--port 8123" in argv
        serve.send_signal(signal.SIGTERM)  # what `kill` and a service manager send
        serve.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(int(server_pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(int(server_pid)), "the llama.cpp server outlived serve"
    finally:
        serve.kill()
        if pid_file.exists() and pid_file.read_text(encoding="utf-8"):
            pid = int(pid_file.read_text(encoding="utf-8").split(" ", 1)[0])
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
