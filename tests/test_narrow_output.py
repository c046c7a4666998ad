"""Every summary fits an 80-column terminal without cutting a number, a name or a header
(``planner.cli.render``): rendered at 80 columns, no line is longer, nothing is ellipsized, and
every word of every cell and header is printed whole."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from rich.console import Console

from costmodels.problem import Summary
from planner import PlanRequest, plan
from planner.cli.catalog import presets_show
from planner.cli.render import options_table, render, solver_table
from planner.presets import presets
from planner.registry import default_registry
from tests.conftest import SMALL_SPECS, run_cli, run_cli_pty
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


def test_every_preset_shown_fits_80_columns_and_reads_back(capsys):
    """`rlplan presets show` is a file to save and edit: its lines fit 80 columns (long strings
    folded at spaces) and it reads back as the preset's data."""
    for p in presets():
        presets_show(p.name)
        text = capsys.readouterr().out
        assert max(len(line) for line in text.splitlines()) <= 80, (p.name, text)
        if p.text is None:
            assert yaml.safe_load(text) == p.data(), p.name


def test_violations_fit_an_80_column_terminal(tmp_path):
    """A plan's violations (a framework's rules run to 230 characters) wrap at an 80-column
    terminal, every word kept; piped they stay one a line, for grep (``say``). The one-line
    ``error:`` is exempt, as every error is, and so is a single word wider than the terminal."""
    plan = tmp_path / "p.json"
    # the random search's first 5 plans (same seed and budget, same plan) break verl's rules
    argv = ("plan", "placement", *SMALL_SPECS, "--solver", "random", "-O", "evaluations=5")
    assert run_cli(*argv, "-q", "-o", str(plan)).returncode == 0
    doc = json.loads(plan.read_text())
    doc["inputs"]["target"] = {"framework": "verl"}
    plan.write_text(json.dumps(doc))
    for command in ("evaluate", "validate"):
        piped = run_cli(command, str(plan))
        violations = [ln for ln in piped.stderr.splitlines() if ln.startswith("  [")]
        assert piped.returncode == 1 and max(map(len, violations)) > 80, piped.stderr
        code, text = run_cli_pty(command, str(plan), columns=80)
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "")
        assert code == 1
        # a word wider than the terminal (the plan's path under pytest's workers) cannot wrap
        assert all(
            len(ln) <= 80 or " " not in ln.strip()
            for ln in text.splitlines()
            if not ln.startswith("error:")
        ), text
        flat = " ".join(text.split())
        assert all(" ".join(v.split()) in flat for v in violations), text
