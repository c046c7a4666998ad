"""A rollout plan's epoch on the generation simulator (RollPacker §3-§4): the TPs a rollout
instance can use, the stream trainer's scale rule and the inline scoring the plan asks for, and
the simulated epoch (``costmodels.rollout.rounds``) the judge times."""

from __future__ import annotations

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance, feasible_tps
from costmodels.rollout.plan import RolloutPlan
from costmodels.rollout.reward import InlineScoring
from costmodels.rollout.rounds import EpochResult, launch_count, simulate_epoch
from costmodels.rollout.stream import PAPER_MILESTONES, ScaleRule
from costmodels.rollout.workload import RolloutWorkload


def rollout_tps(workload: RolloutWorkload) -> list[int]:
    """TPs a rollout instance can use: inside one server, dividing the heads and the GPUs, and
    leaving KV room for at least one longest request (a long prompt, four times the median, plus
    the length cap): below that the engine could not admit a maximal response at all."""
    model, gpu = get_model(workload.model), get_gpu(workload.gpu)
    need = workload.lengths.prompt_median * 4 + workload.max_response
    return [
        tp
        for tp in feasible_tps(model, workload.gpus, workload.gpus_per_node)
        if Instance(model, gpu, tp).kv_capacity_tokens() >= need
    ]


def scale_rule(workload: RolloutWorkload, plan: RolloutPlan) -> ScaleRule | None:
    if plan.scale == "off":
        return None
    milestones = PAPER_MILESTONES if plan.scale == "adaptive" else (plan.scale_at,)
    return ScaleRule(
        milestones,
        plan.scale_fraction,
        check_kv=plan.scale == "adaptive",
        replica_gpus=workload.training.replica_gpus,
        progress="responses" if plan.scale == "adaptive" else "prompts",
    )


def inline_scoring(workload: RolloutWorkload, plan: RolloutPlan) -> InlineScoring | None:
    """How short rounds are scored while they run, when the plan races on scores."""
    if not plan.scores_inline():
        return None
    return InlineScoring(
        plan.timeout == "adaptive",
        plan.timeout_lambda,
        launch_count(plan.eta_responses, workload.responses_per_prompt),
    )


def simulate(workload: RolloutWorkload, plan: RolloutPlan, seed: int) -> EpochResult:
    """The plan's rollout for one epoch (short rounds scored inline when the plan races on
    scores; long rounds' reward and all training are timed by ``judge.step_times``)."""
    return simulate_epoch(
        workload,
        eta_prompts=plan.eta_prompts,
        eta_responses=plan.eta_responses,
        tp=plan.short_tp,
        long_tp=plan.long_tp,
        seed=seed,
        adaptive_tp=plan.tp_rule != "fixed",
        tp_guard=plan.tp_rule == "guarded",
        allowed_tps=rollout_tps(workload),
        scale=scale_rule(workload, plan),
        scoring=inline_scoring(workload, plan),
    )
