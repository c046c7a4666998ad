"""verl-style placement baseline (HetRL §5.1 baselines, issue 4 item 5).

verl co-locates every task on every GPU (one resource pool) and gives each task a homogeneous
parallel configuration. We sweep what a verl user would sweep: the rollout TP degree (vLLM,
PP = 1, DP = the rest) and one (TP, PP, DP) shared by the inference and training tasks, TP kept
inside a node. Tasklets are laid out TP-innermost over the GPUs in cluster order, as verl's
resource pool does. Every candidate is scored by the cost model and checked against C1-C3; the
best valid one is returned.
"""

from __future__ import annotations

from costmodels.placement.problem import PlacementPlan, PlacementProblem, TaskGroup, TaskPlacement
from costmodels.placement.space import placement_keeper
from costmodels.placement.space import tasklet_layout as layout
from costmodels.solving import Deadline, SolverOutput, Status
from costmodels.workflow import TaskKind


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def colocated_plan(problem: PlacementProblem, gen_tp: int, tp: int, pp: int) -> PlacementPlan:
    devices = [d.id for d in problem.topology.devices]
    n = len(devices)
    tasks = []
    for task in problem.tasks:
        if task.kind is TaskKind.GENERATION:
            t, p = gen_tp, 1
        else:
            t, p = tp, pp
        dp = n // (t * p)
        tasks.append(TaskPlacement(task=task.name, tp=t, pp=p, dp=dp, devices=layout(devices, t, p, dp)))
    return PlacementPlan(groups=[TaskGroup(tasks=[t.name for t in problem.tasks], devices=devices)], tasks=tasks)


def solve_colocated(problem: PlacementProblem, *, time_limit: float | None = None, seed: int = 0) -> SolverOutput:
    """Sweep verl's configuration knobs; return the best plan that fits in memory."""
    del seed  # deterministic sweep
    deadline = Deadline(time_limit)
    n = problem.topology.n
    min_node = min(sum(1 for d in problem.topology.devices if d.node == node) for node in {d.node for d in problem.topology.devices})
    tps = [t for t in (1, 2, 4, 8) if t <= max(min_node, 1) and n % t == 0]
    keep = placement_keeper(problem)
    timed_out = False
    for gen_tp in tps:
        for tp in tps:
            for pp in _divisors(n // tp):
                if deadline.expired() and keep.plan is not None:
                    timed_out = True
                    break
                try:
                    plan = colocated_plan(problem, gen_tp, tp, pp)
                except ValueError:
                    continue
                keep.offer(plan)
    stats = {"candidates": keep.offered, "feasible": keep.offered - keep.rejected}
    if keep.plan is None:
        return SolverOutput(Status.INFEASIBLE, message="no co-located configuration fits in GPU memory", stats=stats)
    msg = "time limit reached during the sweep" if timed_out else "best of the full verl-style sweep"
    return SolverOutput(Status.FEASIBLE, plan=keep.plan, objective=keep.best, message=msg, stats=stats)
