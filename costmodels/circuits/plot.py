"""``rlplan plan circuits --plot FILE``: the pair demand max(D(u->v), D(v->u)) as a heat map next to
the circuits allocated to each pair, with the bottleneck pair (Eq. 7) marked. matplotlib is
imported when drawing, not on import."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_circuits(
    problem: Any, plan: Any, breakdown: dict[str, Any], path: Path, title: str = ""
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import BoundaryNorm
    from matplotlib.ticker import MaxNLocator

    names = sorted(
        {v for pair in problem.pair_demand() for v in pair}
        | {v for c in plan.circuits for v in (c.a, c.b)}
    )
    index = {n: i for i, n in enumerate(names)}
    n = len(names)
    demand = np.zeros((n, n))
    for pair, b in problem.pair_demand().items():
        a, c = pair
        demand[index[a], index[c]] = demand[index[c], index[a]] = b / 1e9
    circuits = np.zeros((n, n))
    for c in plan.circuits:
        circuits[index[c.a], index[c.b]] = circuits[index[c.b], index[c.a]] = c.count
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.5), constrained_layout=True)
    for ax, data, label, cmap in (
        (axes[0], demand, "demand, GB (max of both directions)", "Blues"),
        (axes[1], circuits, "circuits allocated", "Oranges"),
    ):
        if data is circuits:  # counts: one colour per whole number of circuits, integer ticks
            top = max(1, int(data.max()))
            norm = BoundaryNorm(np.arange(0.5, top + 1.5), plt.get_cmap(cmap).N)
            im = ax.imshow(
                np.where(data > 0, data, np.nan), cmap=cmap, norm=norm, interpolation="nearest"
            )
            bar = fig.colorbar(im, ax=ax, shrink=0.8, label=label)
            bar.locator = MaxNLocator(integer=True, nbins=min(top, 10))
            bar.update_ticks()
        else:
            im = ax.imshow(np.where(data > 0, data, np.nan), cmap=cmap, interpolation="nearest")
            fig.colorbar(im, ax=ax, shrink=0.8, label=label)
        ax.set_title(label)
        if n <= 24:
            ax.set_xticks(range(n), names, rotation=90, fontsize=7)
            ax.set_yticks(range(n), names, fontsize=7)
        if n <= 16 and data is circuits:
            for i in range(n):
                for j in range(n):
                    if data[i, j]:
                        ax.text(j, i, f"{int(data[i, j])}", ha="center", va="center", fontsize=7)
    pair = breakdown.get("bottleneck_pair")
    if pair:
        i, j = index[pair[0]], index[pair[1]]
        for ax in axes:
            ax.scatter(
                [j, i],
                [i, j],
                marker="s",
                s=60,
                facecolors="none",
                edgecolors="red",
                linewidths=1.5,
            )
    uncovered = breakdown.get("uncovered_pairs", 0)
    fig.suptitle(
        f"{title}bottleneck {breakdown.get('bottleneck_s', 0):.4g} s (red)"
        + (
            f"; {uncovered} demanded pairs without a circuit "
            f"({breakdown.get('uncovered_gb', 0):.3g} GB)"
            if uncovered
            else ""
        )
    )
    fig.savefig(path, dpi=120)
    plt.close(fig)
