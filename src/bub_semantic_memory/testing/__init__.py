"""Test doubles shipped with bub-semantic-memory (nothing here starts on import).

Everything :mod:`~bub_semantic_memory.testing._fake_openai` exports (the fake server, its
reply types and reply helpers), plus :class:`OracleResponder`.
"""

from __future__ import annotations

from bub_semantic_memory.testing import _fake_openai
from bub_semantic_memory.testing._fake_openai import *  # noqa: F403
from bub_semantic_memory.testing._oracle import OracleResponder, SchemaFollowingOracle

__all__ = ["OracleResponder", "SchemaFollowingOracle"]
__all__ += _fake_openai.__all__
