"""The toy problem's descriptor: its language and judge, no solvers (``register.py`` wires them)."""

from __future__ import annotations

from costmodels.problem import ProblemKind, SpecField
from rlplan_toy.canned import canned_toys
from rlplan_toy.check import check
from rlplan_toy.judge import evaluate
from rlplan_toy.plan import Assignment
from rlplan_toy.presets import toy_presets
from rlplan_toy.problem import JobsSpec, ToyProblem
from rlplan_toy.summary import toy_summary

KIND = ProblemKind(
    name="toy",
    summary="makespan scheduling on identical machines",
    title="Toy",
    fields=(SpecField("work", JobsSpec, "jobs file or preset", default="toy-five"),),
    problem_type=ToyProblem,
    build=lambda work: ToyProblem(work),
    plan_type=Assignment,
    evaluate=evaluate,
    check=check,
    objective="makespan",
    units="s",
    presets=toy_presets(),
    summary_table=toy_summary,
    size=lambda problem: len(problem.spec.durations),
    size_label="jobs",
    canned=canned_toys,
)
