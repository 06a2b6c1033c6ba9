"""Which dependencies' log records stay quiet: they repeat what this package already says.

Instructor logs every exhausted re-ask at ERROR level ("Max retries exceeded..."), and the HTTP
clients log each request; the extractor reports the same failure itself, once, with the model,
the attempts and the usage. Entry points call :func:`quiet_dependencies`; importing this module
changes nothing. A host that logs ``bub_semantic_memory`` at DEBUG (``--verbose``) hears it all.

Two scopes, because the two entry points own different amounts of the process:

* ``process`` (the CLI, whose process is its own): the loggers of :data:`NOISY_LOGGERS` are set
  to CRITICAL (back to NOTSET with ``--verbose``).
* ``extraction`` (the plugin, a guest in bub's process, where bub, its channels and other
  plugins use httpx and openai too): only the records those loggers emit while an extraction
  call runs are dropped. The extractor marks its calls with :func:`extraction_call` (a context
  variable, so concurrent agent requests in other tasks are not marked), and a filter on each
  of those loggers, and on each logger below them, drops what is marked.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Literal

__all__ = ["NOISY_LOGGERS", "extraction_call", "quiet_dependencies"]

NOISY_LOGGERS = ("instructor", "httpx", "httpx2", "openai")
_EMITTERS = ("instructor.v2.retry", "openai._base_client")
"""Loggers below :data:`NOISY_LOGGERS` that log during a call (a logger's filters do not apply to
the records of the loggers below it, so each gets the filter, even before its module is imported)."""
_IN_EXTRACTION: ContextVar[bool] = ContextVar("bub_semantic_memory_extraction_call", default=False)


@contextlib.contextmanager
def extraction_call() -> Iterator[None]:
    """Marks the code of one extraction call: what dependencies log inside it is this package's story."""
    token = _IN_EXTRACTION.set(True)
    try:
        yield
    finally:
        _IN_EXTRACTION.reset(token)


def _verbose() -> bool:
    return logging.getLogger("bub_semantic_memory").isEnabledFor(logging.DEBUG)


class _DuringExtraction(logging.Filter):
    """Drops a record logged inside :func:`extraction_call`, unless this package logs at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _IN_EXTRACTION.get() or _verbose()


_FILTER = _DuringExtraction()


def quiet_dependencies(scope: Literal["process", "extraction"] = "process") -> None:
    """Quiet :data:`NOISY_LOGGERS` for the whole process, or only inside extraction calls.

    Args:
        scope: ``process`` (the CLI: nothing else runs in its process) sets them to CRITICAL,
            or back to NOTSET when this package logs at DEBUG; ``extraction`` (the plugin)
            filters out only the records of extraction calls, so the host's own requests keep
            their logs.
    """
    if scope == "extraction":
        for name in _loggers_below(NOISY_LOGGERS):
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)
        return
    level = logging.NOTSET if _verbose() else logging.CRITICAL
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(level)


def _loggers_below(roots: tuple[str, ...]) -> list[str]:
    """``roots``, :data:`_EMITTERS` and every logger already created below a root."""
    existing = [
        name for name in logging.root.manager.loggerDict if any(name.startswith(f"{r}.") for r in roots)
    ]
    return list(dict.fromkeys([*roots, *_EMITTERS, *existing]))
