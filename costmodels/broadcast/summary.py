"""What ``rlplan plan broadcast`` prints: Phase A and Phase B times."""

from __future__ import annotations

from typing import Any

from costmodels.broadcast.problem import BroadcastPlan, BroadcastProblem
from costmodels.problem import Summary


def broadcast_summary(
    problem: BroadcastProblem,
    plan: BroadcastPlan,
    objective: float,
    breakdown: dict[str, Any],
    solver: str,
    status: str,
) -> Summary:
    b = breakdown
    return Summary(
        title=f"weight sync by {solver}: {b['total_s']:.3g} s ({status})",
        columns=("part", "seconds", "detail"),
        rows=[
            (
                "Phase A",
                f"{b['phase_a_s']:.3g}",
                f"{b['waves']} waves, {b['inter_pod_edges']} inter-PoD transfers, "
                f"{b['inter_pod_gb']:.0f} GB",
            ),
            ("Phase B", f"{b['phase_b_s']:.3g}", f"{len(plan.phase_b)} intra-PoD fan-out trees"),
        ],
        caption=(
            f"shard {b['shard_gb']:.3g} GB; each wave pays the OCS reconfiguration delay "
            f"({problem.spec.ocs_device})"
        ),
    )
