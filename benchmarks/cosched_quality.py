"""RollMux Algorithm 1 and the baselines against two proven references on Table 6 mixed job sets
(§7.5: SLO ~ U(1, 2), max group 5): the unrestricted offline optimum (``free``: any grouping, any
pool, co-located singletons) and the optimum over what Algorithm 1 can build (``algorithm1``: no
co-location, each group's training pool its first job's). Every ratio names its reference.

Also the optimum's solve time against the number of jobs (the paper's brute force: over a minute
at 9 jobs, over five hours at 13) on the all-8-GPU sets and on mixed sets where a third of the jobs
take 16 rollout and 16 training GPUs, and what a 0.5 s library call returns on the latter.

    python -m benchmarks.cosched_quality --out benchmarks/results/cosched
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.instances import table6_problem
from benchmarks.publish import command_line, parse_out_dir, write_csv, write_json
from costmodels.cosched.judge import evaluate_cosched
from formulations.cosched.partition import solve_cosched_optimal
from heuristics.cosched.online import (
    solve_colocated,
    solve_greedy,
    solve_random,
    solve_rollmux,
    solve_solo,
)

SIZES = (6, 9, 13, 20, 30, 50)
MIXED_SIZES = (30, 50)
SEEDS = (0, 1, 2)
PAPER = {"rollmux": (1.06, 1.0), "random": (1.97, 0.60), "greedy": (1.66, 0.62)}
POLICIES = ("rollmux", "rollmux_unpruned", "random", "greedy", "solo", "colocated")


def _policies(problem, seed: int) -> dict:
    return {
        "rollmux": solve_rollmux(problem, seed=seed),
        "rollmux_unpruned": solve_rollmux(problem, seed=seed, skip_saturated=False),
        "random": solve_random(problem, seed=seed),
        "greedy": solve_greedy(problem, seed=seed),
        "solo": solve_solo(problem, seed=seed),
        "colocated": solve_colocated(problem, seed=seed),
    }


def _optimum(problem, space: str, **kw) -> tuple[object, float]:
    t0 = time.perf_counter()
    out = solve_cosched_optimal(problem, space=space, warm_start=solve_rollmux, **kw)
    return out, time.perf_counter() - t0


def run() -> list[dict]:
    rows = []
    for large in (0.0, 1 / 3):
        for n in SIZES if not large else MIXED_SIZES:
            for seed in SEEDS:
                problem = table6_problem(n, seed=seed, large_share=large)
                free, free_s = _optimum(problem, "free", time_limit=600)
                online, online_s = _optimum(problem, "algorithm1", time_limit=600)
                capped, capped_s = _optimum(problem, "free", time_limit=0.5)
                row = {
                    "jobs": n,
                    "large_jobs": round(n * large),
                    "seed": seed,
                    "optimal_free_per_h": free.objective,
                    "optimal_free_status": free.status.value,
                    "optimal_free_s": free_s,
                    "columns_free": free.stats.get("columns"),
                    "optimal_algorithm1_per_h": online.objective,
                    "optimal_algorithm1_status": online.status.value,
                    "optimal_algorithm1_s": online_s,
                    "capped_0_5s_status": capped.status.value,
                    "capped_0_5s_per_h": capped.objective,
                    "capped_0_5s_bound": capped.bound,
                    "capped_0_5s_wall_s": capped_s,
                }
                for name, out in _policies(problem, seed).items():
                    cost, b = evaluate_cosched(problem, out.plan)
                    row[f"{name}_per_free"] = cost / free.objective
                    row[f"{name}_per_algorithm1"] = cost / online.objective
                    row[f"{name}_slo"] = b["slo_attainment"]
                rows.append(row)
                print(
                    n,
                    round(n * large),
                    seed,
                    f"free {free.objective:.1f} ({free.status.value}, {free_s:.1f} s)",
                    f"algorithm1 {online.objective:.1f} ({online_s:.1f} s)",
                    f"rollmux x{row['rollmux_per_free']:.3f} (free)",
                    f"x{row['rollmux_per_algorithm1']:.3f} (algorithm1)",
                    flush=True,
                )
    return rows


def main(argv: list[str] | None = None) -> None:
    out = parse_out_dir(__doc__, "bench-out/cosched", argv)
    rows = run()
    write_csv(out / "quality.csv", rows)
    table6 = [r for r in rows if not r["large_jobs"]]
    summary = {
        name: {
            "median_per_free": float(np.median([r[f"{name}_per_free"] for r in table6])),
            "max_per_free": float(max(r[f"{name}_per_free"] for r in table6)),
            "median_per_algorithm1": float(
                np.median([r[f"{name}_per_algorithm1"] for r in table6])
            ),
            "max_per_algorithm1": float(max(r[f"{name}_per_algorithm1"] for r in table6)),
            "slo_attainment": float(np.mean([r[f"{name}_slo"] for r in table6])),
            "paper": PAPER.get(name),
        }
        for name in POLICIES
    }
    times = {
        f"{n} jobs, {k} on 16 GPUs": {
            "free_s": [
                round(r["optimal_free_s"], 2)
                for r in rows
                if (r["jobs"], r["large_jobs"]) == (n, k)
            ],
            "algorithm1_s": [
                round(r["optimal_algorithm1_s"], 2)
                for r in rows
                if (r["jobs"], r["large_jobs"]) == (n, k)
            ],
            "statuses": sorted(
                {r["optimal_free_status"] for r in rows if (r["jobs"], r["large_jobs"]) == (n, k)}
            ),
        }
        for n, k in dict.fromkeys((r["jobs"], r["large_jobs"]) for r in rows)
    }
    write_json(
        out / "quality.json",
        {
            "command": command_line("benchmarks.cosched_quality", argv),
            "references": {
                "free": "the unrestricted offline optimum (any grouping and pool, co-location)",
                "algorithm1": "the optimum over what Algorithm 1 can build (first job's pool)",
            },
            "summary_table6": summary,
            "optimal_solve_s": times,
            "rows": rows,
        },
    )
    for name, v in summary.items():
        print(name, v)
    print("optimal solve s (median):", times)


if __name__ == "__main__":
    main()
