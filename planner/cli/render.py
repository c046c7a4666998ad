"""Tables for people: a problem's :class:`~costmodels.problem.Summary`, and the solver listing of
``rlplan plan <problem> --solver help``."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.table import Table

from costmodels.problem import Summary
from planner.cli.console import out
from planner.registry import default_registry


def render(summary: Summary) -> Table:
    """A problem's :class:`Summary` as a rich table."""
    table = Table(title=summary.title)
    for i, col in enumerate(summary.columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for row in summary.rows:
        table.add_row(*row)
    table.caption = summary.caption or None
    return table


def solver_table(problem: str) -> Table:
    reg = default_registry()
    table = Table(title=f"solvers for `{problem}`")
    for col in ("solver", "exact", "default limit", "description"):
        table.add_column(col)
    for s in reg.solvers(problem):
        name = s.name + (" (default)" if s.name == reg.default(problem) else "")
        table.add_row(name, "yes" if s.exact else "no", f"{s.time_limit:g} s", s.description)
    return table


def options_table(problem: str) -> Table:
    table = Table(title=f"options (-O key=value) of the solvers for `{problem}`")
    for col in ("solver", "option", "type", "default", "meaning"):
        table.add_column(col)
    for s in default_registry().solvers(problem):
        for i, (name, kind, default, meaning) in enumerate(s.option_help()):
            table.add_row(s.name if i == 0 else "", name, kind, default, meaning)
    return table


def print_solver_help(problem: str) -> NoReturn:
    out.print(solver_table(problem))
    out.print(options_table(problem))
    out.print(
        "Every solver also takes --time-limit S (default: its limit above, a cap it stops at; a "
        "search given --time-limit uses all of it) and --seed N.",
        highlight=False,
    )
    raise typer.Exit(0)
