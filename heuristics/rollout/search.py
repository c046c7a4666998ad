"""Rollout plans: RollPacker's settings, veRL's baseline, and a search over the plan space on the
simulator (issue 15 item 6).

``solve_search`` is coordinate descent over the knob groups of ``costmodels.rollout.space``:
starting from the better of the paper's and veRL's plans, it tries every value of one group with
the others held at the incumbent — (η_P, η_R) jointly, the TP setting, the stream trainer, the
reward mode with its timeout, the fetch mode — and keeps any improvement; passes repeat, in an
order shuffled by ``seed``, until a whole pass improves nothing or the time limit ends it. A
group's rollout knobs cost one simulated epoch (cached on the problem); reward and fetch knobs
only re-time it. When the space has at most ``exhaustive_below`` rollout groups it is enumerated
whole instead (then the plan is the space's optimum). Every plan tried passes the validator first.
"""

from __future__ import annotations

import random
from typing import Any

from costmodels.rollout.plan import RolloutPlan, check_rollout, evaluate_rollout
from costmodels.rollout.problem import RolloutProblem
from costmodels.rollout.space import (
    eta_options,
    fetch_options,
    offer_all,
    paper_plan,
    reward_options,
    scale_options,
    space_size,
    tp_options,
    verl_plan,
)
from costmodels.solving import Deadline, DeadlineExceeded, KeepBest, SolverOutput, Status, Trace


def _objective(problem: RolloutProblem, plan: RolloutPlan) -> float:
    return evaluate_rollout(problem, plan)[0]


def _fixed(problem: RolloutProblem, plan: RolloutPlan, name: str) -> SolverOutput:
    bad = check_rollout(problem, plan)
    if bad:
        return SolverOutput(Status.INFEASIBLE, message=f"{name}: its plan is not valid here: {bad[0]}")
    return SolverOutput(Status.FEASIBLE, plan, _objective(problem, plan), message=f"{name} settings")


def solve_paper(problem: RolloutProblem, *, time_limit: float | None = None, seed: int = 0) -> SolverOutput:
    """RollPacker's settings (``costmodels.rollout.space.paper_plan``)."""
    return _fixed(problem, paper_plan(problem.workload), "RollPacker's")


def solve_verl(problem: RolloutProblem, *, time_limit: float | None = None, seed: int = 0) -> SolverOutput:
    """veRL's synchronous rollout (``costmodels.rollout.space.verl_plan``)."""
    return _fixed(problem, verl_plan(problem.workload), "veRL's synchronous")


def solve_search(problem: RolloutProblem, *, time_limit: float | None = None, seed: int = 0,
                 exhaustive_below: int = 48, progress: Any = None) -> SolverOutput:
    """Coordinate descent over the plan space on the simulator (module doc)."""
    deadline = Deadline(time_limit)
    trace = Trace(deadline)
    epochs: set[tuple] = set()  # rollout settings this search simulated (or found cached)

    def objective(pr: RolloutProblem, plan: RolloutPlan) -> float:
        epochs.add(plan.rollout_key())
        return _objective(pr, plan)

    keep = KeepBest(problem, objective, check_rollout, tol=1e-9)
    wl = problem.workload
    groups, plans = space_size(wl)
    passes = 0
    exhaustive = groups <= exhaustive_below

    def report() -> None:  # (used, budget, best) for the CLI's bar: the whole space is the budget
        if progress is not None:
            progress(keep.offered, plans, keep.best)

    try:
        if exhaustive:
            offer_all(problem, keep, deadline, trace)
        else:
            for start in (paper_plan(wl), verl_plan(wl)):
                keep.offer(start)
            trace.record(keep.best, keep.offered)
            report()
            rng = random.Random(seed)
            dims: list[tuple[str, Any]] = [("eta", eta_options), ("tp", lambda: tp_options(wl)), ("scale", scale_options),
                                           ("reward", reward_options), ("fetch", lambda: fetch_options(keep.plan.scale != "off"))]
            while True:
                passes += 1
                before = keep.best
                order = dims[:]
                rng.shuffle(order)
                for _, options in order:
                    base = keep.plan.model_dump()
                    for option in options():
                        deadline.check()
                        keep.offer(RolloutPlan(**{**base, **option}))
                        report()
                    trace.record(keep.best, keep.offered)
                if keep.best >= before - 1e-9:
                    break
    except DeadlineExceeded as exc:
        message = f"stopped: {exc}"
    else:
        message = "the whole space enumerated" if exhaustive else f"coordinate descent converged after {passes} passes"
    if keep.plan is None:
        return SolverOutput(Status.NO_SOLUTION, message=message)
    status = Status.OPTIMAL if exhaustive and not message.startswith("stopped") else Status.FEASIBLE
    return SolverOutput(status, keep.plan, keep.best, message=f"search: {message}; {keep.offered} plans tried",
                        stats={"plans_tried": keep.offered, "rejected": keep.rejected, "epochs_simulated": len(epochs),
                               "space_rollout_groups": groups, "space_plans": plans, "passes": passes, "exhaustive": exhaustive,
                               "trace": trace.rows()})
