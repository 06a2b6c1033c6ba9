"""What answers a chat-completion request: an OpenAI-compatible endpoint or a model in process.

The model-spec grammar (``local``, ``local:<name|path>``, anything else is a hosted model),
the backends behind it with the traits each declares (:class:`BackendTraits`, and the
:data:`ModelClass` a spec belongs to: :func:`model_class_of`), transport retries and usage
accounting, and the packaged local models.
"""

from __future__ import annotations

from bub_semantic_memory.backends._local_models import REGISTRY, LocalModel
from bub_semantic_memory.backends._specs import (
    LocalSpec,
    is_local_spec,
    model_class_of,
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
    "is_local_spec",
    "model_class_of",
    "open_backend",
    "parse_local_spec",
]
