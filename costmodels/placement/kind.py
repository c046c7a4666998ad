"""The placement problem's descriptor (HetRL §3): inputs, judge, solvers, presentation."""

from __future__ import annotations

from typing import Any

from costmodels.cluster import ClusterSpec
from costmodels.errors import SpecError
from costmodels.placement.canned import canned_placements
from costmodels.placement.check import check_placement
from costmodels.placement.frameworks import FRAMEWORKS
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.memory import memory_shortfall
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.plot import plot_placement
from costmodels.placement.presets import placement_presets
from costmodels.placement.problem import CostParams, FrameworkTarget, PlacementProblem
from costmodels.placement.roll_export import export_roll
from costmodels.placement.summary import placement_cost_table, placement_summary
from costmodels.placement.verl_export import export_verl
from costmodels.problem import ProblemKind, SpecField
from costmodels.workflow import WorkflowSpec


def _evaluate(problem: PlacementProblem, plan: PlacementPlan) -> tuple[float, dict[str, Any]]:
    ev = evaluate_placement(problem, plan)
    return ev.objective, ev.breakdown


def _build(
    cluster: ClusterSpec,
    workflow: WorkflowSpec,
    params: CostParams | None = None,
    target: FrameworkTarget | None = None,
) -> PlacementProblem:
    """The placement problem; the cluster's own ``profiles:`` join the judge's (those the params
    name explicitly win), unless the judge is the flat one."""
    params = params or CostParams()
    eff = params.efficiency
    if cluster.profiles and eff.kernels != "flat":
        merged = {**{p.gpu: p for p in cluster.profiles}, **eff.profiles}
        params = params.model_copy(
            update={"efficiency": eff.model_copy(update={"profiles": merged})}
        )
    problem = PlacementProblem(cluster, workflow, params, target or FrameworkTarget())
    _refuse_memoryless_gpus(problem)
    return problem


def _refuse_memoryless_gpus(problem: PlacementProblem) -> None:
    """A GPU type whose memory is all kept for the runtime holds nothing (C3 reads memory less
    the reserve): refused with the field to fix, the custom GPU's memory or the reserve."""
    reserve = problem.params.memory_reserve_gb
    custom = [g.name for g in problem.cluster.gpus]
    for gpu in {d.gpu.name: d.gpu for d in problem.topology.devices}.values():
        if gpu.memory_gb > reserve:
            continue
        why = (
            f"GPU type {gpu.name} must hold more than the {reserve:g} GB per GPU kept for the "
            "runtime (params memory_reserve_gb)"
        )
        if gpu.name in custom:
            raise SpecError(f"cluster.gpus[{custom.index(gpu.name)}].memory_gb", gpu.memory_gb, why)
        raise SpecError("params.memory_reserve_gb", reserve, why)


def _with_efficiency(problem: PlacementProblem, update: dict) -> PlacementProblem:
    update = dict(update)
    if "profiles" in update and update.get("kernels", problem.params.efficiency.kernels) != "flat":
        # --profile FILE overrides the cluster spec's profiles per GPU type, not all of them
        update["profiles"] = {**{p.gpu: p for p in problem.cluster.profiles}, **update["profiles"]}
    eff = problem.params.efficiency.model_copy(update=update)
    return PlacementProblem(
        problem.cluster,
        problem.workflow,
        problem.params.model_copy(update={"efficiency": eff}),
        problem.target,
    )


def _with_target(problem: PlacementProblem, framework: str | None) -> PlacementProblem:
    return PlacementProblem(
        problem.cluster, problem.workflow, problem.params, FrameworkTarget(framework=framework)
    )


KIND = ProblemKind(
    name="placement",
    summary="place an RL workflow's tasks on heterogeneous GPUs and networks (HetRL)",
    title="Placement",
    fields=(
        SpecField(
            "cluster", ClusterSpec, "cluster spec file or preset", default="hetrl-single-region"
        ),
        SpecField(
            "workflow", WorkflowSpec, "workflow spec file or preset", default="grpo-sync-qwen3-8b"
        ),
        SpecField(
            "params",
            CostParams,
            "cost-model knobs (inline mapping in a problem file)",
            required=False,
            file=False,
        ),
        SpecField(
            "target",
            FrameworkTarget,
            "the framework the plan must run in (inline mapping in a problem file; --target)",
            required=False,
            file=False,
        ),
    ),
    problem_type=PlacementProblem,
    build=_build,
    plan_type=PlacementPlan,
    evaluate=_evaluate,
    check=check_placement,
    objective="predicted seconds per RL iteration (HetRL Appendix B.4)",
    units="s/iteration",
    presets=placement_presets(),
    summary_table=placement_summary,
    evaluate_table=placement_cost_table,
    exports={
        "verl": export_verl,  # the newest release tested (verl_export.VERL_RELEASES)
        "verl-0.7": lambda problem, plan: export_verl(problem, plan, "0.7.0"),
        "roll": export_roll,
    },
    plot=plot_placement,
    size=lambda problem: sum(n.count for n in problem.cluster.nodes),
    size_label="GPUs",
    bench_extras={"samples_per_s": "throughput_samples_per_s"},
    canned=canned_placements,
    with_efficiency=_with_efficiency,
    with_target=_with_target,
    targets=FRAMEWORKS,
    explain_no_plan=memory_shortfall,
)
