"""Shipped fleets: the GRPO jobs people run today (``costmodels.placement.presets``' H100/H800
job presets: Qwen3-8B, Llama-3.1-8B and Qwen3-32B as verl's example scripts run them) on
RollMux's testbed pools (``costmodels.fleet.problem``'s defaults)."""

from __future__ import annotations

import random
from typing import Any

from costmodels.problem import Preset

#: (workflow preset, GPUs per pool): the 32B job asks for two nodes of each pool (RollMux Table 3
#: gives its 32B jobs 16 + 16 GPUs), the 8B ones one node
JOB_TYPES = (
    ("grpo-sync-qwen3-8b-verl", 8),
    ("grpo-sync-llama3.1-8b", 8),
    ("grpo-sync-qwen3-32b", 16),
)


def six_jobs() -> dict[str, Any]:
    slos = (1.5, 2.0)
    jobs = [
        {
            "name": f"{wf.removeprefix('grpo-sync-')}-{k}",
            "workflow": wf,
            "rollout_gpus": gpus,
            "train_gpus": gpus,
            "slo": slos[k],
        }
        for wf, gpus in JOB_TYPES
        for k in range(2)
    ]
    return {
        "name": "fleet-six",
        "description": "six GRPO jobs (Qwen3-8B, Llama-3.1-8B, Qwen3-32B) on H20 + H800 pools",
        "jobs": jobs,
    }


def philly_jobs(n: int = 30, seed: int = 0) -> dict[str, Any]:
    """``n`` jobs arriving and running as the first ``n`` jobs of the shipped Philly sample
    (``costmodels.cosched.arrivals.read_philly_sample``: real arrivals and running times, no RL
    jobs), each a job type of :data:`JOB_TYPES` drawn uniformly and an SLO ~ U(1, 2) (RollMux
    §7.4-7.5), seeded."""
    from costmodels.cosched.arrivals import read_philly_sample

    rng = random.Random(seed)
    times = read_philly_sample()[:n]
    t0 = times[0][0]
    jobs = []
    for i, (arrival, duration) in enumerate(times):
        wf, gpus = rng.choice(JOB_TYPES)
        jobs.append(
            {
                "name": f"{wf.removeprefix('grpo-sync-')}-{i}",
                "workflow": wf,
                "rollout_gpus": gpus,
                "train_gpus": gpus,
                "slo": round(rng.uniform(1, 2), 3),
                "arrival_s": round(arrival - t0, 1),
                "duration_s": round(duration, 1),
            }
        )
    return {
        "name": f"fleet-philly-{n}",
        "description": f"{n} GRPO jobs at the Philly sample's first {n} arrivals, H20 + H800",
        "jobs": jobs,
    }


def _small_workflow(model: str) -> dict[str, Any]:
    return {
        "algorithm": "grpo",
        "mode": "sync",
        "models": {"actor": model},
        "global_batch": 16,
        "responses_per_prompt": 4,
        "prompt_length": 256,
        "response_length": 1024,
        "response_lengths": {"distribution": "lognormal", "median": 300, "sigma": 0.9},
        "old_log_prob_pass": False,  # HetRL's DAG, as the placement presets
    }


def two_small_jobs(phases: str = "worst-case") -> dict[str, Any]:
    """Two small GRPO jobs (Qwen3-1.7B, Qwen3-4B), 2 + 2 GPUs each: seconds to plan."""
    return {
        "name": f"fleet-two-small-{phases}",
        "description": "two small GRPO jobs (Qwen3-1.7B, Qwen3-4B) on 2 + 2 GPUs each",
        "phases": phases,
        "jobs": [
            {
                "name": "a",
                "workflow": _small_workflow("Qwen3-1.7B"),
                "rollout_gpus": 2,
                "train_gpus": 2,
            },
            {
                "name": "b",
                "workflow": _small_workflow("Qwen3-4B"),
                "rollout_gpus": 2,
                "train_gpus": 2,
            },
        ],
    }


def fleet_presets() -> tuple[Preset, ...]:
    return (
        Preset(
            "fleet-two-small",
            "fleet",
            "two small GRPO jobs (Qwen3-1.7B, Qwen3-4B) on 2 + 2 GPUs each",
            two_small_jobs,
        ),
        Preset(
            "fleet-six", "fleet", "six GRPO jobs on H20 + H800 pools (RollMux testbed)", six_jobs
        ),
        Preset(
            "fleet-philly-30",
            "fleet",
            "30 GRPO jobs at the Philly sample's arrivals, H20 + H800 pools",
            philly_jobs,
        ),
    )
