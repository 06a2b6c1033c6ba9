"""Regenerate ``bub_run_tape.jsonl``: a real tape written by ``bub run`` against a fake endpoint.

Run from the repository root: ``python tests/data/make_bub_tape.py``. Three turns in
one session: facts in a user message, a turn where the agent calls a tool (``fs.read``
of a notes file) whose result carries facts, and a correction.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bub_semantic_memory.testing import FakeOpenAIServer, text_reply, tool_call_reply

HERE = Path(__file__).parent
NOTES = "Team notes: Dana Whitfield owns the Orion migration; the deadline is December 12.\n"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        home, workspace = Path(tmp) / "home", Path(tmp) / "workspace"
        workspace.mkdir()
        (workspace / "notes.txt").write_text(NOTES, encoding="utf-8")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("BUB_")},
            "BUB_HOME": str(home),
            "BUB_MODEL": "openai:fake-model",
            "BUB_API_KEY": "test-key",
            "BUB_API_BASE": server.base_url,
            "HOME": str(Path(tmp)),
        }
        turns = [
            (
                "Hi! I'm Maya Lin, I lead the platform team at Globex. We're based in Lisbon.",
                [text_reply("Nice to meet you, Maya!")],
            ),
            (
                "Can you read notes.txt and tell me who owns the Orion migration?",
                [
                    tool_call_reply("fs_read", {"path": "notes.txt"}),
                    text_reply("Dana Whitfield owns the Orion migration; it is due December 12."),
                ],
            ),
            (
                "Actually Dana handed it over: Tom Becker owns Orion now.",
                [text_reply("Got it, Tom Becker owns Orion now.")],
            ),
        ]
        for message, replies in turns:
            server.enqueue(*replies)
            subprocess.run(
                [sys.executable, "-m", "bub", "run", message, "--session-id", "cli:fixture"],
                cwd=workspace,
                env=env,
                check=True,
                capture_output=True,
                timeout=120,
            )
        tapes = sorted((home / "tapes").glob("*.jsonl"))
        main_tapes = [t for t in tapes if "__sidecar__" not in t.name]
        assert len(main_tapes) == 1, tapes
        target = HERE / "bub_run_tape.jsonl"
        shutil.copyfile(main_tapes[0], target)
        kinds = [json.loads(line)["kind"] for line in target.read_text().splitlines()]
        print(
            f"wrote {target} ({len(kinds)} entries: {sorted(set(kinds))}); {len(server.requests)} model requests"
        )


if __name__ == "__main__":
    main()
