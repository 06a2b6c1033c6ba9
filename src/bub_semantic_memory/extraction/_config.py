"""One frozen description of an extractor, and the bounds of its calls resolved for a backend.

Every entry point builds exactly one :class:`ExtractorConfig`, with one builder,
:meth:`ExtractorConfig.from_settings`, from what it reads by the settings' names (the
plugin's settings, the CLI's options, which the eval commands share; the cost budget's
defaults), and hands it down whole; nothing below the entry point re-reads settings. A
setting left at ``None`` means "the backend's default", and those defaults are decided in
one place, :meth:`ExtractorConfig.resolve`, from the
:class:`~bub_semantic_memory.backends.BackendTraits` the backend declares: a model in this
process gets one re-ask, a long deadline, a smaller output cap and windows that fit its
context; a hosted endpoint gets the documented transport bounds. The plugin, the CLI and the
evals therefore run the same bounds for the same model, and :func:`default_bounds` words
those defaults for the settings' help and the CLI's.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bub_semantic_memory._errors import ConfigurationError
from bub_semantic_memory.backends import (
    DEFAULT_LOCAL_MODEL,
    REGISTRY,
    BackendTraits,
    ChatBackend,
    ModelClass,
    RetryPolicy,
    open_backend,
)
from bub_semantic_memory.extraction._prompts import PromptLibrary, PromptTemplate, WindowShape
from bub_semantic_memory.tape import LineLimits, Redactor

__all__ = ["MODES", "SETTINGS", "CallBounds", "ExtractorConfig", "default_bounds"]

MODES = ("tools", "json_schema", "md_json", "json")
_IN_PROCESS_RETRY = RetryPolicy(reasks=1, deadline_s=600.0)
_IN_PROCESS_SHUTDOWN_S = 0.0  # the model's thread is stopped at once; a catch-up process takes over
_HOSTED_SHUTDOWN_S = 30.0
_IN_PROCESS_OUTPUT_TOKENS = 1024
_HOSTED_OUTPUT_TOKENS = 2048
_DEFAULT_CHUNK_TOKENS = 3000
_FITTED_CHUNK_TOKENS = 1500  # small models extract better (and a CPU answers sooner) from short windows
_MIN_CHUNK_TOKENS = 300
# A generous estimate of a prompt's fixed part (instructions, ontology) in tokens, and of
# one listed known entity; a window is planned within what is left of the context.
_PROMPT_OVERHEAD_TOKENS = 2000
_KNOWN_ENTITY_TOKENS = 12
_OVERLAP_LINES = 4
_OVERLAP_TOKENS = 250
_KNOWN_ENTITIES = 20
_BOUND = {"bound": True}
"""Field metadata of the settings :meth:`ExtractorConfig.resolve` turns into :class:`CallBounds`."""
_NOT_AN_ANSWER_INPUT = {"answer": False}
"""Field metadata of the settings that do not change what a model answers (where, with which key)."""
SETTINGS: Mapping[str, str] = {
    "model": "model",
    "base_url": "base_url",
    "api_key": "api_key",
    "mode": "mode",
    "prompt": "prompt",
    "prompts_dir": "prompts_dir",
    "reasks": "reasks",
    "transport_attempts": "transport_attempts",
    "deadline": "deadline_s",
    "request_timeout": "request_timeout_s",
    "chunk_tokens": "chunk_tokens",
    "shutdown_timeout": "shutdown_timeout_s",
    "redact_patterns": "redact_patterns",
    "redact_allowlist": "redact_allowlist",
}
"""The settings an extractor is built from, by their name (the plugin's setting, the CLI's option,
``BUB_SEMANTIC_MEMORY_<NAME>``), and the :class:`ExtractorConfig` field each one sets."""


@dataclass(frozen=True, kw_only=True)
class CallBounds:
    """The bounds every extraction call of one extractor runs under, resolved for its backend.

    Attributes:
        retry: re-asks, transport attempts, request cap, deadline and timeouts.
        max_output_tokens: ``max_tokens`` of each request.
        chunk_tokens: estimated tokens of new transcript per call.
        overlap_lines, overlap_tokens: earlier context shown with each window (already extracted).
        max_known_entities: known entities listed in the prompt.
    """

    retry: RetryPolicy
    max_output_tokens: int
    chunk_tokens: int
    overlap_lines: int = 4
    overlap_tokens: int = 250
    max_known_entities: int = 20


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _check_base_url(base_url: str) -> None:
    """Refuse an endpoint that is no http(s) URL with a host: no request to it could succeed."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"the endpoint {base_url!r} is no http:// or https:// URL with a host: "
            "fix --base-url (BUB_SEMANTIC_MEMORY_BASE_URL), e.g. http://localhost:8080/v1"
        )


def _first_set(*values: int | None) -> int:
    """The first value that is set (the last one always is)."""
    return next(value for value in values if value is not None)


def _fitting_chunk_tokens(
    context_tokens: int | None, output_tokens: int, overlap_tokens: int, known: int
) -> int:
    """New transcript per call: 3000 tokens, or what fits a backend whose context is known.

    A window must fit beside the prompt's fixed part, the overlap, the known entities
    and the answer; a local model opened with a small context would otherwise reject
    the request ("Requested tokens exceed context window").
    """
    if context_tokens is None:
        return _DEFAULT_CHUNK_TOKENS
    budget = context_tokens - output_tokens - _PROMPT_OVERHEAD_TOKENS - overlap_tokens
    budget -= known * _KNOWN_ENTITY_TOKENS
    return max(_MIN_CHUNK_TOKENS, min(_FITTED_CHUNK_TOKENS, budget))


def _resolve_mode(mode: str) -> str:
    key = mode.strip().lower().replace("-", "_")
    if key not in MODES:
        raise ConfigurationError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")
    return key


@dataclass(frozen=True, kw_only=True)
class ExtractorConfig:
    """Everything an :class:`~bub_semantic_memory.extraction.Extractor` needs to know.

    Attributes:
        model: the model name at the endpoint, or a local spec (``local``, ``local:<name>``,
            ``local:/path/model.gguf``; see :mod:`bub_semantic_memory.backends`).
        base_url: OpenAI-compatible endpoint (``None``: OpenAI's).
        api_key: the endpoint's key (never shown in ``repr``).
        mode: ``tools`` (default), ``json_schema``, ``md_json`` or ``json``.
        prompt: a prompt reference (``extract@2``; ``extract`` is the version promoted for the
            backend's model class) or a loaded :class:`PromptTemplate` (an eval with a
            substituted ontology).
        prompts_dir: where references are looked up (``None``: the bundled prompts).
        retry: the whole retry policy (back-off times included; ``None``: the backend's).
        reasks, transport_attempts, deadline_s, request_timeout_s: single bounds of the retry
            policy, applied over it (``None``: as the policy has them).
        chunk_tokens: estimated tokens of new transcript per call (``None``: 3000, or what
            fits a backend with a known context size).
        shutdown_timeout_s: how long the host's shutdown waits for running extractions
            (``None``: 30 s for an endpoint; 0 for a model in this process, whose thread is
            stopped at once so that ``bub run`` prints its reply without waiting).
        max_output_tokens: ``max_tokens`` of each request (``None``: the backend's default).
        overlap_lines, overlap_tokens: earlier context shown with each window, already extracted
            (``None``: as the prompt version declares, else 4 lines and 250 tokens).
        max_known_entities: known entities listed in the prompt (``None``: as the prompt version
            declares, else 20).
        temperature: sampling temperature.
        redact_patterns, redact_allowlist: extra secret patterns, and finds to keep (full matches).
        line_limits: per-entry character caps of the rendered transcript.
    """

    model: str
    base_url: str | None = field(default=None, metadata=_NOT_AN_ANSWER_INPUT)
    api_key: str | None = field(default=None, repr=False, metadata=_NOT_AN_ANSWER_INPUT)
    mode: str = "tools"
    prompt: str | PromptTemplate = field(default="extract", metadata=_NOT_AN_ANSWER_INPUT)
    prompts_dir: Path | None = field(default=None, metadata=_NOT_AN_ANSWER_INPUT)
    retry: RetryPolicy | None = field(default=None, metadata=_BOUND)
    reasks: int | None = field(default=None, metadata=_BOUND)
    transport_attempts: int | None = field(default=None, metadata=_BOUND)
    deadline_s: float | None = field(default=None, metadata=_BOUND)
    request_timeout_s: float | None = field(default=None, metadata=_BOUND)
    chunk_tokens: int | None = field(default=None, metadata=_BOUND)
    shutdown_timeout_s: float | None = field(default=None, metadata=_BOUND)
    max_output_tokens: int | None = field(default=None, metadata=_BOUND)
    overlap_lines: int | None = field(default=None, metadata=_BOUND)
    overlap_tokens: int | None = field(default=None, metadata=_BOUND)
    max_known_entities: int | None = field(default=None, metadata=_BOUND)
    temperature: float = 0.0
    redact_patterns: tuple[str, ...] = ()
    redact_allowlist: tuple[str, ...] = ()
    line_limits: LineLimits | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigurationError("no model given: pass --model (or set BUB_SEMANTIC_MEMORY_MODEL)")
        if _URL.match(self.model):
            raise ConfigurationError(
                f"the model {self.model!r} is a URL: pass the endpoint as --base-url "
                "(BUB_SEMANTIC_MEMORY_BASE_URL) and the model's name at that endpoint as --model "
                "(BUB_SEMANTIC_MEMORY_MODEL)"
            )
        if self.base_url is not None:
            _check_base_url(self.base_url)
        object.__setattr__(self, "mode", _resolve_mode(self.mode))
        object.__setattr__(self, "redact_patterns", tuple(self.redact_patterns))
        object.__setattr__(self, "redact_allowlist", tuple(self.redact_allowlist))

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], /, **overrides: Any) -> ExtractorConfig:
        """The configuration settings describe: how the plugin, the CLI and the evals build one.

        Args:
            settings: values by the names of :data:`SETTINGS` (the plugin's settings, a
                command's parsed options); other names (a command's own options) are ignored.
                ``None`` leaves a setting at its default; a bound's default is the backend's
                (see :meth:`resolve`).
            overrides: values by the same names that win over ``settings`` (the endpoint the
                plugin derived from bub's model settings, the cost budget's fake endpoint).

        Raises:
            ConfigurationError: no model, or a setting that is invalid (an unknown mode, a
                model that is a URL, an endpoint that is no http(s) URL).
        """
        values = {**settings, **overrides}
        fields: dict[str, Any] = {
            field_name: values[name]
            for name, field_name in SETTINGS.items()
            if name != "model" and values.get(name) is not None
        }
        for name in ("redact_patterns", "redact_allowlist"):
            fields[name] = tuple(fields.get(name, ()))
        return cls(model=values.get("model") or "", **fields)

    def resolve(self, traits: BackendTraits, window: WindowShape | None = None) -> CallBounds:
        """The bounds of every call for a backend with ``traits``: the one place defaults are decided.

        What is set here wins; what is ``None`` takes the backend's default, and the context
        shown with each window takes what the prompt version declares (``window``). A model in
        this process answers in seconds of CPU per request under a grammar that already
        keeps it schema-valid, so it gets one re-ask, a 600 s deadline and a 1,024-token
        output cap; a hosted endpoint gets :class:`RetryPolicy`'s bounds and 2,048 tokens.
        Windows fit the backend's context when it is known.
        """
        shape = window or WindowShape()
        base = self.retry or (_IN_PROCESS_RETRY if traits.in_process else RetryPolicy())
        changes: dict[str, Any] = {
            name: value
            for name, value in (
                ("reasks", self.reasks),
                ("transport_attempts", self.transport_attempts),
                ("deadline_s", self.deadline_s),
                ("request_timeout_s", self.request_timeout_s),
            )
            if value is not None
        }
        output = self.max_output_tokens or (
            _IN_PROCESS_OUTPUT_TOKENS if traits.in_process else _HOSTED_OUTPUT_TOKENS
        )
        overlap_lines = _first_set(self.overlap_lines, shape.overlap_lines, _OVERLAP_LINES)
        overlap_tokens = _first_set(self.overlap_tokens, shape.overlap_tokens, _OVERLAP_TOKENS)
        known = _first_set(self.max_known_entities, shape.max_known_entities, _KNOWN_ENTITIES)
        chunk = self.chunk_tokens or _fitting_chunk_tokens(
            traits.context_tokens, output, overlap_tokens, known
        )
        return CallBounds(
            retry=dataclasses.replace(base, **changes),
            max_output_tokens=output,
            chunk_tokens=chunk,
            overlap_lines=overlap_lines,
            overlap_tokens=overlap_tokens,
            max_known_entities=known,
        )

    def shutdown_grace(self, traits: BackendTraits) -> float:
        """Seconds the host's shutdown gives running extractions on a backend with ``traits``.

        An endpoint's get 30 s; a model in this process's get none: its windows take minutes of
        CPU, and ``bub run`` prints its reply only once shutdown is over. Not a call bound (it
        decides no answer, so it is no part of an eval's cache key).
        """
        if self.shutdown_timeout_s is not None:
            return self.shutdown_timeout_s
        return _IN_PROCESS_SHUTDOWN_S if traits.in_process else _HOSTED_SHUTDOWN_S

    def answer_inputs(self) -> dict[str, Any]:
        """The settings that decide what the model answers, besides the bounds and the prompt.

        Derived from the fields: every field counts unless it is marked as resolved into
        :class:`CallBounds` (those count through :meth:`resolve`) or as no input of an answer
        (endpoint, key, prompt reference and directory). A new setting therefore counts until
        it is marked otherwise. Eval cache keys are built from this.
        """
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.metadata.get("answer", True) and not f.metadata.get("bound", False)
        }

    def open_backend(self, *, http_client: Any = None, models_dir: Path | None = None) -> ChatBackend:
        """The backend that answers :attr:`model` (see :func:`~bub_semantic_memory.backends.open_backend`)."""
        return open_backend(
            self.model,
            base_url=self.base_url,
            api_key=self.api_key,
            http_client=http_client,
            models_dir=models_dir,
        )

    def library(self) -> PromptLibrary:
        """The prompt library references are resolved in."""
        return PromptLibrary(self.prompts_dir)

    def load_prompt(self, model_class: ModelClass | None = None) -> PromptTemplate:
        """The prompt version to extract with (loaded and hash-checked).

        A bare name (``extract``, the default) is the version promoted for ``model_class``:
        a version tuned on the local model can cost a hosted model many times more.
        """
        if isinstance(self.prompt, PromptTemplate):
            return self.prompt
        return self.library().load(self.prompt, model_class=model_class)

    def redactor(self) -> Redactor:
        """The secret redactor for everything rendered (on by default)."""
        return Redactor(list(self.redact_patterns), allowlist=list(self.redact_allowlist))

    def replace(self, **changes: object) -> ExtractorConfig:
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def default_bounds() -> dict[str, str]:
    """How each bound a setting leaves unset is decided, in words, by setting name.

    ``{"deadline": "180; 600 for a local model", ...}``: what :meth:`ExtractorConfig.resolve`
    gives an endpoint and the default local model, so that the settings' descriptions, the
    CLI's help and the README say what the code does.
    """
    local_model = REGISTRY[DEFAULT_LOCAL_MODEL]
    local_traits = BackendTraits(in_process=True, context_tokens=local_model.context_tokens)
    config = ExtractorConfig(model="local")
    hosted, local = config.resolve(BackendTraits()), config.resolve(local_traits)

    def both(endpoint: object, in_process: object) -> str:
        return f"{endpoint}" if endpoint == in_process else f"{endpoint}; {in_process} for a local model"

    def seconds(value: float) -> str:
        return f"{value:g}"

    return {
        "reasks": both(hosted.retry.reasks, local.retry.reasks),
        "transport_attempts": both(hosted.retry.transport_attempts, local.retry.transport_attempts),
        "deadline": both(seconds(hosted.retry.deadline_s), seconds(local.retry.deadline_s)),
        "request_timeout": both(
            seconds(hosted.retry.request_timeout_s), seconds(local.retry.request_timeout_s)
        ),
        "chunk_tokens": f"{hosted.chunk_tokens}; what fits a local model's context "
        f"({local.chunk_tokens} for local)",
        "max_output_tokens": both(hosted.max_output_tokens, local.max_output_tokens),
        "shutdown_timeout": both(
            seconds(config.shutdown_grace(BackendTraits())), seconds(config.shutdown_grace(local_traits))
        ),
    }
