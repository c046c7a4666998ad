"""How the placement ILP's time grows with the cluster, from 8 to 64 GPUs of the HetRL testbed.

The clusters are the HetRL testbed's first k nodes (``hetrl-single-region``: 3 nodes of 8
A100-40GB, 3 of 8 L40S, 2 of 8 L4, one region, 100 Gb/s), k = 1..8, so each size adds one node
and the 64-GPU end is the testbed itself; the workflow is HetRL's GRPO preset on Qwen3-8B
(``grpo-sync-qwen3-8b``, constant response lengths). Per size, one after another on one machine:

* the ILP (``formulations/placement/ilp.py``) with a :data:`TIME_LIMIT` cap: its status, wall
  time and split (building the relaxed pairs, HiGHS master solves, expansions into exact
  options), its incumbent and its proven bound (0 when the cap stops it before its first master
  solve);
* SHA-EA at its default budget (seed 0): its step, and its ratio to the ILP's incumbent and, when
  the ILP proved a bound, to the bound.

    python -m benchmarks.ilp_size_curve --out benchmarks/results/placement
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.publish import command_line, dash, parse_out_dir, publish_rows, save_figure
from costmodels.placement.presets import hetrl_single_region
from planner.io import build_problem
from planner.solve import solve

WORKFLOW = "grpo-sync-qwen3-8b"
#: the ILP's cap per size, seconds (the issue's target for the testbed is a proof in 10 min)
TIME_LIMIT = 300.0


def cluster(nodes: int) -> dict[str, Any]:
    """The HetRL testbed's first ``nodes`` nodes."""
    spec = hetrl_single_region()
    return {**spec, "name": f"testbed-{8 * nodes}", "nodes": spec["nodes"][:nodes]}


def _mix(spec: dict[str, Any]) -> str:
    counts: dict[str, int] = {}
    for n in spec["nodes"]:
        counts[n["gpu"]] = counts.get(n["gpu"], 0) + n["count"]
    return " + ".join(f"{c} {g}" for g, c in counts.items())


def ilp_fields(ilp: Any, wall: float) -> dict[str, Any]:
    """An ILP run's status, wall time, its split (building the relaxed pairs, HiGHS master
    solves, expansions) and the relaxed pairs it built."""
    st = ilp.stats
    return {
        "ilp_status": ilp.status,
        "ilp_termination": ilp.termination,
        "ilp_wall_s": round(wall, 2),
        "build_s": round(st.get("build_s", 0.0), 1),
        "master_s": round(st.get("master_s", 0.0), 1),
        "expand_s": round(st.get("expand_s", 0.0), 1),
        "pairs": st.get("pairs"),
    }


def _run(nodes: int) -> dict[str, Any]:
    spec = cluster(nodes)
    problem = build_problem("placement", {"cluster": spec, "workflow": WORKFLOW})
    t0 = time.perf_counter()
    ilp = solve(problem, "ilp", seed=0, time_limit=TIME_LIMIT)
    ilp_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    sha = solve(problem, "sha-ea", seed=0)
    sha_wall = time.perf_counter() - t0
    st = ilp.stats
    bound = ilp.bound if ilp.bound else None
    return {
        "gpus": 8 * nodes,
        "mix": _mix(spec),
        **ilp_fields(ilp, ilp_wall),
        "iterations": st.get("iterations"),
        "ilp_objective": ilp.objective,
        "ilp_bound": bound,
        "ilp_gap": (ilp.objective / bound - 1) if bound and ilp.objective else None,
        "sha_ea_objective": sha.objective,
        "sha_ea_wall_s": round(sha_wall, 1),
        "sha_ea_over_ilp": (
            sha.objective / ilp.objective if sha.objective and ilp.objective else None
        ),
        "sha_ea_over_bound": sha.objective / bound if bound and sha.objective else None,
    }


def report(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# The placement ILP from 8 to 64 GPUs (the HetRL testbed's first nodes)",
        "",
        f"Made by `{command}` (`benchmarks/ilp_size_curve.py`, whose docstring defines the "
        f"instances). `{WORKFLOW}`; the ILP capped at {TIME_LIMIT:.0f} s per size; seconds on "
        "this machine (2 cores, shared), runs one after another. Bound 0 (shown -): the cap "
        "stopped the ILP before its first master solve.",
        "",
        "| GPUs | mix | ILP | ILP wall s | build / master / expand s | pairs | ILP step s | "
        "bound s | gap | SHA-EA step s (wall s) | SHA-EA / ILP | SHA-EA / bound |",
        "|---:|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['gpus']} | {r['mix']} | {r['ilp_status']} ({r['ilp_termination']}) | "
            f"{r['ilp_wall_s']:.1f} | {r['build_s']:.0f} / {r['master_s']:.0f} / "
            f"{r['expand_s']:.0f} | {dash(r['pairs'], 'd')} | {dash(r['ilp_objective'], '.1f')} | "
            f"{dash(r['ilp_bound'], '.1f')} | {dash(r['ilp_gap'], '.1%')} | "
            f"{dash(r['sha_ea_objective'], '.1f')} ({r['sha_ea_wall_s']:.0f}) | "
            f"{dash(r['sha_ea_over_ilp'], '.3f')} | {dash(r['sha_ea_over_bound'], '.3f')} |"
        )
    proven = [r["gpus"] for r in rows if r["ilp_status"] == "optimal"]
    capped = [r for r in rows if r["ilp_status"] != "optimal"]
    lines += [
        "",
        f"Proven: {', '.join(map(str, proven)) or 'none'} GPUs. "
        + (
            f"From {capped[0]['gpus']} GPUs ({capped[0]['mix']}) the cap binds"
            + (
                " before the first master solve: the relaxed pairs (every task subset's "
                "compositions over the node classes) take longer to build than the cap."
                if capped[0]["ilp_bound"] is None
                else "."
            )
            if capped
            else "Every size is proven."
        ),
    ]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    gpus = [r["gpus"] for r in rows]
    ax.plot(gpus, [r["ilp_wall_s"] for r in rows], "o-", label="ILP")
    capped = [r for r in rows if r["ilp_status"] != "optimal"]
    if capped:
        ax.plot(
            [r["gpus"] for r in capped],
            [r["ilp_wall_s"] for r in capped],
            "x",
            color="red",
            markersize=10,
            label=f"ILP capped at {TIME_LIMIT:.0f} s (not proven)",
        )
    ax.plot(gpus, [r["sha_ea_wall_s"] for r in rows], "s--", label="SHA-EA (default budget)")
    ax.set_yscale("log")
    ax.set_xlabel("GPUs (the HetRL testbed's first nodes)")
    ax.set_ylabel("wall seconds")
    ax.set_xticks(gpus)
    ax.legend(fontsize=7)
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> None:
    out: Path = parse_out_dir(__doc__ or "", "benchmarks/results/placement", argv)
    rows = []
    for nodes in range(1, 9):
        rows.append(_run(nodes))
        print(rows[-1], flush=True)
    publish_rows(
        out,
        "ilp_size_curve",
        rows,
        command_line("benchmarks.ilp_size_curve", argv),
        report,
        plot,
    )


if __name__ == "__main__":
    main()
