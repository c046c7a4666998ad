"""What ``rlplan plan rollout`` prints (the plan's knobs and its step time per round kind) and the
plan as RollPacker's ROLL-based configuration."""

from __future__ import annotations

from typing import Any

from costmodels import step_error
from costmodels.efficiency import kernels_phrase
from costmodels.problem import SolvedPlan, Summary
from costmodels.rollout.plan import RolloutPlan
from costmodels.rollout.problem import RolloutProblem
from costmodels.rollout.rounds import launch_count


def knobs_line(plan: RolloutPlan) -> str:
    tp = {
        "adaptive": f"TP {plan.short_tp} from the adaptive rule",
        "guarded": f"TP {plan.short_tp} from the adaptive rule with the latency guard",
    }.get(plan.tp_rule, f"TP {plan.short_tp} short / {plan.long_tp} long")
    timeout = (
        f"adaptive timeout λ={plan.timeout_lambda:g}"
        if plan.timeout == "adaptive"
        else "fixed timeout"
    )
    if plan.scale == "off":
        scale = "no stream trainer"
    else:
        when = "adaptive milestones" if plan.scale == "adaptive" else f"at {plan.scale_at:.0%}"
        fetch = "streaming" if plan.fetch == "stream" else f"fetch once ≤{plan.fetch_cap:.0%}"
        scale = f"stream trainer frees {plan.scale_fraction:.0%} ({when}, {fetch})"
    race = ""
    if plan.eta_prompts > 1 or plan.eta_responses > 1:
        race = ", race on scores" if plan.scores_inline() else ", race on generation"
    return (
        f"η_P={plan.eta_prompts:g} η_R={plan.eta_responses:g}{race}, {tp}, {plan.reward} reward "
        f"with {timeout}, {scale}"
    )


def judge_line(wl: Any) -> str:
    """The kernels, engine and training efficiency the rollout judge costed the job with: a
    calibration's (``--profile``) named as the user's, as the placement summary does."""
    kernels = kernels_phrase(wl.kernels, wl.profiles)
    mfu = wl.training.mfu
    training = (
        f"training at {mfu:.1%} of {wl.gpu} peak (training.mfu)"
        if mfu is not None
        else "training at the judge's efficiency"
    )
    if not wl.training.log_prob_pass:
        training += ", no old log-prob pass"
    return f"{kernels}, engine {wl.engine}; {training}"


def rollout_summary(solved: SolvedPlan[RolloutProblem, RolloutPlan]) -> Summary:
    problem, plan, breakdown = solved.problem, solved.plan, solved.breakdown
    rows = []
    for kind in ("plain", "short", "long"):
        steps = [s for s in breakdown["steps"] if s["kind"] == kind]
        if not steps:
            continue
        n = len(steps)

        def mean(key: str, steps: list[dict[str, Any]] = steps, n: int = n) -> float:
            return sum(s[key] for s in steps) / n

        tps = sorted({s["tp"] for s in steps})
        rows.append(
            (
                kind,
                str(n),
                f"{mean('step_s'):.1f}",
                f"{mean('rollout_s'):.1f}",
                f"{mean('reward_s'):.1f}",
                f"{mean('train_s'):.1f}",
                f"{mean('bubble_s'):.1f}",
                str(max(s["max_response"] for s in steps)),
                "/".join(map(str, tps)),
                f"{sum(s['scaled_at_s'] is not None for s in steps)}/{n}",
            )
        )
    wl = problem.workload
    return Summary(
        title=(
            f"rollout plan by {solved.solver}: {solved.objective:.1f} s per step ({solved.status})"
        ),
        columns=(
            "round",
            "steps",
            "step s",
            "rollout s",
            "reward s",
            "train s",
            "bubble s",
            "max response",
            "TP",
            "scaled",
        ),
        rows=rows,
        caption=(
            f"{knobs_line(plan)}. {wl.model} on {wl.gpus} {wl.gpu}, P0={wl.prompts_per_step} x "
            f"R0={wl.responses_per_prompt}, "
            f"{wl.dataset_prompts} prompts in {breakdown['epoch_s']:.0f} s; every prompt trained "
            "once "
            f"(lost {breakdown['lost']}, repeated {breakdown['repeated']})\n"
            + judge_line(wl)
            + "\n"
            + step_error.describe("step", judge="rollout")
        ),
    )


#: RLVRConfig fields that exist in RollPacker's fork of ROLL and not upstream (a field-set diff of
#: the two sources, tests/data/roll/README.md)
ROLLPACKER_ONLY_KEYS = frozenset({"max_prompts_ratio", "max_num_return_sequences"})
ROLLPACKER_REVISION = "Farrrrland/RollPacker @ 1134217"


def export_roll(problem: RolloutProblem, plan: RolloutPlan) -> dict[str, Any]:
    """The plan as RollPacker's ROLL-based config: the top-level keys its artifact reads where
    they exist (``document``; those only the fork has are named in ``needs_rollpacker_fork``),
    the rest as notes (its fork fixes them in code)."""
    wl = problem.workload
    keys = {
        "rollout_batch_size": wl.prompts_per_step,
        "num_return_sequences_in_group": wl.responses_per_prompt,
        "response_length": wl.max_response,
        "max_prompts_ratio": plan.eta_prompts,
        "max_num_return_sequences": launch_count(plan.eta_responses, wl.responses_per_prompt),
        "actor_infer": {
            "strategy_args": {
                "strategy_name": "vllm",
                "strategy_config": {"tensor_parallel_size": plan.short_tp},
            }
        },
    }
    notes = []
    if plan.tp_rule != "fixed":
        notes.append(
            f"TP: the §4.2 preemption rule from TP {plan.short_tp}"
            + (" with the latency guard" if plan.tp_rule == "guarded" else "")
            + "; RollPacker's fork switches between two configured TP sizes"
        )
    elif plan.long_tp != plan.short_tp:
        notes.append(
            f"TP: long rounds at TP {plan.long_tp} (the fork's second TP size), short rounds at "
            f"TP {plan.short_tp}"
        )
    if plan.reward == "sync":
        notes.append(
            "reward after rollout (synchronous): turn RollPacker's asynchronous reward off"
        )
    elif not plan.scores_inline() and (plan.eta_prompts > 1 or plan.eta_responses > 1):
        notes.append(
            "race on generation: the fork always counts a prompt done when its responses are "
            "scored (report_response scores inline), so it runs this plan with the scored race"
        )
    if plan.timeout == "adaptive":
        notes.append(
            f"sandbox timeout min(max({wl.reward.sandbox_worker.min_timeout_s:g} s, "
            f"{plan.timeout_lambda:g}·reference time), "
            f"{wl.reward.sandbox_worker.max_timeout_s:g} s); the fork hard-codes 2·reference time"
        )
    else:
        notes.append(f"sandbox timeout fixed at {wl.reward.sandbox_worker.max_timeout_s:g} s")
    if plan.scale == "off":
        notes.append("stream trainer off")
    else:
        when = (
            "at the first 20-50% milestone whose projected KV fits"
            if plan.scale == "adaptive"
            else f"at {plan.scale_at:.0%} progress"
        )
        notes.append(
            f"stream trainer: free {plan.scale_fraction:.0%} of rollout ranks {when}; the fork "
            "scales at 40% with half the ranks"
        )
    if wl.training.log_prob_pass:
        notes.append(
            "old log-probs: judged with their forward pass, which the fork's async launcher "
            "skips (SKIP_OLD_LOG_PROBS=True, fake old log-probs); training.log_prob_pass: false "
            "judges the job as the fork runs it"
        )
    else:
        notes.append(
            "old log-probs: judged without their forward pass; run the fork's async launcher "
            "with SKIP_OLD_LOG_PROBS=True (it requires it with autoscaling)"
        )
    fork_only = sorted(k for k in keys if k in ROLLPACKER_ONLY_KEYS)
    comments = [
        "RollPacker's ROLL-based RLVR config from an rlplan rollout plan; top-level RLVRConfig "
        "fields.",
        f"Needs the RollPacker fork ({ROLLPACKER_REVISION}): {', '.join(fork_only)}; upstream "
        "ROLL drops them without a word.",
        *notes,
    ]
    return {
        "framework": "roll (RollPacker fork)",
        "document": keys,
        "comments": comments,
        "needs_rollpacker_fork": fork_only,
        "notes": notes,
    }
