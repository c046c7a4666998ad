"""The weight transfer of a placement (HetRL Appendix B.2 C_reshard and C_sync, departing for
C_sync as ``costmodels.placement.judge``'s module doc says): the training replicas' all-gather, the
weights' arrival in each zone holding generation GPUs and the fan-out inside it."""

from __future__ import annotations

import math
from typing import Any

from costmodels import comm
from costmodels.memory import GB
from costmodels.placement.plan import PlacementPlan, TaskPlacement
from costmodels.placement.problem import PlacementProblem
from costmodels.transformer import (
    BYTES_BF16,
    total_params,
)
from costmodels.weight_sync import pipelined_broadcast_s
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING

#: chunks of the pipelined weight broadcast inside a zone
BROADCAST_CHUNKS = 64


def full_weights_gb(problem: PlacementProblem) -> float:
    return BYTES_BF16 * total_params(problem.workflow.model("actor")) / GB


def replica_allgather(problem: PlacementProblem, tp_: TaskPlacement) -> tuple[list[float], bool]:
    """All-gather of the full actor weights inside each replica of ``tp_`` (B.2 resharding)."""
    topo = problem.topology
    index = topo.index_of()
    full = full_weights_gb(problem)
    out, exact = [], True
    for replica in tp_.devices:
        devs = [index[d] for stage in replica for d in stage]
        n = len(devs)
        r = comm.bottleneck_ring(topo, devs, full * (n - 1) / n)
        out.append(r.seconds)
        exact = exact and r.exact
    return out, exact


def zone_fanout(problem: PlacementProblem, receivers: list[int]) -> float:
    """F_z: pipelined chain broadcast of the full weights from one GPU of the zone to the others
    (module doc); ``receivers`` are the zone's generation GPUs (topology indices)."""
    n = len(receivers)
    if n < 2:
        return 0.0
    full = full_weights_gb(problem)
    # a chunk hop at the chain's slowest edge (alpha + W / K / beta), as the pipelined chain's
    # per-hop latency with the transfer already in it
    hop = comm.bottleneck_ring(problem.topology, receivers, full / BROADCAST_CHUNKS).seconds
    return pipelined_broadcast_s(full, n - 1, math.inf, hop, BROADCAST_CHUNKS)


def gen_zones(problem: PlacementProblem, gen_devices: list[int]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for d in gen_devices:
        out.setdefault(problem.topology.devices[d].zone, []).append(d)
    return out


def sync_arrivals(
    problem: PlacementProblem, train_devices: list[int], gen_devices: list[int], together: bool
) -> dict[str, dict[str, float]]:
    """A_z and F_z of every zone holding generation GPUs (module doc)."""
    full = full_weights_gb(problem)
    topo = problem.topology
    out = {}
    for z, receivers in gen_zones(problem, gen_devices).items():
        arrival = 0.0 if together else comm.fastest_route(topo, train_devices, receivers, full)
        out[z] = {"arrival_s": arrival, "fanout_s": zone_fanout(problem, receivers)}
    return out


def weight_transfer(
    problem: PlacementProblem, plan: PlacementPlan
) -> tuple[str, float, dict[str, Any], bool]:
    """C_reshard or C_sync (module doc), whichever the plan's layout needs, with its parts."""
    train = plan.task(ACTOR_TRAINING)
    gen = plan.task(ACTOR_GENERATION)
    groups = plan.group_of()
    together = groups[ACTOR_GENERATION] == groups[ACTOR_TRAINING]
    ag, exact = replica_allgather(problem, train)
    if not problem.workflow.overlaps and together:
        return "reshard", max(ag), {"allgather_s": max(ag)}, exact
    index = problem.topology.index_of()
    zones = sync_arrivals(
        problem,
        [index[d] for d in train.all_devices()],
        [index[d] for d in gen.all_devices()],
        together,
    )
    worst = max((v["arrival_s"] + v["fanout_s"] for v in zones.values()), default=0.0)
    return "sync", min(ag) + worst, {"allgather_s": min(ag), "zones": zones}, exact
