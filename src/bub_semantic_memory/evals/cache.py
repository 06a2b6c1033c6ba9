"""The eval response cache: one file per (prompt sha256, model, mode, transcript hash, settings).

For a local model the key also holds the backend's ``fingerprint`` (model file, batch size,
repeat penalty): those decide its answers as much as the prompt does, and the spec ``local``
names whichever file is the default. For a prompt with ``candidates: true`` it holds a hash
of the transcript's candidate names, which the schema offers and a change in that heuristic
changes.

A re-run of an eval makes no model calls for what it already extracted. The cache
stores a fixture's whole extraction (its snapshots, with the usage of the original
calls) rather than single responses, because the report needs the original usage
and attempts. (Instructor's own cache was considered: it keys on the client's
identity and the full request, scopes keys to one client instance by default, and
stores only the parsed model, losing the usage and re-asks the report scores.)

A failure is cached only when it is the model's answer: output that stayed invalid after
the re-asks (:class:`ValidationExhaustedError`) or ran into the output limit
(:class:`OutputTruncatedError`). Asked the same thing again at temperature 0, the model
answers the same, so a re-run replays the failure (with the usage it cost) instead of paying
for it again. The key does not cover the extractor's own code: after changing validators,
run with ``--no-cache``. Endpoint failures (:class:`TransportError`) are never cached: the
next run tries again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, ValidationError

from bub_semantic_memory.errors import ExtractionError, OutputTruncatedError, ValidationExhaustedError
from bub_semantic_memory.models import Snapshot, Usage

logger = logging.getLogger(__name__)

__all__ = [
    "CACHEABLE_FAILURES",
    "CACHE_FORMAT",
    "CachedExtraction",
    "CachedFailure",
    "ResponseCache",
    "cache_key",
]

CACHE_FORMAT = 2
"""Part of every key: bumped when what a cache file means changes (2: failures are cached)."""

type CacheableFailure = Literal["ValidationExhaustedError", "OutputTruncatedError"]

CACHEABLE_FAILURES: dict[str, type[ExtractionError]] = {
    "ValidationExhaustedError": ValidationExhaustedError,
    "OutputTruncatedError": OutputTruncatedError,
}
"""The failures that are the model's own answer, by class name."""


class CachedFailure(BaseModel):
    """A cached failure of the model, enough to raise the same error again.

    The model's raw last output is not kept: it is not part of any report, and a cache
    file should hold nothing the extractor did not redact.
    """

    error_type: CacheableFailure
    reason: str
    model: str = ""
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)
    too_many_items: bool = False

    @classmethod
    def of(cls, error: ExtractionError) -> CachedFailure | None:
        """The record of ``error``, or None when it is not the model's answer (not cacheable)."""
        name = type(error).__name__
        if CACHEABLE_FAILURES.get(name) is not type(error):
            return None
        details = error.details()
        details.pop("last_output")
        return cls(error_type=cast("CacheableFailure", name), reason=error.reason, **details)

    def error(self) -> ExtractionError:
        """The error again, as the original run raised it."""
        error = CACHEABLE_FAILURES[self.error_type](
            self.reason, usage=self.usage, model=self.model, attempts=self.attempts
        )
        if isinstance(error, ValidationExhaustedError):
            error.too_many_items = self.too_many_items
        return error


class CachedExtraction(BaseModel):
    """What a cache file holds."""

    key: str
    key_fields: dict[str, Any]
    snapshots: list[Snapshot]
    failure: CachedFailure | None = None
    """Set when the extraction failed after ``snapshots`` (the windows before the failure)."""


def cache_key(**fields: Any) -> tuple[str, dict[str, Any]]:
    """A stable key for the given fields (order-independent), and the cache format."""
    fields = {"cache_format": CACHE_FORMAT, **fields}
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest(), fields


class ResponseCache:
    """A directory of cached extractions, written atomically (safe for concurrent runs)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedExtraction | None:
        """The cached extraction, or None (a corrupt or unreadable file counts as a miss)."""
        path = self._path(key)
        try:
            cached = CachedExtraction.model_validate_json(path.read_bytes())
        except (FileNotFoundError, ValidationError):
            return None
        except OSError as exc:  # a directory where the file should be, no permission...
            logger.warning("eval cache: cannot read %s, treated as a miss: %s", path, exc)
            return None
        return cached if cached.key == key else None

    def put(
        self,
        key: str,
        key_fields: dict[str, Any],
        snapshots: list[Snapshot],
        failure: CachedFailure | None = None,
    ) -> None:
        """Store an extraction (complete, or ended by the model's ``failure``) under ``key``.

        A cache that cannot be written (read-only, disk full) is logged, never raised: the
        run's results do not depend on it.
        """
        path = self._path(key)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        entry = CachedExtraction(key=key, key_fields=key_fields, snapshots=snapshots, failure=failure)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(entry.model_dump_json(), encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            logger.warning("eval cache: cannot store %s, the run goes on without it: %s", path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
