"""What ``rlplan plan broadcast`` prints: Phase A and Phase B times."""

from __future__ import annotations

from costmodels.broadcast.plan import BroadcastPlan
from costmodels.broadcast.problem import BroadcastProblem
from costmodels.problem import SolvedPlan, Summary


def broadcast_summary(solved: SolvedPlan[BroadcastProblem, BroadcastPlan]) -> Summary:
    problem, plan, b = solved.problem, solved.plan, solved.breakdown
    return Summary(
        title=f"weight sync by {solved.solver}: {b['total_s']:.3g} s ({solved.status})",
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
