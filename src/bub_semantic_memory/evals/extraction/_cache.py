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
for it again. Endpoint failures (:class:`TransportError`) are never cached: the next run
tries again.

What is cached is the outcome of the extractor's code as much as of the model: a validator
that drops an item, a split window or another re-ask message changes the snapshots. So the
key also holds :func:`extraction_code_sha256`, a hash of the code of every package module
the extractor reaches. It is taken from the syntax tree without docstrings, so comments,
docstrings and formatting keep the cache; any other edit of that code empties it for the
runs that follow (the scoring is not in it: a replay scores the cached snapshots anew).

A replay at the plugin's cadence of a long conversation makes hundreds of requests over an hour
or more on a local model, so it is also cached as it goes: at the end of each turn that stored a
snapshot and failed nothing, the snapshots so far and how many entries were replayed
(:class:`PartialReplay`, beside the complete entry's file, under the same key). A run cut short
(stopped, killed, or failed for good) resumes there; the complete entry replaces it. The windows
of a replay are also decided by the plugin's own code (its cadence, the service), which the key
does not hold: a partial replay records a hash of that code (:func:`replay_code_sha256`), and one
made by other code is started over rather than finished by a mix of the two.

Erasure (``forget --purge``) reaches the cache through :meth:`ResponseCache.purge`: a file
belongs to a tape when one of its snapshots is of that tape (the request is kept only as the
hash of its transcript, so a file's own text is what can name someone), and each such file that
names what was forgotten is deleted, not rewritten: a rewritten entry would replay an
extraction the model never made, a deleted one costs one extraction on the next run.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, ValidationError

from bub_semantic_memory._errors import ExtractionError, OutputTruncatedError, ValidationExhaustedError
from bub_semantic_memory._models import Snapshot, Usage

logger = logging.getLogger(__name__)

__all__ = [
    "CACHEABLE_FAILURES",
    "CACHE_FORMAT",
    "CachedExtraction",
    "CachedFailure",
    "PartialReplay",
    "ResponseCache",
    "cache_key",
    "extraction_code_sha256",
    "replay_code_sha256",
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
        details.pop("window")  # where in the tape is the run's to say, not the answer's
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


class PartialReplay(CachedExtraction):
    """A replay at the plugin's cadence cut short: where it stood at the end of a turn.

    The snapshots are those the plugin's service had stored once the tape's first
    ``replayed_entries`` entries were appended and extracted at its cadence, with no failed
    extraction waiting to be tried again: everything the service's state is made of.
    """

    replayed_entries: int
    failures: int = 0
    """Extractions that had failed by then (each was tried again, and later succeeded)."""
    last_entry_id: int = 0
    """The id of the last entry replayed: a tape whose entries moved is started over."""
    code_sha256: str = ""
    """:func:`replay_code_sha256` of the run that stored it."""


PACKAGE = "bub_semantic_memory"
EXTRACTION_ENTRY = f"{PACKAGE}.extraction._extractor"
"""Where the extraction code starts: it and every package module it imports make the revision."""


REPLAY_ENTRY = f"{PACKAGE}.evals.extraction._replay"
"""Where a replay at the plugin's cadence starts: with the modules it reaches, it decides the windows."""


@functools.cache
def extraction_code_sha256() -> str:
    """A sha256 of the extraction code: every package module ``EXTRACTION_ENTRY`` reaches.

    Imports inside functions count (the local backend is imported only when it is used).
    Each module is hashed as its syntax tree without docstrings, so editing a comment, a
    docstring or the layout leaves the cache valid.
    """
    return _code_sha256(EXTRACTION_ENTRY)


@functools.cache
def replay_code_sha256() -> str:
    """A sha256 of the code a replay at the plugin's cadence runs (``REPLAY_ENTRY`` and what it
    reaches: the service, its scheduler and cadence, the stores), as :func:`extraction_code_sha256`."""
    return _code_sha256(REPLAY_ENTRY)


def _code_sha256(entry: str) -> str:
    digest = hashlib.sha256()
    for module, tree in sorted(_reached_modules(entry).items()):
        digest.update(f"{module}\0{_shape(tree)}\0".encode())
    return digest.hexdigest()


def code_shape(source: str) -> str:
    """The source's syntax tree without docstrings, as text: what the code does, not how it reads."""
    return _shape(ast.parse(source))


def _shape(tree: ast.Module) -> str:
    """``tree`` as text once its docstrings are taken out (in place)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body or not isinstance(node, _DOCUMENTED):
            continue
        if _is_docstring(body[0]):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _reached_modules(entry: str) -> dict[str, ast.Module]:
    """The package modules ``entry`` imports, directly or through others, each parsed once."""
    found: dict[str, ast.Module] = {}
    pending = [entry]
    while pending:
        module = pending.pop()
        if module in found:
            continue
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:  # ``from package.module import name``: the name is no module
            continue
        if spec is None or spec.origin is None:
            continue
        found[module] = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        pending.extend(_package_imports(found[module]))
    return found


def _package_imports(tree: ast.Module) -> Iterator[str]:
    """What the module imports from the package, anywhere in it: modules, and names that may be modules."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith(PACKAGE))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


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
        run's results do not depend on it. A partial replay under the same key is dropped.
        """
        entry = CachedExtraction(key=key, key_fields=key_fields, snapshots=snapshots, failure=failure)
        self._write(self._path(key), entry)
        self.drop_partial(key)

    def get_partial(self, key: str) -> PartialReplay | None:
        """Where a replay cut short under ``key`` stood, or None (unreadable counts as none)."""
        path = self._partial_path(key)
        try:
            partial = PartialReplay.model_validate_json(path.read_bytes())
        except (FileNotFoundError, ValidationError):
            return None
        except OSError as exc:
            logger.warning("eval cache: cannot read %s, the replay starts over: %s", path, exc)
            return None
        return partial if partial.key == key else None

    def put_partial(self, partial: PartialReplay) -> None:
        """Store where a replay stands (replacing where it stood before); logged, never raised."""
        self._write(self._partial_path(partial.key), partial)

    def drop_partial(self, key: str) -> None:
        with contextlib.suppress(OSError):
            self._partial_path(key).unlink(missing_ok=True)

    def _partial_path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.partial.json"

    def _write(self, path: Path, entry: BaseModel) -> None:
        """Write ``entry`` to ``path`` atomically (a reader sees the old file or the new one)."""
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(entry.model_dump_json(), encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            logger.warning("eval cache: cannot store %s, the run goes on without it: %s", path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)

    def purge(self, tape: str, names_it: Callable[[str], bool]) -> int:
        """Delete the cached extractions of ``tape`` whose file text ``names_it``; how many.

        Partial replays are cached extractions too (their files end ``.partial.json``). A file
        that does not parse is left alone (it is a miss anyway) unless its text names it.
        """
        removed = 0
        for path in sorted(self.directory.glob("*/*.json")):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                logger.warning("eval cache: cannot read %s for the purge: %s", path, exc)
                continue
            try:
                of_tape = any(s.tape == tape for s in CachedExtraction.model_validate_json(text).snapshots)
            except ValidationError:
                of_tape = True  # unreadable: judged by its text alone
            if of_tape and names_it(text):
                path.unlink(missing_ok=True)
                removed += 1
        return removed
