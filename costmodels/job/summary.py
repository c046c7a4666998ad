"""What ``rlplan plan job`` prints: every decision with its effect on the step, and the step with
its expected error (``costmodels.step_error``); and the job plan's framework exports."""

from __future__ import annotations

from typing import Any

from costmodels import step_error
from costmodels.job.derive import rollout_problem
from costmodels.job.plan import JobPlan
from costmodels.job.problem import JobProblem
from costmodels.placement.roll_export import export_roll as placement_roll
from costmodels.placement.verl_export import export_verl
from costmodels.problem import SolvedPlan, Summary
from costmodels.rollout.summary import export_roll as rollout_roll
from costmodels.workflow import ACTOR_GENERATION


def _groups(problem: JobProblem, plan: JobPlan) -> str:
    gpu_of = {d.id: d.gpu.name for d in problem.placement.topology.devices}
    parts = []
    for g in plan.placement.groups:
        mix: dict[str, int] = {}
        for d in g.devices:
            mix[gpu_of[d]] = mix.get(gpu_of[d], 0) + 1
        gpus = " + ".join(f"{n} {t}" for t, n in sorted(mix.items()))
        parts.append(f"{', '.join(g.tasks)} on {gpus}")
    return "; ".join(parts)


def _knobs(knobs: dict[str, Any]) -> str:
    text = f"η_P {knobs['eta_prompts']:g}, η_R {knobs['eta_responses']:g}, TP{knobs['short_tp']}"
    if knobs["tp_rule"] != "fixed":
        text += f" ({knobs['tp_rule']} rule)"
    elif knobs["long_tp"] != knobs["short_tp"]:
        text += f", long rounds TP{knobs['long_tp']}"
    return text


def _replan_row(effect: dict[str, Any]) -> tuple[str, str, str]:
    a = effect["advice"]
    if a is None:
        return ("re-planning", "n/a", effect["why"])
    when = "" if a["first_switch_s"] is None else f", first at {a['first_switch_s']:.0f} s"
    choice = f"{a['decision']} (TP{a['start_tp']} start{when})"
    effect_text = f"generation {a['ratio'] - 1:+.1%} if run; advice only"
    if a["best_static_tp"] != a["start_tp"] and a["static_s"] > 0:
        # the simulator found a static TP the placement judge did not: say what it is worth
        gain = a["best_static_s"] / a["static_s"] - 1
        effect_text += f"; static TP{a['best_static_tp']}: {gain:+.1%}"
    return ("re-planning", choice, effect_text)


def _circuits_row(effect: dict[str, Any]) -> tuple[str, str, str]:
    if effect["circuits"] is None:
        return ("OCS circuits", "none", effect["why"])
    text = f"{effect['bottleneck_s']:.2f} s over them ({effect['demand_gb']:.0f} GB); not credited"
    if effect["uncovered_pairs"]:
        text += f"; {effect['uncovered_pairs']} node pairs without one"
    return ("OCS circuits", f"{effect['circuits']} node pairs", text)


def job_summary(solved: SolvedPlan[JobProblem, JobPlan]) -> Summary:
    problem, plan, b = solved.problem, solved.plan, solved.breakdown
    ph, r = b["phases"], b["rollout"]
    gen = plan.placement.task(ACTOR_GENERATION)
    rows = [
        ("placement", _groups(problem, plan), f"{b['placement_step_s']:.1f} s placement step"),
        (
            "generation",
            f"TP{gen.tp} PP{gen.pp} DP{gen.dp}",
            f"{ph['generation_s']:.1f} s",
        ),
    ]
    if r["knobs"] is None:
        rows.append(("rollout knobs", "none", r["why"]))
    else:
        change = r["knobs_rollout_s"] / r["baseline_rollout_s"] - 1
        effect = f"generation {change:+.1%}" + ("" if r["applied"] else f" if run ({r['why']})")
        rows.append(("rollout knobs", _knobs(r["knobs"]), effect))
    rows.append(_replan_row(b["replan"]))
    rows += [
        ("inference", "", f"{ph['inference_s']:.1f} s"),
        (
            "training",
            # actor training's recompute of the old log-probs, when judged, is part of it
            f"old log-prob pass {ph['old_log_prob_s']:.1f} s" if "old_log_prob_s" in ph else "",
            f"{ph['training_s']:.1f} s",
        ),
        ("weight sync", ph["weight_transfer"], f"{ph['weight_transfer_s']:.2f} s"),
        _circuits_row(b["circuits"]),
        ("step", "", f"{solved.objective:.1f} s"),
    ]
    caption = step_error.describe("step", "placement", problem.workflow.mode)
    return Summary(
        title=f"Job plan ({solved.solver}): {solved.status}",
        columns=("decision", "choice", "effect"),
        rows=rows,
        caption=caption,
    )


def job_verl(problem: JobProblem, plan: JobPlan, release: str | None = None) -> dict[str, Any]:
    """verl's config of the placement (verl's rollout runs no RollPacker knobs)."""
    out = (
        export_verl(problem.placement, plan.placement)
        if release is None
        else export_verl(problem.placement, plan.placement, release)
    )
    if plan.rollout is not None:
        out.setdefault("not_expressible", []).append(
            "RollPacker's rollout knobs (" + _knobs(plan.rollout.model_dump()) + ")"
        )
    if plan.circuits is not None:
        out.setdefault("not_expressible", []).append(_CIRCUITS_NOTE)
    return out


#: what an export says of the plan's circuits: no RL framework drives an OCS
_CIRCUITS_NOTE = (
    "the weight sync's OCS circuits (plan.circuits): set by the fabric's controller, not by "
    "the framework"
)


def job_roll(problem: JobProblem, plan: JobPlan) -> dict[str, Any]:
    """ROLL's config of the placement, with RollPacker's knobs merged in where the job has them
    (the keys only RollPacker's fork reads stay named in ``needs_rollpacker_fork``)."""
    out = placement_roll(problem.placement, plan.placement)
    if plan.circuits is not None:
        out = {**out, "comments": [*out.get("comments", []), _CIRCUITS_NOTE]}
    rp, _ = rollout_problem(problem, plan.placement)
    if plan.rollout is None or rp is None:
        return out
    knobs = rollout_roll(rp, plan.rollout)
    doc = dict(out.get("document", {}))
    for key, value in knobs.get("document", {}).items():
        if key not in ("actor_infer",):
            doc[key] = value
    out = {**out, "document": doc}
    for key in ("needs_rollpacker_fork", "comments"):
        if knobs.get(key):
            out[key] = [*out.get(key, []), *knobs[key]]
    return out
