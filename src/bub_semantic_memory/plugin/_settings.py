"""The plugin's settings: ``BUB_SEMANTIC_MEMORY_*`` variables or bub config's ``semantic-memory`` section.

Precedence (bub's convention for plugin settings): environment variables, then a
``.env`` file, then the ``semantic-memory:`` section of bub's ``config.yml``, then the
defaults below. Model, endpoint and key default to bub's own model settings
(``BUB_MODEL``, ``BUB_API_BASE``, ``BUB_API_KEY``...), so installing the plugin into a
working bub needs no configuration. This is the only module that reads settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import bub
from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from bub_semantic_memory.agent import MemoryPolicy, MemorySetup, default_cadence
from bub_semantic_memory.backends import is_local_spec
from bub_semantic_memory.extraction import default_bounds

__all__ = [
    "ModelEndpoint",
    "SemanticMemorySettings",
    "load_settings",
    "memory_setup",
    "resolve_endpoint",
]

# OpenAI-compatible base URLs of bub providers whose any-llm provider has no explicit api_base.
_PROVIDER_BASE_URLS = {
    "openai": None,
    "openrouter": "https://openrouter.ai/api/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "ollama": "http://localhost:11434/v1",
    "groq": "https://api.groq.com/openai/v1",
    "together": "https://api.together.xyz/v1",
    "mistral": "https://api.mistral.ai/v1",
    "lmstudio": "http://localhost:1234/v1",
    "llamacpp": "http://localhost:8080/v1",
    "vllm": "http://localhost:8000/v1",
}
_DEFAULT = default_bounds()
_CADENCE = default_cadence()


@bub.config(name="semantic-memory")
class SemanticMemorySettings(bub.Settings):
    """Settings of the semantic memory plugin (env prefix ``BUB_SEMANTIC_MEMORY_``)."""

    model_config = SettingsConfigDict(env_prefix="BUB_SEMANTIC_MEMORY_", extra="ignore", env_file=".env")

    enabled: bool = Field(default=True, description="Extract memory and inject it into the agent's context.")
    model: str | None = Field(
        default=None,
        description="Extraction model; default: the model part of bub's BUB_MODEL. 'local' works.",
    )
    base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint; default: bub's for its provider."
    )
    api_key: SecretStr | None = Field(
        default=None, description="Endpoint key; default: bub's key for its provider."
    )
    mode: str = Field(default="tools", description="Instructor mode: tools, json_schema, md_json or json.")
    prompt: str = Field(default="extract", description="Prompt version; default: the promoted one.")
    prompts_dir: Path | None = Field(
        default=None, description="A prompt directory replacing the bundled one."
    )
    budget: int = Field(
        default=MemoryPolicy.budget, ge=50, description="Token budget of the injected memory block."
    )
    passage_share: float = Field(
        default=MemoryPolicy.passage_share,
        ge=0,
        le=1,
        description="Share of the budget the transcript lines that match the latest message best may "
        "take, shown after the facts; the facts get what they leave (0: facts only).",
    )
    placement: Literal["message", "system"] = Field(
        default="message",
        description=(
            "Where the memory block goes: 'message' after the conversation so far, keeping the agent's "
            "prompt prefix cacheable; 'system' in the leading system message (needs no tape context hook)."
        ),
    )
    every_turns: int | None = Field(
        default=MemoryPolicy.every_turns,
        ge=1,
        description=(
            "Extract after every N-th user turn, and at handoffs and shutdown "
            f"(default: {_CADENCE['every_turns']})."
        ),
    )
    min_new_tokens: int | None = Field(
        default=MemoryPolicy.min_new_tokens,
        ge=0,
        description=(
            "Or as soon as the new transcript reaches this many tokens, 0: off "
            f"(default: {_CADENCE['min_new_tokens']})."
        ),
    )
    chunk_tokens: int | None = Field(
        default=None,
        ge=200,
        description=f"Transcript tokens per extraction call (default: {_DEFAULT['chunk_tokens']}).",
    )
    request_timeout: float | None = Field(
        default=None,
        gt=0,
        description=f"Seconds per HTTP request to the endpoint (default: {_DEFAULT['request_timeout']}).",
    )
    deadline: float | None = Field(
        default=None,
        gt=0,
        description=(
            f"Seconds one extraction call may take, retries included (default: {_DEFAULT['deadline']})."
        ),
    )
    reasks: int | None = Field(
        default=None,
        ge=0,
        le=5,
        description=f"Validation re-asks per extraction call (default: {_DEFAULT['reasks']}).",
    )
    transport_attempts: int | None = Field(
        default=None,
        ge=1,
        le=10,
        description=(
            "Requests per call against an endpoint that keeps failing "
            f"(default: {_DEFAULT['transport_attempts']})."
        ),
    )
    shutdown_timeout: float | None = Field(
        default=None,
        ge=0,
        description=(
            "Seconds to wait at shutdown for running extractions "
            f"(default: {_DEFAULT['shutdown_timeout']}: its unfinished work goes to a catch-up process)."
        ),
    )
    catch_up: bool = Field(
        default=True,
        description=(
            "At shutdown, hand a local model's unfinished extraction to a background process that "
            "extracts it and exits (off: it is extracted by a later run)."
        ),
    )
    retry_cooldown: float = Field(
        default=MemoryPolicy.retry_cooldown,
        ge=0,
        description="Seconds to wait after a failed extraction before trying that tape again.",
    )
    failed_window_tries: int = Field(
        default=MemoryPolicy.failed_window_tries,
        ge=0,
        description=(
            "Runs in a row (in this process) a window may fail because every answer of the model broke "
            "a rule before it is stored with nothing kept (why in the snapshot, a warning logged), so "
            "the memory goes on past it; 0: retry it for as long as it fails."
        ),
    )
    max_concurrent: int = Field(
        default=MemoryPolicy.max_concurrent, ge=1, description="Extractions running at once across sessions."
    )
    checkpoint_every: int = Field(
        default=MemoryPolicy.checkpoint_every,
        ge=0,
        description="Store a checkpoint of the folded memory after this many new snapshots (0: never).",
    )
    max_agent_forgets: int = Field(
        default=MemoryPolicy.max_agent_forgets,
        ge=0,
        description="Forgets the agent's memory.forget tool may make in one turn; more are refused.",
    )
    redact_patterns: list[str] = Field(
        default_factory=list, description="Extra regular expressions to redact."
    )
    redact_allowlist: list[str] = Field(
        default_factory=list,
        description="Regular expressions of finds to keep unredacted (matched in full).",
    )


def load_settings() -> SemanticMemorySettings:
    """The settings as bub resolves them (environment, ``.env``, config file, defaults)."""
    return bub.ensure_config(SemanticMemorySettings)


@dataclass(frozen=True)
class ModelEndpoint:
    """Where extraction requests go."""

    model: str
    base_url: str | None
    api_key: str | None


def resolve_endpoint(settings: SemanticMemorySettings) -> ModelEndpoint | None:
    """The extraction endpoint: explicit settings first, then bub's model settings.

    Returns None when no OpenAI-compatible endpoint can be derived (for example bub
    configured with a provider that speaks another API and no base URL given).
    """
    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    if settings.model and (settings.base_url or is_local_spec(settings.model)):
        return ModelEndpoint(settings.model, settings.base_url, api_key)
    from bub.builtin.settings import load_settings as load_bub_settings

    agent = load_bub_settings()
    provider, _, model_id = agent.model.partition(":")
    if not model_id:
        provider, model_id = "openai", provider
    client = agent.model_client_kwargs(provider)
    base_url = settings.base_url or client.get("api_base")
    if base_url is None and provider not in _PROVIDER_BASE_URLS:
        return None
    return ModelEndpoint(
        model=settings.model or model_id,
        base_url=base_url or _PROVIDER_BASE_URLS.get(provider),
        api_key=api_key or client.get("api_key"),
    )


def memory_setup(settings: SemanticMemorySettings) -> MemorySetup:
    """The plugin's memory setup: :meth:`MemorySetup.from_settings`, the builder of the CLI and the
    evals too, with the endpoint derived from bub's model settings.

    A bound left unset stays ``None``, so the plugin runs the backend's defaults, exactly as the
    CLI and the evals do for the same model. When no endpoint can be derived, the setup reads and
    shows memory but extracts nothing (``extractor`` is None).

    Raises:
        ConfigurationError: a setting is invalid (an unknown mode, for example).
    """
    values = settings.model_dump()
    endpoint = resolve_endpoint(settings)
    if endpoint is None:
        return MemorySetup.from_settings(values, extract=False)
    return MemorySetup.from_settings(
        values, model=endpoint.model, base_url=endpoint.base_url, api_key=endpoint.api_key
    )
