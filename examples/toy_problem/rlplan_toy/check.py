"""The validator, independent of the judge: every job assigned once, to a machine in 0..m-1."""

from __future__ import annotations

from costmodels.violations import Violation
from rlplan_toy.plan import Assignment
from rlplan_toy.problem import ToyProblem


def check(problem: ToyProblem, plan: Assignment) -> list[Violation]:
    """``coverage``: one assignment per job; ``machine``: each assignment names a machine."""
    out = []
    if len(plan.machine_of) != len(problem.spec.durations):
        jobs = len(problem.spec.durations)
        out.append(Violation("coverage", f"{len(plan.machine_of)} assignments for {jobs} jobs"))
    out += [
        Violation("machine", f"job {j} on machine {m}")
        for j, m in enumerate(plan.machine_of)
        if not 0 <= m < problem.spec.machines
    ]
    return out
