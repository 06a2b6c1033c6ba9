"""One frozen description of an extractor: which model, which prompt, which bounds.

Every entry point builds exactly one :class:`ExtractorConfig` from what it reads (CLI
options, the plugin's settings, eval options) and hands it down whole; nothing below
the entry point re-reads settings or re-derives a default. The defaults that depend on
the backend (a local model gets one re-ask, a longer deadline and a smaller output cap)
are decided here, once, from :func:`~bub_semantic_memory.backends.is_local_spec`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from bub_semantic_memory.backends import is_local_spec
from bub_semantic_memory.errors import ConfigurationError
from bub_semantic_memory.prompts import PromptLibrary, PromptTemplate
from bub_semantic_memory.redact import Redactor
from bub_semantic_memory.transcript import LineLimits
from bub_semantic_memory.transport import RetryPolicy

__all__ = ["MODES", "ExtractorConfig"]

MODES = ("tools", "json_schema", "md_json", "json")
_LOCAL_RETRY = RetryPolicy(reasks=1, deadline_s=600.0)
_LOCAL_OUTPUT_TOKENS = 1024
_HOSTED_OUTPUT_TOKENS = 2048


def _resolve_mode(mode: str) -> str:
    key = mode.strip().lower().replace("-", "_")
    if key not in MODES:
        raise ConfigurationError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")
    return key


@dataclass(frozen=True, kw_only=True)
class ExtractorConfig:
    """Everything an :class:`~bub_semantic_memory.extractor.Extractor` needs to know.

    Attributes:
        model: the model name at the endpoint, or a local spec (``local``, ``local:<name>``,
            ``local:/path/model.gguf``; see :mod:`.backends`).
        base_url: OpenAI-compatible endpoint (``None``: OpenAI's).
        api_key: the endpoint's key (never shown in ``repr``).
        mode: ``tools`` (default), ``json_schema``, ``md_json`` or ``json``.
        prompt: a prompt reference (``extract@2``; ``extract`` is the promoted version) or a
            loaded :class:`PromptTemplate` (an eval with a substituted ontology).
        prompts_dir: where references are looked up (``None``: the bundled prompts).
        retry: re-ask and transport bounds (``None``: the backend's default).
        chunk_tokens: estimated tokens of new transcript per call (``None``: 3000, or what
            fits a backend with a known context size).
        overlap_lines, overlap_tokens: earlier context shown with each window (already extracted).
        max_known_entities: known entities listed in the prompt.
        max_output_tokens: ``max_tokens`` of each request (``None``: the backend's default).
        temperature: sampling temperature.
        redact_patterns, redact_allowlist: extra secret patterns, and finds to keep (full matches).
        line_limits: per-entry character caps of the rendered transcript.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    mode: str = "tools"
    prompt: str | PromptTemplate = "extract"
    prompts_dir: Path | None = None
    retry: RetryPolicy | None = None
    chunk_tokens: int | None = None
    overlap_lines: int = 4
    overlap_tokens: int = 250
    max_known_entities: int = 20
    max_output_tokens: int | None = None
    temperature: float = 0.0
    redact_patterns: tuple[str, ...] = ()
    redact_allowlist: tuple[str, ...] = ()
    line_limits: LineLimits | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigurationError("no model given: pass --model (or set BUB_SEMANTIC_MEMORY_MODEL)")
        object.__setattr__(self, "mode", _resolve_mode(self.mode))
        object.__setattr__(self, "redact_patterns", tuple(self.redact_patterns))
        object.__setattr__(self, "redact_allowlist", tuple(self.redact_allowlist))

    @property
    def is_local(self) -> bool:
        """Whether the model runs in this process (a ``local`` spec)."""
        return is_local_spec(self.model)

    def library(self) -> PromptLibrary:
        """The prompt library references are resolved in."""
        return PromptLibrary(self.prompts_dir)

    def load_prompt(self) -> PromptTemplate:
        """The prompt version to extract with (loaded and hash-checked)."""
        return self.prompt if isinstance(self.prompt, PromptTemplate) else self.library().load(self.prompt)

    def retry_policy(self) -> RetryPolicy:
        """The retry bounds: as given, else one re-ask and a long deadline for a local model.

        In-process calls are slow (seconds of CPU each) and a grammar already keeps them
        schema-valid, so a second re-ask buys little.
        """
        if self.retry is not None:
            return self.retry
        return _LOCAL_RETRY if self.is_local else RetryPolicy()

    def with_reasks(self, reasks: int) -> ExtractorConfig:
        """A copy that re-asks ``reasks`` times, the other retry bounds as they were."""
        return self.replace(retry=dataclasses.replace(self.retry_policy(), reasks=reasks))

    def output_tokens(self) -> int:
        """``max_tokens`` per request: as given, else 1024 for a local model and 2048 otherwise."""
        if self.max_output_tokens is not None:
            return self.max_output_tokens
        return _LOCAL_OUTPUT_TOKENS if self.is_local else _HOSTED_OUTPUT_TOKENS

    def redactor(self) -> Redactor:
        """The secret redactor for everything rendered (on by default)."""
        return Redactor(list(self.redact_patterns), allowlist=list(self.redact_allowlist))

    def replace(self, **changes: object) -> ExtractorConfig:
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
