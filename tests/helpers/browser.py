"""Open a rendered report in headless Chromium (the Debian ``chromium`` package) through Playwright.

Playwright drives the system browser at :data:`CHROMIUM`; no browser is downloaded
(``playwright install`` is never run). Every request that leaves the file is blocked
and recorded, so a page that needs the network shows up in :attr:`PageRun.requests`.

Also a script that refreshes the README's screenshot of a committed report::

    python -m tests.helpers.browser evals/reports/local-quick-extract1-2-3 docs/eval-report.png
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class PageRun:
    """An open page and what it logged: console errors, uncaught exceptions, outgoing requests."""

    page: Page
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def chromium_available() -> bool:
    return Path(CHROMIUM).is_file()


@contextlib.contextmanager
def open_page(html: Path, *, width: int = 1200, height: int = 900) -> Iterator[PageRun]:
    """Load ``html`` (a local file) in a fresh headless Chromium profile."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": width, "height": height},
        )
        try:
            page = context.new_page()
            run = PageRun(page)
            page.on("console", lambda m: run.console_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: run.page_errors.append(str(exc)))

            def block(route: Route) -> None:
                if route.request.url.startswith("file:"):
                    route.continue_()
                    return
                run.requests.append(route.request.url)
                route.abort()

            page.route("**/*", block)
            page.goto(html.resolve().as_uri(), wait_until="load")
            yield run
        finally:
            context.close()


def screenshot_report(report_dir: Path, png: Path) -> None:
    """Render ``report_dir/report.json`` to HTML and save a full-page screenshot of it as ``png``."""
    from bub_semantic_memory.evals.extraction import load_report
    from bub_semantic_memory.evals.reports import to_html

    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        html.write_text(to_html(load_report(report_dir / "report.json")), encoding="utf-8")
        with open_page(html, width=1100) as run:
            run.page.screenshot(path=str(png), full_page=True)


if __name__ == "__main__":
    screenshot_report(Path(sys.argv[1]), Path(sys.argv[2]))
