"""Pictures of one simulated generation step: a per-instance timeline (running batch and KV tokens
over time) and the remaining-requests curve (OrchestrRL Fig. 11)."""

from __future__ import annotations

from pathlib import Path

from costmodels.generation.result import SimResult


def plot_simulation(result: SimResult, path: str | Path, title: str = "") -> None:
    """Write a two-panel PNG: batch size per instance over time, and requests left over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for i, timeline in enumerate(result.timelines):
        xs, ys = [], []
        for start, end, batch, _ in timeline:
            xs += [start, end]
            ys += [batch, batch]
        top.plot(
            xs,
            ys,
            lw=1,
            label=f"instance {i} (TP{result.gpus[i]})" if len(result.timelines) <= 8 else None,
        )
    top.set_ylabel("running requests")
    if len(result.timelines) <= 8:
        top.legend(fontsize=7, loc="upper right")
    times, left = result.remaining_curve()
    bottom.step(times, left, where="post")
    bottom.set_ylabel("requests not finished")
    bottom.set_xlabel("time (s)")
    top.set_title(
        title
        or f"makespan {result.makespan_s:.1f} s, {result.preemptions} preemptions, "
        f"idle {result.idle_gpu_s:.0f} GPU-s"
    )
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=110)
    plt.close(fig)
