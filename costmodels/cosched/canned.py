"""Tiny co-scheduling job sets whose optimum the brute-force solver proves at test time."""

from __future__ import annotations

from typing import Any

from costmodels.cosched.problem import CoscheduleProblem, JobsSpec
from costmodels.problem import Canned


def tiny_jobs(
    jobs: list[tuple[float, float, float]],
    *,
    gpus: int = 8,
    max_group_size: int = 5,
    memory: float = 2048,
    sizes: list[int] | None = None,
) -> CoscheduleProblem:
    """Jobs ``(t_rollout_s, t_train_s, slo)``, each on ``gpus`` rollout and training GPUs (or
    ``sizes[i]`` of each)."""
    spec: dict[str, Any] = {
        "max_group_size": max_group_size,
        "rollout_pool": {"gpu": "H20", "host_memory_gb_per_node": memory},
        "train_pool": {"gpu": "H800", "host_memory_gb_per_node": memory},
        "jobs": [
            {
                "name": f"j{i}",
                "rollout_gpus": sizes[i] if sizes else gpus,
                "train_gpus": sizes[i] if sizes else gpus,
                "t_rollout_s": r,
                "t_train_s": t,
                "slo": s,
                "rollout_host_memory_gb": 300,
                "train_host_memory_gb": 400,
            }
            for i, (r, t, s) in enumerate(jobs)
        ],
    }
    js = JobsSpec.model_validate(spec)
    js.check()
    return CoscheduleProblem(js)


def canned_coscheds() -> list[Canned]:
    ref = "bruteforce"
    return [
        Canned(
            "complementary-pair", lambda: tiny_jobs([(100, 20, 1.5), (20, 100, 1.5)]), reference=ref
        ),
        Canned(
            "rollout-heavy-trio",
            lambda: tiny_jobs([(200, 50, 2.0), (150, 40, 1.8), (100, 30, 1.3)]),
            reference=ref,
        ),
        Canned(
            "tight-memory-four",
            lambda: tiny_jobs(
                [(80, 60, 1.6), (60, 80, 1.6), (50, 50, 1.2), (90, 30, 2.0)], memory=700
            ),
            reference=ref,
        ),
    ]
