"""RollMux Algorithm 1's decision latency against the number of concurrent jobs (paper Table 5:
5.6 ms at 5 jobs ... 591 ms at 2 000), with line 4 (skip saturated groups, the paper's) and
without, and its cost next to the baselines (§7.5: no SLO check, no line 4) on the same arrivals.

    python -m benchmarks.cosched_latency --out benchmarks/results/cosched

Jobs from Table 6 (mixed), SLO ~ U(1, 2), max group 5, arriving one by one and never leaving, so
the k-th arrival is decided with k - 1 jobs in place. Latency at k = the median of the decisions at
arrivals k-2..k+2 (one decision is a few ms: a single sample is noise). Writes latency.csv/json.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.instances import table6_problem
from benchmarks.publish import command_line, parse_out_dir, write_csv, write_json
from costmodels.cosched.group import cosched_model
from heuristics.cosched.online import OnlineScheduler

POINTS = (5, 100, 500, 1000, 2000)
PAPER_MS = {5: 5.6, 100: None, 500: None, 1000: None, 2000: 591.0}


#: (rule, check_slo, skip_saturated): Algorithm 1 with and without line 4, §7.5's baselines
#: (no SLO check, no line 4) and Solo-D
RULES = {
    "rollmux": ("rollmux", True, True),
    "rollmux-unpruned": ("rollmux", True, False),
    "random": ("random", False, False),
    "greedy": ("greedy", False, False),
    "solo": ("solo", True, True),
}


def run(seed: int = 0) -> dict:
    m = cosched_model(table6_problem(max(POINTS) + 3, seed=seed))
    out = {}
    for label, (rule, check_slo, skip_saturated) in RULES.items():
        sched = OnlineScheduler(m, rule, seed, check_slo=check_slo, skip_saturated=skip_saturated)
        t0 = time.perf_counter()
        for name in m.order:
            sched.arrive(name)
        total = time.perf_counter() - t0
        lat = np.array(sched.latencies)
        plan = sched.plan()
        cost = sum(m.cost(g.rollout_nodes, g.train_nodes) for g in plan.groups)
        out[label] = {
            "total_s": total,
            "cost_per_h": cost,
            "groups": len(plan.groups),
            "latency_ms": {k: float(np.median(lat[k - 3 : k + 2]) * 1e3) for k in POINTS},
            "max_latency_ms": float(lat.max() * 1e3),
        }
    return out


def main(argv: list[str] | None = None) -> None:
    out = parse_out_dir(__doc__, "bench-out/cosched", argv)
    res = run()
    write_json(
        out / "latency.json",
        {
            "command": command_line("benchmarks.cosched_latency", argv),
            "paper_ms": PAPER_MS,
            "results": res,
        },
    )
    write_csv(
        out / "latency.csv",
        [
            {
                "rule": r,
                "concurrent_jobs": k,
                "latency_ms": round(v["latency_ms"][k], 3),
                "paper_ms": PAPER_MS[k],
            }
            for r, v in res.items()
            for k in POINTS
        ],
    )
    for r, v in res.items():
        print(
            r,
            {k: round(x, 2) for k, x in v["latency_ms"].items()},
            f"max {v['max_latency_ms']:.1f} ms, cost ${v['cost_per_h']:.0f}/h, {v['groups']} "
            "groups",
        )


if __name__ == "__main__":
    main()
