"""The eval response cache: one file per (prompt sha256, model, mode, transcript hash, settings).

A re-run of an eval makes no model calls for what it already extracted. The cache
stores a fixture's whole extraction (its snapshots, with the usage of the original
calls) rather than single responses, because the report needs the original usage
and attempts. (Instructor's own cache was considered: it keys on the client's
identity and the full request, scopes keys to one client instance by default, and
stores only the parsed model, losing the usage and re-asks the report scores.)

Only complete extractions are cached; a failed fixture is tried again next run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from bub_semantic_memory.models import Snapshot

__all__ = ["CachedExtraction", "ResponseCache", "cache_key"]


class CachedExtraction(BaseModel):
    """What a cache file holds."""

    key: str
    key_fields: dict[str, Any]
    snapshots: list[Snapshot]


def cache_key(**fields: Any) -> tuple[str, dict[str, Any]]:
    """A stable key for the given fields (order-independent)."""
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest(), fields


class ResponseCache:
    """A directory of cached extractions, written atomically (safe for concurrent runs)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedExtraction | None:
        """The cached extraction, or None (a corrupt file counts as a miss)."""
        path = self._path(key)
        try:
            cached = CachedExtraction.model_validate_json(path.read_bytes())
        except (FileNotFoundError, ValidationError):
            return None
        return cached if cached.key == key else None

    def put(self, key: str, key_fields: dict[str, Any], snapshots: list[Snapshot]) -> None:
        """Store an extraction under ``key``."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        entry = CachedExtraction(key=key, key_fields=key_fields, snapshots=snapshots)
        tmp.write_text(entry.model_dump_json(), encoding="utf-8")
        tmp.replace(path)
