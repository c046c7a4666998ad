"""Exhaustive search: min over a in {0..m-1}^n of C_max(a), all m^n assignments (small n only)."""

from __future__ import annotations

import itertools

from costmodels.solving import SolverOutput, Status
from rlplan_toy.judge import evaluate
from rlplan_toy.plan import Assignment
from rlplan_toy.problem import ToyProblem


def solve_exhaustive(
    problem: ToyProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """The first assignment, in lexicographic order, of least makespan: optimal by enumeration."""
    best = min(
        itertools.product(range(problem.spec.machines), repeat=len(problem.spec.durations)),
        key=lambda a: evaluate(problem, Assignment(machine_of=list(a)))[0],
    )
    plan = Assignment(machine_of=list(best))
    return SolverOutput(Status.OPTIMAL, plan, objective=evaluate(problem, plan)[0])
