"""Which dependencies' loggers stay quiet: their messages repeat what this package already says.

Instructor logs every exhausted re-ask at ERROR level ("Max retries exceeded..."), and the HTTP
clients log each request; the extractor reports the same failure itself, once, with the model,
the attempts and the usage. Entry points (the CLI, the plugin) call :func:`quiet_dependencies`;
importing this module changes nothing.
"""

from __future__ import annotations

import logging

__all__ = ["NOISY_LOGGERS", "quiet_dependencies"]

NOISY_LOGGERS = ("instructor", "httpx", "httpx2", "openai")


def quiet_dependencies() -> None:
    """Silence :data:`NOISY_LOGGERS` below CRITICAL, unless this package's own logs are at DEBUG.

    A host that logs ``bub_semantic_memory`` at DEBUG (``--verbose``) wants the whole story.
    """
    if logging.getLogger("bub_semantic_memory").isEnabledFor(logging.DEBUG):
        return
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)
