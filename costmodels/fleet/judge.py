"""The fleet's judge (``costmodels.fleet``'s module doc): the co-scheduling judge's provisioning
cost in $/h (RollMux §4.2) on the phase times recomputed from the plan's solo placements, and per
job the step its deployed plan runs at (``costmodels.job.judge``)."""

from __future__ import annotations

from typing import Any

from costmodels.cosched.judge import evaluate_cosched
from costmodels.fleet.derive import cosched_problem, member_problem, phase_times
from costmodels.fleet.plan import FleetPlan
from costmodels.fleet.problem import FleetProblem
from costmodels.job.judge import evaluate_job


def judged_phases(fp: FleetProblem, plan: FleetPlan) -> dict[str, tuple[float, float]]:
    """Every job's (rollout, training) seconds as the judge times its solo placement."""
    return {n: phase_times(fp, n, p.placement) for n, p in plan.phases.items()}


def evaluate_fleet(fp: FleetProblem, plan: FleetPlan) -> tuple[float, dict[str, Any]]:
    """Objective: provisioning cost in $/h; breakdown: the co-scheduling judge's (groups, SLOs,
    GPUs per pool) and per job its phases, its co-executed period and its deployed step."""
    phases = judged_phases(fp, plan)
    cost, cb = evaluate_cosched(cosched_problem(fp, phases), plan.cosched)
    jobs: dict[str, Any] = {}
    for gi, group in enumerate(plan.cosched.groups):
        for member in group.jobs:
            name = member.name
            step, jb = evaluate_job(member_problem(fp, gi, group, name), plan.jobs[name])
            roll, train = phases[name]
            jobs[name] = {
                **cb["jobs"][name],
                "rollout_s": roll,
                "train_s": train,
                "step_s": step,
                "generation_s": jb["generation_s"],
                "knobs_ratio": jb["rollout"]["ratio"] if jb["rollout"]["applied"] else 1.0,
                "expected_error": jb["expected_error"],
            }
    return cost, {**cb, "jobs": jobs, "phases": fp.fleet.phases}
