"""A bub worker process for the multi-worker store tests: the plugin on a shared SQL or Redis store.

Usage::

    python -m tests.helpers.bub_worker turns SESSION COUNT WORKSPACE
    python -m tests.helpers.bub_worker extract SESSION WORKSPACE

``turns`` runs COUNT agent turns on SESSION (the stub model answers; the plugin extracts
after every turn against ``BUB_SEMANTIC_MEMORY_BASE_URL``). ``extract`` extracts
SESSION's tape into its memory once, as a second process working on the same tape.
The store comes from the plugin selected by the environment (``BUB_TAPESTORE_*`` and
the masked ``PYTHONPATH``), loaded the way ``bub`` loads it. Prints the plugin's counters
as JSON on the last line.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import sys
from pathlib import Path

from bub.channels.message import ChannelMessage

from bub_semantic_memory.stores._store import session_tape_name
from tests.helpers.bub_env import make_framework


def fact(session: str, turn: int) -> str:
    """The message of one turn: one new person and where they live."""
    return f"Note: {person(session, turn)} lives in {city(turn)}."


def person(session: str, turn: int) -> str:
    worker = "".join(ch for ch in session if ch.isalnum()).title()
    return f"{worker} Person{turn:02d}"


def city(turn: int) -> str:
    return f"City{turn % 5}"


async def main(mode: str, session: str, count: int, workspace: Path) -> None:
    framework, plugin, _ = make_framework(workspace / "config.yml", workspace)
    for entry_point in importlib.metadata.entry_points(group="bub"):
        if entry_point.name.startswith("tapestore-"):  # the store plugin the environment leaves visible
            framework.plugin_manager.register(entry_point.load(), name=entry_point.name)
    async with framework.running():
        if mode == "turns":
            for turn in range(count):
                message = ChannelMessage(
                    session_id=session, channel="cli", chat_id="w", content=fact(session, turn)
                )
                await framework.process_inbound(message)
        else:
            store = framework.get_tape_store()
            assert store is not None
            plugin.memory.schedule(session_tape_name(session, framework.workspace), store, force=True)
            await plugin.memory.drain(120)
    print(json.dumps(dict(plugin.stats)), flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "turns":
        asyncio.run(main("turns", args[1], int(args[2]), Path(args[3])))
    else:
        asyncio.run(main("extract", args[1], 0, Path(args[2])))
