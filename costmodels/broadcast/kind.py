"""The weight-sync broadcast problem's descriptor (RFabric, OrchestrRL App. E)."""

from __future__ import annotations

from costmodels.broadcast.canned import canned_broadcasts
from costmodels.broadcast.check import check_broadcast
from costmodels.broadcast.judge import evaluate_broadcast
from costmodels.broadcast.plan import BroadcastPlan
from costmodels.broadcast.plot import plot_broadcast
from costmodels.broadcast.presets import broadcast_presets
from costmodels.broadcast.problem import BroadcastProblem, BroadcastSpec
from costmodels.broadcast.summary import broadcast_summary
from costmodels.problem import ProblemKind, SpecField

KIND = ProblemKind(
    name="broadcast",
    summary="schedule the two-level weight-sync broadcast over OCS circuits (RFabric)",
    title="Broadcast",
    fields=(
        SpecField(
            "sync", BroadcastSpec, "weight-sync spec file or preset", default="weight-sync-example"
        ),
    ),
    problem_type=BroadcastProblem,
    build=lambda sync: BroadcastProblem(sync),
    plan_type=BroadcastPlan,
    evaluate=evaluate_broadcast,
    check=check_broadcast,
    objective=(
        "weight-sync completion time in seconds, Phase A waves + Phase B fan-out (OrchestrRL App. "
        "E)"
    ),
    units="s",
    presets=broadcast_presets(),
    summary_table=broadcast_summary,
    plot=plot_broadcast,
    size=lambda problem: sum(p.ranks for p in problem.spec.pods if p.role == "gen"),
    size_label="generation ranks",
    bench_extras={"waves": "waves", "phase_a_s": "phase_a_s", "phase_b_s": "phase_b_s"},
    canned=canned_broadcasts,
)
