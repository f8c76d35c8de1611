"""The CLI's one way to print an error: the message literally, never as rich markup.

An exception's text is data: ``pip install 'toolweave[ray]'`` printed as markup
loses ``[ray]`` (rich reads it as a style tag), and a message holding ``[/]``
makes rich raise. Every command prints its errors through `print_error`.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.text import Text

__all__ = ["error_text", "fail", "print_error"]

EXIT_USAGE = 2
"""The exit status of a command that could not do what it was asked."""


def error_text(problem: BaseException | str) -> Text:
    """``error: <message>``, the message as plain text (no markup is read in it)."""
    text = Text("error:", style="bold red")
    text.append(" ")
    text.append(str(problem))
    return text


def print_error(problem: BaseException | str, console: Console | None = None) -> None:
    """Print `problem` on `console` (default: a new stderr console), unwrapped."""
    (console or Console(stderr=True)).print(error_text(problem), soft_wrap=True)


def fail(problem: BaseException | str, console: Console | None = None) -> typer.Exit:
    """Print `problem` and return the exit (status 2) for the caller to raise."""
    print_error(problem, console)
    return typer.Exit(EXIT_USAGE)
