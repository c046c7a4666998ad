"""What planning for a framework costs (``rlplan plan --target verl|roll``) on the four HetRL §5.2
testbed scenarios (64 GPUs of three types): the best plan each framework runs against the best
plan of rlplan's whole space, same solver, seed and work budget, side by side in one run.

SHA-EA on its default work budget (deterministic: same plan on any machine; 64 GPUs are beyond
the ILP's reach, so the ratios are between two SHA-EA searches, not two optima). Beside them, in
the same run, the exact ratios on ``small-24`` (24 GPUs of the same three types), where the ILP
proves every optimum, with SHA-EA's gap to each: how far the heuristic's ratios can be trusted.
Every plan is checked by the validator, with the target's rules, before it is counted.

    python -m benchmarks.placement_targets --out benchmarks/results/placement-targets
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from benchmarks.publish import command_line, publish_rows, redraw, save_figure
from costmodels.placement.check import check_placement
from planner import solve
from planner.io import build_problem

SCENARIOS = ("single-region", "multi-region-hybrid", "multi-country", "multi-continent")
WORKFLOWS = ("grpo-sync-qwen3-8b", "ppo-async-qwen3-8b")
TARGETS = (None, "verl", "roll")


#: where the ILP proves the restricted and unrestricted optima (HetRL's three GPU types, 24 GPUs)
EXACT_CLUSTER = "small-24"


def run_one(
    scenario: str, workflow: str, target: str | None, solver: str, cluster: str | None = None
) -> dict[str, Any]:
    fields: dict[str, Any] = {"cluster": cluster or f"hetrl-{scenario}", "workflow": workflow}
    if target is not None:
        fields["target"] = {"framework": target}
    problem = build_problem("placement", fields)
    t0 = time.perf_counter()
    r = solve(problem, solver, seed=0)
    wall = time.perf_counter() - t0
    bad = check_placement(problem, r.plan) if r.plan is not None else []
    groups = [sorted(g.tasks) for g in r.plan.groups] if r.plan is not None else []
    return {
        "scenario": scenario,
        "workflow": workflow,
        "target": target or "none",
        "solver": solver,
        "status": r.status.value,
        "objective": r.objective,
        "valid": r.plan is not None and not bad,
        "groups": len(groups),
        "grouping": " | ".join("+".join(g) for g in groups),
        "deterministic": r.deterministic,
        "wall_s": round(wall, 2),
    }


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target's objective over the unrestricted one of the same scenario and workflow."""
    free = {
        (r["scenario"], r["workflow"], r["solver"]): r["objective"]
        for r in rows
        if r["target"] == "none"
    }
    out = []
    for r in rows:
        base = free.get((r["scenario"], r["workflow"], r["solver"]))
        out.append(
            {
                **r,
                "ratio_to_unrestricted": (
                    r["objective"] / base if base and r["objective"] is not None else None
                ),
            }
        )
    return out


def report(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# What planning for a framework costs: HetRL testbed scenarios",
        "",
        f"Made by `{command}`. SHA-EA, seed 0, default work budget (deterministic). Ratio: the "
        "target's predicted iteration time over the unrestricted plan's (1.00 = free).",
        "",
        "| scenario | workflow | unrestricted s/it | verl s/it (ratio) | ROLL s/it (ratio) |",
        "|---|---|---|---|---|",
    ]
    by = {(r["scenario"], r["workflow"], r["target"]): r for r in rows if r["solver"] == "sha-ea"}
    for s in SCENARIOS:
        for w in WORKFLOWS:
            cells = []
            for t in ("none", "verl", "roll"):
                r = by.get((s, w, t))
                if r is None or r["objective"] is None:
                    cells.append("no plan")
                elif t == "none":
                    cells.append(f"{r['objective']:.1f}")
                else:
                    cells.append(f"{r['objective']:.1f} ({r['ratio_to_unrestricted']:.3f})")
            lines.append(f"| {s} | {w} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"## Exact, on {EXACT_CLUSTER} (ILP optima; SHA-EA's objective over the ILP's in brackets)",
        "",
        "| workflow | target | ILP s/it | ratio to unrestricted | SHA-EA / ILP |",
        "|---|---|---|---|---|",
    ]
    exact = {
        (r["workflow"], r["target"], r["solver"]): r for r in rows if r["scenario"] == EXACT_CLUSTER
    }
    for w in WORKFLOWS:
        for t in ("none", "verl", "roll"):
            ilp, sha = exact.get((w, t, "ilp")), exact.get((w, t, "sha-ea"))
            if ilp is None or ilp["objective"] is None:
                continue
            gap = f"{sha['objective'] / ilp['objective']:.3f}" if sha and sha["objective"] else "-"
            lines.append(
                f"| {w} | {t} | {ilp['objective']:.1f} ({ilp['status']}) | "
                f"{ilp['ratio_to_unrestricted']:.3f} | {gap} |"
            )
    lines += ["", "Groupings chosen:", ""]
    for r in rows:
        lines.append(
            f"- {r['scenario']} / {r['workflow']} / {r['target']} ({r['solver']}): {r['grouping']}"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Bars of each target's ratio to the unrestricted plan, per scenario and workflow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {(r["scenario"], r["workflow"], r["target"]): r for r in rows if r["solver"] == "sha-ea"}
    labels = [f"{s}\n{w}" for s in SCENARIOS for w in WORKFLOWS]
    fig, ax = plt.subplots(figsize=(11, 4))
    width = 0.38
    for i, target in enumerate(("verl", "roll")):
        values = [
            (by.get((s, w, target)) or {}).get("ratio_to_unrestricted") or 0.0
            for s in SCENARIOS
            for w in WORKFLOWS
        ]
        xs = [k + (i - 0.5) * width for k in range(len(labels))]
        ax.bar(xs, values, width, label=f"--target {target}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_ylabel("iteration time / unrestricted")
    ax.set_title("What planning for a framework costs (SHA-EA, HetRL testbed, 64 GPUs)")
    ax.legend()
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/placement-targets"))
    ap.add_argument("--solver", default="sha-ea")
    ap.add_argument("--scenarios", nargs="*", default=list(SCENARIOS))
    ap.add_argument("--workflows", nargs="*", default=list(WORKFLOWS))
    ap.add_argument(
        "--replot", action="store_true", help="redraw report and plot from --out's targets.json"
    )
    args = ap.parse_args(argv)
    if args.replot:
        redraw(args.out, "targets", report, plot, md="report.md")
        return
    rows = []
    for s in args.scenarios:
        for w in args.workflows:
            for t in TARGETS:
                rows.append(run_one(s, w, t, args.solver))
                print(rows[-1], flush=True)
    for w in args.workflows:
        for t in TARGETS:
            for solver in ("ilp", "sha-ea"):
                rows.append(run_one(EXACT_CLUSTER, w, t, solver, cluster=EXACT_CLUSTER))
                print(rows[-1], flush=True)
    rows = ratios(rows)
    command = command_line("benchmarks.placement_targets", argv)
    publish_rows(args.out, "targets", rows, command, report, plot, md="report.md")


if __name__ == "__main__":
    main()
