"""The judge of co-scheduling plans (RollMux §4.1-4.3): the provisioning cost in $/h, and per
group and per job the cycle, the load, the co-execution period against the SLO
(``costmodels.cosched.group``'s module doc)."""

from __future__ import annotations

from typing import Any

from costmodels.cosched.group import (
    SLO_RTOL,
    coexec_times,
    cosched_model,
    cycle_and_load,
    state_of,
)
from costmodels.cosched.plan import CoschedulePlan
from costmodels.cosched.problem import CoscheduleProblem
from costmodels.step_error import expected_error


def evaluate_cosched(
    problem: CoscheduleProblem, plan: CoschedulePlan
) -> tuple[float, dict[str, Any]]:
    """Objective: provisioning cost in $/h; breakdown per group and per job."""
    m = cosched_model(problem)
    groups, jobs = [], {}
    gpus_r = gpus_t = 0
    for gi, group in enumerate(plan.groups):
        g = state_of(group)
        times = coexec_times(m, g)
        cycle, load = (
            cycle_and_load(m, g) if not g.colocated else (times[g.members[0]], times[g.members[0]])
        )
        cost = m.cost(g.rollout_nodes, g.train_nodes)
        gpus_r += g.rollout_nodes * m.g_r
        gpus_t += g.train_nodes * m.g_t
        groups.append(
            {
                "group": gi,
                "jobs": list(g.members),
                "rollout_nodes": g.rollout_nodes,
                "train_nodes": g.train_nodes,
                "colocated": g.colocated,
                "cost_per_h": cost,
                "cycle_s": cycle,
                "load_s": load,
                "saturated": load >= cycle,
            }
        )
        for name in g.members:
            j = m.jobs[name]
            jobs[name] = {
                "group": gi,
                "solo_s": j.solo_s,
                "coexec_s": times[name],
                "slowdown": times[name] / j.solo_s,
                "slo": j.slo,
                "meets_slo": times[name] <= j.slo * j.solo_s * (1 + SLO_RTOL),
            }
    cost = sum(g["cost_per_h"] for g in groups)
    met = sum(v["meets_slo"] for v in jobs.values())
    return cost, {
        "cost_per_h": cost,
        "groups": groups,
        "jobs": jobs,
        "rollout_gpus": gpus_r,
        "train_gpus": gpus_t,
        "slo_attainment": met / len(jobs) if jobs else 1.0,
        "group_count": len(groups),
        # how far to trust the phases (``costmodels.step_error``): None until a co-scheduled
        # fleet's measured steps are on record
        "expected_error": expected_error("step", judge="cosched"),
    }
