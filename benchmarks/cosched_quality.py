"""RollMux Algorithm 1 and the baselines against the proven offline optimum on Table 6 mixed job
sets (§7.5: SLO ~ U(1, 2), max group 5), and the optimum's solve time against the number of jobs
(the paper's brute force: over a minute at 9 jobs, over five hours at 13).

    python -m benchmarks.cosched_quality --out benchmarks/results/cosched
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.instances import table6_problem
from benchmarks.publish import command_line, write_csv, write_json
from costmodels.cosched.group import evaluate_cosched
from formulations.cosched.partition import solve_cosched_optimal
from heuristics.cosched.online import (
    solve_colocated,
    solve_greedy,
    solve_random,
    solve_rollmux,
    solve_solo,
)

SIZES = (6, 9, 13, 20, 30, 50)
SEEDS = (0, 1, 2)
PAPER = {"rollmux": (1.06, 1.0), "random": (1.97, 0.60), "greedy": (1.66, 0.62)}


def run() -> list[dict]:
    rows = []
    for n in SIZES:
        for seed in SEEDS:
            problem = table6_problem(n, seed=seed)
            t0 = time.perf_counter()
            opt = solve_cosched_optimal(problem, time_limit=300)
            opt_s = time.perf_counter() - t0
            row = {
                "jobs": n,
                "seed": seed,
                "optimal_per_h": opt.objective,
                "optimal_status": opt.status.value,
                "optimal_s": opt_s,
                "columns": opt.stats.get("columns"),
            }
            for name, fn in (
                ("rollmux", solve_rollmux),
                ("random", solve_random),
                ("greedy", solve_greedy),
                ("solo", solve_solo),
                ("colocated", solve_colocated),
            ):
                out = fn(problem, seed=seed)
                cost, b = evaluate_cosched(problem, out.plan)
                row[f"{name}_ratio"] = cost / opt.objective
                row[f"{name}_slo"] = b["slo_attainment"]
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench-out/cosched"))
    args = parser.parse_args(argv)
    rows = run()
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "quality.csv", rows)
    summary = {
        name: {
            "median_ratio": float(np.median([r[f"{name}_ratio"] for r in rows])),
            "max_ratio": float(max(r[f"{name}_ratio"] for r in rows)),
            "slo_attainment": float(np.mean([r[f"{name}_slo"] for r in rows])),
            "paper": PAPER.get(name),
        }
        for name in ("rollmux", "random", "greedy", "solo", "colocated")
    }
    times = {n: float(np.median([r["optimal_s"] for r in rows if r["jobs"] == n])) for n in SIZES}
    write_json(
        args.out / "quality.json",
        {
            "command": command_line("benchmarks.cosched_quality", argv),
            "summary": summary,
            "optimal_solve_s": times,
            "rows": rows,
        },
    )
    for name, v in summary.items():
        print(name, v)
    print("optimal solve s (median):", times)


if __name__ == "__main__":
    main()
