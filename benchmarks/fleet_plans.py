"""Fleet plans (``docs/job.md``, "A fleet of jobs"): each shipped fleet planned end to end
(phases from the judge, RollMux groups, every job's placement and knobs), timed; its cost against
what users run today; and the fleet replayed over the Philly sample's real arrivals.

* **stages**: ``rlplan plan fleet``'s solver with RollMux Algorithm 1 (the default). Its wall time
  is the whole planning call (stages 1-3 and the planner's validation).
* **against**: the same phases grouped by the offline optimum (set partitioning on HiGHS, 120 s
  cap), by Solo-D (every job alone on its own rollout and training nodes: what a user does today
  on disaggregated pools) and by veRL co-location (both phases on training GPUs). These runs skip
  the knobs (``rollout_epochs=0``): the $/h objective does not depend on them.
* **trace**: the fleet's jobs arrive and leave as the Philly sample's jobs did
  (``costmodels.fleet.presets.philly_jobs``), on the judged phases, under RollMux, Solo-D, veRL
  and the SLO-checked greedy (``heuristics.fleet.trace``): mean and peak $/h, peak GPUs, SLO
  attainment.

Seed 0 throughout: the same rows on any machine but the wall times.

    python -m benchmarks.fleet_plans --out benchmarks/results/fleet-plans
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.publish import command_line, parse_out_dir, publish_rows, save_figure, write_json
from costmodels.fleet.check import check_fleet
from costmodels.fleet.presets import philly_jobs
from heuristics.fleet.trace import simulate_fleet
from planner import solve
from planner.io import build_problem

#: (label, fleet spec or preset) planned end to end
FLEETS = (
    ("fleet-six", "fleet-six"),
    ("fleet-philly-30", "fleet-philly-30"),
    ("fleet-philly-30 expected", {**philly_jobs(30), "phases": "expected"}),
    ("fleet-philly-100", philly_jobs(100)),
)
AGAINST = ("optimal", "solo", "colocated")
TRACE_POLICIES = ("rollmux", "solo", "colocated", "greedy-slo")


def row_of(label: str, fleet: Any) -> tuple[dict[str, Any], Any]:
    problem = build_problem("fleet", {"fleet": fleet})
    start = time.perf_counter()
    r = solve(problem, "stages", seed=0)
    wall = time.perf_counter() - start
    assert r.success and not check_fleet(problem, r.plan), r.message
    b = r.breakdown
    row: dict[str, Any] = {
        "fleet": label,
        "jobs": len(problem.fleet.jobs),
        "phases": problem.fleet.phases,
        "plan_s": round(wall, 1),
        "cost_per_h": round(r.objective, 2),
        "groups": b["group_count"],
        "rollout_gpus": b["rollout_gpus"],
        "train_gpus": b["train_gpus"],
        "slo_attainment": b["slo_attainment"],
        "knob_types": r.stats.get("knob_types", 0),
        "mean_step_s": round(sum(j["step_s"] for j in b["jobs"].values()) / len(b["jobs"]), 1),
    }
    for other in AGAINST:
        o = solve(problem, "stages", seed=0, cosched=other, rollout_epochs=0)
        row[f"{other}_cost_per_h"] = round(o.objective, 2) if o.success else None
        row[f"{other}_over_stages"] = round(o.objective / r.objective, 4) if o.success else None
        if other == "optimal":
            row["optimal_status"] = o.status.value
    return row, (problem, r.plan)


def trace_rows(problem: Any, plan: Any) -> list[dict[str, Any]]:
    out = []
    for policy in TRACE_POLICIES:
        s = simulate_fleet(problem, plan, policy).summary()
        out.append(
            {
                "policy": policy,
                "jobs": s["jobs"],
                "mean_cost_per_h": round(s["mean_cost_per_h"], 2),
                "peak_cost_per_h": round(s["peak_cost_per_h"], 2),
                "peak_rollout_gpus": s["peak_rollout_gpus"],
                "peak_train_gpus": s["peak_train_gpus"],
                "slo_attainment": round(s["slo_attainment"], 4),
                "mean_slowdown": round(s["mean_slowdown"], 4),
            }
        )
    return out


def report(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# Fleet plans",
        "",
        f"`{command}`",
        "",
        "| fleet | jobs | phases | plan s | $/h | groups | GPUs R+T | SLO met | optimum/RollMux "
        "| Solo-D/RollMux | veRL/RollMux |",
        "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['fleet']} | {r['jobs']} | {r['phases']} | {r['plan_s']} | {r['cost_per_h']:.1f} "
            f"| {r['groups']} | {r['rollout_gpus']}+{r['train_gpus']} | {r['slo_attainment']:.0%} "
            f"| {_ratio(r['optimal_over_stages'])} ({r['optimal_status']}) "
            f"| {_ratio(r['solo_over_stages'])} | {_ratio(r['colocated_over_stages'])} |"
        )
    return "\n".join(lines) + "\n"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    x = range(len(rows))
    for key, label in (
        ("optimal_over_stages", "offline optimum"),
        ("solo_over_stages", "Solo-D"),
        ("colocated_over_stages", "veRL co-located"),
    ):
        ax.plot(x, [r[key] if r[key] is not None else float("nan") for r in rows], "o", label=label)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(list(x), [r["fleet"] for r in rows], rotation=15, fontsize=7)
    ax.set_ylabel("$/h over the fleet plan's (RollMux)")
    ax.legend(fontsize=7)
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> None:
    out = parse_out_dir(__doc__ or "", "benchmarks/results/fleet-plans", argv)
    rows, traces = [], {}
    for label, fleet in FLEETS:
        row, (problem, plan) = row_of(label, fleet)
        rows.append(row)
        print(row, flush=True)
        if problem.fleet.jobs[-1].duration_s is not None and problem.fleet.phases == "worst-case":
            traces[label] = trace_rows(problem, plan)
            print(traces[label], flush=True)
    command = command_line("benchmarks.fleet_plans", argv)
    publish_rows(out, "results", rows, command, report, plot, md="README.md")
    write_json(out / "trace.json", {"command": command, "traces": traces})
    lines = ["", "## Over the Philly sample's arrivals", ""]
    for label, trace in traces.items():
        lines += [
            f"### {label}",
            "",
            "| policy | mean $/h | peak $/h | peak GPUs R+T | SLO met | mean slowdown |",
            "|---|---:|---:|---|---:|---:|",
        ]
        lines += [
            f"| {t['policy']} | {t['mean_cost_per_h']:.1f} | {t['peak_cost_per_h']:.1f} "
            f"| {t['peak_rollout_gpus']}+{t['peak_train_gpus']} | {t['slo_attainment']:.0%} "
            f"| {t['mean_slowdown']:.3f} |"
            for t in trace
        ]
        lines.append("")
    with (out / "README.md").open("a") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
