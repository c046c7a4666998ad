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

**The placement solver "ilp" proves through it** (:func:`solve_merging_nodes`). The merged
cluster's optimum T' <= T, and its plan, read on the original cluster GPU for GPU
(:func:`plan_on`), is a plan there costing some U >= T. When U = T' (to a relative 1e-9), the
plan is optimal here: T' <= T <= U = T'. The merged link is only cheaper for a group that
spans nodes, and the merged ILP's canonical layouts fill a node's GPUs in order, so a plan
whose groups fit in nodes costs the same (the testbed's first 4 and 5 nodes, GRPO). When
U > T' (a group spanning nodes, whose DP or PP ring then crosses their link), its groups are
configured again on these nodes (Level 4 solved exactly below U, :func:`configured_here`): a
different TP/PP/DP split may keep its rings off that link, and reaching T' proves it too.
Otherwise the ILP on the original cluster goes on under the better plan's cost, in the time
left, while its relaxed pairs are within reach (:data:`DIRECT_PAIRS`); beyond, the merged
optimum is the answer's proven bound, with the gap. The HetRL testbed's eight nodes become
three: 10 625 compositions instead of 43 million, where the direct ILP never solves a master
(``benchmarks/results/placement/ilp_size_curve.md``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from costmodels.cluster import ClusterSpec, NodeSpec, intra_node_link, intra_zone_link
from costmodels.placement.judge import StepShape, evaluate_placement
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import FrameworkTarget, PlacementProblem
from costmodels.placement.space import node_classes
from costmodels.solving import Deadline, DeadlineExceeded, SolverOutput, Status
from formulations.placement.costing import partial_keep, relaxed_pairs
from formulations.placement.ilp import (
    Backend,
    Threads,
    UpperBound,
    Workers,
    solve_placement_ilp,
    solve_under,
)
from search.placement.combine import combine, plan_of
from search.placement.group_options import GroupOptions

#: the most GPUs one merged node may hold (``NodeSpec.count``'s limit)
MAX_NODE_GPUS = 64
#: the merged optimum's plan "costs the same" on the original cluster within this relative slack
#: (the two evaluations read the same numbers, except the links a spanning group crosses)
SAME_COST = 1e-9
#: the most relaxed pairs (2^|tasks| prod_k (N_k + 1)) for which the ILP on the cluster as it is
#: is tried after the merged one proves no optimum here. Measured (``ilp_size_curve.md``, GRPO,
#: the testbed's first nodes): 105 k pairs (32 GPUs, 4 nodes) proven in 29 s; 945 k (40 GPUs)
#: not even built in 300 s. Above it the merged bound is the answer's bound, at once
DIRECT_PAIRS = 2**18


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


def solve_merging_nodes(
    problem: PlacementProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    backend: Backend = "highs",
    threads: Threads = None,
    upper_bound: UpperBound = None,
    workers: Workers = None,
    merge_nodes: Annotated[
        bool,
        Field(
            description=(
                "solve the cluster with its identical nodes merged first (a relaxation): its "
                "optimum, costing the same here, is proven optimal; false: the ILP on the "
                "cluster as it is"
            )
        ),
    ] = True,
) -> SolverOutput:
    """The placement ILP (:func:`~formulations.placement.ilp.solve_placement_ilp`), first on the
    cluster with its identical nodes merged (module doc, "The placement solver"): proven optimal
    here when the merged optimum's plan, or its groups configured again here, costs the same on
    this cluster; otherwise the ILP on this cluster under that plan's cost while within reach,
    in the time left, reporting the better of the two proven bounds. Without nodes to merge, or
    under a framework target (whose rules the merged plan need not keep), it is the ILP on the
    cluster as it is. One time limit covers all of it. The stats are those of the ILP that
    decided, with ``merged`` saying what the merged run found (its optimum or bound, its plan's
    cost here, and configured again here)."""
    del seed  # deterministic
    deadline = Deadline(time_limit)
    merged = merged_problem(problem) if merge_nodes and problem.target.framework is None else None
    if merged is None:
        return solve_under(problem, deadline, backend, threads, upper_bound, workers)
    first = solve_under(merged, deadline, backend, threads, upper_bound, workers)
    where = f"nodes merged {len(problem.cluster.nodes)} -> {len(merged.cluster.nodes)}"
    info: dict[str, Any] = {
        "nodes": len(problem.cluster.nodes),
        "merged_nodes": len(merged.cluster.nodes),
        "status": first.status.value,
        "objective": first.objective,
        "bound": first.bound,
    }
    back: tuple[float, PlacementPlan] | None = None
    if first.plan is not None:
        plan = plan_on(first.plan, merged, problem)  # type: ignore[arg-type]
        back = (evaluate_placement(problem, plan).objective, plan)
        info["plan_here"] = back[0]

    def at_optimum(plan: tuple[float, PlacementPlan] | None) -> bool:
        """Whether ``plan`` costs the proven merged optimum here (so it is optimal here)."""
        return (
            first.status is Status.OPTIMAL
            and plan is not None
            and plan[0] <= first.objective * (1 + SAME_COST)  # type: ignore[operator]
        )

    how = "its plan costs the same here"
    if first.status is Status.OPTIMAL and back is not None and not at_optimum(back):
        # its groups may run faster here with other configurations (a DP ring that no longer
        # spans the merged node's link): Level 4 on these nodes, below the plan's cost
        better = configured_here(problem, back[1], back[0], deadline)
        if better is not None and better[0] < back[0]:
            back, how = better, "its groups, configured here, cost the same"
            info["configured_here"] = back[0]
    stats = {**first.stats, "merged": info}
    if first.status is Status.INFEASIBLE:
        # the merged cluster holds the same GPUs: what fits here fits there
        return SolverOutput(Status.INFEASIBLE, message=f"{first.message}; {where}", stats=stats)
    if first.stats.get("proven") and first.status is not Status.OPTIMAL:
        # no merged plan below the caller's upper bound: none here either (T' <= T)
        return SolverOutput(
            first.status,
            plan=None if back is None else back[1],
            objective=None if back is None else back[0],
            message=f"{first.message}; {where}",
            stats=stats,
        )
    if at_optimum(back):
        assert back is not None
        return SolverOutput(
            Status.OPTIMAL,
            plan=back[1],
            objective=back[0],
            bound=min(first.objective, back[0]),  # type: ignore[type-var]
            message=f"{first.message}; {where}, {how}",
            stats=stats,
        )
    lower = first.bound
    pairs = direct_pairs(problem)
    if deadline.expired() or pairs > DIRECT_PAIRS:
        why = "the merged optimum's plan costs more here" if back else "stopped merged"
        if pairs > DIRECT_PAIRS:
            why += f"; {pairs / 1e6:.1f} million relaxed pairs here, beyond the direct ILP"
        return _best_of(back, None, lower, f"{why} ({where}: {_said(first)})", stats)
    cutoffs = [b for b in (upper_bound, None if back is None else back[0]) if b is not None]
    here = solve_under(problem, deadline, backend, threads, min(cutoffs, default=None), workers)
    stats = {**here.stats, "merged": info}
    if here.status is Status.OPTIMAL:
        return SolverOutput(
            Status.OPTIMAL,
            plan=here.plan,
            objective=here.objective,
            bound=here.objective,
            message=f"{here.message} (on these nodes; merged: {_said(first)})",
            stats=stats,
        )
    if here.stats.get("proven"):
        if back is not None and (upper_bound is None or back[0] <= upper_bound):
            # nothing here below the merged optimum's plan: it is optimal
            return SolverOutput(
                Status.OPTIMAL,
                plan=back[1],
                objective=back[0],
                bound=back[0],
                message=f"the merged optimum's plan, proven optimal on these nodes; {where}",
                stats=stats,
            )
        # nothing below the caller's upper bound: the best plan known is the better of the two
        if back is not None and (here.objective is None or back[0] < here.objective):
            return SolverOutput(
                Status.FEASIBLE, plan=back[1], objective=back[0], message=here.message, stats=stats
            )
        return SolverOutput(
            here.status, plan=here.plan, objective=here.objective, message=here.message, stats=stats
        )
    bounds = [b for b in (lower, here.bound) if b is not None]
    why = f"stopped on these nodes ({where}: {_said(first)})"
    return _best_of(back, here, max(bounds, default=None), why, stats)


def configured_here(
    problem: PlacementProblem, plan: PlacementPlan, cutoff: float, deadline: Deadline
) -> tuple[float, PlacementPlan] | None:
    """The best configurations of ``plan``'s groups on ``problem``'s cluster: Level 4 solved
    exactly (HetRL §3.4, SHA-EA's exact pass) on the compositions its GPU groups have here,
    partial combinations pruned at ``cutoff``; its cost and plan, or None when nothing fits below
    ``cutoff`` or the deadline passes first."""
    builder = GroupOptions(problem)
    wf = problem.workflow
    shape = StepShape.of(wf)
    pairs = [
        (tuple(n for n in builder.tasks if n in g.tasks), builder.composition(list(g.devices)))
        for g in plan.groups
    ]
    keep = partial_keep(shape, wf.eta, ((0.0, 0.0, 0.0), cutoff, None))
    try:
        lists = [builder.options(s, c, keep, deadline=deadline) for s, c in pairs]
    except DeadlineExceeded:
        return None
    best = combine(lists, shape, builder.plan_sync_time(pairs))
    if best is None:
        return None
    here = plan_of(problem, builder.classes, best[1])
    return evaluate_placement(problem, here).objective, here


def direct_pairs(problem: PlacementProblem) -> int:
    """The relaxed pairs of the ILP on ``problem``'s cluster as it is: 2^|tasks| prod_k (N_k + 1)
    over its node classes (``formulations.placement.costing``)."""
    return relaxed_pairs(len(problem.tasks), [len(g) for _, g in node_classes(problem)])


def _said(out: SolverOutput) -> str:
    """The merged run's outcome in a few words."""
    if out.objective is None:
        return out.status.value
    return f"{out.status.value} at {out.objective:.6g}"


def _best_of(
    back: tuple[float, PlacementPlan] | None,
    here: SolverOutput | None,
    bound: float | None,
    message: str,
    stats: dict[str, Any],
) -> SolverOutput:
    """The better of the merged plan read here and the direct ILP's, unproven, with ``bound``."""
    plans = [
        p
        for p in (back, None if here is None or here.plan is None else (here.objective, here.plan))
        if p is not None
    ]
    if not plans:
        return SolverOutput(Status.NO_SOLUTION, message=message, bound=bound, stats=stats)
    cost, plan = min(plans, key=lambda p: p[0])
    if bound is not None:
        gap = (cost - bound) / cost if cost > 0 else 0.0
        message = f"{message}; incumbent {cost:.4g}, bound {bound:.4g} (gap {gap:.1%})"
    return SolverOutput(
        Status.FEASIBLE, plan=plan, objective=cost, bound=bound, message=message, stats=stats
    )
