"""Every plan of a tiny re-planning state: each node's layout, then every split of every bin's
requests over the chosen instances, scored by the cost model. Ground truth for the MILP's tests."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

from costmodels.replan.check import check_replan
from costmodels.replan.judge import evaluate_replan
from costmodels.replan.plan import NewInstance, ReplanPlan
from costmodels.replan.problem import ReplanProblem
from costmodels.replan.slots import slots
from costmodels.solving import Deadline, SolverOutput, Status, enumerated

MAX_PLANS = 200_000


def _splits(count: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every way to put ``count`` identical requests on ``parts`` instances."""
    if parts == 0:
        return
    for cut in itertools.combinations(range(count + parts - 1), parts - 1):
        edges = (-1, *cut, count + parts - 1)
        yield tuple(edges[i + 1] - edges[i] - 1 for i in range(parts))


def _refused(what: str) -> SolverOutput:
    return SolverOutput(
        Status.NO_SOLUTION,
        message=f"brute force would enumerate {what} (limit {MAX_PLANS}); use milp",
    )


def _result(best: tuple[float, ReplanPlan | None], count: int, *, stopped: bool) -> SolverOutput:
    return enumerated(
        best[1],
        best[0],
        count=count,
        unit="plans",
        stopped=stopped,
        none_valid="no plan passes the validator",
    )


def solve_replan_bruteforce(
    problem: ReplanProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    deadline = Deadline(time_limit)
    table = slots(problem)
    best: tuple[float, ReplanPlan | None] = (np.inf, None)
    count = 0
    layouts = math.prod(len(t) for t in table)
    if layouts > MAX_PLANS:  # every layout choice holds at least one plan when its GPUs fit
        return _refused(f"{layouts} node-layout choices")
    for n_choice, choice in enumerate(
        itertools.product(*(range(len(layouts)) for layouts in table))
    ):
        if n_choice % 256 == 0 and deadline.expired():
            return _result(best, count, stopped=True)
        chosen = [s for n, li in enumerate(choice) for s in table[n][li]]
        if not chosen or sum(s.tp for s in chosen) > problem.budget:
            continue
        for split in itertools.product(*(_splits(b.count, len(chosen)) for b in problem.bins)):
            count += 1
            if count > MAX_PLANS:
                return _refused(f"more than {MAX_PLANS} plans")
            plan = ReplanPlan(
                instances=[
                    NewInstance(
                        node=s.node,
                        gpu=s.gpu,
                        tp=s.tp,
                        bins=[
                            (b.upper, part[j])
                            for b, part in zip(problem.bins, split, strict=True)
                            if part[j]
                        ],
                    )
                    for j, s in enumerate(chosen)
                ]
            )
            if check_replan(problem, plan):
                continue
            obj, _ = evaluate_replan(problem, plan)
            if obj < best[0] - 1e-12:
                best = (obj, plan)
    return _result(best, count, stopped=False)
