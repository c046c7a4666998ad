"""Pictures of co-scheduling: provisioning cost and GPUs over a trace (one line per policy,
RollMux Fig. 15), and one group's round-robin meta-iterations as a Gantt chart (§4.3, Fig. 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _step(
    ax: Any, timeline: list[dict[str, float]], key: str, label: str, scale: float = 1.0, **kw: Any
) -> None:
    xs = [t["time"] / 3600 for t in timeline]
    ys = [t[key] * scale for t in timeline]
    ax.step(xs, ys, where="post", label=label, lw=1, **kw)


def draw_gantt(ax: Any, rows: list[dict[str, Any]], rollout_nodes: int, title: str = "") -> None:
    """Rows of ``round_robin_schedule``: one lane per rollout node and one for the training pool."""
    import matplotlib.pyplot as plt

    jobs = list(dict.fromkeys(r["job"] for r in rows))
    colors = {j: plt.get_cmap("tab10")(i % 10) for i, j in enumerate(jobs)}
    lanes = [f"rollout node {n}" for n in range(rollout_nodes)] + ["training pool"]
    for r in rows:
        where = [rollout_nodes] if r["pool"] == "train" else r["nodes"]
        for lane in where:
            ax.barh(
                lane,
                r["end"] - r["start"],
                left=r["start"],
                color=colors[r["job"]],
                edgecolor="black",
                lw=0.4,
                hatch="//" if r["phase"] == "rollout" and r["pool"] == "train" else None,
            )
    ax.set_yticks(range(len(lanes)), lanes, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[j]) for j in jobs]
    ax.legend(handles, jobs, fontsize=7, loc="upper right", ncol=min(3, len(jobs)))
    ax.set_title(title, fontsize=9)


def plot_trace(
    results: list[Any],
    gantt: tuple[list[dict[str, Any]], int, str] | None,
    path: str | Path,
    title: str = "",
) -> None:
    """A PNG: cost ($/h) over time, GPUs over time (rollout and training pools) for each
    :class:`~heuristics.cosched.cluster_trace.TraceResult`, and optionally one group's Gantt chart
    (``(rows, rollout_nodes, title)``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 3 if gantt else 2
    fig, axes = plt.subplots(panels, 1, figsize=(10, 3.2 * panels))
    cost_ax, gpu_ax = axes[0], axes[1]
    for i, r in enumerate(results):
        color = plt.get_cmap("tab10")(i % 10)
        _step(
            cost_ax,
            r.timeline,
            "cost_per_h",
            f"{r.policy} (mean {r.mean_cost_per_h:,.0f} $/h, SLO {r.slo_attainment:.0%})",
            color=color,
        )
        _step(gpu_ax, r.timeline, "rollout_gpus", f"{r.policy} rollout", color=color, ls="-")
        _step(gpu_ax, r.timeline, "train_gpus", f"{r.policy} training", color=color, ls="--")
    cost_ax.set_ylabel("cost ($/h)")
    cost_ax.legend(fontsize=7)
    cost_ax.set_title(title, fontsize=10)
    gpu_ax.set_ylabel("GPUs (solid rollout, dashed training)")
    gpu_ax.set_xlabel("time (h)")
    if gantt:
        draw_gantt(axes[2], *gantt)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=110)
    plt.close(fig)
