"""Shipped co-scheduling job mix (RollMux Table 6 profiles)."""

from __future__ import annotations

from typing import Any

from costmodels.catalog import reference_table
from costmodels.problem import Preset


def jobs_mixed() -> dict[str, Any]:
    # one job per RollMux Table 6 profile (midpoints), SLO 1.5x, 8+8 GPUs
    jobs = []
    for row in reference_table("rollmux_profiles.csv"):
        jobs.append({
            "name": f"{row['workload']}-{row['size']}",
            "rollout_gpus": 8, "train_gpus": 8,
            "t_rollout_s": (float(row["t_roll_min_s"]) + float(row["t_roll_max_s"])) / 2,
            "t_train_s": (float(row["t_train_min_s"]) + float(row["t_train_max_s"])) / 2,
            "slo": 1.5,
        })
    return {"name": "rollmux-mixed", "description": "nine RL jobs, one per RollMux Table 6 profile (midpoints), SLO 1.5x",
            "jobs": jobs}



def cosched_presets() -> tuple[Preset, ...]:
    return (Preset("rollmux-mixed", "jobs", "nine RL jobs from RollMux Table 6 profiles", jobs_mixed),)
