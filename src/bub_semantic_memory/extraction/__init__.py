"""Turning tape entries into validated snapshots.

Versioned prompts and their strategies, the response models a model fills in and the
validation of its answers against the window, the windows sent, and the
:class:`Extractor` that drives Instructor over a backend.
"""

from __future__ import annotations

from bub_semantic_memory.extraction._candidates import candidate_names
from bub_semantic_memory.extraction._config import ExtractorConfig, default_bounds
from bub_semantic_memory.extraction._extractor import Extractor
from bub_semantic_memory.extraction._prompts import (
    Promotion,
    PromptLibrary,
    PromptTemplate,
    bundled_prompts_dir,
    writable_prompts_dir,
)

__all__ = [
    "Extractor",
    "ExtractorConfig",
    "Promotion",
    "PromptLibrary",
    "PromptTemplate",
    "bundled_prompts_dir",
    "candidate_names",
    "default_bounds",
    "writable_prompts_dir",
]
