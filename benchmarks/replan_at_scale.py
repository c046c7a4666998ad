"""The re-planning MILP at scale (OrchestrRL §4.1, App. F: Eq. 1 solved at 1 024 GPUs in under
11 s): how close each state's plan comes to its proven bound, and in how long, three runs each.

For the shipped states and OrchestrRL's Figure 20 sizes (Qwen2-57B-A14B, 16 requests per GPU,
64, 256 and, as ``replan-1024``, 1 024 GPUs), side by side in one run: the greedy alone, and
the MILP on its default work budget (no time limit: the same plan on any machine), each through
the planner's façade. A row
keeps the objective, the bound, the gap, the wall time, where the plan and the bound came from
(``formulations/replan/milp.py``, "At scale") and whether every plan passes the validator.

    python -m benchmarks.replan_at_scale --out benchmarks/results/replan
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from benchmarks.instances import replan_state
from benchmarks.publish import command_line, publish_rows, redraw, save_figure
from costmodels.replan.check import check_replan
from planner import solve
from planner.io import build_problem

PRESETS = ("replan-tail", "replan-mixed", "replan-64", "replan-1024")
#: OrchestrRL Figure 20's smaller pool sizes, in 8-GPU nodes (``replan-1024`` is its 128-node
#: point)
SIZES = (8, 32)
REPEATS = 3


def _problem(name: str) -> Any:
    if name in PRESETS:
        return build_problem("replan", {"state": name})
    nodes = int(name.removeprefix("fig20-").removesuffix("gpu")) // 8
    return replan_state(nodes, 4, 16, 0, model="Qwen2-57B-A14B")


def run_one(name: str, solver: str, repeat: int) -> dict[str, Any]:
    problem = _problem(name)
    t0 = time.perf_counter()
    r = solve(problem, solver, seed=0)
    wall = time.perf_counter() - t0
    bad = check_replan(problem, r.plan) if r.plan is not None else ["no plan"]
    return {
        "state": name,
        "gpus": problem.spec.nodes * problem.spec.gpus_per_node,
        "solver": solver,
        "repeat": repeat,
        "status": r.status.value,
        "termination": r.termination.value if r.termination else "",
        "objective": r.objective,
        "bound": r.bound,
        "gap": (r.objective / r.bound - 1.0) if r.bound and r.objective else None,
        "wall_s": round(wall, 3),
        "valid": not bad,
        "message": r.message,
    }


def report(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# The re-planning MILP at scale",
        "",
        f"Made by `{command}`. Default work budgets, no time limit; wall time per run on this "
        "machine (2 shared cores), three runs each. Gap: objective over the MILP's bound, less 1.",
        "",
        "| state | GPUs | greedy makespan s | MILP makespan s | MILP bound s | MILP gap | greedy / "
        "MILP | MILP wall s (3 runs) | plans valid |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    states = list(dict.fromkeys(r["state"] for r in rows))
    for s in states:
        greedy = [r for r in rows if r["state"] == s and r["solver"] == "greedy"]
        milp = [r for r in rows if r["state"] == s and r["solver"] == "milp"]
        if not greedy or not milp or milp[0]["objective"] is None:
            continue
        m, g = milp[0], greedy[0]
        walls = " / ".join(f"{r['wall_s']:.1f}" for r in milp)
        same = len({r["objective"] for r in milp}) == 1
        lines.append(
            f"| {s} | {m['gpus']} | {g['objective']:.3f} | {m['objective']:.3f}"
            f"{'' if same else ' (runs differ)'} | {m['bound']:.3f} | {100 * m['gap']:.3f}% | "
            f"{g['objective'] / m['objective']:.4f} | {walls} | "
            f"{all(r['valid'] for r in greedy + milp)} |"
        )
    lines += ["", "Where each MILP plan and bound came from (first run):", ""]
    for s in states:
        m = next((r for r in rows if r["state"] == s and r["solver"] == "milp"), None)
        if m is not None:
            lines.append(f"- {s}: {m['message']}")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Per state: the greedy's and the MILP's makespan over the MILP's bound, and the MILP's wall
    time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    states = [s for s in dict.fromkeys(r["state"] for r in rows)]
    first = {(r["state"], r["solver"]): r for r in rows if r["repeat"] == 0}
    bound = {s: first[s, "milp"]["bound"] for s in states}
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    xs = range(len(states))
    for i, solver in enumerate(("greedy", "milp")):
        left.bar(
            [x + (i - 0.5) * 0.38 for x in xs],
            [first[s, solver]["objective"] / bound[s] for s in states],
            0.38,
            label=solver,
        )
    left.axhline(1.0, color="black", linewidth=0.8)
    left.axhline(1.01, color="grey", linewidth=0.8, linestyle="--", label="1% over the bound")
    left.set_ylim(0.99, max(1.05, max(first[s, "greedy"]["objective"] / bound[s] for s in states)))
    left.set_xticks(list(xs), states, rotation=20, fontsize=8)
    left.set_ylabel("makespan / MILP bound")
    left.legend(fontsize=8)
    walls = [
        [r["wall_s"] for r in rows if r["state"] == s and r["solver"] == "milp"] for s in states
    ]
    right.bar(list(xs), [max(w) for w in walls], color="tab:orange")
    right.axhline(11.0, color="grey", linewidth=0.8, linestyle="--", label="OrchestrRL: 11 s")
    right.set_xticks(list(xs), states, rotation=20, fontsize=8)
    right.set_ylabel("MILP wall s (slowest of the runs)")
    right.legend(fontsize=8)
    fig.suptitle("Eq. 1 at scale: the greedy and the MILP against the MILP's bound")
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/replan"))
    ap.add_argument(
        "--states", nargs="*", default=[*PRESETS, *(f"fig20-{n * 8}gpu" for n in SIZES)]
    )
    ap.add_argument("--repeats", type=int, default=REPEATS)
    ap.add_argument(
        "--replot", action="store_true", help="redraw the report and plot from at_scale.json"
    )
    args = ap.parse_args(argv)
    if args.replot:
        redraw(args.out, "at_scale", report, plot)
        return
    rows = []
    for s in args.states:
        rows.append(run_one(s, "greedy", 0))
        for k in range(args.repeats):
            rows.append(run_one(s, "milp", k))
            print({k: v for k, v in rows[-1].items() if k != "message"}, flush=True)
    command = command_line("benchmarks.replan_at_scale", argv)
    publish_rows(args.out, "at_scale", rows, command, report, plot)


if __name__ == "__main__":
    main()
