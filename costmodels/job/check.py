"""The job plan's validator: every part checked by its own problem's validator, on the problem
the job derives for it (``costmodels.job.derive``), and the parts agree."""

from __future__ import annotations

from costmodels.circuits.check import check_circuits
from costmodels.job.derive import replan_setting, rollout_problem, weight_sync_circuits
from costmodels.job.plan import REPLAN_MARGIN, JobPlan
from costmodels.job.problem import JobProblem
from costmodels.placement.check import check_placement
from costmodels.rollout.check import check_rollout
from costmodels.violations import Violation
from costmodels.workflow import ACTOR_GENERATION


def check_job(problem: JobProblem, plan: JobPlan) -> list[Violation]:
    out = [
        Violation(f"placement:{v.constraint}", v.message)
        for v in check_placement(problem.placement, plan.placement)
    ]
    if out:
        return out
    out += _check_replan(problem, plan)
    if plan.circuits is not None:
        cp, why = weight_sync_circuits(problem, plan.placement)
        if cp is None:
            out.append(Violation("circuits-scope", f"circuits given, but {why}"))
        else:
            out += [
                Violation(f"circuits:{v.constraint}", v.message)
                for v in check_circuits(cp, plan.circuits)
            ]
    if plan.rollout is None:
        return out
    rp, why = rollout_problem(problem, plan.placement)
    if rp is None:
        return [Violation("rollout-scope", f"rollout knobs given, but the job has none: {why}")]
    out += [
        Violation(f"rollout:{v.constraint}", v.message) for v in check_rollout(rp, plan.rollout)
    ]
    tp = plan.placement.task(ACTOR_GENERATION).tp
    if plan.rollout.short_tp != tp:
        out.append(
            Violation(
                "rollout-tp",
                f"the rollout knobs start at TP{plan.rollout.short_tp}, the placement's "
                f"generation runs TP{tp}",
            )
        )
    return out


def _check_replan(problem: JobProblem, plan: JobPlan) -> list[Violation]:
    """The re-planning advice agrees with the placement and with itself (its makespans are the
    generation simulator's, measured by the solver: ``heuristics.job.replan``)."""
    a = plan.replan
    if a is None:
        return []
    setting, why = replan_setting(problem, plan.placement)
    if setting is None:
        return [Violation("replan-scope", f"re-planning advice given, but {why}")]
    out = []
    if a.start_tp != setting.tp:
        out.append(
            Violation(
                "replan-tp",
                f"the advice starts at TP{a.start_tp}, the placement's generation runs "
                f"TP{setting.tp}",
            )
        )
    if a.static_s > 0 and abs(a.ratio - a.replanned_s / a.static_s) > 1e-9 * max(1.0, a.ratio):
        out.append(
            Violation(
                "replan-ratio", f"ratio {a.ratio:g} is not {a.replanned_s:g} / {a.static_s:g}"
            )
        )
    if a.best_static_s > a.static_s * (1 + 1e-9):
        out.append(
            Violation(
                "replan-oracle",
                f"the best static TP's {a.best_static_s:g} s is slower than the start TP's "
                f"{a.static_s:g} s, which it includes",
            )
        )
    want = "re-plan" if a.ratio <= 1 - REPLAN_MARGIN else "keep"
    if a.decision != want:
        out.append(
            Violation(
                "replan-decision",
                f"ratio {a.ratio:.3f} means {want!r} (margin {REPLAN_MARGIN:.0%}), not "
                f"{a.decision!r}",
            )
        )
    return out
