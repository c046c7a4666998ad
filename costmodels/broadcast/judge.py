"""The cost of a weight-sync broadcast schedule (OrchestrRL App. E;
``costmodels.broadcast.problem``'s module doc): T_A, the sum of Phase A's waves, plus T_B, the
slowest Phase B fan-out."""

from __future__ import annotations

from typing import Any

from costmodels.broadcast.plan import BroadcastPlan
from costmodels.broadcast.problem import BroadcastProblem, pod_of
from costmodels.weight_sync import pipelined_broadcast_s


def edge_time_s(gb: float, circuits: int, link_gbps: float) -> float:
    return gb * 8 / (circuits * link_gbps)


def evaluate_broadcast(
    problem: BroadcastProblem, plan: BroadcastPlan
) -> tuple[float, dict[str, Any]]:
    s = problem.spec
    gb = s.shard_gb()
    waves = [
        s.reconfig_s() + max(edge_time_s(gb, e.circuits, s.link_gbps) for e in w.edges)
        for w in plan.phase_a
    ]
    ranks = {p.name: p.ranks for p in s.pods}
    phase_b = max(
        (
            pipelined_broadcast_s(
                gb * len(t.shards), ranks[pod_of(t.seed)] - 1, s.intra_gbps / 8, chunks=s.chunks
            )
            for t in plan.phase_b
            if t.shards
        ),
        default=0.0,
    )
    if plan.phase_b:
        phase_b += s.reconfig_s()  # OCS-Agg fan-out circuits are set up once, before Phase B
    total = sum(waves) + phase_b
    return total, {
        "total_s": total,
        "phase_a_s": sum(waves),
        "phase_b_s": phase_b,
        "waves": len(waves),
        "wave_s": waves,
        "inter_pod_edges": sum(len(w.edges) for w in plan.phase_a),
        "inter_pod_gb": gb * sum(len(w.edges) for w in plan.phase_a),
        "shard_gb": gb,
    }
