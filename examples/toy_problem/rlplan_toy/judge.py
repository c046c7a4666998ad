"""The judge: the makespan, C_max(a) = max_i sum_{j: a(j) = i} d_j."""

from __future__ import annotations

from typing import Any

from rlplan_toy.plan import Assignment
from rlplan_toy.problem import ToyProblem


def evaluate(problem: ToyProblem, plan: Assignment) -> tuple[float, dict[str, Any]]:
    """The makespan and, as the breakdown, each machine's load L_i = sum_{j: a(j) = i} d_j."""
    load = [0.0] * problem.spec.machines
    for job, m in enumerate(plan.machine_of):
        load[m] += problem.spec.durations[job]
    return max(load), {"loads": load}
