"""``rlplan plan broadcast --plot FILE``: a timeline of the Phase A waves (circuits per wave) and
the Phase B fan-out."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_broadcast(
    problem: Any, plan: Any, breakdown: dict[str, Any], path: Path, title: str = ""
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.5), constrained_layout=True)
    t = 0.0
    for k, (wave, dur) in enumerate(zip(plan.phase_a, breakdown["wave_s"], strict=True)):
        ax.barh(1, dur, left=t, color="tab:blue" if k % 2 == 0 else "tab:cyan", edgecolor="white")
        if len(plan.phase_a) <= 40:
            ax.text(
                t + dur / 2,
                1,
                f"{sum(e.circuits for e in wave.edges)}",
                ha="center",
                va="center",
                fontsize=7,
                color="white",
            )
        t += dur
    if breakdown["phase_b_s"]:
        ax.barh(0, breakdown["phase_b_s"], left=t, color="tab:orange")
    ax.set_yticks(
        [0, 1], ["Phase B: intra-PoD fan-out", "Phase A: cross-PoD waves\n(circuits per wave)"]
    )
    ax.set_xlabel("seconds")
    ax.set_title(
        f"{title}weight sync {breakdown['total_s']:.3g} s: {breakdown['waves']} waves, "
        f"{breakdown['inter_pod_gb']:.0f} GB across PoD boundaries"
    )
    fig.savefig(path, dpi=120)
    plt.close(fig)
