"""The ``semantic-memory`` command line (also mounted as ``bub memory``).

The CLI parses arguments, calls the public API and renders results: data on
stdout, progress and logs on stderr. A failure prints one ``Error: ...`` line and
exits 1 (usage errors exit 2); ``--verbose`` shows the traceback instead. The
conventions live in :mod:`._common`.

Importing the CLI, and printing any help, imports neither bub nor the model clients (openai,
Instructor, llama.cpp): each command imports what it needs when it runs, so ``--help`` answers
in well under a second (``tests/test_cli_startup.py`` holds the list).
"""

from __future__ import annotations

import typer

from bub_semantic_memory.cli import (
    _app,
    _common,
    eval_cmd,
    memory_cmd,
    models_cmd,
    prompts_cmd,
    qa_cmd,
    serve_cmd,
)

__all__ = ["app", "main"]

app = _app.new_app(
    "Extract a memory of entities and relations from Bub tapes, evaluate it, and tune its prompts.",
    name="semantic-memory",
    cls=_app.CommandGroup,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        _common.stdout.print(f"semantic-memory {version('bub-semantic-memory')}", markup=False)
        raise typer.Exit()


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logs and full tracebacks on stderr."),
    _version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        expose_value=False,
        help="Print the version and exit.",
    ),
) -> None:
    _common.configure_logging(verbose)


memory_cmd.register(app)
app.add_typer(prompts_cmd.app, name="prompts")
eval_cmd.app.command("qa")(qa_cmd.qa)
app.add_typer(eval_cmd.app, name="eval")
app.add_typer(eval_cmd.fixtures_app, name="fixtures")
app.command("models")(models_cmd.models)
app.command("serve")(serve_cmd.serve)


def main() -> None:
    """Console-script entry point."""
    app()
