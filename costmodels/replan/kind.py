"""The re-planning problem's descriptor (OrchestrRL §4.1, Eq. 1)."""

from __future__ import annotations

from costmodels.problem import ProblemKind, SpecField
from costmodels.replan.canned import canned_replans
from costmodels.replan.check import check_replan
from costmodels.replan.judge import evaluate_replan
from costmodels.replan.plan import ReplanPlan
from costmodels.replan.presets import replan_presets
from costmodels.replan.problem import ReplanProblem, ReplanSpec
from costmodels.replan.summary import replan_summary


def _with_efficiency(problem: ReplanProblem, update: dict) -> ReplanProblem:
    serving = problem.spec.serving
    eff = serving.efficiency.model_copy(update=update)
    return ReplanProblem(
        problem.spec.model_copy(update={"serving": serving.model_copy(update={"efficiency": eff})})
    )


KIND = ProblemKind(
    name="replan",
    summary="re-plan a generation pool's parallelism and requests mid-step (OrchestrRL Eq. 1)",
    title="Replan",
    fields=(
        SpecField("state", ReplanSpec, "generation-pool state file or preset", default="replan-64"),
    ),
    problem_type=ReplanProblem,
    build=lambda state: ReplanProblem(state),
    with_efficiency=_with_efficiency,
    plan_type=ReplanPlan,
    evaluate=evaluate_replan,
    check=check_replan,
    objective=(
        "remaining makespan in seconds, max over instances of T_j + C_mig + C_sw (OrchestrRL Eq. 1)"
    ),
    units="s",
    presets=replan_presets(),
    summary_table=replan_summary,
    size=lambda problem: problem.spec.nodes * problem.spec.gpus_per_node,
    size_label="GPUs",
    bench_extras={
        "migrated_requests": "migrated_requests",
        "switched_instances": "switched_instances",
        "gpus": "gpus",
    },
    canned=canned_replans,
)
