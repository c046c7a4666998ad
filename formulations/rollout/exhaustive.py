"""The exact rollout plan over the discrete space (``costmodels.rollout.space``): every plan,
one simulated epoch per group of rollout knobs, the best by the judge. The space holds every plan
the other solvers return (the paper's, veRL's, the search's), so this is their reference on small
instances; on the presets the space is 1 728-2 880 epochs and the time limit usually ends it
first (the best plan so far comes back, status feasible, with how much of the space was seen)."""

from __future__ import annotations

from costmodels.rollout.plan import check_rollout, evaluate_rollout
from costmodels.rollout.problem import RolloutProblem
from costmodels.rollout.space import offer_all, space_size
from costmodels.solving import Deadline, DeadlineExceeded, KeepBest, SolverOutput, Status, Trace


def solve_exhaustive(problem: RolloutProblem, *, time_limit: float | None = None, seed: int = 0) -> SolverOutput:
    deadline = Deadline(time_limit)
    trace = Trace(deadline)
    keep = KeepBest(problem, lambda p, plan: evaluate_rollout(p, plan)[0], check_rollout, tol=1e-9)
    groups, plans = space_size(problem.workload)
    seen = 0
    try:
        seen = offer_all(problem, keep, deadline, trace)
    except DeadlineExceeded as exc:
        seen = len(trace.points)
        status, message = Status.FEASIBLE, f"stopped after {seen} of {groups} rollout groups: {exc}"
    else:
        status, message = Status.OPTIMAL, f"all {groups} rollout groups ({plans} plans) enumerated"
    if keep.plan is None:
        return SolverOutput(Status.INFEASIBLE if status is Status.OPTIMAL else Status.NO_SOLUTION, message=message)
    return SolverOutput(status, keep.plan, keep.best, bound=keep.best if status is Status.OPTIMAL else None, message=message,
                        stats={"groups_seen": seen, "space_rollout_groups": groups, "space_plans": plans, "plans_tried": keep.offered,
                               "trace": trace.rows()})
