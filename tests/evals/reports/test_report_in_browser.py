"""The HTML report in a real browser: headless Chromium renders the charts, logs no error, fetches nothing.

Needs the Debian ``chromium`` package (``.ci/run`` installs it). Without it the test
is skipped on a developer machine and fails under ``CI=true``, so CI never passes
without having looked at the page.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from bub_semantic_memory.evals.extraction import load_report
from bub_semantic_memory.evals.reports import write_report_files
from tests.conftest import REPO
from tests.helpers.browser import CHROMIUM, chromium_available, open_page

REPORT = REPO / "evals" / "reports" / "oracle-all-extract1-vs-2" / "report.json"  # every chart has data in it
CHARTS = ["chart-fixture-f1", "chart-comparisons", "chart-entity-types", "chart-relation-types", "chart-cost"]


@pytest.fixture(scope="module")
def require_chromium() -> None:
    if chromium_available():
        return
    message = f"headless Chromium not found at {CHROMIUM} (apt-get install chromium)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


@pytest.mark.slow
def test_the_report_renders_its_charts_in_chromium(require_chromium: None, tmp_path: Path) -> None:
    paths = write_report_files(load_report(REPORT), tmp_path)
    with open_page(paths["html"]) as run:
        page = run.page
        for chart_id in CHARTS:
            chart = page.locator(f"svg#{chart_id}")
            assert chart.count() == 1, chart_id
            chart.scroll_into_view_if_needed()
            assert chart.is_visible(), chart_id
            box = chart.bounding_box()
            assert box is not None and box["width"] > 300 and box["height"] > 60, (chart_id, box)
            marks = chart.locator("rect.bar, circle.dot")
            assert marks.count() > 0, chart_id
            first = marks.first.bounding_box()
            assert first is not None and first["width"] > 0 and first["height"] > 0, chart_id
        bars = page.locator("svg#chart-fixture-f1 rect.bar")
        widths = [float(bars.nth(i).get_attribute("width") or 0) for i in range(bars.count())]
        assert max(widths) > min(widths) > 0  # bars differ with the scores they draw
        assert page.locator("#how-to-read dt").count() >= 8
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        page_height = page.evaluate("document.documentElement.scrollHeight")
    assert run.console_errors == [] and run.page_errors == []
    assert run.requests == []  # one offline file: nothing fetched
    width, height = png_size(shot)
    assert width == 1200 and height == page_height > 1500


def test_the_committed_screenshot_is_a_png_of_a_report() -> None:
    width, height = png_size(REPO / "docs" / "eval-report.png")
    assert width >= 1000 and height >= 1500
    assert "docs/eval-report.png" in (REPO / "README.md").read_text(encoding="utf-8")
