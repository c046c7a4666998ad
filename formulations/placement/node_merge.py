"""A lower bound on the placement optimum of a cluster whose ILP is too large to prove directly:
the same problem on the cluster with its identical nodes merged (``docs/placement.md``, "Bounds
at testbed scale").

The ILP's node classes are the cluster's nodes, and its compositions number prod_k (N_k + 1):
9^8 (43 million) on the HetRL testbed's eight nodes of 8 GPUs, where no master is ever solved
(``benchmarks/results/placement/ilp_size_curve.md``). Nodes with one GPU type, zone, region and
intra-node link differ only in which GPUs share a node. Merging such nodes into one node of
their GPUs (in declaration order) changes one thing: a link between two of their GPUs becomes
the intra-node link instead of the zone's. When that link is at least as fast (bandwidth no
lower, latency no higher), every plan of the original cluster, read on the merged one GPU for
GPU, costs no more there:

* every time the judge adds up (compute, the TP, PP and DP rings and hops, C_reshard, C_sync's
  arrivals and in-zone fan-outs, generation's decode rings) is non-increasing in each link's
  bandwidth and non-decreasing in its latency, and is combined by sums and maxima only;
* nothing else the cost or the feasibility of a plan reads changes: GPU types, their memory,
  zones and regions.

So with T the original cluster's optimum and T' the merged one's, T' <= T: the merged ILP's
optimum, or its proven bound under a time limit, bounds T from below, and a plan of the original
cluster within 1% of it is proven within 1% of T. The HetRL testbed merges into 3 nodes (24 A100,
24 L40S, 16 L4): 25 * 25 * 17 = 10 625 compositions. ``tests/test_node_merge.py`` holds the
"costs no more" on random plans of every kind, and T' <= T where both are proven.

A framework target (``--target``) is dropped: the whole space's bound is also a bound on the
target's optimum, a restriction of it. A cluster given by explicit GPU matrices has no nodes to
merge, and nodes whose intra-node link is slower than their zone's are left apart.
"""

from __future__ import annotations

from typing import Any

from costmodels.cluster import ClusterSpec, NodeSpec, intra_node_link, intra_zone_link
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import FrameworkTarget, PlacementProblem
from costmodels.solving import SolverOutput, Status
from formulations.placement.ilp import solve_placement_ilp

#: the most GPUs one merged node may hold (``NodeSpec.count``'s limit)
MAX_NODE_GPUS = 64


def merge_identical_nodes(spec: ClusterSpec) -> ClusterSpec | None:
    """The cluster with its identical nodes merged (module doc), or None when nothing merges.
    Nodes merge in declaration order, up to :data:`MAX_NODE_GPUS` GPUs each; the merged node
    keeps the first one's name and the GPUs keep their order, so GPU i of one cluster is GPU i of
    the other."""
    if spec.network.matrix is not None:
        return None
    zone_link = intra_zone_link(spec)
    merged: list[dict[str, Any]] = []
    open_by: dict[tuple[Any, ...], int] = {}
    for node in spec.nodes:
        lat, gbs = intra_node_link(spec, node)
        key = (
            node.gpu,
            node.zone,
            node.region or node.zone,
            None if node.intra_node is None else node.intra_node.model_dump_json(),
        )
        faster = lat <= zone_link[0] and gbs >= zone_link[1]
        i = open_by.get(key)
        if faster and i is not None and merged[i]["count"] + node.count <= MAX_NODE_GPUS:
            merged[i]["count"] += node.count
            continue
        merged.append(node.model_dump(mode="json", exclude_none=True))
        if faster:
            open_by[key] = len(merged) - 1
    if len(merged) == len(spec.nodes):
        return None
    return spec.model_copy(update={"nodes": [NodeSpec(**n) for n in merged]})


def merged_problem(problem: PlacementProblem) -> PlacementProblem | None:
    """``problem`` on its cluster with identical nodes merged, without a framework target
    (module doc); None when no two nodes merge."""
    spec = merge_identical_nodes(problem.cluster)
    if spec is None:
        return None
    return PlacementProblem(spec, problem.workflow, problem.params, FrameworkTarget())


def merged_node_bound(
    problem: PlacementProblem,
    time_limit: float | None = None,
    upper_bound: float | None = None,
    **ilp: Any,
) -> tuple[float | None, SolverOutput | None]:
    """A lower bound on ``problem``'s optimum (s/iteration) from the placement ILP on its merged
    cluster, and that ILP's output: its optimum when proven, else the bound it proved within
    ``time_limit`` (None when it proved none, or nothing merges). ``upper_bound`` (a plan's cost
    on the original cluster, say SHA-EA's) prunes the merged ILP from the start; a proof that no
    merged plan costs less than it makes it the bound."""
    merged = merged_problem(problem)
    if merged is None:
        return None, None
    out = solve_placement_ilp(merged, time_limit=time_limit, upper_bound=upper_bound, **ilp)
    if out.status is Status.OPTIMAL:
        return out.objective, out
    if out.stats.get("proven") and upper_bound is not None:
        return upper_bound, out  # nothing below it: the optimum is at least the upper bound
    return out.bound, out


def plan_on(
    plan: PlacementPlan, source: PlacementProblem, target: PlacementProblem
) -> PlacementPlan:
    """``plan``, made for ``source``'s cluster, read on ``target``'s GPU for GPU: GPU i of one is
    GPU i of the other, as :func:`merge_identical_nodes` keeps them (either way: a merged plan
    read back on the original cluster is a plan there, and every plan there costs no less)."""
    src, dst = source.topology.devices, target.topology.devices
    if len(src) != len(dst):
        raise ValueError(f"the clusters differ in size: {len(src)} GPUs against {len(dst)}")
    rename = {a.id: b.id for a, b in zip(src, dst, strict=True)}
    d = plan.model_dump()
    for g in d["groups"]:
        g["devices"] = [rename[x] for x in g["devices"]]
    for t in d["tasks"]:
        t["devices"] = [[[rename[x] for x in stage] for stage in r] for r in t["devices"]]
    return PlacementPlan.model_validate(d)
