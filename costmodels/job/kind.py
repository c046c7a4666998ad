"""The job problem's descriptor (``costmodels.job``): a placement problem's inputs, one plan of
every decision, one composed step."""

from __future__ import annotations

import dataclasses
from typing import Any

from costmodels.circuits.fabric import FabricSpec
from costmodels.job.canned import canned_jobs
from costmodels.job.check import check_job
from costmodels.job.judge import evaluate_job
from costmodels.job.plan import JobPlan
from costmodels.job.problem import JobProblem, check_fabric_nodes
from costmodels.job.summary import job_roll, job_summary, job_verl
from costmodels.placement.kind import KIND as PLACEMENT
from costmodels.problem import ProblemKind, SpecField, evaluated_table


def _build(
    cluster: Any, workflow: Any, params: Any = None, target: Any = None, fabric: Any = None
) -> JobProblem:
    return JobProblem(PLACEMENT.build(cluster, workflow, params, target), fabric)


def _with_efficiency(problem: JobProblem, update: dict) -> JobProblem:
    placement = PLACEMENT.with_efficiency(problem.placement, update)  # type: ignore[misc]
    return JobProblem(placement, problem.fabric)


def _with_target(problem: JobProblem, framework: str | None) -> JobProblem:
    placement = PLACEMENT.with_target(problem.placement, framework)  # type: ignore[misc]
    return JobProblem(placement, problem.fabric)


def _fabric_joins_the_cluster(fabric: FabricSpec, loaded: dict[str, Any]) -> None:
    check_fabric_nodes(fabric, loaded["cluster"])


KIND = ProblemKind(
    name="job",
    summary="plan one RL job whole: placement, rollout knobs, weight sync, predicted step",
    title="Job",
    # the placement problem's inputs; the default job is GRPO with a long tail
    fields=(
        *(
            dataclasses.replace(f, default="grpo-sync-qwen3-8b-tail") if f.name == "workflow" else f
            for f in PLACEMENT.fields
        ),
        SpecField(
            "fabric",
            FabricSpec,
            "optical circuit fabric file or preset between the cluster's nodes (RFabric)",
            required=False,
            depends=("cluster",),
            check_with=_fabric_joins_the_cluster,
        ),
    ),
    problem_type=JobProblem,
    build=_build,
    plan_type=JobPlan,
    evaluate=evaluate_job,
    check=check_job,
    objective=(
        "predicted seconds per RL step: the placement judge's, generation scaled by the rollout "
        "knobs (costmodels.job.judge)"
    ),
    units="s/iteration",
    presets=(),
    summary_table=job_summary,
    evaluate_table=evaluated_table(job_summary),
    exports={
        "verl": job_verl,
        "verl-0.7": lambda problem, plan: job_verl(problem, plan, "0.7.0"),
        "roll": job_roll,
    },
    size=lambda problem: sum(n.count for n in problem.cluster.nodes),
    size_label="GPUs",
    canned=canned_jobs,
    with_efficiency=_with_efficiency,
    with_target=_with_target,
    targets=PLACEMENT.targets,
    explain_no_plan=lambda problem: PLACEMENT.explain_no_plan(problem.placement),  # type: ignore[misc]
)
