"""Where bub keeps its state, for the layers that do not otherwise need bub.

bub's home (``BUB_HOME``, else ``~/.bub``) holds the packaged local models
(``<home>/models``) and, for an installed package, the prompt files a user writes
(``<home>/prompts``). Importing bub loads a ``.env`` file and its framework, so the model
specs, the prompt library and the commands that only need a path ask here, and bub is
imported when the path is first needed, never when a module is imported.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["bub_home", "models_dir"]


def bub_home() -> Path:
    """bub's home directory, as bub resolves it (``BUB_HOME`` respected)."""
    import bub

    return Path(bub.home)


def models_dir() -> Path:
    """Where packaged local models are assembled: ``<bub home>/models``."""
    return bub_home() / "models"
