"""Issue 4's measurements, side by side in one run (HetRL §5.4-style).

1. ILP time to optimum on the small-8/16/24 presets;
2. SHA-EA's gap to the ILP optimum under 10 s and 60 s budgets;
3. SHA-EA vs the plain EA at equal wall-clock budgets;
4. SHA-EA vs the verl-style baseline on the four HetRL network scenarios.

    python -m benchmarks.placement_report --out bench-out [--workflow grpo-sync-qwen3-8b] [--quick]

Writes ``placement_report.csv`` / ``.json``; every number is a ``planner.solve`` Result (cost
model objective, validated plan).
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import pandas as pd

from planner import solve
from planner.io import build_problem

SMALL = ["small-8", "small-16", "small-24"]
SCENARIOS = ["hetrl-single-region", "hetrl-multi-region-hybrid", "hetrl-multi-country", "hetrl-multi-continent"]


def row(experiment: str, cluster: str, workflow: str, solver: str, budget: float | None, r) -> dict:
    return {"experiment": experiment, "cluster": cluster, "workflow": workflow, "solver": solver, "budget_s": budget,
            "status": r.status.value, "objective_s": r.objective, "bound": r.bound, "wall_time_s": r.wall_time_s,
            "evaluations": r.stats.get("evaluations"), "message": r.message}


def run(workflow: str, budgets: list[float], scenario_budget: float, out: Path | None = None) -> pd.DataFrame:
    rows = _Rows(out)
    optimum = {}
    for cl in SMALL:
        p = build_problem("placement", {"cluster": cl, "workflow": workflow})
        r = solve(p, "ilp", time_limit=900)
        optimum[cl] = r.objective if r.status.value == "optimal" else None
        rows.append(row("ilp-time-to-optimum", cl, workflow, "ilp", 900, r))
        for b in budgets:
            for solver in ("sha-ea", "ea"):
                rows.append(row("budget", cl, workflow, solver, b, solve(p, solver, time_limit=b, seed=0)))
    for sc in SCENARIOS:
        p = build_problem("placement", {"cluster": sc, "workflow": workflow})
        rows.append(row("scenario", sc, workflow, "verl", None, solve(p, "verl")))
        rows.append(row("scenario", sc, workflow, "sha-ea", scenario_budget, solve(p, "sha-ea", time_limit=scenario_budget, seed=0)))
    df = pd.DataFrame(list(rows))
    df["ratio_to_optimum"] = [
        (o / optimum[c]) if (o is not None and optimum.get(c)) else None for o, c in zip(df["objective_s"], df["cluster"], strict=True)
    ]
    return df


class _Rows(list):
    """Rows that are also appended to ``partial.jsonl`` as they come (long runs keep their data)."""

    def __init__(self, out: Path | None):
        super().__init__()
        self.path = out / "partial.jsonl" if out else None
        if self.path:
            out.mkdir(parents=True, exist_ok=True)
            self.path.write_text("")

    def append(self, item: dict) -> None:
        super().append(item)
        if self.path:
            with self.path.open("a") as fh:
                fh.write(json.dumps(item, default=str) + "\n")
        print(item["experiment"], item["cluster"], item["solver"], item["budget_s"], item["status"], item["objective_s"], f"{item['wall_time_s']:.1f}s", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    ap.add_argument("--workflow", default="grpo-sync-qwen3-8b")
    ap.add_argument("--quick", action="store_true", help="2 s / 5 s budgets (a smoke run)")
    args = ap.parse_args(argv)
    budgets, scen = ([2.0, 5.0], 5.0) if args.quick else ([10.0, 60.0], 60.0)
    df = run(args.workflow, budgets, scen, args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "placement_report.csv", index=False)
    meta = {"machine": platform.platform(), "python": platform.python_version(), "workflow": args.workflow, "budgets_s": budgets}
    (args.out / "placement_report.json").write_text(json.dumps({"meta": meta, "rows": df.to_dict(orient="records")}, indent=2, default=str) + "\n")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(df.drop(columns=["message"]).to_string(index=False))


if __name__ == "__main__":
    main()
