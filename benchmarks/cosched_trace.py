"""RollMux's cluster-level trace simulations, every policy side by side in one run:

* §7.5 / Fig. 15: a Philly-like trace of Table 6 mixed jobs (300 jobs over 580 h, mean 14.4 h,
  SLO ~ U(1, 2), max group 5): mean cost of RollMux / Random / Greedy / Solo-D / co-located over
  the offline optimum re-solved at every arrival, SLO attainment, peak GPUs (paper: RollMux 1.06x
  with 100%; Random 1.97x / 60%; Greedy 1.66x / 62%).
* the same policies on real arrivals and running times: three consecutive 100-job windows of the
  public Philly sample rlplan ships (``philly-log``; jobs 1-100, 101-200, 201-300 in submission
  order, Table 6 phases and SLOs drawn per window), against both per-arrival references.
* §7.4: a 200-job production-like trace of Table 3 job types (H20 rollout, H800 training, Table 1
  prices): RollMux's cost against Solo-D and co-located (paper: 1.84x and 1.38x cheaper); and the
  same over §7.4's described mix (``production-mix``: 3B-32B, 4k-32k responses, two weeks, every
  job with its model, so warm-state residency binds).

    python -m benchmarks.cosched_trace --out benchmarks/results/cosched
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.publish import command_line, write_csv, write_json
from costmodels.cosched.arrivals import generate
from costmodels.cosched.group import cosched_model, round_robin_schedule
from costmodels.cosched.plot import plot_trace
from costmodels.solving import protect_stdout
from formulations.cosched.partition import solve_cosched_optimal
from heuristics.cosched.cluster_trace import simulate_trace
from planner.io import build_problem

SEEDS = (0, 1, 2)
PHILLY = (
    "optimal",
    "optimal-algorithm1",
    "rollmux",
    "rollmux-unpruned",
    "random",
    "greedy",
    "solo",
    "colocated",
)
PRODUCTION = ("rollmux", "rollmux-unpruned", "random", "greedy", "solo", "colocated")
#: (trace, policies, generator spec per seed)
TRACES = (
    ("philly", PHILLY, "philly:seed={seed}"),
    ("philly-log", PHILLY, "philly-log:jobs=100,skip={skip},seed={seed}"),
    ("production", PRODUCTION, "production:seed={seed}"),
    ("production-mix", PRODUCTION, "production-mix:seed={seed}"),
)
#: jobs per real-arrival window: window ``seed`` starts after ``seed * PHILLY_WINDOW`` jobs
PHILLY_WINDOW = 100
#: the per-arrival optima's time limit: a safety cap set far above what any re-solve here takes,
#: so every published optimum is proven (rows count the ones that were not, ``unproven_optima``)
OPTIMAL_TIME_LIMIT = 900.0
#: traces whose ratios are to the two per-arrival optima (the rest: to RollMux)
OPTIMUM_REFERENCED = ("philly", "philly-log")
#: §7.5 / Fig. 15 on Philly's arrivals: (cost over the optimum, SLO attainment) per policy
SECTION_7_5 = {"rollmux": (1.06, 1.0), "random": (1.97, 0.60), "greedy": (1.66, 0.62)}
PAPER = {
    "philly": SECTION_7_5,
    "philly-log": SECTION_7_5,
    "production": {"solo / rollmux": 1.84, "colocated / rollmux": 1.38},
    "production-mix": {"solo / rollmux": 1.84, "colocated / rollmux": 1.38},
}


def migration_gain() -> float | None:
    """The long-tail migration gain the replay measured (median over its job pairs of each pair's
    median; ``python -m benchmarks.cosched_migration``), or None before it has run."""
    path = Path(__file__).parent / "results" / "cosched" / "migration.json"
    if not path.exists():
        return None
    summary = json.loads(path.read_text())["summary"]
    return float(np.median([v["median_gain"] for v in summary.values()]))


def run(out: Path) -> tuple[list[dict], dict]:
    rows = []
    gain = migration_gain()
    # (label, policy, options): every policy, and RollMux with long-tail migration folded into
    # the costs at the replay's measured gain
    extra = [("rollmux+migration", "rollmux", {"migration_gain": gain})] if gain else []
    for trace, policies, spec in TRACES:
        for seed in SEEDS:
            jobs = generate(spec.format(seed=seed, skip=seed * PHILLY_WINDOW))
            problem = build_problem("cosched", {"jobs": jobs})
            results = []
            for label, policy, options in [(p, p, {}) for p in policies] + extra:
                t0 = time.perf_counter()
                r = simulate_trace(
                    problem,
                    policy,
                    seed=seed,
                    solve_optimal=solve_cosched_optimal,
                    optimal_time_limit=OPTIMAL_TIME_LIMIT,
                    **options,
                )
                if not options:
                    results.append(r)
                rows.append(
                    {
                        "trace": trace,
                        "seed": seed,
                        **r.summary(),
                        "policy": label,
                        **options,
                        "wall_s": time.perf_counter() - t0,
                    }
                )
            if seed == 0:
                g = max(results[policies.index("rollmux")].snapshot, key=lambda g: len(g.members))
                gantt = (
                    round_robin_schedule(cosched_model(problem), g, 2),
                    g.rollout_nodes,
                    "rollmux: the largest group when the most jobs ran",
                )
                plot_trace(
                    results,
                    gantt,
                    out / f"trace_{trace}.png",
                    f"{trace} trace, seed 0 ({len(problem.jobs.jobs)} jobs)",
                )
    summary: dict = {}

    def mean_cost(trace: str, seed: int, policy: str) -> float:
        return next(
            r["mean_cost_per_h"]
            for r in rows
            if r["trace"] == trace and r["seed"] == seed and r["policy"] == policy
        )

    for trace, policies, _ in TRACES:
        # the references each ratio names: the free optimum and the optimum over what Algorithm 1
        # can build (both re-solved at every arrival); RollMux on the production trace
        bases = ("optimal", "optimal-algorithm1") if trace in OPTIMUM_REFERENCED else ("rollmux",)
        per = {}
        for policy in [*policies, *(label for label, _, _ in extra)]:
            mine = [r for r in rows if r["trace"] == trace and r["policy"] == policy]
            per[policy] = {
                "slo_attainment_mean": float(np.mean([r["slo_attainment"] for r in mine])),
                "peak_gpus_max": int(
                    max(r["peak_rollout_gpus"] + r["peak_train_gpus"] for r in mine)
                ),
            }
            for base in bases:
                ratios = [mean_cost(trace, s, policy) / mean_cost(trace, s, base) for s in SEEDS]
                per[policy] |= {
                    f"cost_over_{base}_median": float(np.median(ratios)),
                    f"cost_over_{base}_min": float(min(ratios)),
                    f"cost_over_{base}_max": float(max(ratios)),
                }
        summary[trace] = per
    return rows, summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench-out/cosched"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    protect_stdout()  # HiGHS's stray native debug line (costmodels.solving) stays off the report
    rows, summary = run(args.out)
    write_csv(args.out / "trace.csv", rows)
    write_json(
        args.out / "trace.json",
        {
            "command": command_line("benchmarks.cosched_trace", argv),
            "summary": summary,
            "paper": PAPER,
            "rows": rows,
        },
    )
    for trace, per in summary.items():
        for policy, v in per.items():
            print(
                trace, policy, {k: round(x, 3) if isinstance(x, float) else x for k, x in v.items()}
            )


if __name__ == "__main__":
    main()
