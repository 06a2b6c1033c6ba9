"""The ``semantic-memory`` command line (also mounted as ``bub memory``).

The CLI parses arguments, calls the public API and renders results: data on
stdout, progress and logs on stderr. A failure prints one ``Error: ...`` line and
exits 1 (usage errors exit 2); ``--verbose`` shows the traceback instead. The
conventions live in :mod:`._common`.

Importing the CLI, and printing any help, imports neither bub nor the model clients (openai,
Instructor, llama.cpp): each command imports what it needs when it runs, so ``--help`` answers
in well under a second (``tests/cli/test_startup.py`` holds the list).
"""

from __future__ import annotations

import typer

from bub_semantic_memory.cli import (
    _app,
    _common,
    _eval_cmd,
    _memory_cmd,
    _models_cmd,
    _prompts_cmd,
    _qa_cmd,
    _serve_cmd,
)

__all__ = ["app", "bub_app", "main"]


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        _common.stdout.print(f"semantic-memory {version('bub-semantic-memory')}", markup=False)
        raise typer.Exit()


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


_eval_cmd.app.command("qa")(_qa_cmd.qa)


def _build(help_text: str, *, verbs_at_top: bool) -> _app.App:
    """The command tree; ``verbs_at_top`` also puts the ``memory`` verbs beside ``show`` (see
    :func:`bub_app`)."""
    root = _app.new_app(help_text, name="semantic-memory", cls=_app.CommandGroup)
    root.callback()(_root)
    _memory_cmd.register(root, verbs_at_top=verbs_at_top)
    root.add_typer(_prompts_cmd.app, name="prompts")
    root.add_typer(_eval_cmd.app, name="eval")
    root.add_typer(_eval_cmd.fixtures_app, name="fixtures")
    root.command("models")(_models_cmd.models)
    root.command("serve")(_serve_cmd.serve)
    return root


app = _build(
    "Extract a memory of entities and relations from Bub tapes, evaluate it, and tune its prompts.",
    verbs_at_top=False,
)
"""The ``semantic-memory`` console script: ``semantic-memory memory forget ...``."""


def bub_app() -> _app.App:
    """The commands as bub mounts them, as ``bub memory``: the ``memory`` verbs are also at the top,
    so that ``bub memory forget`` does not say memory twice (``bub memory memory forget`` still
    works, unlisted)."""
    return _build(
        "The semantic memory of bub's sessions: show, search, forget and correct it; extract, "
        "evaluate and tune prompts.",
        verbs_at_top=True,
    )


def main() -> None:
    """Console-script entry point."""
    app()
