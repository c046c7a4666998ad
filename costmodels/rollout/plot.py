"""Per-step pictures of a rollout plan (RollPacker Fig. 10a/b): rollout time and the longest kept
response per step, and each step's time split into rollout, exposed reward and exposed training."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_rollout(
    problem: Any,
    plan: Any,
    breakdown: dict[str, Any],
    path: Path,
    title: str = "",
    baseline: dict[str, Any] | None = None,
) -> None:
    """``baseline`` (another plan's breakdown, e.g. veRL's) is drawn beside it when given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = breakdown["steps"]
    xs = list(range(1, len(steps) + 1))
    fig, (a, b, c) = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    hatch = {"long": "//", "short": "", "plain": ""}
    a.bar(xs, [s["rollout_s"] for s in steps], color="tab:blue", label="this plan", hatch=None)
    for x, s in zip(xs, steps, strict=True):
        if s["kind"] == "long":
            a.bar(x, s["rollout_s"], color="tab:blue", hatch=hatch["long"], edgecolor="white")
    if baseline:
        a.plot(
            xs[: len(baseline["steps"])],
            [s["rollout_s"] for s in baseline["steps"]][: len(xs)],
            "k--",
            marker="o",
            ms=3,
            label="baseline",
        )
    a.set_ylabel("rollout time (s)")
    a.legend(fontsize=8)
    b.plot(xs, [s["max_response"] for s in steps], marker="o", label="this plan")
    if baseline:
        b.plot(
            xs[: len(baseline["steps"])],
            [s["max_response"] for s in baseline["steps"]][: len(xs)],
            "k--",
            marker="o",
            ms=3,
            label="baseline",
        )
    b.set_ylabel("max response (tokens)")
    b.legend(fontsize=8)
    bottom = [0.0] * len(steps)
    for key, colour, label in (
        ("reconfig_s", "tab:gray", "TP switch"),
        ("rollout_s", "tab:blue", "rollout"),
        ("reward_s", "tab:orange", "reward (exposed)"),
        ("train_s", "tab:green", "training (exposed)"),
    ):
        vals = [s[key] for s in steps]
        c.bar(xs, vals, bottom=bottom, color=colour, label=label)
        bottom = [u + v for u, v in zip(bottom, vals, strict=True)]
    c.set_ylabel("step time (s)")
    c.set_xlabel("step (hatched: long round)")
    c.legend(fontsize=8, ncol=4)
    fig.suptitle(
        title or f"rollout plan: {breakdown['epoch_s'] / max(1, len(steps)):.1f} s per round"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
