"""Shipped co-scheduling job mix (RollMux Table 6 profiles)."""

from __future__ import annotations

from typing import Any

from costmodels.catalog import reference_table
from costmodels.problem import Preset


def jobs_mixed() -> dict[str, Any]:
    # one job per RollMux Table 6 profile (midpoints), SLO 1.5x, 8+8 GPUs
    jobs = []
    for row in reference_table("rollmux_profiles.csv"):
        jobs.append(
            {
                "name": f"{row['workload']}-{row['size']}",
                "rollout_gpus": 8,
                "train_gpus": 8,
                "t_rollout_s": (float(row["t_roll_min_s"]) + float(row["t_roll_max_s"])) / 2,
                "t_train_s": (float(row["t_train_min_s"]) + float(row["t_train_max_s"])) / 2,
                "slo": 1.5,
            }
        )
    return {
        "name": "rollmux-mixed",
        "description": "nine RL jobs, one per RollMux Table 6 profile (midpoints), SLO 1.5x",
        "jobs": jobs,
    }


def table6_jobs(
    n: int,
    seed: int = 0,
    workload: str = "mixed",
    slo: tuple[float, float] = (1.0, 2.0),
    gpus: int = 8,
    max_group_size: int = 5,
    large_share: float = 0.0,
) -> dict[str, Any]:
    """``n`` jobs drawn from RollMux Table 6 (§7.5): a workload (balanced, rollout_heavy,
    train_heavy) and size per job (uniform over the nine profiles for ``mixed``), phase durations
    at the profile's maximum (conservative planning) and SLO ~ U(``slo``), seeded. A
    ``large_share`` of the jobs (drawn apart, so the rest stay as they were) take twice ``gpus``
    in both pools: the mixed 8/16-GPU sets on which the offline optimum's pinnings matter."""
    import random

    rng = random.Random(seed)
    large = set(random.Random(f"large-{seed}").sample(range(n), round(n * large_share)))
    rows = [
        r
        for r in reference_table("rollmux_profiles.csv")
        if workload == "mixed" or r["workload"] == workload
    ]
    if not rows:
        raise ValueError(f"unknown workload {workload!r}")
    jobs = []
    for i in range(n):
        r = rng.choice(rows)
        jobs.append(
            {
                "name": f"{r['workload']}-{r['size']}-{i}" + ("-x2" if i in large else ""),
                "rollout_gpus": gpus * (2 if i in large else 1),
                "train_gpus": gpus * (2 if i in large else 1),
                "t_rollout_s": float(r["t_roll_max_s"]),
                "t_train_s": float(r["t_train_max_s"]),
                "slo": round(rng.uniform(*slo), 3),
                "arrival_s": float(i),
            }
        )
    sizes = f", {len(large)} of them on {2 * gpus} GPUs" if large else ""
    return {
        "name": f"table6-{workload}-{n}-s{seed}" + (f"-large{len(large)}" if large else ""),
        "description": f"{n} jobs from RollMux Table 6 ({workload}), SLO ~ U{slo}{sizes}",
        "max_group_size": max_group_size,
        "jobs": jobs,
    }


def cosched_presets() -> tuple[Preset, ...]:
    return (
        Preset("rollmux-mixed", "jobs", "nine RL jobs from RollMux Table 6 profiles", jobs_mixed),
        Preset(
            "table6-mixed-30",
            "jobs",
            "30 jobs drawn from RollMux Table 6 (mixed), SLO ~ U(1, 2)",
            lambda: table6_jobs(30),
        ),
        Preset(
            "table6-mixed-sizes-30",
            "jobs",
            "30 Table 6 jobs, a third of them on 16 rollout and 16 training GPUs",
            lambda: table6_jobs(30, large_share=1 / 3),
        ),
    )
