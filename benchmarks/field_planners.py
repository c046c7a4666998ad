"""The field's planners against SHA-EA on HetRL's 64-GPU testbed, at equal footing: every solver
on its own work budget, so the comparison is the same on any machine (``docs/placement.md``,
"The field's planners").

The ``scenarios`` suite gives every solver the same 60 s; SHA-EA's result there depends on how
many evaluations the machine does in 60 s (54-127 on the 2-core machine of the last publication,
178-323 on the one before), while ReaL's chain (30 000 proposals) and RLinf's enumeration finish
in 2-40 s and are the same everywhere. Here every solver runs without a time limit, so on its
default work budget (SHA-EA: 300 evaluations, its seeds on theirs; ReaL: 30 000 proposals;
RLinf, verl and StreamRL: their sweeps; seed 0) under its default time cap (300 s), which a row
says when it binds (``planner.solve``: a time limit would turn SHA-EA into an anytime search).
Per instance: each solver's iteration time, its wall time, and each peer's ratio to SHA-EA (> 1:
SHA-EA's plan is faster). Every plan is checked by the validator.

    python -m benchmarks.field_planners --out benchmarks/results/field-planners
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.publish import command_line, instance_args, publish_rows, redraw, save_figure
from costmodels.placement.check import check_placement
from planner import solve
from planner.io import build_problem

CLUSTERS = ("single-region", "multi-region-hybrid", "multi-country", "multi-continent")
WORKFLOWS = ("grpo-sync-qwen3-8b", "ppo-sync-qwen3-8b", "grpo-async-qwen3-8b", "ppo-async-qwen3-8b")
SOLVERS = ("sha-ea", "real", "rlinf", "verl", "streamrl")
PEERS = {"real": "ReaL", "rlinf": "RLinf", "verl": "verl", "streamrl": "StreamRL"}


def run_instance(cluster: str, workflow: str) -> dict[str, Any]:
    """Every solver of :data:`SOLVERS` on one testbed scenario, on its own work budget."""
    problem = build_problem("placement", {"cluster": f"hetrl-{cluster}", "workflow": workflow})
    row: dict[str, Any] = {"cluster": cluster, "workflow": workflow}
    for s in SOLVERS:
        r = solve(problem, s, seed=0)
        assert r.plan is not None, f"{s} found no plan on {cluster}/{workflow}: {r.message}"
        bad = check_placement(problem, r.plan)
        assert not bad, f"{s} on {cluster}/{workflow}: {bad}"
        row[f"{s}_s"] = r.objective
        row[f"{s}_wall_s"] = round(r.wall_time_s, 1)
        row[f"{s}_clock"] = r.clock
    for s in PEERS:
        row[f"{s}_over_sha_ea"] = row[f"{s}_s"] / row["sha-ea_s"]
    return row


def report(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# The field's planners against SHA-EA on the 64-GPU testbed, each on its work budget",
        "",
        f"Made by `{command}` (`benchmarks/field_planners.py`). HetRL §5.2's four network "
        "scenarios x four Qwen3-8B workflows; SHA-EA at its default 300 evaluations, ReaL's "
        "30 000 proposals, RLinf's and the baselines' whole sweeps, seed 0, no time limit (each "
        "solver's default cap, 300 s, is a safety net). Ratio: the peer's iteration time over "
        "SHA-EA's (> 1: SHA-EA's plan is faster). Wall times are of this machine.",
        "",
        "| scenario | workflow | SHA-EA s/it | ReaL | RLinf | verl | StreamRL | SHA-EA wall s |"
        " ReaL wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        peers = " | ".join(f"{r[f'{s}_s']:.1f} ({r[f'{s}_over_sha_ea']:.2f})" for s in PEERS)
        lines.append(
            f"| {r['cluster']} | {r['workflow']} | {r['sha-ea_s']:.1f} | {peers} | "
            f"{r['sha-ea_wall_s']:.0f} | {r['real_wall_s']:.0f} |"
        )
    lines.append("")
    for s, title in PEERS.items():
        ratios = [r[f"{s}_over_sha_ea"] for r in rows]
        worse = sum(x < 1 - 1e-9 for x in ratios)
        lines.append(
            f"- {title} / SHA-EA: {min(ratios):.3f}-{max(ratios):.3f}; "
            f"{title} beats SHA-EA on {worse} of {len(ratios)}."
        )
    bound = [
        f"{r['cluster']}/{r['workflow']} {s}: {r[f'{s}_clock']}"
        for r in rows
        for s in SOLVERS
        if r[f"{s}_clock"]
    ]
    lines.append(
        "- Time caps that bound: "
        + (
            "; ".join(bound)
            if bound
            else "none (every row is decided by the work budgets: the same on any machine)."
        )
    )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Each peer's iteration time over SHA-EA's, per instance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    x = range(len(rows))
    for s, title in PEERS.items():
        ax.plot(x, [r[f"{s}_over_sha_ea"] for r in rows], "o", label=title)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(
        list(x),
        [f"{r['cluster']}\n{r['workflow'].replace('-qwen3-8b', '')}" for r in rows],
        rotation=90,
        fontsize=6,
    )
    ax.set_ylabel("peer s/it over SHA-EA's")
    ax.set_title("64-GPU testbed, every solver on its work budget", fontsize=9)
    ax.legend(fontsize=7)
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> None:
    args = instance_args(
        __doc__ or "", "benchmarks/results/field-planners", CLUSTERS, WORKFLOWS, argv
    )
    if args.replot:
        redraw(args.out, "results", report, plot, md="README.md")
        return
    rows = []
    for c in args.clusters:
        for w in args.workflows:
            row = run_instance(c, w)
            rows.append(row)
            print({k: v for k, v in row.items() if not k.endswith("_clock")}, flush=True)
    command = command_line("benchmarks.field_planners", argv)
    publish_rows(args.out, "results", rows, command, report, plot, md="README.md")


if __name__ == "__main__":
    main()
