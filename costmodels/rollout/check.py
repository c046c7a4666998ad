"""The independent validator of rollout plans (RollPacker §3-§4): TP groups inside a server with KV
room, speculation the dataset can feed, a scale-down that frees whole replicas, the adaptive
timeout's expected signal loss, an LLM judge that fits beside rollout (§4.3) and freed GPUs that
hold the training state (§4.4)."""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from typing import Any

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance
from costmodels.memory import GB, OPTIMIZER_BYTES_PER_PARAM, WEIGHT_GRAD_BYTES_PER_PARAM
from costmodels.rollout.plan import RolloutPlan
from costmodels.rollout.replay import rollout_tps
from costmodels.rollout.reward import adaptive_timeout, sandbox_times
from costmodels.rollout.rounds import launch_count
from costmodels.rollout.workload import PromptPool, RolloutWorkload
from costmodels.transformer import BYTES_BF16, total_params
from costmodels.violations import Violation


def expected_cut_share(workload: RolloutWorkload, plan: RolloutPlan, seed: int) -> float:
    """The expected share of finishing sandbox responses an adaptive timeout cuts, in closed form:
    the mean over sandbox prompts of P(a_p e^ε > T_p) = 1 − Φ(ln(T_p / a_p) / σ)."""
    return _cut_share(workload, plan.timeout_lambda, seed) if plan.timeout == "adaptive" else 0.0


@functools.lru_cache(maxsize=64)
def _cut_share(workload: RolloutWorkload, lam: float, seed: int) -> float:
    """``expected_cut_share`` for one λ: it depends on nothing else of the plan, and the validator
    asks it of every plan a search tries."""
    pool = PromptPool(workload, seed)
    sb = workload.reward.sandbox_worker
    shares = []
    for p in range(pool.size):
        if pool.reward_kind(p) != "sandbox":
            continue
        ref, _ = sandbox_times(pool, p, 0, 0)
        limit = adaptive_timeout(ref, lam, sb.min_timeout_s, sb.max_timeout_s)
        if sb.response_sigma == 0:
            shares.append(float(ref > limit))
        else:
            shares.append(1.0 - NormalDist().cdf(math.log(limit / ref) / sb.response_sigma))
    return sum(shares) / len(shares) if shares else 0.0


def judge_memory_violations(wl: RolloutWorkload, plan: RolloutPlan) -> list[Violation]:
    """Whether the LLM judge fits where the plan runs it (RollPacker §4.3, ``reward`` module doc).

    Asynchronous reward co-locates one judge per server with rollout: ``(1 - offload_fraction)``
    of its BF16 weights stay on one GPU of the server, beside that GPU's share of a rollout
    instance (its weights / TP), and that instance must still hold the KV cache of one longest
    request (:func:`rollout_tps`'s admission floor), which TP spreads evenly, so the GPU holding
    the judge is the one that binds. Synchronous reward loads the whole judge on every rollout GPU
    after rollout (the data-parallel judge ``reward._judge`` costs), so its weights must fit in what
    the serving engine may use of one GPU."""
    if wl.reward.judge <= 0:
        return []
    js = wl.reward.judge_worker
    model, gpu = get_model(wl.model), get_gpu(wl.gpu)
    judge_gb = BYTES_BF16 * total_params(get_model(js.model)) / GB
    out = []
    if plan.reward == "sync":
        inst = Instance(model, gpu, plan.short_tp)
        usable = gpu.memory_gb * inst.params.memory_utilization - inst.params.activation_reserve_gb
        if judge_gb > usable:
            out.append(
                Violation(
                    "judge-memory",
                    f"judge {js.model} needs {judge_gb:.1f} GB of weights on every rollout GPU "
                    f"(synchronous reward); a {gpu.name} has {usable:.1f} GB for the engine",
                )
            )
        return out
    resident = (1 - js.offload_fraction) * judge_gb
    need_tokens = math.ceil(wl.lengths.prompt_median * 4 + wl.max_response)
    for tp in sorted({plan.short_tp, plan.long_tp}):
        inst = Instance(model, gpu, tp)
        usable = gpu.memory_gb * inst.params.memory_utilization - inst.params.activation_reserve_gb
        kv = need_tokens * inst.kv_gb_per_token() / tp
        need = resident + inst.weights_gb_per_gpu() + kv
        if need > usable + 1e-9:
            out.append(
                Violation(
                    "judge-memory",
                    f"judge {js.model} co-located with TP{tp} rollout: {resident:.1f} GB of its "
                    f"weights ({1 - js.offload_fraction:.0%} resident) + "
                    f"{inst.weights_gb_per_gpu():.1f} GB of {wl.model} + {kv:.1f} GB of KV for "
                    f"one {need_tokens}-token request = {need:.1f} GB on one {gpu.name}, which "
                    f"has {usable:.1f} GB for the engine",
                )
            )
    return out


def freed_instances(wl: RolloutWorkload, plan: RolloutPlan, tp: int) -> int:
    """TP-``tp`` rollout instances the stream trainer frees: ⌊scale_fraction · n⌋ of n."""
    return math.floor(plan.scale_fraction * (wl.gpus // tp))


def stream_trainer_memory_violations(wl: RolloutWorkload, plan: RolloutPlan) -> list[Violation]:
    """Whether the GPUs the stream trainer frees can hold the training state (RollPacker §4.4:
    they train while rollout runs, so they hold a replica's weights, gradients and optimizer
    states). With the freed GPUs F rounded down to whole replicas of R GPUs and P parameters:

        P · 6 B / R + P · 12 B / F  ≤  one GPU's memory

    BF16 weights and FP32 gradients spread over the replica's GPUs, the FP32 master weights and
    Adam moments over all F (the distributed optimizer; ``costmodels.memory``). Spreading the
    weights over the whole replica (context-parallel ranks hold full layers) makes this the least
    any split needs: a plan that fails it cannot train there."""
    if plan.scale == "off":
        return []
    params = total_params(get_model(wl.model))
    gpu = get_gpu(wl.gpu)
    replica = wl.training.replica_gpus
    out = []
    for tp in sorted({plan.short_tp, plan.long_tp}):
        usable = (freed_instances(wl, plan, tp) * tp // replica) * replica
        if usable == 0:
            continue  # the scale-replica rule says so
        need = (
            params * WEIGHT_GRAD_BYTES_PER_PARAM / replica
            + params * OPTIMIZER_BYTES_PER_PARAM / usable
        ) / GB
        if need > gpu.memory_gb + 1e-9:
            out.append(
                Violation(
                    "scale-train-memory",
                    f"the stream trainer's {usable} freed GPUs (TP{tp} rollout) hold {wl.model}'s "
                    f"training state: {need:.1f} GB per GPU (weights and gradients over a "
                    f"{replica}-GPU replica, optimizer states over all {usable}); a {gpu.name} "
                    f"has {gpu.memory_gb:g} GB",
                )
            )
    return out


def check_rollout(problem: Any, plan: RolloutPlan) -> list[Violation]:
    """Independent validator: TP groups inside a server with KV room, speculation the dataset can
    feed, a scale-down that frees whole replicas and leaves rollout some, the timeout's signal
    loss within the workload's bound, an LLM judge that fits beside rollout
    (:func:`judge_memory_violations`) and freed GPUs that hold the training state
    (:func:`stream_trainer_memory_violations`)."""
    wl: RolloutWorkload = problem.workload
    out: list[Violation] = judge_memory_violations(wl, plan)
    out += stream_trainer_memory_violations(wl, plan)
    allowed = rollout_tps(wl)
    for name in ("short_tp", "long_tp"):
        tp = getattr(plan, name)
        if tp not in allowed:
            out.append(
                Violation(
                    "tp-in-server",
                    f"{name}={tp}: {wl.model} on {wl.gpu} can use TP {allowed} "
                    f"({wl.gpus} GPUs, {wl.gpus_per_node} per server, KV for a "
                    f"{wl.max_response}-token response)",
                )
            )
    if plan.tp_rule != "fixed" and plan.long_tp != plan.short_tp:
        out.append(
            Violation(
                "adaptive-tp",
                f"the adaptive rule sets every round's TP from short_tp={plan.short_tp}; long_tp "
                f"must equal it, got {plan.long_tp}",
            )
        )
    launch = launch_count(plan.eta_prompts, wl.prompts_per_step)
    if launch > wl.dataset_prompts:
        out.append(
            Violation(
                "speculation",
                f"η_P={plan.eta_prompts} launches {launch} prompts; the dataset holds "
                f"{wl.dataset_prompts}",
            )
        )
    if plan.scale != "off":
        for tp in sorted({plan.short_tp, plan.long_tp}):
            n, k = wl.gpus // tp, freed_instances(wl, plan, tp)
            if k == 0 or k == n or k * tp < wl.training.replica_gpus:
                out.append(
                    Violation(
                        "scale-replica",
                        f"freeing {plan.scale_fraction:g} of {n} TP{tp} instances frees {k * tp} "
                        "GPUs; "
                        f"it must free at least one training replica ({wl.training.replica_gpus} "
                        "GPUs) and keep one instance",
                    )
                )
    if plan.timeout == "adaptive":
        cut = expected_cut_share(wl, plan, problem.seed)
        bound = wl.reward.sandbox_worker.max_cut_share
        if cut > bound + 1e-12:
            out.append(
                Violation(
                    "timeout-signal",
                    f"timeout λ={plan.timeout_lambda:g} cuts {cut:.2%} of finishing sandbox "
                    "responses; "
                    f"the workload allows {bound:.2%} (reward.sandbox_worker.max_cut_share)",
                )
            )
    return out
