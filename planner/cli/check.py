"""``rlplan validate`` and ``rlplan evaluate``: a plan file re-checked against its own inputs by
the independent validator, and its cost breakdown as the judge computes it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from costmodels.errors import SpecError
from planner.cli.console import err, fail, out, say, say_violations
from planner.cli.render import render
from planner.planfile import json_safe, read_plan_file, recheck_report
from planner.planning import breakdown_summary
from planner.registry import default_registry


def validate(
    plan_file: Annotated[Path, typer.Argument(help="a plan JSON written by `rlplan plan`")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable verdict")] = False,
) -> None:
    """Re-check a plan file against its own inputs: exit 0 when valid, 1 with the violations.

    A plan priced by an earlier judge is checked against the objective its writer recorded, and
    today's objective is printed beside it."""
    try:
        doc = read_plan_file(plan_file)
        report = recheck_report(doc, str(plan_file))
    except SpecError as exc:
        fail(exc)
    violations = report.violations
    if as_json:
        verdict = {
            "file": str(plan_file),
            "valid": not violations,
            "violations": violations,
            "objective_recorded": doc.objective,
            "objective_today": report.objective,
            "same_judge": report.same_judge,
            "judge_moved": report.moved,
        }
        out.print_json(json.dumps(json_safe(verdict)))
    elif violations:
        say(err, f"invalid: {plan_file}: {len(violations)} violation(s)")
        say_violations(err, violations)
    else:
        say(
            out,
            f"valid: {plan_file} ({doc.problem} plan by {doc.solver}, objective "
            f"{doc.objective:.6g})",
        )
        if report.moved:  # wrapped at spaces: a long line, and it must fit 80 columns
            out.print(f"  {report.moved}", markup=False, highlight=False)
    raise typer.Exit(1 if violations else 0)


def evaluate(
    plan_file: Annotated[
        Path,
        typer.Argument(
            help="a plan JSON written by `rlplan plan`, or a problem file with a `plan:` section"
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="print the breakdown as JSON")] = False,
) -> None:
    """Print a plan's cost breakdown (per task, per component) as the cost model computes it."""
    from planner.planfile import load_plan_and_problem
    from planner.solve import check_plan

    try:
        problem, plan = load_plan_and_problem(plan_file)
    except SpecError as exc:
        fail(exc)
    violations, objective, breakdown = check_plan(problem, plan)
    if violations:
        say_violations(err, violations)
        fail(f"{plan_file}: the plan violates {len(violations)} constraint(s)", code=1)
    if as_json:
        sys.stdout.write(
            json.dumps(json_safe({"objective": objective, "breakdown": breakdown}), indent=2) + "\n"
        )
        return
    kind = default_registry().kind_of(problem)
    if kind.evaluate_table is not None:
        out.print(render(kind.evaluate_table(problem, plan, objective, breakdown, str(plan_file))))
    else:
        out.print(render(breakdown_summary(str(plan_file), objective, breakdown)))
