"""The conventions every command of the CLI follows, built into its typer apps.

* Help is plain text wrapped to the terminal width (``COLUMNS`` honoured); boolean
  flags show no value placeholder (typer's rich help prints ``--json <bool>``, which
  invites ``--json true``); words are never split across lines, and a command list
  shows each command's whole first sentence.
* Every failure, usage errors included, is one ``Error: ...`` line on stderr with a
  non-zero exit: 2 for usage errors, 1 otherwise, 130 on Ctrl-C.
* The default prompt is the promoted version everywhere, and ``--help`` names it.

``tests/test_cli_conventions.py`` checks each of these on every command.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import typer
from typer import _click  # typer vendors click; its formatter and context classes live here
from typer.core import TyperCommand, TyperGroup

from bub_semantic_memory.cli._common import is_verbose, print_error
from bub_semantic_memory.errors import SemanticMemoryError

__all__ = ["PROMOTED_PROMPT", "PROMOTED_PROMPTS", "App", "CommandGroup", "PromotedPrompt", "new_app"]

_MIN_HELP_WIDTH = 36
"""Below this many columns beside the option names, help text goes on the lines below them."""


class HelpFormatter(_click.formatting.HelpFormatter):
    """Click's formatter, except that it never splits a word and stacks columns when narrow.

    Click breaks words longer than the help column (an env var name becomes
    ``BUB_SEMANTIC_MEMORY_`` + ``PROMPTS_DIR``); here a long word stays whole, and when
    the column beside the option names would be narrower than ``_MIN_HELP_WIDTH``, the
    help text starts on the next line, indented under its option.
    """

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        width = max(self.width - self.current_indent, 20)
        for index, paragraph in enumerate(re.split(r"\n\s*\n", text.strip())):
            if index:
                self.write("\n")
            for line in _wrap(paragraph, width):
                self.write(indent + line + "\n")

    def write_dl(self, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        first_col = min(max((len(first) for first, _ in rows), default=0), col_max) + col_spacing
        stacked = self.width - self.current_indent - first_col < _MIN_HELP_WIDTH
        help_indent = self.current_indent + (4 if stacked else first_col)
        width = max(self.width - help_indent, 20)
        for first, second in rows:
            self.write(f"{'':>{self.current_indent}}{first}")
            lines = _wrap(second, width) if second else []
            if not lines:
                self.write("\n")
                continue
            if stacked or len(first) > first_col - col_spacing:
                self.write("\n" + " " * help_indent)
            else:
                self.write(" " * (first_col - len(first)))
            self.write(lines[0] + "\n")
            for line in lines[1:]:
                self.write(" " * help_indent + line + "\n")


def _wrap(text: str, width: int) -> list[str]:
    """Lines of at most ``width`` columns, breaking only at spaces (a longer word gets its own line)."""
    return textwrap.wrap(" ".join(text.split()), width, break_long_words=False, break_on_hyphens=False)


class _Context(typer.Context):
    formatter_class = HelpFormatter


class Command(TyperCommand):
    """A command whose help uses :class:`HelpFormatter`, also when mounted in bub's rich-help app."""

    context_class = _Context

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None  # typer passes down the root app's mode (bub's: rich)
        super().__init__(*args, **kwargs)


class Group(TyperGroup):
    """A command group whose help uses :class:`HelpFormatter` and lists whole first sentences."""

    context_class = _Context

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None
        super().__init__(*args, **kwargs)

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class CommandGroup(Group):
    """The root group: typer's usage errors become one ``Error:`` line, like every other error.

    typer prints a usage error as a usage line, a hint and a boxed message; a log or a
    script wants one line it can grep. Exit codes stay typer's (2 for usage errors).
    """

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as exc:
            code = exc.exit_code
            print_error(_usage_message(exc))
        except typer.Abort:
            code = 1
            print_error("aborted")
        except Exception as exc:  # anything unforeseen: still one line, the traceback with --verbose
            if is_verbose():
                raise
            code = 1
            print_error(f"{type(exc).__name__}: {exc} (--verbose shows the traceback)")
        code = code if isinstance(code, int) else 0
        if not standalone_mode:
            return code
        sys.exit(code)


def _usage_message(exc: typer.TyperException) -> str:
    message = exc.format_message()
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and exc.exit_code == 2:
        message = f"{message.rstrip('.')} (see '{ctx.command_path} --help')"
    return message


class App(typer.Typer):
    """A typer app whose commands default to :class:`Command`."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)


def new_app(help_text: str, *, cls: type[TyperGroup] = Group, **kwargs: Any) -> App:
    """A typer app with the conventions above: plain help without ``<bool>``, no completion."""
    return App(
        help=help_text,
        cls=cls,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        **kwargs,
    )


class PromotedPrompt:
    """The default ``--prompt``: the promoted version of ``extract`` in the chosen prompt directory.

    The value is the bare name ``extract``, which :class:`~bub_semantic_memory.prompts.PromptLibrary`
    resolves to the promoted version of whatever ``--prompts-dir`` holds (the plugin's
    ``prompt`` setting defaults to the same). Its text, which ``--help`` prints as the
    default, names the version promoted in the bundled prompts; the manifest is read
    only when help is shown, so importing the CLI reads no file.
    """

    name = "extract"

    def __init__(self, *, many: bool = False) -> None:
        self.many = many

    def __call__(self) -> str | list[str]:
        return [self.name] if self.many else self.name

    def __str__(self) -> str:
        from bub_semantic_memory.prompts import PromptLibrary

        try:
            _, version = PromptLibrary().resolve(self.name)
        except SemanticMemoryError:
            return f"{self.name}, the promoted version"
        return f"{self.name}, the promoted version: {self.name}@{version}"


PROMOTED_PROMPT = PromotedPrompt()
"""Default of a single ``--prompt`` option."""
PROMOTED_PROMPTS = PromotedPrompt(many=True)
"""Default of a repeatable ``--prompt`` option."""
