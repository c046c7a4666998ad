"""RollMux long-tail migration (§4.3; Fig. 11 right): the throughput gain of consolidating a
rollout's last 20% of responses onto a few GPUs and starting the next job's rollout on the rest,
replayed on the generation simulator for pairs of jobs sharing 8 H20 rollout GPUs and 8 H800
training GPUs (heavy-tailed lengths, four meta-iterations, five seeds; paper: 1.06-1.28x, most
for long outputs, least for dissimilar pairs).

    python -m benchmarks.cosched_migration --out benchmarks/results/cosched
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from benchmarks.publish import command_line, parse_out_dir, save_figure, write_csv, write_json
from heuristics.cosched.group_replay import ReplayJob, migration_gain

PAIRS = {
    "7B-4k + 7B-4k": (("Qwen2.5-7B", 4096), ("Qwen2.5-7B", 4096)),
    "7B-8k + 7B-8k": (("Qwen2.5-7B", 8192), ("Qwen2.5-7B", 8192)),
    "14B-8k + 14B-8k": (("Qwen2.5-14B", 8192), ("Qwen2.5-14B", 8192)),
    "7B-8k + 14B-8k": (("Qwen2.5-7B", 8192), ("Qwen2.5-14B", 8192)),
    "14B-16k + 14B-16k": (("Qwen2.5-14B", 16384), ("Qwen2.5-14B", 16384)),
}
SEEDS = range(5)


def run() -> list[dict]:
    rows = []
    for label, pair in PAIRS.items():
        jobs = [
            ReplayJob(f"job{i}", model, max_len=max_len) for i, (model, max_len) in enumerate(pair)
        ]
        for seed in SEEDS:
            t0 = time.perf_counter()
            g = migration_gain(jobs, iterations=4, seed=seed)
            rows.append({"pair": label, "seed": seed, **g, "wall_s": time.perf_counter() - t0})
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(PAIRS)
    data = [[r["gain"] for r in rows if r["pair"] == p] for p in labels]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.boxplot(data, tick_labels=labels)
    ax.axhspan(1.06, 1.28, color="grey", alpha=0.2, label="paper 1.06-1.28x")
    ax.axhline(1.0, color="black", lw=0.5)
    ax.set_ylabel("throughput gain of migration")
    ax.legend(fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    save_figure(fig, path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    out = parse_out_dir(__doc__, "bench-out/cosched", argv)
    rows = run()
    write_csv(out / "migration.csv", rows)
    summary = {
        p: {
            "median_gain": float(np.median([r["gain"] for r in rows if r["pair"] == p])),
            "min": float(min(r["gain"] for r in rows if r["pair"] == p)),
            "max": float(max(r["gain"] for r in rows if r["pair"] == p)),
        }
        for p in PAIRS
    }
    write_json(
        out / "migration.json",
        {
            "command": command_line("benchmarks.cosched_migration", argv),
            "summary": summary,
            "paper": [1.06, 1.28],
            "rows": rows,
        },
    )
    plot(rows, out / "migration.png")
    for p, v in summary.items():
        print(p, {k: round(x, 3) for k, x in v.items()})


if __name__ == "__main__":
    main()
