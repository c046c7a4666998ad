"""Placement solvers over the HetRL network scenarios (HetRL §5.2 setting), side by side.

Runs every registered placement solver on the four HetRL testbed scenarios for the chosen
workflows and writes ``scenarios.csv`` and ``scenarios.json`` to ``--out``. Each row is a real
``planner.solve`` call, so every objective is the cost model's and every plan was validated.

    python -m benchmarks.scenarios --out bench-out [--workflow grpo-sync-qwen3-8b ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from planner import default_registry, solve
from planner.io import build_problem

SCENARIOS = ["hetrl-single-region", "hetrl-multi-region-hybrid", "hetrl-multi-country", "hetrl-multi-continent"]


def run(workflows: list[str], time_limit: float, seed: int) -> pd.DataFrame:
    rows = []
    for scenario in SCENARIOS:
        for wf in workflows:
            problem = build_problem("placement", {"cluster": scenario, "workflow": wf})
            for info in default_registry().solvers("placement"):
                r = solve(problem, info.name, time_limit=time_limit, seed=seed)
                rows.append({
                    "scenario": scenario, "workflow": wf, "solver": info.name, "status": r.status.value,
                    "iteration_time_s": r.objective, "wall_time_s": r.wall_time_s,
                    "samples_per_s": r.breakdown.get("throughput_samples_per_s"),
                })
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    ap.add_argument("--workflow", action="append", default=None)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    df = run(args.workflow or ["grpo-sync-qwen3-8b", "ppo-sync-qwen3-8b"], args.time_limit, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "scenarios.csv", index=False)
    (args.out / "scenarios.json").write_text(json.dumps(df.to_dict(orient="records"), indent=2) + "\n")
    print(df.to_string(index=False))


if __name__ == "__main__":
    main()
