"""The command line's consoles and its one way to fail: one line on stderr and an exit code
(``docs/architecture.md``, "Interfaces people use": 2 for bad input, 1 for no plan or a rejected
plan)."""

from __future__ import annotations

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


def say(console: Console, line: str) -> None:
    """A plain line (no markup, no highlighting), wrapped by the terminal, not by rich."""
    console.print(line, markup=False, highlight=False, soft_wrap=True)
