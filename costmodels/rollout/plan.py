"""A rollout plan (RollPacker §3-§4) and its judge: replay the plan on the generation simulator for
one epoch and time every step.

**The plan** is RollPacker's knobs:

======================  ==========================================================================
``eta_prompts`` η_P      short rounds launch ⌈η_P P0⌉ prompts (ROLL: ``max_prompts_ratio``)
``eta_responses`` η_R    ... with ⌈η_R R0⌉ responses each (ROLL: ``max_num_return_sequences``)
``short_tp``, ``long_tp``  rollout TP of short and long rounds (fixed per round type)
``tp_rule``              ``fixed`` (a static second TP for long rounds is the artifact's
                         ``multi_infer_tp``), ``adaptive`` (the §4.2 preemption rule from
                         ``short_tp``) or ``guarded`` (the rule, applied only when the round time
                         projected at the new TP improves)
``race``                 ``scored`` (a prompt is done when R0 responses are scored, the
                         artifact's, under async reward) or ``generated``
``reward``               ``sync`` (score after rollout) or ``async`` (score as responses complete)
``timeout``              sandbox timeout ``fixed`` (T_max) or ``adaptive`` with ``timeout_lambda``
``scale``                stream trainer: ``off``, ``adaptive`` (milestones 20-50% + KV check) or
                         ``fixed`` at ``scale_at``; frees ``scale_fraction`` of the instances
``fetch``                ``stream`` (train on prompts as they are ready) or ``once`` (Table 4's
                         baseline as the artifact runs it: after rollout, the first ``fetch_cap``
                         of the prompts on the freed GPUs, then the rest on all)
======================  ==========================================================================

**The objective** is the mean step time: one epoch's wall-clock time over the steps it trains,
(Σ_k S_k) · P0 / |dataset|, so a plan that trains the dataset in fewer seconds wins whatever the
mix of short and long rounds. Step k (one round) takes

    S_k = C_k + T_k + U                      C_k: TP switch before the round, U: the update
    T_k = the last gradient's time: rollout R_k, then the reward stage, then training

where rewards come from ``costmodels.rollout.reward`` (sync: all submitted at R_k; async: each at
its completion, and in a short round racing on scores inside R_k) and training from the fluid of
``costmodels.rollout.stream``. Training overlaps the reward tail only through the stream trainer
(§4.4): without it the batch trains once all of it is scored (veRL after its reward stage; the
artifact's ``get_batch`` returns when every kept prompt is scored); with it (and asynchronous
reward) a group trains once its own scores are in. The
breakdown splits S_k into rollout (R_k), the exposed reward (max(0, reward end − R_k)), the
exposed training (the rest), the TP switch, and reports the rollout's idle GPU-seconds (bubbles)
and the training done under rollout.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance, feasible_tps
from costmodels.memory import GB, OPTIMIZER_BYTES_PER_PARAM, WEIGHT_GRAD_BYTES_PER_PARAM
from costmodels.rollout.reward import InlineScoring, adaptive_timeout, sandbox_times, score
from costmodels.rollout.rounds import EpochResult, RoundResult, launch_count, simulate_epoch
from costmodels.rollout.stream import PAPER_MILESTONES, ScaleRule, train_finish
from costmodels.rollout.workload import PromptPool, RolloutWorkload
from costmodels.transformer import BYTES_BF16, total_params
from costmodels.violations import Violation

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class RolloutPlan(BaseModel):
    """RollPacker's knobs for one job (module doc)."""

    model_config = _STRICT

    eta_prompts: float = Field(
        default=1.0, ge=1, le=4, description="η_P: prompt speculation factor"
    )
    eta_responses: float = Field(
        default=1.0, ge=1, le=4, description="η_R: response speculation factor"
    )
    short_tp: int = Field(
        gt=0, description="rollout TP of short (and plain) rounds; the start of the adaptive rule"
    )
    long_tp: int = Field(gt=0, description="rollout TP of long rounds")
    tp_rule: Literal["fixed", "adaptive", "guarded"] = "fixed"
    reward: Literal["sync", "async"] = "sync"
    race: Literal["scored", "generated"] = Field(
        default="scored",
        description="a short round's prompt is done when R0 responses are scored (the artifact, "
        "under async reward) or when they finish generating",
    )
    timeout: Literal["fixed", "adaptive"] = "fixed"
    timeout_lambda: float = Field(
        default=1.5, ge=1, le=100, description="λ of the adaptive timeout"
    )
    scale: Literal["off", "adaptive", "fixed"] = "off"
    scale_at: float = Field(
        default=0.4, gt=0, lt=1, description="completion share a fixed trigger scales at"
    )
    scale_fraction: float = Field(
        default=0.5, gt=0, lt=1, description="share of rollout instances the stream trainer frees"
    )
    fetch: Literal["stream", "once"] = "stream"
    fetch_cap: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="fetch-once: share of the round's prompts trained on the freed GPUs first",
    )

    def rollout_key(self) -> tuple[Any, ...]:
        """The knobs the rollout simulation depends on (the rest only re-time reward and
        training)."""
        scale = (
            self.scale,
            self.scale_at if self.scale == "fixed" else None,
            self.scale_fraction if self.scale != "off" else None,
        )
        tps = (self.short_tp,) if self.tp_rule != "fixed" else (self.short_tp, self.long_tp)
        # scored inline, the reward knobs time the race itself
        inline = (
            (self.timeout, self.timeout_lambda if self.timeout == "adaptive" else None)
            if self.scores_inline()
            else None
        )
        return (self.eta_prompts, self.eta_responses, self.tp_rule, tps, scale, inline)

    def scores_inline(self) -> bool:
        """Whether short rounds race on scored responses (``race: scored`` under asynchronous
        reward with speculation; ``costmodels.rollout.rounds``)."""
        speculative = self.eta_prompts > 1 or self.eta_responses > 1
        return speculative and self.reward == "async" and self.race == "scored"


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
    scores; long rounds' reward and all training are timed by :func:`step_times`)."""
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


def train_gpu_seconds(workload: RolloutWorkload, tokens: float) -> float:
    """GPU-seconds to train on ``tokens`` tokens (TrainingSpec doc)."""
    return workload.training.profile().compute_s(workload.model, workload.gpu, 1, tokens)


def step_times(
    workload: RolloutWorkload, pool: PromptPool, plan: RolloutPlan, r: RoundResult
) -> dict[str, Any]:
    """Time one step (module doc) from its simulated round."""
    G = workload.gpus
    attempt = 1 if r.kind == "long" else 0
    rew = r.rewards or score(
        pool,
        r.responses,
        rollout_end=r.time_s,
        gpus=G,
        asynchronous=plan.reward == "async",
        adaptive=plan.timeout == "adaptive",
        lam=plan.timeout_lambda,
        attempts={p: attempt for p in r.kept},
    )
    tokens: dict[int, float] = {}
    for p, _, out in r.responses:
        tokens[p] = tokens.get(p, 0) + pool.prompt_length(p) + out
    replica = workload.training.replica_gpus
    usable = (r.scale.freed_gpus // replica) * replica
    # the batch goes to training when all of it is scored (the artifact's get_batch returns
    # then); only the stream trainer trains a group as soon as its scores are in (§4.4), on the
    # GPUs it freed while rollout runs, then on every GPU through the reward tail
    streaming = plan.reward == "async" and plan.scale != "off"
    batch_ready = max(rew.end_s, r.time_s)
    ready = rew.group_ready() if streaming else dict.fromkeys(tokens, batch_ready)
    work = [(ready[p], train_gpu_seconds(workload, tokens[p])) for p in tokens]
    cap = plan.fetch_cap if plan.fetch == "once" else None
    end, overlapped = train_finish(
        work, gpus=G, freed_gpus=usable, scale_at=r.scale.time, rollout_end=r.time_s, fetch_cap=cap
    )
    reward_exposed = max(0.0, rew.end_s - r.time_s)
    update = workload.update_s()
    step = r.reconfig_s + end + update
    return {
        "kind": r.kind,
        "tp": r.tp,
        "step_s": step,
        "rollout_s": r.time_s,
        "reward_s": reward_exposed,
        "train_s": end - max(r.time_s, rew.end_s) + update,
        "reconfig_s": r.reconfig_s,
        "train_overlapped_s": overlapped / G,
        "bubble_s": r.idle_gpu_s / G,
        "idle_gpu_s": r.idle_gpu_s,
        "train_total_s": sum(w for _, w in work) / G,
        "max_response": r.max_response,
        "preemptions": r.preemptions,
        "timeouts": rew.timeouts,
        "cut_finishing": rew.cut_finishing,
        "scaled_at_s": r.scale.time,
        "freed_gpus": r.scale.freed_gpus,
        "prompts": len(r.kept),
        "launched": len(r.launched),
    }


def evaluate_rollout(problem: Any, plan: RolloutPlan) -> tuple[float, dict[str, Any]]:
    """Objective: mean step time (module doc); breakdown: means per component and every step."""
    wl: RolloutWorkload = problem.workload
    epoch = problem.epoch(plan)
    pool = PromptPool(wl, problem.seed)
    steps = [step_times(wl, pool, plan, r) for r in epoch.rounds]
    steps_trained = wl.dataset_prompts / wl.prompts_per_step
    total = sum(s["step_s"] for s in steps)
    objective = total / steps_trained

    def mean(key: str, kind: str | None = None) -> float:
        vals = [s[key] for s in steps if kind is None or s["kind"] == kind]
        return sum(vals) / len(vals) if vals else 0.0

    per = {
        k: sum(s[k] for s in steps) / steps_trained
        for k in (
            "rollout_s",
            "reward_s",
            "train_s",
            "reconfig_s",
            "bubble_s",
            "train_overlapped_s",
        )
    }
    kinds = sorted({s["kind"] for s in steps})
    return objective, {
        **per,
        "steps": steps,
        "rounds": len(steps),
        "epoch_s": total,
        "step_s_by_kind": {k: mean("step_s", k) for k in kinds},
        "rollout_s_by_kind": {k: mean("rollout_s", k) for k in kinds},
        "max_response_by_kind": {
            k: max(s["max_response"] for s in steps if s["kind"] == k) for k in kinds
        },
        "timeouts": sum(s["timeouts"] for s in steps),
        "cut_finishing": sum(s["cut_finishing"] for s in steps),
        "preemptions": sum(s["preemptions"] for s in steps),
        "scaled_rounds": sum(s["scaled_at_s"] is not None for s in steps),
        "lost": len(epoch.lost(wl.dataset_prompts)),
        "repeated": len(epoch.repeated()),
    }


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
