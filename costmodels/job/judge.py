"""The job's step (``costmodels.job``'s module doc): the placement judge's, with generation scaled
by what the rollout knobs change.

For a synchronous job (the only kind with knobs, ``costmodels.job.derive``) the placement step is
generation + inference + training + weight transfer (HetRL Appendix B.4). With knobs K on the
derived rollout problem, whose baseline B is veRL's synchronous rollout at the placement's
generation TP (``costmodels.rollout.space.verl_plan``):

    r = rollout_K / rollout_B,      step = step_placement - gen + r gen,

where rollout_X is the rollout judge's mean rollout seconds per trained step under X (speculative
rounds included). Why a ratio: the two judges' generation agree to 0.3% on the same lengths and
plan and their training is one model (1.2%, ``benchmarks/results/one-job``), but only the
rollout judge has a reward stage, and the placement judge's whole step is the one held to
measured runs (``costmodels.step_error``). So the knobs are credited for what they do to
generation only: the stream trainer's overlap with the tail and asynchronous reward are not (the
placement workflow has no reward stage), a conservative reading.

The knobs count only where the target framework runs them (:data:`RUNS_KNOBS`): the plan records
them either way, and the breakdown says what they would be worth.
"""

from __future__ import annotations

from typing import Any

from costmodels.circuits.judge import evaluate_circuits
from costmodels.job.derive import replan_setting, rollout_problem, weight_sync_circuits
from costmodels.job.plan import JobPlan
from costmodels.job.problem import JobProblem
from costmodels.placement.judge import evaluate_placement
from costmodels.rollout.judge import evaluate_rollout
from costmodels.rollout.space import verl_plan

#: frameworks whose rollout runs RollPacker's knobs. None: rlplan's whole space. roll: the
#: RollPacker artifact is a ROLL fork (``Farrrrland/RollPacker``) and its knobs are ROLL settings
#: (``max_prompts_ratio``, ``max_num_return_sequences``, ``multi_infer_tp``). verl's rollout has
#: no tail batching or stream trainer (its published configs, ``docs/placement.md``).
RUNS_KNOBS = (None, "roll")


def rollout_effect(problem: JobProblem, plan: JobPlan) -> dict[str, Any]:
    """What ``plan.rollout`` changes on the rollout judge (module doc): the baseline's and the
    knobs' rollout seconds per step and their ratio, and whether the target runs them."""
    rp, why = rollout_problem(problem, plan.placement)
    if rp is None or plan.rollout is None:
        return {"knobs": None, "why": why or "no knobs chosen", "ratio": 1.0, "applied": False}
    base = verl_plan(rp.workload)  # at the placement's TP: derive admits only a TP it allows
    _, b = evaluate_rollout(rp, base)
    _, k = evaluate_rollout(rp, plan.rollout)
    ratio = k["rollout_s"] / b["rollout_s"] if b["rollout_s"] > 0 else 1.0
    applied = problem.framework in RUNS_KNOBS
    return {
        "knobs": plan.rollout.model_dump(),
        "why": "" if applied else f"{problem.framework} does not run RollPacker's knobs",
        "baseline_rollout_s": b["rollout_s"],
        "knobs_rollout_s": k["rollout_s"],
        "ratio": ratio,
        "applied": applied,
        "rollout_judge_step_s": {"baseline": b["step_s_by_kind"], "knobs": k["step_s_by_kind"]},
    }


def replan_effect(problem: JobProblem, plan: JobPlan) -> dict[str, Any]:
    """The re-planning advice as the breakdown reports it: never credited to the step
    (``costmodels.job.plan.ReplanAdvice``: no framework rlplan exports to runs it)."""
    if plan.replan is None:
        _, why = replan_setting(problem, plan.placement)
        return {"advice": None, "why": why or "no advice in the plan", "applied": False}
    return {
        "advice": plan.replan.model_dump(),
        "why": "no framework rlplan exports to runs OrchestrRL's planner: advice only",
        "applied": False,
    }


def circuits_effect(problem: JobProblem, plan: JobPlan) -> dict[str, Any]:
    """The weight sync over the plan's OCS circuits (RFabric, Eq. 7's bottleneck pair time),
    beside the placement judge's weight sync over the cluster's network. Reported, not credited:
    the placement judge's term is the one held to measured steps, and the two differ in what they
    model (the fan-out inside nodes is the placement judge's only)."""
    cp, why = weight_sync_circuits(problem, plan.placement)
    if cp is None or plan.circuits is None:
        return {"circuits": None, "why": why or "no circuits chosen", "applied": False}
    seconds, b = evaluate_circuits(cp, plan.circuits)
    return {
        "circuits": len(plan.circuits.circuits),
        "bottleneck_s": seconds,
        "uncovered_pairs": b["uncovered_pairs"],
        "demand_gb": sum(e.bytes for e in cp.demand.entries) / 1e9,
        "why": "reported beside the placement judge's weight sync, not credited",
        "applied": False,
    }


def evaluate_job(problem: JobProblem, plan: JobPlan) -> tuple[float, dict[str, Any]]:
    """Predicted seconds per RL step of the whole plan (module doc) and its breakdown: the
    placement judge's, the rollout knobs' effect, and the composed phases."""
    ev = evaluate_placement(problem.placement, plan.placement)
    effect = rollout_effect(problem, plan)
    gen = ev.breakdown["phases"]["generation_s"]
    scaled = gen * effect["ratio"] if effect["applied"] else gen
    total = ev.objective - gen + scaled
    return total, {
        "iteration_time_s": total,
        "placement_step_s": ev.objective,
        "generation_s": scaled,
        "phases": {**ev.breakdown["phases"], "generation_s": scaled},
        "rollout": effect,
        "replan": replan_effect(problem, plan),
        "circuits": circuits_effect(problem, plan),
        "placement": ev.breakdown,
        "expected_error": ev.breakdown["expected_error"],
    }
