"""Per-step pictures of a rollout plan (RollPacker Fig. 10a/b): rollout time and the longest kept
response per step, and each step's time split into rollout, exposed reward and exposed training."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _baseline_line(ax: Any, xs: list[int], baseline: dict[str, Any] | None, key: str) -> None:
    """The baseline's ``key`` per step as a dashed line over the plan's steps, when there is one."""
    if baseline:
        ax.plot(
            xs[: len(baseline["steps"])],
            [s[key] for s in baseline["steps"]][: len(xs)],
            "k--",
            marker="o",
            ms=3,
            label="baseline",
        )


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
    _baseline_line(a, xs, baseline, "rollout_s")
    a.set_ylabel("rollout time (s)")
    a.legend(fontsize=8)
    b.plot(xs, [s["max_response"] for s in steps], marker="o", label="this plan")
    _baseline_line(b, xs, baseline, "max_response")
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
    # a title ending in a colon is a prefix (``rlplan plan --plot``: "rollout by paper: "), as the
    # other problems' pictures take it; any other title is the whole title
    what = f"{breakdown['epoch_s'] / max(1, len(steps)):.1f} s per round"
    fig.suptitle(
        f"{title}{what}" if title.rstrip().endswith(":") else title or f"rollout plan: {what}"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
