"""What answers a chat-completion request: an OpenAI-compatible endpoint or a model in process.

The model-spec grammar (``local``, ``local:<name|path>``, anything else is a hosted model),
the backends behind it with the traits each declares (:class:`BackendTraits`, and the
:data:`ModelClass` they belong to; :func:`declared_traits` knows a spec's before it is opened),
transport retries and usage accounting, and the packaged local models.
"""

from __future__ import annotations

from bub_semantic_memory.backends._local_models import (
    DEFAULT_LOCAL_MODEL,
    REGISTRY,
    LocalModel,
    assembled_path,
    is_assembled,
    resolve_local_file,
)
from bub_semantic_memory.backends._specs import (
    LocalSpec,
    declared_traits,
    is_local_spec,
    model_note,
    open_backend,
    parse_local_spec,
)
from bub_semantic_memory.backends._transport import (
    BILLED_CLASSES,
    HOSTED,
    MODEL_CLASSES,
    BackendTraits,
    CallLedger,
    ChatBackend,
    EndpointFailure,
    ModelClass,
    OpenAIBackend,
    RetryPolicy,
    send_with_retries,
)

__all__ = [
    "BILLED_CLASSES",
    "DEFAULT_LOCAL_MODEL",
    "HOSTED",
    "MODEL_CLASSES",
    "REGISTRY",
    "BackendTraits",
    "CallLedger",
    "ChatBackend",
    "EndpointFailure",
    "LocalModel",
    "LocalSpec",
    "ModelClass",
    "OpenAIBackend",
    "RetryPolicy",
    "assembled_path",
    "declared_traits",
    "is_assembled",
    "is_local_spec",
    "model_note",
    "open_backend",
    "parse_local_spec",
    "resolve_local_file",
    "send_with_retries",
]
