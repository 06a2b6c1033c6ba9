"""Every error this package raises on purpose.

All of them descend from one root, so a caller can catch the package's failures
without catching its bugs::

    SemanticMemoryError
    ├── ConfigurationError          bad settings, a missing optional extra
    ├── TapeNameError               a tape name that could escape the store directory
    ├── TapeReadError               a tape file that cannot be opened at all
    ├── PromptError
    │   ├── PromptNotFoundError     no such prompt name or version
    │   ├── PromptFormatError       front matter or template that does not parse
    │   └── PromptIntegrityError    a released version whose content changed
    ├── StoreError                  the memory sidecar could not be read or written
    ├── EditError                   an edit of the memory that cannot be made (no such entity...)
    ├── ExtractionError             carries usage, attempts and model (see below)
    │   ├── TransportError          the endpoint kept failing (429, 5xx, timeouts, refused)
    │   ├── ValidationExhaustedError  re-asks did not produce a valid extraction
    │   ├── OutputTruncatedError    the model stopped at its token limit
    │   └── ReplayMissError         a replay-only eval run found no cached response
    └── EvalError
        ├── FixtureError            a fixture or predictions file that does not parse
        └── GateError               a candidate prompt did not pass the promotion gate

Individual bad lines of a tape are not errors: the reader skips them, counts them
and warns (see :mod:`bub_semantic_memory.tape._transcript`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from bub_semantic_memory._models import Usage

__all__ = [
    "ConfigurationError",
    "EditError",
    "EvalError",
    "ExtractionError",
    "FixtureError",
    "GateError",
    "OutputTruncatedError",
    "PromptError",
    "PromptFormatError",
    "PromptIntegrityError",
    "PromptNotFoundError",
    "ReplayMissError",
    "SemanticMemoryError",
    "StoreError",
    "TapeNameError",
    "TapeReadError",
    "TransportError",
    "ValidationExhaustedError",
]


class SemanticMemoryError(Exception):
    """Root of every error raised on purpose by bub-semantic-memory."""


class ConfigurationError(SemanticMemoryError):
    """A setting is missing or invalid, or an optional extra is not installed."""


class TapeNameError(SemanticMemoryError, ValueError):
    """A tape name is empty, too long, or could escape the store directory."""


class TapeReadError(SemanticMemoryError):
    """A tape file cannot be opened (missing, a directory, unreadable)."""


class PromptError(SemanticMemoryError):
    """Base class for prompt loading problems."""


class PromptNotFoundError(PromptError, LookupError):
    """The requested prompt name or version does not exist."""


class PromptFormatError(PromptError):
    """A prompt file's front matter, ontology or template is malformed."""


class PromptIntegrityError(PromptError):
    """A released prompt version no longer matches the sha256 recorded for it."""


class StoreError(SemanticMemoryError):
    """The memory sidecar could not be read or written (disk full, read-only, ...)."""


class EditError(SemanticMemoryError):
    """An edit of a tape's memory cannot be made: no such entity, relation, fact or edit, an
    ambiguous name, or an export file that does not parse."""


class ExtractionError(SemanticMemoryError):
    """An extraction failed after its retry bounds were exhausted.

    Attributes:
        usage: tokens, requests and attempts spent, failed attempts included.
        model: the model that was asked.
        attempts: the validation attempts made (one per model response).
        last_output: the last raw tool arguments or content the model produced, if any.
        window: the first and last entry id of the window that failed (None: not known, or
            the failure was not one window's).
    """

    def __init__(
        self,
        message: str,
        *,
        usage: Usage | None = None,
        model: str = "",
        attempts: int = 0,
        last_output: str | None = None,
        window: tuple[int, int] | None = None,
    ) -> None:
        from bub_semantic_memory._models import Usage

        self.usage = usage if usage is not None else Usage()
        self.model = model
        self.attempts = attempts
        self.last_output = last_output
        self.window = window
        detail = (
            f"model={model or '?'} attempts={attempts} requests={self.usage.requests} "
            f"tokens={self.usage.prompt_tokens}+{self.usage.completion_tokens}"
        )
        super().__init__(f"{message} ({detail})")
        self.reason = message

    def details(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this error (subclasses add their own)."""
        return {
            "usage": self.usage,
            "model": self.model,
            "attempts": self.attempts,
            "last_output": self.last_output,
            "window": self.window,
        }

    def charged(self, extra: Usage) -> Self:
        """The same error with ``extra`` added to its cost (earlier attempts that led to it)."""
        details = self.details() | {"usage": self.usage + extra, "attempts": self.attempts + extra.attempts}
        return type(self)(self.reason, **details)

    def on_window(self, first_entry_id: int, last_entry_id: int) -> Self:
        """The same error, saying which window failed (the extractor names the innermost one:
        a failing half of a split window propagates past its parent untouched)."""
        return type(self)(self.reason, **(self.details() | {"window": (first_entry_id, last_entry_id)}))


class TransportError(ExtractionError):
    """The endpoint kept failing: HTTP 429 or 5xx, timeouts, refused or reset connections."""


class ValidationExhaustedError(ExtractionError):
    """The model's output stayed invalid after every re-ask.

    Attributes:
        too_many_items: the last answer listed more entities or relations than the
            schema allows; the extractor then splits the window instead of giving up.
    """

    def __init__(self, message: str, *, too_many_items: bool = False, **details: Any) -> None:
        super().__init__(message, **details)
        self.too_many_items = too_many_items

    def details(self) -> dict[str, Any]:
        return super().details() | {"too_many_items": self.too_many_items}


class OutputTruncatedError(ExtractionError):
    """The model hit its output token limit (finish_reason "length") before finishing."""


class ReplayMissError(ExtractionError):
    """A replay-only run needed a model response that is not in the cache."""


class EvalError(SemanticMemoryError):
    """Base class for eval harness problems."""


class FixtureError(EvalError):
    """A fixture, gold or predictions file is malformed."""


class GateError(EvalError):
    """A candidate prompt version failed the promotion gate.

    Attributes:
        report: the eval report the gate decided on (an ``evals.extraction.Report``), so a
            refused candidate's run is not lost; None when no run was made.
    """

    def __init__(self, message: str, *, report: object | None = None) -> None:
        super().__init__(message)
        self.report = report
