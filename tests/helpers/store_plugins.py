"""Choose which of the installed tape-store plugins a bub process loads.

bub loads every plugin of the ``bub`` entry-point group and has no switch to turn one
off; the dev environment installs both of bub's store plugins (SQLAlchemy and Redis),
and whichever registers last would win. ``importlib.metadata`` reads the first
distribution of a name on ``sys.path``, so a directory holding an empty
``entry_points.txt`` for a plugin, put first on ``PYTHONPATH`` (or ``sys.path``),
hides that plugin from bub while leaving its code importable.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

__all__ = ["STORE_PLUGINS", "mask_store_plugins"]

STORE_PLUGINS: dict[str, str] = {"sqlalchemy": "bub-tapestore-sqlalchemy", "redis": "bub-tapestore-redis"}
"""Short name -> distribution of bub's tape-store plugins."""


def mask_store_plugins(root: Path, *, keep: str | None = None) -> Path:
    """A directory that hides every store plugin except ``keep`` (None: all hidden, bub's file store).

    Returns ``root``, to put first on ``PYTHONPATH``.
    """
    root.mkdir(parents=True, exist_ok=True)
    for short, distribution in STORE_PLUGINS.items():
        if short == keep:
            continue
        try:
            version = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
        info = root / f"{distribution.replace('-', '_')}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n", encoding="utf-8"
        )
        (info / "entry_points.txt").write_text("", encoding="utf-8")
    return root
