"""The command line's consoles and its one way to fail: one line on stderr and an exit code
(``docs/architecture.md``, "Interfaces people use": 2 for bad input, 1 for no plan or a rejected
plan)."""

from __future__ import annotations

import textwrap
from typing import NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console

from costmodels.errors import from_validation

out = Console()
err = Console(stderr=True)


def fail(message: str | Exception, code: int = 2) -> NoReturn:
    """One line on stderr and exit ``code``; an exception is rendered as its one-line message
    (pydantic's several-line report as its first error)."""
    if isinstance(message, ValidationError):
        message = from_validation(message)
    err.print("[bold red]error:[/] ", end="")
    err.print(" ".join(str(message).split()), markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def say(console: Console, line: str, indent: str = "  ") -> None:
    """A plain line (no markup, no highlighting). At a terminal it is wrapped between words to
    the terminal's width, continuation lines indented by ``indent``, so that the output fits the
    window (80 columns in the README's examples); a word longer than the width (a path) is kept
    whole, so it can be copied. Piped or redirected, it stays one line for grep and for scripts."""
    if console.is_terminal and len(line) > console.width:
        line = "\n".join(  # each of its own lines, if it has several
            textwrap.fill(
                part,
                width=console.width,
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
            for part in line.split("\n")
        )
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def say_violations(console: Console, violations: list[str]) -> None:
    """A plan's violations, one a line under the message that counts them; each can run to 250
    characters (a task's shape against a framework's rules), so at a terminal it is wrapped as
    :func:`say` wraps, its continuation indented past its first line's."""
    for v in violations:
        say(console, f"  {v}", indent="    ")
