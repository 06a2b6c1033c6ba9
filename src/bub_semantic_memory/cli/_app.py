"""The conventions every command of the CLI follows, built into its typer apps.

* Help is plain text wrapped to the terminal width (``COLUMNS`` honoured); boolean
  flags show no value placeholder (typer's rich help prints ``--json <bool>``, which
  invites ``--json true``); words are never split across lines, and a command list
  shows each command's whole first sentence.
* Every failure, usage errors included, is one ``Error: ...`` line on stderr with a
  non-zero exit: 2 for usage errors, 1 otherwise, 130 on Ctrl-C (but `serve`, which becomes the
  llama.cpp server, exits as the server does).
* The default prompt is the promoted version everywhere, and ``--help`` names it.

``tests/cli/test_conventions.py`` checks each of these on every command.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from bub_semantic_memory._errors import SemanticMemoryError
from bub_semantic_memory.cli._common import is_verbose, print_error

__all__ = ["PROMOTED_PROMPT", "PROMOTED_PROMPTS", "App", "CommandGroup", "PromotedPrompt", "new_app"]

_MIN_HELP_WIDTH = 36
"""Below this many columns beside the option names, help text goes on the lines below them."""
_INDENT = 2
_COLUMN_MAX = 30
_COLUMN_SPACING = 2


class _HelpText:
    """A command's help, written by the command itself: typer's and click's public parts only.

    Click's formatter breaks words longer than the help column (an env var name becomes
    ``BUB_SEMANTIC_MEMORY_`` + ``PROMPTS_DIR``); here a word is never split, and when the
    column beside the option names would be narrower than ``_MIN_HELP_WIDTH``, the help
    text starts on the next line, indented under its option. The width is the one click
    computes for the terminal (``COLUMNS`` honoured).
    """

    def __init__(self, width: int) -> None:
        self.width = width
        self.lines: list[str] = []

    def usage(self, command_path: str, pieces: Sequence[str]) -> None:
        prefix = f"Usage: {command_path} "
        wrapped = _wrap(" ".join(pieces), self.width - len(prefix))
        self.lines.append(prefix + (wrapped[0] if wrapped else ""))
        self.lines.extend(" " * len(prefix) + line for line in wrapped[1:])

    def text(self, text: str, *, indent: int = _INDENT) -> None:
        for index, paragraph in enumerate(re.split(r"\n\s*\n", text.strip())):
            if index:
                self.blank()
            self.lines.extend(" " * indent + line for line in _wrap(paragraph, max(self.width - indent, 20)))

    def section(self, heading: str, rows: Sequence[tuple[str, str]]) -> None:
        """A heading and its rows: names in a column, each help beside or (narrow) below its name."""
        self.blank()
        self.lines.append(f"{heading}:")
        first_col = min(max((len(first) for first, _ in rows), default=0), _COLUMN_MAX) + _COLUMN_SPACING
        stacked = self.width - _INDENT - first_col < _MIN_HELP_WIDTH
        help_indent = _INDENT + (4 if stacked else first_col)
        width = max(self.width - help_indent, 20)
        for first, second in rows:
            wrapped = _wrap(second, width) if second else []
            if not wrapped:
                self.lines.append(" " * _INDENT + first)
                continue
            if stacked or len(first) > first_col - _COLUMN_SPACING:
                self.lines.append(" " * _INDENT + first)
                self.lines.append(" " * help_indent + wrapped[0])
            else:
                self.lines.append(" " * _INDENT + first.ljust(first_col) + wrapped[0])
            self.lines.extend(" " * help_indent + line for line in wrapped[1:])

    def blank(self) -> None:
        if self.lines and self.lines[-1]:
            self.lines.append("")

    def render(self) -> str:
        return "\n".join(self.lines) + "\n"


def _wrap(text: str, width: int) -> list[str]:
    """Lines of at most ``width`` columns, breaking only at spaces (a longer word gets its own line).

    Docstrings mark code with double backticks; a terminal shows the code alone.
    """
    plain = _CODE.sub(r"\1", " ".join(text.split()))
    return textwrap.wrap(plain, width, break_long_words=False, break_on_hyphens=False)


_CODE = re.compile(r"``([^`]+)``")


def _write_help(command: TyperCommand | TyperGroup, ctx: typer.Context, formatter: Any) -> None:
    """Usage, help text, arguments, options and (for a group) commands, laid out by :class:`_HelpText`."""
    help_text = _HelpText(formatter.width)
    help_text.usage(ctx.command_path, command.collect_usage_pieces(ctx))
    text = inspect.cleandoc(command.help or "").partition("\f")[0]
    if text:
        help_text.blank()
        help_text.text(text)
    records = [(param, param.get_help_record(ctx)) for param in command.get_params(ctx)]
    arguments = [r for p, r in records if r is not None and p.param_type_name == "argument"]
    options = [r for p, r in records if r is not None and p.param_type_name == "option"]
    if arguments:
        help_text.section("Arguments", arguments)
    if options:
        help_text.section("Options", options)
    if isinstance(command, TyperGroup):
        rows = []
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                rows.append((name, _CODE.sub(r"\1", sub.get_short_help_str(limit=1000))))
        if rows:
            help_text.section("Commands", rows)
    if command.epilog:
        help_text.blank()
        help_text.text(command.epilog)
    formatter.write(help_text.render())


class Command(TyperCommand):
    """A command whose help :class:`_HelpText` lays out, also when mounted in bub's rich-help app."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None  # typer passes down the root app's mode (bub's: rich)
        super().__init__(*args, **kwargs)

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:  # type: ignore[override]
        _write_help(self, ctx, formatter)


class Group(TyperGroup):
    """A command group whose help :class:`_HelpText` lays out, listing whole first sentences."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None
        super().__init__(*args, **kwargs)

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:  # type: ignore[override]
        _write_help(self, ctx, formatter)


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
    """The default ``--prompt``: the version of ``extract`` promoted for the model's class.

    The value is the bare name ``extract``, which :class:`~bub_semantic_memory.extraction.PromptLibrary`
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
        from bub_semantic_memory.backends import MODEL_CLASSES
        from bub_semantic_memory.extraction import PromptLibrary

        try:
            promoted = PromptLibrary().manifest().promoted.get(self.name, {})
        except SemanticMemoryError:
            promoted = {}
        if not promoted:
            return f"{self.name}, the version promoted for the model's class"
        versions = ", ".join(
            f"{self.name}@{promoted[c].version} for {c}" if c in promoted else f"none for {c}"
            for c in MODEL_CLASSES
        )
        return f"{self.name}, the version promoted for the model's class: {versions}"


PROMOTED_PROMPT = PromotedPrompt()
"""Default of a single ``--prompt`` option."""
PROMOTED_PROMPTS = PromotedPrompt(many=True)
"""Default of a repeatable ``--prompt`` option."""
