"""Tiny rollout jobs whose optimum over the plan space the exhaustive solver proves at test time."""

from __future__ import annotations

from typing import Any

from costmodels.problem import Canned
from costmodels.rollout.problem import JobSpec, RolloutProblem


def tiny_workload(
    *, gpus: int = 2, p0: int = 4, r0: int = 2, dataset: int = 16, max_response: int = 2048
) -> dict[str, Any]:
    """The workload section of a 3B job on ``gpus`` single-GPU servers, ``dataset`` prompts of
    P0 x R0 (the tensor-parallel degree left to the plan)."""
    return {
        "model": "Qwen2.5-3B",
        "gpu": "H800",
        "gpus": gpus,
        "gpus_per_node": 1,
        "prompts_per_step": p0,
        "responses_per_prompt": r0,
        "max_response": max_response,
        "dataset_prompts": dataset,
        "training": {"replica_gpus": 1},
    }


def tiny_job(
    *,
    gpus: int = 2,
    p0: int = 4,
    r0: int = 2,
    dataset: int = 16,
    max_response: int = 2048,
    seed: int = 0,
    **workload: Any,
) -> RolloutProblem:
    """A 3B job on ``gpus`` single-GPU servers (TP 1 only), ``dataset`` prompts of P0 x R0."""
    size = tiny_workload(gpus=gpus, p0=p0, r0=r0, dataset=dataset, max_response=max_response)
    spec = {"seed": seed, "workload": {**size, "tp": 1, **workload}}
    job = JobSpec.model_validate(spec)
    job.check()
    return RolloutProblem(job)


def canned_rollouts() -> list[Canned]:
    return [
        Canned("tiny-mixed-reward", lambda: tiny_job(), reference="exhaustive"),
        Canned(
            "tiny-code-only",
            lambda: tiny_job(seed=1, reward={"rule": 0, "sandbox": 1, "judge": 0}),
            reference="exhaustive",
        ),
    ]
