"""The rollout problem a job's placement leaves (RollPacker §3-§4 on the placement's generation
GPUs), and why there is none when there is none.

RollPacker's problem is one synchronous GRPO job's rollout on co-located GPUs
(``costmodels.rollout.problem``). A job has one to derive when its workflow is GRPO, synchronous
(one-step-off and fully-async already hide the tail behind training), its responses have a
length distribution (constant lengths leave no tail to pack) and its generation runs on one GPU
type without pipeline stages. The derived job:

* generation: the placement's generation GPUs, their type, its TP as the configured TP; GPUs per
  server the smallest server holding them (a TP group stays in one);
* batch: ``global_batch`` prompts x ``responses_per_prompt``, cut at ``response_length``; the epoch
  replayed is :data:`EPOCH_STEPS` steps (the judge's seed 0);
* lengths: the workflow's distribution as RollPacker's group-aware model. A lognormal's spread
  sigma is split between prompts and responses in the proportions of RollPacker §2.2's
  calibration (``costmodels.generation.request_traces.TraceParams``: 0.75 and 0.55), so that
  sqrt(sigma_p^2 + sigma_r^2) = sigma; a histogram enters as the lognormal of its median and the
  spread of its log-lengths. No hard-prompt mode, and every prompt ``prompt_length`` long (the
  workflow states no more);
* reward: rule-based only (the placement workflow has no sandbox or judge stage);
* training replica: the actor training task's TP x PP; its one forward pass before training when
  the workflow has its reference pass or the old log-prob recompute (both: still one);
* the judge's engine, kernels and profiles: the placement problem's.

The same placement also leaves a generation pool to re-plan (OrchestrRL §4.1,
:func:`replan_setting`): the generation GPUs as whole "nodes" of one type at the placement's
uniform TP, with the same length model (:func:`trace_params`), whatever the algorithm and mode
(the pool's makespan is generation's time in every mode).

On a cluster with an optical fabric (RFabric, :func:`weight_sync_circuits`) the weight sync is a
circuit-allocation problem: the training nodes hold the new weights in equal shards (ZeRO/FSDP
over the training GPUs), and every node running generation pulls from each training node the
shard it lacks, W / T bytes (W the actor's bf16 weights, T the training nodes). That is RFabric's
Phase A demand between node endpoints (OrchestrRL App. E.1: shards from their holders); what it
leaves inside a node is the fan-out over NVLink.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from costmodels.circuits.fabric import DemandSpec
from costmodels.circuits.problem import CircuitProblem
from costmodels.errors import SpecError
from costmodels.generation.request_traces import TraceParams
from costmodels.job.problem import JobProblem
from costmodels.memory import GB
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.transfer import full_weights_gb
from costmodels.response_lengths import ResponseLengths
from costmodels.rollout.problem import JobSpec, RolloutProblem
from costmodels.rollout.replay import rollout_tps
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING

#: steps of the epoch the rollout judge replays for a job: enough for tail batching's short and
#: long rounds to alternate, few enough to keep a job plan within a minute
EPOCH_STEPS = 4
_PROMPT_SHARE = TraceParams().sigma_prompt / math.hypot(
    TraceParams().sigma_prompt, TraceParams().sigma_response
)


def lognormal_of(lengths: ResponseLengths, cap: int) -> tuple[float, float]:
    """(median, sigma) of the lognormal a distribution enters the rollout job as (module doc)."""
    if lengths.distribution == "lognormal":
        return float(lengths.median or 0.0), float(lengths.sigma)
    values = np.array([min(v, cap) for v, _ in lengths.bins or ()], dtype=float)
    weights = np.array([c for _, c in lengths.bins or ()], dtype=float)
    order = np.argsort(values)
    values, weights = np.maximum(values[order], 1.0), weights[order]
    cdf = np.cumsum(weights) / weights.sum()
    median = float(values[np.searchsorted(cdf, 0.5)])
    logs = np.log(values)
    mean = float(np.average(logs, weights=weights))
    sigma = float(np.sqrt(np.average((logs - mean) ** 2, weights=weights)))
    return median, sigma


def trace_params(problem: JobProblem) -> TraceParams:
    """The group-aware length model the job's responses enter the simulators as (module doc):
    the lognormal's sigma split between prompts and responses, no hard prompts, every prompt
    ``prompt_length`` long."""
    wf = problem.workflow
    median, sigma = lognormal_of(wf.response_lengths, wf.response_length)
    return TraceParams(
        median=min(median, wf.response_length),
        sigma_prompt=sigma * _PROMPT_SHARE,
        sigma_response=sigma * math.sqrt(1 - _PROMPT_SHARE**2),
        p_hard=0.0,
        prompt_median=wf.prompt_length,
        prompt_sigma=0.0,
    )


@dataclass(frozen=True)
class ReplanSetting:
    """The generation pool a job's placement leaves, as OrchestrRL re-plans one (§4.1: one GPU
    type, whole nodes, TP within a node, no pipeline stages): ``nodes`` x ``gpus_per_node``
    GPUs of ``gpu`` serving ``model`` at uniform TP ``tp``; a step is ``prompts`` x
    ``responses`` requests of ``lengths`` cut at ``cap`` tokens."""

    model: str
    gpu: str
    nodes: int
    gpus_per_node: int
    tp: int
    prompts: int
    responses: int
    cap: int
    lengths: TraceParams


def replan_setting(problem: JobProblem, plan: PlacementPlan) -> tuple[ReplanSetting | None, str]:
    """The generation pool to re-plan under ``plan`` (:class:`ReplanSetting`), or None with the
    reason there is none. A "node" is the largest group of generation GPUs per server that
    divides every server's share (the smallest server's, as for the rollout problem)."""
    wf = problem.workflow
    if wf.response_lengths.is_constant:
        return None, "constant response lengths leave no tail to re-plan around"
    gen = plan.task(ACTOR_GENERATION)
    if gen.pp != 1:
        return None, f"generation runs {gen.pp} pipeline stages; OrchestrRL re-plans TP only"
    devices = _task_devices(problem, plan, ACTOR_GENERATION)
    types = {d.gpu.name for d in devices}
    if len(types) != 1:
        return None, f"generation spans GPU types {sorted(types)}; OrchestrRL re-plans one"
    share: dict[str, int] = {}
    for d in devices:
        share[d.node] = share.get(d.node, 0) + 1
    per_node = math.gcd(*share.values())
    if gen.tp > per_node or per_node % gen.tp:
        return None, f"generation's TP{gen.tp} spans servers; OrchestrRL re-plans within one"
    return (
        ReplanSetting(
            model=wf.models.actor,
            gpu=devices[0].gpu.name,
            nodes=len(devices) // per_node,
            gpus_per_node=per_node,
            tp=gen.tp,
            prompts=wf.global_batch,
            responses=wf.responses_per_prompt,
            cap=wf.response_length,
            lengths=trace_params(problem),
        ),
        "",
    )


def weight_sync_circuits(
    problem: JobProblem, plan: PlacementPlan
) -> tuple[CircuitProblem | None, str]:
    """The circuit-allocation problem of ``plan``'s weight sync on the job's fabric (module doc),
    or None with the reason there is none."""
    if problem.fabric is None:
        return None, "the cluster has no optical fabric (give one with --fabric)"
    train, gen = (
        sorted({d.node for d in _task_devices(problem, plan, t)})
        for t in (ACTOR_TRAINING, ACTOR_GENERATION)
    )
    share = full_weights_gb(problem.placement) * GB / len(train)
    endpoints = {ep.name for ep in problem.fabric.endpoints}
    rows = [{"src": t, "dst": g, "bytes": share} for g in gen for t in train if t != g]
    if not rows:
        return None, "the weights never leave a node: training and generation share one"
    missing = sorted({n for r in rows for n in (r["src"], r["dst"])} - endpoints)
    if missing:
        return None, f"nodes {missing} are not on the fabric"
    return CircuitProblem(problem.fabric, DemandSpec(entries=rows)), ""


def no_rollout_reason(problem: JobProblem, plan: PlacementPlan) -> str | None:
    """Why the job has no rollout knobs to choose under ``plan`` (None when it has)."""
    wf = problem.workflow
    if wf.algorithm != "grpo":
        return "RollPacker's knobs are for GRPO (this job runs PPO)"
    if wf.mode != "sync":
        return f"mode {wf.mode} already overlaps generation's tail with training"
    if wf.response_lengths.is_constant:
        return "constant response lengths leave no long tail to pack"
    gen = plan.task(ACTOR_GENERATION)
    if gen.pp != 1:
        return f"generation runs {gen.pp} pipeline stages; RollPacker's engine runs TP only"
    types = {d.gpu.name for d in _task_devices(problem, plan, ACTOR_GENERATION)}
    if len(types) != 1:
        return f"generation spans GPU types {sorted(types)}; RollPacker plans one"
    return None


def _task_devices(problem: JobProblem, plan: PlacementPlan, task: str) -> list:
    by_id = {d.id: d for d in problem.placement.topology.devices}
    t = plan.task(task)
    return [by_id[g] for replica in t.devices for stage in replica for g in stage]


def rollout_problem(problem: JobProblem, plan: PlacementPlan) -> tuple[RolloutProblem | None, str]:
    """The rollout problem ``plan`` leaves (module doc), or None with the reason there is none."""
    reason = no_rollout_reason(problem, plan)
    if reason is not None:
        return None, reason
    wf = problem.workflow
    devices = _task_devices(problem, plan, ACTOR_GENERATION)
    gen, train = plan.task(ACTOR_GENERATION), plan.task(ACTOR_TRAINING)
    node_size = {}
    for d in problem.placement.topology.devices:
        node_size[d.node] = node_size.get(d.node, 0) + 1
    per_node = min(node_size[d.node] for d in devices)
    gpus = len(devices)
    if gpus > per_node and gpus % per_node:
        per_node = math.gcd(gpus, per_node)
    lengths = trace_params(problem)
    eff = problem.placement.params.efficiency
    workload = {
        "model": wf.models.actor,
        "gpu": devices[0].gpu.name,
        "gpus": gpus,
        "gpus_per_node": per_node,
        "tp": gen.tp,
        "prompts_per_step": wf.global_batch,
        "responses_per_prompt": wf.responses_per_prompt,
        "max_response": wf.response_length,
        "dataset_prompts": EPOCH_STEPS * wf.global_batch,
        "lengths": {
            "median": lengths.median,
            "sigma_prompt": lengths.sigma_prompt,
            "sigma_response": lengths.sigma_response,
            "p_hard": lengths.p_hard,
            "prompt_median": lengths.prompt_median,
            "prompt_sigma": lengths.prompt_sigma,
        },
        "reward": {"rule": 1.0, "sandbox": 0.0, "judge": 0.0},
        # the rollout judge charges one forward pass before training or none: the workflow's
        # reference pass or its old log-prob recompute (both: one, the rollout judge's limit)
        "training": {
            "replica_gpus": min(gpus, train.tp * train.pp),
            "log_prob_pass": bool(wf.reference_pass or wf.old_log_prob_pass),
        },
        "kernels": eff.kernels,
        "profiles": eff.profiles,
    }
    if eff.engine in ("cuda-graph", "eager"):
        workload["engine"] = eff.engine
    try:
        job = JobSpec.model_validate({"workload": workload, "seed": 0})
        job.check()
    except (SpecError, ValueError) as exc:
        return None, f"the derived rollout job is refused: {exc}"
    if gen.tp not in rollout_tps(job.workload):
        return None, (
            f"the rollout engine cannot run generation's TP{gen.tp} with a maximal response"
        )
    # one rollout problem per derived job, so its simulated epochs (cached on it) serve the
    # solver's search, the judge and the validator alike
    cache: dict[str, RolloutProblem] = problem.__dict__.setdefault("_rollout_problems", {})
    return cache.setdefault(job.model_dump_json(), RolloutProblem(job)), ""
