"""StreamRL-style baseline (HetRL §5.1): generation on one GPU group, every other task on the
other (StreamRL deploys generation and the rest in two data centres). We sweep every split of the
cluster's nodes into two non-empty sides, either side for generation; generation gets its best
(TP, decode batch) with PP = 1, the other tasks co-located with one shared (TP, PP, DP). Every
candidate is validated and scored by the cost model.
"""

from __future__ import annotations

import itertools

from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import (
    build_plan,
    is_heterogeneous,
    node_classes,
    placement_keeper,
    task_configs,
)
from costmodels.solving import Deadline, SolverOutput, Status
from costmodels.workflow import TaskKind


def solve_streamrl(problem: PlacementProblem, *, time_limit: float | None = None, seed: int = 0) -> SolverOutput:
    del seed
    deadline = Deadline(time_limit)
    classes = node_classes(problem)
    tasks = problem.tasks
    gen = next(t for t in tasks if t.kind is TaskKind.GENERATION)
    others = [t for t in tasks if t is not gen]
    keep = placement_keeper(problem)

    def candidates():  # every (generation side, generation config, shared config), side by side
        for r in range(1, len(classes)):
            for side in itertools.combinations(range(len(classes)), r):
                gen_gpus = [g for k in side for g in classes[k][1]]
                rest = [g for k in range(len(classes)) if k not in side for g in classes[k][1]]
                gen_cfgs = [c for c in task_configs(problem, gen, len(gen_gpus), is_heterogeneous(problem, gen_gpus)) if c.pp == 1]
                shared = None
                for t in others:
                    cfgs = set(task_configs(problem, t, len(rest), is_heterogeneous(problem, rest)))
                    shared = cfgs if shared is None else shared & cfgs
                for gc, oc in itertools.product(gen_cfgs, sorted(shared or ())):
                    yield build_plan(problem, [([gen.name], gen_gpus), ([t.name for t in others], rest)], {gen.name: gc, **{t.name: oc for t in others}})

    stopped = False
    for plan in candidates():  # the deadline is checked per candidate: one side can hold thousands
        if deadline.expired() and keep.plan is not None:
            stopped = True
            break
        keep.offer(plan)
    if keep.plan is None:
        return SolverOutput(Status.INFEASIBLE, message="no two-group split fits in memory", stats={"candidates": keep.offered})
    return SolverOutput(Status.FEASIBLE, plan=keep.plan, objective=keep.best, message=f"best of {keep.offered} generation/rest splits" + (" (time limit: the sweep was cut short)" if stopped else ""),
                        stats={"candidates": keep.offered})
