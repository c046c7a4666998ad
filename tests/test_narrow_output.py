"""Every summary fits an 80-column terminal without cutting a number, a name or a header
(``planner.cli.render``): rendered at 80 columns, no line is longer, nothing is ellipsized, and
every word of every cell and header is printed whole."""

from __future__ import annotations

import pytest
from rich.console import Console

from costmodels.problem import Summary
from planner import PlanRequest, plan
from planner.cli.render import options_table, render, solver_table
from planner.registry import default_registry
from tests.test_planning import FAST


def _printed(summary: Summary, width: int = 80) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(render(summary, width))
    return console.export_text()


def _fits(summary: Summary, width: int = 80) -> None:
    text = _printed(summary, width)
    assert "…" not in text, text
    assert max(len(line.rstrip()) for line in text.splitlines()) <= width, text
    words = set(text.split())
    for cell in [*summary.columns, *(c for row in summary.rows for c in row)]:
        for word in str(cell).split():
            assert word in words, (word, text)


@pytest.mark.parametrize("problem", sorted(FAST))
def test_every_summary_fits_80_columns(problem):
    solver, fields = FAST[problem]
    outcome = plan(PlanRequest(problem, fields=fields, solver=solver))
    assert outcome.summary is not None
    _fits(outcome.summary)


@pytest.mark.parametrize("problem", default_registry().problems())
def test_the_solver_help_fits_80_columns(problem):
    _fits(solver_table(problem))
    _fits(options_table(problem))


def test_a_table_too_wide_for_one_screen_is_split_repeating_its_first_column():
    wide = Summary(
        "wide",
        ("name", *(f"column {i}" for i in range(12))),
        [("first-row", *(f"{1000 * i + 0.5:.1f}" for i in range(12)))],
        caption="a caption",
    )
    text = _printed(wide)
    assert text.count("first-row") >= 2 and "a caption" in text
    _fits(wide)
