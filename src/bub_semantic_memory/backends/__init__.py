"""What answers a chat-completion request: an OpenAI-compatible endpoint or a model in process.

The model-spec grammar (``local``, ``local:<name|path>``, anything else is a hosted model),
the backends behind it with the traits each declares (:class:`BackendTraits`, and the
:data:`ModelClass` they belong to; :func:`declared_traits` knows a spec's before it is opened),
transport retries and usage accounting, and the packaged local models.
"""

from __future__ import annotations

from bub_semantic_memory.backends._local_models import REGISTRY, LocalModel
from bub_semantic_memory.backends._specs import (
    LocalSpec,
    declared_traits,
    is_local_spec,
    open_backend,
    parse_local_spec,
)
from bub_semantic_memory.backends._transport import (
    BackendTraits,
    ChatBackend,
    ModelClass,
    OpenAIBackend,
    RetryPolicy,
)

__all__ = [
    "REGISTRY",
    "BackendTraits",
    "ChatBackend",
    "LocalModel",
    "LocalSpec",
    "ModelClass",
    "OpenAIBackend",
    "RetryPolicy",
    "declared_traits",
    "is_local_spec",
    "open_backend",
    "parse_local_spec",
]
