"""What ``rlplan plan cosched`` prints: groups, their pools and cost, every job's slowdown vs
SLO."""

from __future__ import annotations

from costmodels import step_error
from costmodels.cosched.plan import CoschedulePlan
from costmodels.cosched.problem import CoscheduleProblem
from costmodels.problem import SolvedPlan, Summary


def cosched_summary(solved: SolvedPlan[CoscheduleProblem, CoschedulePlan]) -> Summary:
    b = solved.breakdown
    rows = []
    for g in b["groups"][:20]:
        worst = max(b["jobs"][n]["slowdown"] / b["jobs"][n]["slo"] for n in g["jobs"])
        pools = (
            "co-located"
            if g["colocated"]
            else f"{g['rollout_nodes']} rollout + {g['train_nodes']} train nodes"
        )
        rows.append(
            (
                str(g["group"]),
                ", ".join(g["jobs"]),
                pools,
                f"{g['cost_per_h']:.1f}",
                f"{g['cycle_s']:.0f}",
                f"{g['load_s']:.0f}",
                f"{worst:.2f}",
            )
        )
    more = len(b["groups"]) - len(rows)
    return Summary(
        title=(
            f"co-scheduling by {solved.solver}: ${solved.objective:,.1f}/h ({solved.status}), "
            f"{b['group_count']} groups"
        ),
        columns=("group", "jobs", "pools", "$/h", "cycle s", "load s", "max slowdown/SLO"),
        rows=rows,
        caption=(
            f"{b['rollout_gpus']} rollout + {b['train_gpus']} training GPUs; SLO met by "
            f"{b['slo_attainment']:.0%} of jobs"
            + (f"; {more} more groups in the plan file" if more > 0 else "")
            + "; "
            + step_error.describe("step", judge="cosched")
        ),
    )
