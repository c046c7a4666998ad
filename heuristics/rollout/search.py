"""Rollout plans: RollPacker's settings, veRL's baseline, and a search over the plan space on the
simulator.

``solve_search`` is coordinate descent over the knob groups of ``costmodels.rollout.space``:
starting from the better of the paper's and veRL's plans, it tries every value of one group with
the others held at the incumbent — (η_P, η_R) jointly, the TP setting, the stream trainer, the
reward mode with its timeout, the fetch mode — and keeps any improvement; passes repeat, in an
order shuffled by ``seed``, until a whole pass improves nothing or the time limit ends it. A
distinct rollout setting (``RolloutPlan.rollout_key``) costs one simulated epoch (cached on the
problem); fetch knobs, and reward knobs unless short rounds race on scores, only re-time it.
When the space has at most ``exhaustive_below`` rollout groups it is enumerated whole instead
(then the plan is the space's optimum). Every plan tried passes the validator first.
"""

from __future__ import annotations

import random
from typing import Annotated, Any

from pydantic import Field

from costmodels.rollout.check import check_rollout
from costmodels.rollout.judge import evaluate_rollout
from costmodels.rollout.plan import RolloutPlan
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
from costmodels.solving import (
    Deadline,
    DeadlineExceeded,
    KeepBest,
    SolverOutput,
    Status,
    Trace,
    note_work,
)


def _objective(problem: RolloutProblem, plan: RolloutPlan) -> float:
    return evaluate_rollout(problem, plan)[0]


def _fixed(problem: RolloutProblem, plan: RolloutPlan, name: str) -> SolverOutput:
    bad = check_rollout(problem, plan)
    if bad:
        return SolverOutput(
            Status.INFEASIBLE, message=f"{name}: its plan is not valid here: {bad[0]}"
        )
    return SolverOutput(
        Status.FEASIBLE, plan, _objective(problem, plan), message=f"{name} settings"
    )


def solve_paper(
    problem: RolloutProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """RollPacker's settings (``costmodels.rollout.space.paper_plan``)."""
    return _fixed(problem, paper_plan(problem.workload), "RollPacker's")


def solve_verl(
    problem: RolloutProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """veRL's synchronous rollout (``costmodels.rollout.space.verl_plan``)."""
    return _fixed(problem, verl_plan(problem.workload), "veRL's synchronous")


#: distinct rollout settings (simulated epochs) the search may ask for without a time limit: the
#: 7B preset converges in 3 passes and 70 epochs; the 32B one needs ~5 s per epoch on the
#: development machine, so this is ~6 min there, inside the 900 s default cap even when loaded
DEFAULT_EPOCHS = 72


class _EpochBudgetSpent(Exception):
    """The search asked for a rollout setting past its epoch budget (a deterministic stop)."""


def solve_search(
    problem: RolloutProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    exhaustive_below: Annotated[
        int,
        Field(
            ge=0,
            le=10**6,
            description="enumerate the whole space when it has at most this many rollout groups",
        ),
    ] = 48,
    epochs: Annotated[
        int | None,
        Field(
            ge=1,
            le=10**6,
            description=(
                "budget of distinct rollout settings (simulated epochs) tried (default 72 without "
                "--time-limit; with one, until the limit or convergence)"
            ),
        ),
    ] = None,
    progress: Any = None,
) -> SolverOutput:
    """Coordinate descent over the plan space on the simulator (module doc).

    Its effort is a budget of distinct rollout settings (``epochs``), counted whether or not the
    problem's epoch cache already holds them, so the same job, seed and budget give the same plan
    on any machine and in any process; the time limit (or the default cap) is a safety net."""
    deadline = Deadline(time_limit)
    budget = epochs if epochs is not None else (DEFAULT_EPOCHS if time_limit is None else None)
    search = _Search(problem, deadline, budget, progress)
    exhaustive = search.groups <= exhaustive_below
    try:
        if exhaustive:
            search.seen = offer_all(problem, search.keep, deadline, search.trace, budget)
        else:
            refused = search.descend(seed)
            if refused is not None:
                return refused
    except DeadlineExceeded as exc:
        message = f"stopped: {exc}"
    except _EpochBudgetSpent:
        message = (
            f"the budget of {budget} rollout settings ended the search after {search.passes} passes"
        )
    else:
        message = (
            (
                "the whole space enumerated"
                if search.seen == search.groups
                else f"the budget ended the enumeration after {search.seen} of {search.groups} "
                "rollout groups"
            )
            if exhaustive
            else f"coordinate descent converged after {search.passes} passes"
        )
    return search.output(message, exhaustive)


class _Search:
    """One search's state: the epoch budget and the rollout settings asked for, the best plan
    kept, the anytime trace, the passes made and the rollout groups enumerated."""

    def __init__(
        self, problem: RolloutProblem, deadline: Deadline, budget: int | None, progress: Any
    ) -> None:
        self.problem, self.deadline = problem, deadline
        self.budget, self.progress = budget, progress
        self.trace = Trace(deadline)
        self.tried: set[tuple] = set()  # rollout settings asked for (simulated or found cached)
        self.keep = KeepBest(problem, self.objective, check_rollout, tol=1e-9)
        self.wl = problem.workload
        self.groups, self.plans = space_size(self.wl)
        self.passes = self.seen = 0

    def objective(self, pr: RolloutProblem, plan: RolloutPlan) -> float:
        """The plan's objective, counting a rollout setting not asked for before against the
        budget (past it: :class:`_EpochBudgetSpent`)."""
        key = plan.rollout_key()
        if key not in self.tried:
            if self.budget is not None and len(self.tried) >= self.budget:
                raise _EpochBudgetSpent
            self.tried.add(key)
        return _objective(pr, plan)

    def report(self) -> None:
        """(used, budget, best) for the CLI's bar: the whole space is the budget."""
        if self.progress is not None:
            self.progress(self.keep.offered, self.plans, self.keep.best)

    def descend(self, seed: int) -> SolverOutput | None:
        """Coordinate descent from the paper's and veRL's plans, passes in an order shuffled by
        ``seed`` until a pass improves nothing; the refusal when neither start is valid."""
        keep, wl = self.keep, self.wl
        starts = (paper_plan(wl), verl_plan(wl))
        for start in starts:
            keep.offer(start)
        self.trace.record(keep.best, keep.offered)
        self.report()
        if keep.plan is None:  # the local search moves from a valid plan: there is none
            why = check_rollout(self.problem, starts[0])
            return SolverOutput(
                Status.INFEASIBLE,
                message=f"neither the paper's nor veRL's settings are valid here: {why[0]}",
            )
        rng = random.Random(seed)
        dims: list[tuple[str, Any]] = [
            ("eta", eta_options),
            ("tp", lambda: tp_options(wl)),
            ("scale", scale_options),
            ("reward", reward_options),
            ("fetch", lambda: fetch_options(keep.plan.scale != "off")),
        ]
        while True:
            self.passes += 1
            before = keep.best
            order = dims[:]
            rng.shuffle(order)
            for _, options in order:
                base = keep.plan.model_dump()
                for option in options():
                    self.deadline.check()
                    keep.offer(RolloutPlan(**{**base, **option}))
                    self.report()
                self.trace.record(keep.best, keep.offered)
            if keep.best >= before - 1e-9:
                return None

    def output(self, message: str, exhaustive: bool) -> SolverOutput:
        """The best plan, optimal when the whole space was enumerated."""
        keep = self.keep
        if keep.plan is None:
            return SolverOutput(Status.NO_SOLUTION, message=message)
        complete = (
            exhaustive and message == "the whole space enumerated" and self.seen == self.groups
        )
        status = Status.OPTIMAL if complete else Status.FEASIBLE
        note_work(len(self.tried), self.budget, "rollout settings")
        return SolverOutput(
            status,
            keep.plan,
            keep.best,
            message=f"search: {message}; {keep.offered} plans tried",
            stats={
                "plans_tried": keep.offered,
                "rejected": keep.rejected,
                "epochs_simulated": len(self.tried),
                "space_rollout_groups": self.groups,
                "space_plans": self.plans,
                "passes": self.passes,
                "exhaustive": exhaustive,
                "trace": self.trace.rows(),
            },
        )
