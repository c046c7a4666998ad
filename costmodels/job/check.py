"""The job plan's validator: every part checked by its own problem's validator, on the problem
the job derives for it (``costmodels.job.derive``), and the parts agree."""

from __future__ import annotations

from costmodels.job.derive import rollout_problem
from costmodels.job.plan import JobPlan
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
    if out or plan.rollout is None:
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
