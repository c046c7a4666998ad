"""verl-style placement baseline (HetRL §5.1 baselines).

verl co-locates every task on every GPU (one resource pool) and gives each task a homogeneous
parallel configuration with an even split of layers and batch. We sweep what a verl user would
sweep: the rollout TP degree (vLLM, PP = 1, DP = the rest) and its ``max_num_seqs`` (the
sequences in flight per rollout replica: the workflow's limit and its halvings), and one
(TP, PP, DP) shared by the inference and training tasks, TP kept inside the smallest node.
Tasklets are laid out TP-innermost over the GPUs in cluster order, as verl's resource pool does.
Every candidate is a plan of rlplan's placement space (``costmodels.placement.space``), so the
exact ILP's optimum is never worse; each is scored by the cost model and checked against C1-C3,
and the best valid one is returned.
"""

from __future__ import annotations

from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import (
    TaskConfig,
    build_plan,
    colocated_candidates,
    placement_keeper,
)
from costmodels.solving import Deadline, SolverOutput, Status
from costmodels.workflow import TaskKind


def colocated_plan(
    problem: PlacementProblem, gen_tp: int, tp: int, pp: int, decode_batch: int | None = None
) -> PlacementPlan:
    """One verl-style plan by hand: every task on every GPU, generation TP ``gen_tp`` (PP 1),
    the other tasks (TP ``tp``, PP ``pp``), even splits, DP the rest."""
    devices = [d.id for d in problem.topology.devices]
    n = len(devices)
    configs = {
        t.name: TaskConfig(gen_tp, 1, n // gen_tp, decode_batch=decode_batch)
        if t.kind is TaskKind.GENERATION
        else TaskConfig(tp, pp, n // (tp * pp))
        for t in problem.tasks
    }
    return build_plan(problem, [([t.name for t in problem.tasks], devices)], configs)


def solve_colocated(
    problem: PlacementProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """Sweep verl's configuration knobs; return the best plan that fits in memory."""
    del seed  # deterministic sweep
    deadline = Deadline(time_limit)
    nodes: dict[str, int] = {}
    for d in problem.topology.devices:
        nodes[d.node] = nodes.get(d.node, 0) + 1
    max_tp = max(min(nodes.values()), 1)
    keep = placement_keeper(problem)
    timed_out = False
    for plan in colocated_candidates(problem, balances=("even",), max_tp=max_tp):
        if deadline.expired() and keep.plan is not None:
            timed_out = True
            break
        keep.offer(plan)
    stats = {"candidates": keep.offered, "feasible": keep.offered - keep.rejected}
    if keep.plan is None:
        fw = problem.target.framework
        why = (
            f"no co-located configuration fits in GPU memory and runs in {fw} (--target)"
            if fw is not None
            else "no co-located configuration fits in GPU memory"
        )
        return SolverOutput(Status.INFEASIBLE, message=why, stats=stats)
    msg = (
        "time limit reached during the sweep" if timed_out else "best of the full verl-style sweep"
    )
    return SolverOutput(
        Status.FEASIBLE, plan=keep.plan, objective=keep.best, message=msg, stats=stats
    )
