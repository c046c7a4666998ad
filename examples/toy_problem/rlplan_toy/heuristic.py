"""LPT (Graham 1969): jobs in decreasing duration, each on the least-loaded machine so far;
C_max(LPT) <= (4/3 - 1/(3m)) C_max* (tight on ``toy-five``: 7 against 6 with m = 2)."""

from __future__ import annotations

from costmodels.solving import SolverOutput, Status
from rlplan_toy.plan import Assignment
from rlplan_toy.problem import ToyProblem


def solve_lpt(
    problem: ToyProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """Longest processing time first; ties go to the lower job and machine index."""
    load, plan = [0.0] * problem.spec.machines, [0] * len(problem.spec.durations)
    for j in sorted(range(len(plan)), key=lambda j: -problem.spec.durations[j]):
        m = min(range(len(load)), key=load.__getitem__)
        plan[j], load[m] = m, load[m] + problem.spec.durations[j]
    return SolverOutput(Status.FEASIBLE, Assignment(machine_of=plan))
