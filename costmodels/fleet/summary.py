"""What ``rlplan plan fleet`` prints: per job its group, its phases alone, its co-executed period
against its SLO and the step its deployed plan runs at; and the fleet's verl export."""

from __future__ import annotations

from typing import Any

from costmodels.fleet.derive import member_problem
from costmodels.fleet.plan import FleetPlan
from costmodels.fleet.problem import FleetProblem
from costmodels.job.summary import job_verl
from costmodels.problem import SolvedPlan, Summary

#: jobs listed in the printed table; the plan file holds them all
SHOWN = 20


def fleet_summary(solved: SolvedPlan[FleetProblem, FleetPlan]) -> Summary:
    fp, b = solved.problem, solved.breakdown
    spec = fp.fleet
    rows = []
    for name, j in list(b["jobs"].items())[:SHOWN]:
        job = spec.jobs[fp.index[name]]
        rows.append(
            (
                name,
                str(j["group"]),
                f"{job.rollout_gpus}+{job.train_gpus}",
                f"{j['rollout_s']:.0f}+{j['train_s']:.0f}",
                f"{j['slowdown']:.2f}/{j['slo']:g}",
                f"{j['step_s']:.0f}",
            )
        )
    more = len(b["jobs"]) - len(rows)
    caption = (
        f"phases alone ({spec.phases}): rollout + training seconds on the job's own "
        f"{spec.rollout_pool.gpu} + {spec.train_pool.gpu} GPUs; step: the deployed plan on its "
        f"group's GPUs, the workflow's lengths. {b['rollout_gpus']} rollout + "
        f"{b['train_gpus']} training GPUs; SLO met by {b['slo_attainment']:.0%} of jobs"
        + (f"; {more} more jobs in the plan file" if more > 0 else "")
    )
    return Summary(
        title=(
            f"Fleet plan ({solved.solver}): ${solved.objective:,.1f}/h ({solved.status}), "
            f"{b['group_count']} groups"
        ),
        columns=("job", "group", "GPUs", "alone s", "slowdown/SLO", "step s"),
        rows=rows,
        caption=caption,
    )


def fleet_verl(problem: FleetProblem, plan: FleetPlan) -> dict[str, Any]:
    """Every job's verl config on its group's GPUs, by job name (``costmodels.job.summary``)."""
    docs: dict[str, Any] = {}
    notes: list[str] = []
    for gi, group in enumerate(plan.cosched.groups):
        for member in group.jobs:
            out = job_verl(member_problem(problem, gi, group, member.name), plan.jobs[member.name])
            docs[member.name] = out.get("document", out)
            notes += [f"{member.name}: {c}" for c in out.get("not_expressible", [])]
    comments = [
        "one verl config per job of the fleet, on its group's GPUs (rlplan plan fleet); verl "
        "runs one job per config, RollMux's group scheduler runs the groups",
        *notes,
    ]
    return {"comments": comments, "document": docs}
