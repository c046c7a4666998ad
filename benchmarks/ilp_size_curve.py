"""How the placement ILP's time grows with the cluster, from 8 to 64 GPUs of the HetRL testbed.

The clusters are the HetRL testbed's first k nodes (``hetrl-single-region``: 3 nodes of 8
A100-40GB, 3 of 8 L40S, 2 of 8 L4, one region, 100 Gb/s), k = 1..8, so each size adds one node
and the 64-GPU end is the testbed itself; the workflow is HetRL's GRPO preset on Qwen3-8B
(``grpo-sync-qwen3-8b``, constant response lengths). Per size, one after another on one machine:

* the placement solver ``ilp`` with a :data:`TIME_LIMIT` cap: the ILP first on the cluster
  with its identical nodes merged (``formulations/placement/node_merge.py``, "The placement
  solver"), then on the cluster as it is when the merged optimum's plan costs more here and the
  direct ILP is within reach: its status, wall time and split (building the relaxed pairs, HiGHS
  master solves, expansions into exact options) of the run that decided, its incumbent, its
  proven bound, and which ILP proved it;
* the ILP on the cluster as it is alone (``merge_nodes=False``), with the same cap: its status,
  wall time and bound (0 when the cap stops it before its first master solve);
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
from formulations.placement.node_merge import merged_problem
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


def proved_by(ilp: Any) -> str:
    """Which ILP gave the bound: the merged cluster's (its plan costing the same here), the
    cluster's own, or the merged one's bound under an unproven plan."""
    merged = ilp.stats.get("merged")
    if merged is None:
        return "these nodes"
    if ilp.status == "optimal":
        return "merged" if "costs the same here" in ilp.message else "these nodes"
    return "merged bound"


def _run(nodes: int) -> dict[str, Any]:
    spec = cluster(nodes)
    problem = build_problem("placement", {"cluster": spec, "workflow": WORKFLOW})
    merged = merged_problem(problem)
    t0 = time.perf_counter()
    ilp = solve(problem, "ilp", seed=0, time_limit=TIME_LIMIT)
    ilp_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    direct = solve(problem, "ilp", seed=0, time_limit=TIME_LIMIT, merge_nodes=False)
    direct_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    sha = solve(problem, "sha-ea", seed=0)
    sha_wall = time.perf_counter() - t0
    st = ilp.stats
    bound = ilp.bound if ilp.bound else None
    return {
        "gpus": 8 * nodes,
        "mix": _mix(spec),
        "merged_mix": None if merged is None else _mix(merged.cluster.model_dump()),
        **ilp_fields(ilp, ilp_wall),
        "proved_by": proved_by(ilp) if bound else None,
        "merged_plan_here": (st.get("merged") or {}).get("plan_here"),
        "direct_status": direct.status,
        "direct_termination": direct.termination,
        "direct_wall_s": round(direct_wall, 2),
        "direct_objective": direct.objective,
        "direct_bound": direct.bound if direct.bound else None,
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
        f"instances). `{WORKFLOW}`; each ILP capped at {TIME_LIMIT:.0f} s per size; seconds on "
        "this machine (2 cores, shared), runs one after another. **ILP** is the placement "
        "solver `ilp`: the ILP on the cluster with its identical nodes merged first "
        "(`formulations/placement/node_merge.py`), proven optimal here when the merged "
        "optimum's plan costs the same here (proved by: merged), else the ILP on these nodes "
        "under that plan's cost when within reach (proved by: these nodes), else the merged "
        "bound. **Direct** is the ILP on the cluster as it is alone (`-O merge_nodes=false`); "
        "its bound - : the cap stopped it before its first master solve.",
        "",
        "| GPUs | mix | merged into | ILP | ILP wall s | build / master / expand s | pairs | "
        "ILP step s | bound s | gap | proved by | direct ILP (wall s) | direct bound s | "
        "SHA-EA step s (wall s) | SHA-EA / ILP | SHA-EA / bound |",
        "|---:|---|---|---|---:|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['gpus']} | {r['mix']} | {r.get('merged_mix') or '-'} | "
            f"{r['ilp_status']} ({r['ilp_termination']}) | "
            f"{r['ilp_wall_s']:.1f} | {r['build_s']:.0f} / {r['master_s']:.0f} / "
            f"{r['expand_s']:.0f} | {dash(r['pairs'], 'd')} | {dash(r['ilp_objective'], '.1f')} | "
            f"{dash(r['ilp_bound'], '.1f')} | {dash(r['ilp_gap'], '.1%')} | "
            f"{r.get('proved_by') or '-'} | "
            f"{r['direct_status']} ({r['direct_wall_s']:.1f}) | "
            f"{dash(r['direct_bound'], '.1f')} | "
            f"{dash(r['sha_ea_objective'], '.1f')} ({r['sha_ea_wall_s']:.0f}) | "
            f"{dash(r['sha_ea_over_ilp'], '.3f')} | {dash(r['sha_ea_over_bound'], '.3f')} |"
        )
    proven = [r["gpus"] for r in rows if r["ilp_status"] == "optimal"]
    direct = [r["gpus"] for r in rows if r["direct_status"] == "optimal"]
    open_ = [r for r in rows if r["ilp_status"] != "optimal"]
    lines += [
        "",
        f"Proven optimal by the ILP: {', '.join(map(str, proven)) or 'none'} GPUs; by the "
        f"ILP on the cluster as it is alone: {', '.join(map(str, direct)) or 'none'}.",
    ]
    for r in open_:
        text = (
            f"At {r['gpus']} GPUs the ILP's plan, {dash(r['ilp_objective'], '.2f')} s, is within "
            f"{dash(r['ilp_gap'], '.2%')} of the proven bound, {dash(r['ilp_bound'], '.2f')} s, "
            f"and SHA-EA's within {dash(_less(r['sha_ea_over_bound']), '.2%')}"
        )
        here, bound = r.get("merged_plan_here"), r.get("ilp_bound")
        if here and bound and r.get("proved_by") == "merged bound":
            text += (
                f": the merged optimum's plan costs {here:.2f} s here, {here / bound - 1:.2%} "
                "above the bound (a group that spans nodes pays their link, which merging made "
                "the intra-node one)"
                + (
                    ", and its groups configured again on these nodes are the ILP's plan"
                    if r["ilp_objective"] is not None and r["ilp_objective"] < here
                    else ""
                )
            )
        lines.append(text + ".")
    return "\n".join(lines) + "\n"


def _less(ratio: float | None) -> float | None:
    return None if ratio is None else ratio - 1


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    gpus = [r["gpus"] for r in rows]
    ax.plot(gpus, [r["ilp_wall_s"] for r in rows], "o-", label="ILP (identical nodes merged first)")
    ax.plot(gpus, [r["direct_wall_s"] for r in rows], "^:", label="ILP on the cluster as it is")
    for key, label in (("ilp", "ILP"), ("direct", "direct ILP")):
        capped = [r for r in rows if r[f"{key}_status"] != "optimal"]
        if capped:
            ax.plot(
                [r["gpus"] for r in capped],
                [r[f"{key}_wall_s"] for r in capped],
                "x",
                color="red",
                markersize=10,
                label=f"{label} not proven optimal" if key == "ilp" else None,
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
