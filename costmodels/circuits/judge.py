"""The Eq. 7 cost of a circuit plan (OrchestrRL App. D).

The pair completion-time proxy of Eq. 7 is ``max(D(u->v), D(v->u)) / (c_uv * B_link)``; the plan's
objective is the bottleneck over demanded pairs that have circuits, in seconds (bytes * 8 /
(count * Gbps * 1e9)). Demanded pairs left without circuits have an infinite pair time; the
breakdown reports their number and volume (the first key of the exact model's lexicographic
objective).
"""

from __future__ import annotations

from typing import Any

from costmodels.circuits.plan import CircuitPlan
from costmodels.circuits.problem import CircuitProblem


def pair_time_s(bytes_: float, count: int, link_gbps: float) -> float:
    """Eq. 7 for one pair: seconds to move ``bytes_`` over ``count`` circuits."""
    if bytes_ <= 0:
        return 0.0
    if count <= 0:
        return float("inf")
    return bytes_ * 8 / (count * link_gbps * 1e9)


def evaluate_circuits(problem: CircuitProblem, plan: CircuitPlan) -> tuple[float, dict[str, Any]]:
    counts = plan.counts()
    link = problem.fabric.link_gbps
    worst, uncovered_pairs, uncovered_bytes = 0.0, 0, 0.0
    worst_pair: list[str] | None = None
    for pair, b in problem.pair_demand().items():
        c = counts.get(pair, 0)
        if c == 0:
            uncovered_pairs += 1
            uncovered_bytes += b
            continue
        t = pair_time_s(b, c, link)
        if t > worst:
            worst, worst_pair = t, list(pair)
    used: dict[str, int] = {}
    for pair, c in counts.items():
        for v in pair:
            used[v] = used.get(v, 0) + c
    breakdown = {
        "bottleneck_s": worst,
        "bottleneck_pair": worst_pair,
        "uncovered_pairs": uncovered_pairs,
        "uncovered_gb": uncovered_bytes / 1e9,
        "circuits": sum(counts.values()),
        "ports_used": sum(used.values()),
    }
    return worst, breakdown
