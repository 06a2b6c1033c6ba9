"""Dependencies' log records: quiet in the CLI unless --verbose, quiet in the plugin only inside its calls."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bub_semantic_memory._logging import NOISY_LOGGERS, extraction_call, quiet_dependencies
from bub_semantic_memory.cli import app
from bub_semantic_memory.testing import FakeOpenAIServer, RecordedRequest, Reply, tool_call_reply
from tests.conftest import DATA

RETRIES_EXCEEDED = "Max retries exceeded"


def invalid_answer(request: RecordedRequest) -> Reply:
    """An answer the ontology rejects every time: the re-asks run out and Instructor logs it."""
    entity = {"name": "Nobody", "type": "spaceship", "evidence": [1]}
    return tool_call_reply(
        request.tool_schema_name() or "Extraction", {"entities": [entity], "relations": []}
    )


@pytest.fixture(autouse=True)
def dependency_loggers() -> Iterator[None]:
    """Each test starts with the loggers as a fresh process has them, and leaves them so."""
    names = [*NOISY_LOGGERS, "instructor.v2.retry", "openai._base_client"]
    saved = {name: (logging.getLogger(name).level, list(logging.getLogger(name).filters)) for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.NOTSET)
    yield
    for name, (level, filters) in saved.items():
        logging.getLogger(name).setLevel(level)
        logging.getLogger(name).filters[:] = filters


@pytest.mark.parametrize("verbose", [False, True])
def test_instructors_retry_line_is_on_stderr_only_with_verbose(verbose: bool, tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=invalid_answer) as server:
        argv = ["extract", str(DATA / "bub_run_tape.jsonl"), "--model", "m", "--base-url", server.base_url]
        argv += ["--prompt", "extract@1", "--reasks", "1"]
        result = CliRunner().invoke(app, ["--verbose", *argv] if verbose else argv)
    assert result.exit_code == 1
    assert (RETRIES_EXCEEDED in result.stderr) is verbose, result.stderr
    if not verbose:
        [line] = result.stderr.splitlines()  # the extractor says it once, with the model and attempts
        assert line.startswith("Error: ") and "model=m" in line


def test_the_plugins_quieting_leaves_the_hosts_own_http_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Inside bub, httpx and openai serve the agent and other plugins too: only extraction calls are quiet."""
    quiet_dependencies("extraction")
    caplog.set_level(logging.INFO)
    for name in ("httpx", "openai._base_client", "instructor.v2.retry"):
        logging.getLogger(name).info("the host's %s record", name)
        with extraction_call():
            logging.getLogger(name).info("an extraction's %s record", name)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "the host's httpx record",
        "the host's openai._base_client record",
        "the host's instructor.v2.retry record",
    ]
    assert all(logging.getLogger(name).level == logging.NOTSET for name in NOISY_LOGGERS)


def test_the_plugins_quieting_reaches_loggers_created_below_the_noisy_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logging.getLogger("openai.some_module")  # a dependency module imported before the plugin starts
    quiet_dependencies("extraction")
    caplog.set_level(logging.INFO)
    with extraction_call():
        logging.getLogger("openai.some_module").warning("inside a call")
    assert not caplog.records
