"""The exact rollout plan over the discrete space (``costmodels.rollout.space``): every plan,
one simulated epoch per distinct rollout setting (``RolloutPlan.rollout_key``: a group of rollout
knobs, and under asynchronous reward with speculation also the timeout, since short rounds race
on scores), the best by the judge. The space holds every plan the other solvers return (the
paper's, veRL's, the search's), so this is their reference on small instances; on the presets the
space is 2 160-3 456 rollout groups and 10 260-16 416 distinct epochs, so the default work budget
of :data:`DEFAULT_GROUPS` ends it first (the best plan so far comes back, status feasible, with
how much of the space was seen; the same plan on any machine)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from costmodels.rollout.check import check_rollout
from costmodels.rollout.judge import evaluate_rollout
from costmodels.rollout.problem import RolloutProblem
from costmodels.rollout.space import offer_all, space_size
from costmodels.solving import (
    Deadline,
    DeadlineExceeded,
    KeepBest,
    SolverOutput,
    Status,
    Trace,
    note_work,
)

#: rollout groups enumerated without a time limit (``groups``): the canned jobs' whole spaces
#: (144 groups, a few seconds), and the first 160 groups (about 760 epochs) of a preset
DEFAULT_GROUPS = 160


def solve_exhaustive(
    problem: RolloutProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    groups: Annotated[
        int | None,
        Field(
            ge=1,
            le=10**6,
            description=(
                "budget of rollout groups (simulated epochs) enumerated, in the space's order "
                "(default 160 without --time-limit; with one, until the limit)"
            ),
        ),
    ] = None,
) -> SolverOutput:
    """Enumerate the space (module doc). The status is optimal only when every group was seen."""
    deadline = Deadline(time_limit)
    trace = Trace(deadline)
    keep = KeepBest(problem, lambda p, plan: evaluate_rollout(p, plan)[0], check_rollout, tol=1e-9)
    total, plans = space_size(problem.workload)
    budget = groups if groups is not None else (DEFAULT_GROUPS if time_limit is None else None)
    seen = 0
    try:
        seen = offer_all(problem, keep, deadline, trace, budget)
    except DeadlineExceeded as exc:
        seen = len(trace.points)
        status, message = Status.FEASIBLE, f"stopped after {seen} of {total} rollout groups: {exc}"
    else:
        if seen < total:
            status, message = (
                Status.FEASIBLE,
                f"the budget of {budget} rollout groups ended the enumeration ({seen} of {total} "
                "seen)",
            )
        else:
            status, message = (
                Status.OPTIMAL,
                f"all {total} rollout groups ({plans} plans) enumerated",
            )
    note_work(seen, total, "rollout groups")
    if keep.plan is None:
        return SolverOutput(
            Status.INFEASIBLE if status is Status.OPTIMAL else Status.NO_SOLUTION, message=message
        )
    return SolverOutput(
        status,
        keep.plan,
        keep.best,
        bound=keep.best if status is Status.OPTIMAL else None,
        message=message,
        stats={
            "groups_seen": seen,
            "space_rollout_groups": total,
            "space_plans": plans,
            "plans_tried": keep.offered,
            "trace": trace.rows(),
        },
    )
