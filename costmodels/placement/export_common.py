"""What the verl and ROLL exports share: how a plan's GPU groups look from outside rlplan."""

from __future__ import annotations

from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem


def balance_notes(plan: PlacementPlan) -> list[str]:
    """Uneven batch shares and layer splits (HetRL §4.2), which both frameworks split evenly."""
    out = []
    for t in plan.tasks:
        if t.batch_shares is not None and len({round(s, 6) for s in t.batch_shares}) > 1:
            out.append(
                f"{t.task}: uneven batch shares {[round(s, 3) for s in t.batch_shares]} (both "
                "frameworks split evenly)"
            )
        if t.layers_per_stage is not None and len(set(t.layers_per_stage)) > 1:
            out.append(
                f"{t.task}: uneven layer split {t.layers_per_stage} (set Megatron's pipeline "
                "layout by hand)"
            )
    return out


def node_counts(problem: PlacementProblem, devices: list[str]) -> dict[str, int]:
    """GPUs of ``devices`` on each node, in cluster order."""
    index = problem.topology.index_of()
    out: dict[str, int] = {}
    for d in devices:
        node = problem.topology.devices[index[d]].node
        out[node] = out.get(node, 0) + 1
    return out


def pool_notes(
    problem: PlacementProblem, devices: list[str], what: str, notes: list[str]
) -> tuple[int, int]:
    """(nnodes, n_gpus_per_node) of a resource pool holding ``devices``, noting what such a
    pool cannot say (uneven counts per node, mixed GPU types)."""
    counts = node_counts(problem, devices)
    index = problem.topology.index_of()
    types = {problem.topology.devices[index[d]].gpu.name for d in devices}
    if len(set(counts.values())) > 1:
        notes.append(
            f"{what}: uneven GPUs per node {counts}; a verl pool is [n_gpus_per_node] * nnodes"
        )
    if len(types) > 1:
        notes.append(
            f"{what}: mixes GPU types {sorted(types)}; verl schedules a pool as homogeneous"
        )
    return len(counts), max(counts.values())
