"""An eval report's files in a folder: ``report.json``, ``report.md`` and ``report.html``."""

from __future__ import annotations

from pathlib import Path

from bub_semantic_memory.evals.extraction._report import Report
from bub_semantic_memory.evals.reports._html import to_html
from bub_semantic_memory.evals.reports._markdown import to_markdown

__all__ = ["write_report_files"]


def write_report_files(report: Report, out: Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``out`` (created if missing).

    Returns:
        The written paths keyed ``json``, ``md`` and ``html``.
    """
    out.mkdir(parents=True, exist_ok=True)
    contents = {
        "json": ("report.json", report.model_dump_json(indent=2) + "\n"),
        "md": ("report.md", to_markdown(report)),
        "html": ("report.html", to_html(report)),
    }
    paths: dict[str, Path] = {}
    for key, (name, text) in contents.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        paths[key] = path
    return paths
