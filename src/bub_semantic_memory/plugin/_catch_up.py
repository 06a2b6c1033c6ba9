"""A local model's extraction, carried on after bub exits, and the claim that keeps it single.

A model in bub's own process costs minutes of CPU per window, and ``bub run`` prints its
reply only once the plugin's shutdown is over; so at shutdown the plugin stops the model's
thread at once (see :mod:`bub_semantic_memory.backends._local`) and hands each tape it cut
short to a *catch-up* process: ``python -m bub_semantic_memory.plugin._catch_up``, started
detached in the same workspace, with the same environment and bub config file. It loads
bub's plugins as bub does (so the same tape store and settings), extracts everything after
the tape's watermark and exits. Its log goes to ``<bub home>/semantic-memory/catch-up.log``.

While a catch-up process works on a tape it holds the tape's claim, an exclusive ``flock``
on ``<bub home>/semantic-memory/claims/<tape>.lock``; the plugin takes the same claim around
each in-process extraction, so two model processes never extract one tape at once on one
machine (a second one skips the tape, and a later turn extracts what is left). The lock goes
with the process that holds it, however that process ends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from bub_semantic_memory._home import bub_home

__all__ = ["claim_tape", "hand_off", "main"]

logger = logging.getLogger(__name__)

_LOG_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"
PLUGIN_NAME = "semantic-memory"
"""The plugin's entry-point name, under which bub registers it."""


def _state_dir() -> Path:
    return bub_home() / "semantic-memory"


def log_path() -> Path:
    """Where catch-up processes write their log."""
    return _state_dir() / "catch-up.log"


@contextlib.contextmanager
def claim_tape(tape: str) -> Iterator[bool]:
    """Hold ``tape``'s extraction claim while the block runs; yields False when another holds it."""
    claims = _state_dir() / "claims"
    claims.mkdir(parents=True, exist_ok=True)
    fd = os.open(claims / f"{tape}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def is_claimed(tape: str) -> bool:
    """Whether another process holds ``tape``'s claim now."""
    with claim_tape(tape) as mine:
        return not mine


def hand_off(tape: str, *, workspace: Path, config_file: Path) -> int | None:
    """Start a detached catch-up process for ``tape``; its pid (None: one already holds the tape).

    The process outlives this one: a session of its own, no terminal, output to the catch-up log.
    """
    if is_claimed(tape):
        return None
    log = log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", __name__, "--tape", tape, "--config-file", str(config_file)]
    with log.open("ab") as out:
        log.chmod(0o600)
        process = subprocess.Popen(
            command,
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    return process.pid


async def _catch_up(tape: str, config_file: Path) -> int:
    from bub.framework import BubFramework

    framework = BubFramework(config_file=config_file)
    framework.load_hooks()
    plugin = framework.plugin_manager.get_plugin(PLUGIN_NAME)
    if plugin is None:
        logger.error("catch-up of %s: the %s plugin is not loaded", tape, PLUGIN_NAME)
        return 1
    async with framework.running():
        store = framework.get_tape_store()
        if store is None:
            logger.error("catch-up of %s: bub provided no tape store", tape)
            return 1
        stored = await plugin.catch_up(tape, store)
    logger.info("catch-up of %s: %d snapshot(s) stored", tape, stored)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Extract one tape's entries after its watermark with the plugin's settings, then exit."""
    parser = argparse.ArgumentParser(prog=f"python -m {__name__}", description=main.__doc__)
    parser.add_argument("--tape", required=True, help="the tape to extract")
    parser.add_argument("--config-file", type=Path, required=True, help="bub's config file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=_LOG_FORMAT)
    try:
        return asyncio.run(_catch_up(args.tape, args.config_file))
    except Exception:
        logger.exception("catch-up of %s failed; a later run extracts what is left", args.tape)
        return 1


if __name__ == "__main__":
    sys.exit(main())
