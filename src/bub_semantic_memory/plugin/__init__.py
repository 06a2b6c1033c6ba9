"""The Bub plugin (entry point ``semantic-memory`` in the ``bub`` group) and its settings.

Importing this package imports bub; the core never imports it.
"""

from __future__ import annotations

from bub_semantic_memory.plugin._hooks import SemanticMemoryPlugin

__all__ = ["SemanticMemoryPlugin"]
