"""Job plans, sequential against joint (``docs/job.md``): on small instances against a joint
enumeration, on rented-cluster jobs and the HetRL testbed against each other.

* **sequential**: the placement (SHA-EA on the job budget), then the knobs on the rollout problem
  it leaves: each problem solved alone, the answer typed into the next (``heuristics.job.
  sequential``); its wall time is what ``rlplan plan job`` takes by default. The re-planning
  advice (``heuristics.job.replan``) is reported beside it.
* **fixed point**: the placement re-solved with generation scaled by the knobs' effect until it
  repeats (``heuristics.job.fixed_point``; never worse by construction, as it keeps the best).
* **joint enumeration** (small instances only): every placement of the space
  (``formulations.placement.bruteforce``'s enumeration) x every generation knob setting the
  descent searches (η_P x η_R over ``ETAS`` x every TP setting), each judged by the job judge
  (the knobs are simulated once per distinct generation configuration). Its best is the optimum
  of the job judge over that joint space; the gap of each solver is its step over it.

Every plan passes ``check_job``. Same seed (0) and budgets: the same rows on any machine but the
wall times.

    python -m benchmarks.job_plans --out benchmarks/results/job-plans
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

from benchmarks.publish import command_line, parse_out_dir, publish_rows, save_figure
from costmodels.job.canned import CLUSTER, _workflow
from costmodels.job.check import check_job
from costmodels.job.derive import rollout_problem
from costmodels.job.plan import JobPlan
from costmodels.job.problem import JobProblem
from costmodels.placement.check import check_placement
from costmodels.placement.judge import evaluate_placement
from costmodels.rollout.judge import evaluate_rollout
from costmodels.rollout.plan import RolloutPlan
from costmodels.rollout.space import ETAS, verl_plan
from costmodels.rollout.workload import RolloutWorkload
from formulations.placement.bruteforce import placements
from heuristics.job.knobs import tp_settings
from planner import solve
from planner.io import build_problem

#: (name, cluster, workflow) of the small instances the joint enumeration covers
SMALL = (
    ("2 A100, Qwen3-1.7B", CLUSTER, _workflow(True)),
    (
        "4 A100, Qwen3-1.7B",
        {**CLUSTER, "nodes": [{"name": "a", "gpu": "A100-40GB", "count": 4, "zone": "z"}]},
        _workflow(True),
    ),
)
#: (cluster preset, workflow preset) of the larger jobs
LARGE = (
    ("h100-32", "grpo-sync-qwen3-32b"),
    ("h100-64", "grpo-sync-qwen3-8b-verl"),
    ("h800-64", "grpo-sync-llama3.1-8b"),
    ("hetrl-single-region", "grpo-sync-qwen3-8b-tail"),
)


def knob_settings(workload: RolloutWorkload) -> list[RolloutPlan]:
    """The descent's space (``heuristics.job.knobs``): η_P x η_R x its TP settings."""
    return [
        RolloutPlan(short_tp=workload.tp, eta_prompts=p, eta_responses=r, **t)
        for p, r, t in itertools.product(ETAS, ETAS, tp_settings(workload))
    ]


def joint_enumeration(problem: JobProblem) -> tuple[float, JobPlan, int]:
    """The job judge's optimum over every placement x every knob setting (module doc)."""
    pp = problem.placement
    best: tuple[float, JobPlan | None] = (float("inf"), None)
    ratios: dict[Any, tuple[float, RolloutPlan | None]] = {}
    plans = 0
    for plan in placements(pp):
        if check_placement(pp, plan):
            continue
        plans += 1
        ev = evaluate_placement(pp, plan)
        rp, _ = rollout_problem(problem, plan)
        r, knobs = 1.0, None
        if rp is not None:
            key = rp.workload.model_dump_json()
            if key not in ratios:
                base = verl_plan(rp.workload)
                b = evaluate_rollout(rp, base)[1]["rollout_s"]
                options = [(b, base)] + [
                    (evaluate_rollout(rp, k)[1]["rollout_s"], k) for k in knob_settings(rp.workload)
                ]
                s, k = min(options, key=lambda o: o[0])
                ratios[key] = (s / b, k)
            r, knobs = ratios[key]
        gen = ev.breakdown["phases"]["generation_s"]
        step = ev.objective - gen + gen * r
        if step < best[0]:
            best = (step, JobPlan(placement=plan, rollout=knobs))
    assert best[1] is not None
    return best[0], best[1], plans


def _run(problem: JobProblem, solver: str) -> tuple[float, float, Any]:
    t0 = time.perf_counter()
    r = solve(problem, solver, seed=0)
    assert r.plan is not None and r.violations == [], (solver, r.message, r.violations)
    return float(r.objective), time.perf_counter() - t0, r


def row_of(name: str, problem: JobProblem, enumerate_joint: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"instance": name, "gpus": sum(n.count for n in problem.cluster.nodes)}
    for solver in ("sequential", "fixed-point"):
        step, wall, r = _run(problem, solver)
        row[f"{solver}_s"] = step
        row[f"{solver}_wall_s"] = round(wall, 1)
        if solver == "sequential":
            row["placement_s"] = r.breakdown["placement_step_s"]
            row["knobs"] = r.breakdown["rollout"]["knobs"] is not None
            row["generation_ratio"] = r.breakdown["rollout"]["ratio"]
            row["why_no_knobs"] = r.breakdown["rollout"]["why"]
            advice = r.breakdown["replan"]["advice"]
            row["replan"] = (
                f"{advice['decision']} ({advice['ratio']:.3f})"
                if advice
                else f"n/a ({r.breakdown['replan']['why']})"
            )
        else:
            row["fixed_point_stop"] = r.message.split(": ", 1)[-1]
    row["fixed_point_over_sequential"] = row["fixed-point_s"] / row["sequential_s"]
    if enumerate_joint:
        t0 = time.perf_counter()
        step, plan, plans = joint_enumeration(problem)
        assert check_job(problem, plan) == []
        row["joint_s"] = step
        row["joint_plans"] = plans
        row["joint_wall_s"] = round(time.perf_counter() - t0, 1)
        row["sequential_gap"] = row["sequential_s"] / step - 1
        row["fixed_point_gap"] = row["fixed-point_s"] / step - 1
    return row


def report(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# Job plans: sequential, fixed point, joint enumeration",
        "",
        f"Made by `{command}` (`benchmarks/job_plans.py`, whose docstring defines the three). "
        "Steps in seconds per RL step (the job judge); gap: over the joint enumeration's optimum. "
        "Wall times are of this machine (2 cores, shared).",
        "",
        "| instance | GPUs | placement only | sequential | fixed point | joint (enumerated) "
        "| knobs: generation x | re-planning: generation x | wall s (seq / fixed) |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        joint = (
            f"{r['joint_s']:.2f} (seq +{r['sequential_gap']:.2%}, fixed "
            f"+{r['fixed_point_gap']:.2%}; {r['joint_plans']} plans)"
            if "joint_s" in r
            else "-"
        )
        knobs = f"{r['generation_ratio']:.3f}" if r["knobs"] else f"none ({r['why_no_knobs']})"
        lines.append(
            f"| {r['instance']} | {r['gpus']} | {r['placement_s']:.2f} | {r['sequential_s']:.2f} "
            f"| {r['fixed-point_s']:.2f} | {joint} | {knobs} | {r['replan']} "
            f"| {r['sequential_wall_s']:.0f} / "
            f"{r['fixed-point_wall_s']:.0f} |"
        )
    worse = [r["instance"] for r in rows if r["fixed_point_over_sequential"] > 1 + 1e-9]
    gaps = [r["fixed_point_gap"] for r in rows if "fixed_point_gap" in r]
    lines += [
        "",
        f"- Fixed point over sequential: {min(r['fixed_point_over_sequential'] for r in rows):.4f}"
        f"-{max(r['fixed_point_over_sequential'] for r in rows):.4f}; worse on "
        f"{len(worse)} of {len(rows)}.",
        f"- Fixed point's gap to the joint enumeration: at most {max(gaps):.2%}."
        if gaps
        else "- No joint enumeration in this run.",
        "- `rlplan plan job` (sequential) took at most "
        f"{max(r['sequential_wall_s'] for r in rows):.0f} s of solving on these instances.",
        "- Where each fixed point stopped: "
        + "; ".join(f"{r['instance']}: {r['fixed_point_stop']}" for r in rows),
    ]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.5))
    x = range(len(rows))
    for key, label in (
        ("placement_s", "placement only"),
        ("sequential_s", "sequential"),
        ("fixed-point_s", "fixed point"),
        ("joint_s", "joint enumeration"),
    ):
        ax.plot(x, [r.get(key, float("nan")) / r["placement_s"] for r in rows], "o", label=label)
    ax.set_xticks(list(x), [r["instance"] for r in rows], rotation=20, fontsize=7)
    ax.set_ylabel("step over the placement-only step")
    ax.legend(fontsize=7)
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> None:
    out = parse_out_dir(__doc__ or "", "benchmarks/results/job-plans", argv)
    rows = []
    for name, cluster, workflow in SMALL:
        rows.append(
            row_of(name, build_problem("job", {"cluster": cluster, "workflow": workflow}), True)
        )
        print(rows[-1], flush=True)
    for cluster, workflow in LARGE:
        problem = build_problem("job", {"cluster": cluster, "workflow": workflow})
        rows.append(row_of(f"{cluster} {workflow}", problem, False))
        print(rows[-1], flush=True)
    publish_rows(
        out,
        "results",
        rows,
        command_line("benchmarks.job_plans", argv),
        report,
        plot,
        md="README.md",
    )


if __name__ == "__main__":
    main()
