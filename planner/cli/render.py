"""Tables for people: a problem's :class:`~costmodels.problem.Summary`, and the solver listing of
``rlplan plan <problem> --solver help``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

import typer
from rich import box
from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from costmodels.problem import Summary
from planner.cli.console import out
from planner.registry import default_registry


def render(summary: Summary, width: int | None = None) -> RenderableType:
    """A problem's :class:`Summary` as rich tables that fit ``width`` columns (the console's when
    None) without cutting a number, a name or a header. The first layout that fits wins: the
    framed table at the columns' natural widths; the same without its frame and column rules;
    both again with headers and prose wrapped at their spaces (the spare width going first to the
    columns that need least); the columns split over several tables, each repeating the first
    column. A column is never narrower than its longest word; a word longer than the terminal
    itself folds onto the next line, never cut."""
    width = width or out.width
    n = len(summary.columns)
    natural = [_column_width(summary, i, wrap=False) for i in range(n)]
    need = [_column_width(summary, i, wrap=True) for i in range(n)]
    for wrap in (False, True):
        for compact, overhead in ((False, 3 * n + 1), (True, 3 * (n - 1))):
            widths = _fill(natural if not wrap else need, natural, width - overhead)
            if widths is not None:
                return _table(summary, range(n), widths, compact=compact)
    parts: list[list[int]] = [[]]
    for i in range(1, n):
        cols = [0, *parts[-1], i]
        if parts[-1] and sum(need[c] for c in cols) + 3 * (len(cols) - 1) > width:
            parts.append([])
        parts[-1].append(i)
    tables: list[RenderableType] = []
    for k, cols in enumerate(parts):
        part = [0, *cols]
        budget = width - 3 * (len(part) - 1)
        filled = _fill([need[c] for c in part], [natural[c] for c in part], budget)
        widths = dict(zip(part, filled or [need[c] for c in part], strict=True))
        tables.append(_table(summary, part, widths, compact=True, title=k == 0))
    if summary.caption:
        tables.append(Text(summary.caption))
    return Group(*tables)


def _fill(start: list[int], natural: list[int], budget: int) -> list[int] | None:
    """Column widths from ``start`` within ``budget`` characters, the spare width given to the
    columns short of their natural width, narrowest natural width first; None when ``start``
    itself does not fit."""
    widths = list(start)
    spare = budget - sum(widths)
    if spare < 0:
        return None
    for i in sorted(range(len(widths)), key=lambda i: natural[i]):
        grow = min(spare, natural[i] - widths[i])
        if grow > 0:
            widths[i] += grow
            spare -= grow
    return widths


#: a column whose cells run longer than this is prose (descriptions): it may wrap at its spaces
PROSE = 30


def _column_width(summary: Summary, i: int, *, wrap: bool) -> int:
    """A column's width: its longest cell line and its whole header; or (``wrap``) its header's
    longest word, and its cells' longest word when it is prose (:data:`PROSE`), its longest cell
    line otherwise: names and numbers are never broken, only sentences are."""
    lines = [line for row in summary.rows for line in str(row[i]).splitlines() or [""]]
    if not wrap:
        return max(cell_len(text) for text in [*lines, summary.columns[i]])
    if max(map(cell_len, lines), default=0) > PROSE:
        lines = [word for line in lines for word in line.split() or [""]]
    words = summary.columns[i].split() or [""]
    return max(cell_len(text) for text in [*lines, *words])


def _number(cell: str) -> bool:
    """A figure, with its unit or sign: 57.0, $342.2/h, 83%, 1 503, -0.4 s, 1.2x."""
    head = cell.split()[0].lstrip("$+-")
    return head[:1].isdigit() and all(ch.isdigit() or ch in ".,%x/h" for ch in head)


def _numeric(summary: Summary, i: int) -> bool:
    """A column of numbers (right-aligned); text columns read left-aligned."""
    cells = [str(row[i]).strip() for row in summary.rows]
    return all(not c or c == "-" or _number(c) for c in cells)


def _table(
    summary: Summary,
    cols: Iterable[int],
    widths: list[int] | dict[int, int],
    *,
    compact: bool,
    title: bool = True,
) -> Table:
    whole = list(cols) == list(range(len(summary.columns)))
    table = Table(
        title=summary.title if title else None,
        caption=(summary.caption or None) if whole else None,
        box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD,
        show_edge=not compact,
        pad_edge=not compact,
    )
    for i in cols:
        table.add_column(
            summary.columns[i],
            justify="right" if i > 0 and _numeric(summary, i) else "left",
            no_wrap=i == 0,
            width=widths[i],
            overflow="fold",
        )
    for row in summary.rows:
        table.add_row(*(row[i] for i in cols))
    return table


def solver_table(problem: str) -> Summary:
    reg = default_registry()
    rows = [
        (
            s.name + (" (default)" if s.name == reg.default(problem) else ""),
            "yes" if s.exact else "no",
            f"{s.time_limit:g} s",
            s.description,
        )
        for s in reg.solvers(problem)
    ]
    return Summary(
        f"solvers for `{problem}`", ("solver", "exact", "default limit", "description"), rows
    )


def options_table(problem: str) -> Summary:
    rows = [
        (s.name if i == 0 else "", name, kind, default, meaning)
        for s in default_registry().solvers(problem)
        for i, (name, kind, default, meaning) in enumerate(s.option_help())
    ]
    return Summary(
        f"options (-O key=value) of the solvers for `{problem}`",
        ("solver", "option", "type", "default", "meaning"),
        rows,
    )


def print_solver_help(problem: str) -> NoReturn:
    out.print(render(solver_table(problem)))
    out.print(render(options_table(problem)))
    out.print(
        "Every solver also takes --time-limit S (default: its limit above, a cap it stops at; a "
        "search given --time-limit uses all of it) and --seed N.",
        highlight=False,
    )
    raise typer.Exit(0)
