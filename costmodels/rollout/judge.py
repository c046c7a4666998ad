"""The judge of a rollout plan (RollPacker §3-§4): replay the plan on the generation simulator
for one epoch (``costmodels.rollout.replay``) and time every step.

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

from typing import Any

from costmodels.rollout.plan import RolloutPlan
from costmodels.rollout.reward import score
from costmodels.rollout.rounds import RoundResult
from costmodels.rollout.stream import train_finish
from costmodels.rollout.workload import PromptPool, RolloutWorkload
from costmodels.step_error import expected_error


def train_gpu_seconds(workload: RolloutWorkload, pool: PromptPool, tokens: float) -> float:
    """GPU-seconds to train on ``tokens`` tokens: the training model's rate per token on the
    job's GPUs at the epoch's own lengths (TrainingSpec doc, ``costmodels.rl_training``)."""
    wl = workload
    seconds = wl.training.profile().compute_s(
        wl.model,
        wl.gpu,
        wl.gpus,
        tokens,
        pool.batch_shape,
        wl.gpus_per_node,
        wl.training.replica_gpus,
        wl.serving(),
    )
    return seconds * wl.gpus


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
    rate = train_gpu_seconds(workload, pool, 1.0)  # linear in tokens: one rate per step
    work = [(ready[p], rate * tokens[p]) for p in tokens]
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
        # how far to trust the step (``costmodels.step_error``): None until measured
        "expected_error": expected_error("step", judge="rollout"),
    }
