"""Reports for people: the eval report and the memory-QA report, rendered in each format.

This package owns how results are shown; the results themselves are data owned by their
product (:class:`~bub_semantic_memory.evals.extraction.Report`,
:class:`~bub_semantic_memory.evals.qa.QAReport`). Everything here is a pure function of the
report (no clock, no environment), so the same ``report.json`` always renders to the same bytes,
and every piece of report text is treated as untrusted (plain ``rich`` text, escaped Markdown,
autoescaped HTML). One module per format:

* terminal: :func:`summary_table`, :func:`comparison_table`, :func:`fixture_table` (``rich``
  tables), and :func:`qa_columns` for the QA summary;
* :func:`source_category_tables`: a QA report's scores by its dataset's own categories (LoCoMo's),
  as rows, for the Markdown report and the benchmarks;
* Markdown: :func:`to_markdown`, a complete ``report.md``;
* HTML: :func:`to_html`, a self-contained ``report.html`` from the Jinja2 templates under
  ``templates/`` (shipped in the wheel), with inline CSS and SVG charts and no script;
* files: :func:`write_report_files` (``report.json``, ``.md``, ``.html``) and
  :func:`write_qa_report` (``qa.json``, ``.md``, ``.html``).

Every summary carries the relation diagnostics beside the strict scores (lenient P/R/F1, the
recall given endpoints, the missed relations by reason). An undefined score shows as
:data:`UNDEFINED` ("–"), never coloured, with no delta.
"""

from __future__ import annotations

from bub_semantic_memory.evals.reports._files import write_report_files
from bub_semantic_memory.evals.reports._format import UNDEFINED
from bub_semantic_memory.evals.reports._html import to_html
from bub_semantic_memory.evals.reports._markdown import to_markdown
from bub_semantic_memory.evals.reports._qa import (
    ANSWER_SCORES,
    CONTEXT_SCORES,
    qa_columns,
    source_category_tables,
    write_qa_report,
)
from bub_semantic_memory.evals.reports._terminal import comparison_table, fixture_table, summary_table

__all__ = [
    "ANSWER_SCORES",
    "CONTEXT_SCORES",
    "UNDEFINED",
    "comparison_table",
    "fixture_table",
    "qa_columns",
    "source_category_tables",
    "summary_table",
    "to_html",
    "to_markdown",
    "write_qa_report",
    "write_report_files",
]
