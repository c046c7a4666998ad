"""RL jobs for co-scheduling on shared rollout and training pools (RollMux §4.1).

Only the data shapes live here; the solvers come with the co-scheduling issue. Each job runs a
rollout phase on ``rollout_gpus`` and a training phase on ``train_gpus`` per iteration, with solo
phase durations in seconds, an SLO as the largest tolerated slowdown of its iteration time over
running alone (RollMux Appendix: SLO ~ U(1, 2)), and host-memory footprints used to keep paused
jobs resident (RollMux Table 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import get_gpu, get_model
from costmodels.errors import SpecError
from costmodels.limits import MAX_JOBS, MAX_SECONDS, MAX_SIMULATED_GPUS

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class RLJobSpec(BaseModel):
    model_config = _STRICT

    name: str = Field(min_length=1)
    model: str | None = None
    rollout_gpus: int = Field(gt=0, le=MAX_SIMULATED_GPUS)
    train_gpus: int = Field(gt=0, le=MAX_SIMULATED_GPUS)
    t_rollout_s: float = Field(gt=0, le=MAX_SECONDS)
    t_train_s: float = Field(gt=0, le=MAX_SECONDS)
    slo: float = Field(ge=1, le=1e6, description="max iteration-time slowdown vs solo")
    rollout_host_memory_gb: float = Field(default=0, ge=0, le=1e9)
    train_host_memory_gb: float = Field(default=0, ge=0, le=1e9)
    arrival_s: float = Field(default=0, ge=0, le=MAX_SECONDS)
    duration_s: float | None = Field(default=None, gt=0, le=MAX_SECONDS, description="running time alone (traces: the job leaves after this much solo work)")


class PoolSpec(BaseModel):
    """The hardware of one pool: GPU type, GPUs per node and host memory per node (GB)."""

    model_config = _STRICT

    gpu: str
    gpus_per_node: int = Field(default=8, gt=0, le=64)
    host_memory_gb_per_node: float = Field(default=2048, gt=0, le=1e9)


class JobsSpec(BaseModel):
    model_config = _STRICT

    name: str = ""
    description: str = ""
    rollout_pool: PoolSpec = PoolSpec(gpu="H20")
    train_pool: PoolSpec = PoolSpec(gpu="H800")
    max_group_size: int = Field(default=5, gt=0)
    jobs: list[RLJobSpec] = Field(min_length=1, max_length=MAX_JOBS)

    def check(self) -> None:
        seen: set[str] = set()
        for i, job in enumerate(self.jobs):
            if job.name in seen:
                raise SpecError(f"jobs[{i}].name", job.name, "duplicate job name")
            seen.add(job.name)
            if job.model is not None:
                try:
                    get_model(job.model)
                except SpecError as exc:
                    raise SpecError(f"jobs[{i}].model", job.model, exc.reason) from None
        for pool in ("rollout_pool", "train_pool"):
            gpu = getattr(self, pool).gpu
            try:
                spec = get_gpu(gpu)
            except SpecError as exc:
                raise SpecError(f"{pool}.gpu", gpu, exc.reason) from None
            if spec.usd_per_hour is None:
                raise SpecError(f"{pool}.gpu", gpu, "has no price (usd_per_hour) in the GPU catalog: the objective is $/h")
        from costmodels.cosched.group import job_model

        for i, job in enumerate(self.jobs):
            jm = job_model(job, self.rollout_pool.gpus_per_node, self.train_pool.gpus_per_node)
            if jm.mem_roll > self.rollout_pool.host_memory_gb_per_node:
                raise SpecError(f"jobs[{i}].rollout_host_memory_gb", jm.mem_roll,
                                f"more than a rollout node's host memory ({self.rollout_pool.host_memory_gb_per_node} GB)")
            if jm.mem_train > self.train_pool.host_memory_gb_per_node:
                raise SpecError(f"jobs[{i}].train_host_memory_gb", jm.mem_train,
                                f"more than a training node's host memory ({self.train_pool.host_memory_gb_per_node} GB)")



@dataclass(frozen=True, eq=False)
class CoscheduleProblem:
    """Pack RL jobs into co-execution groups (RollMux §4.1; the model: ``costmodels.cosched.group``)."""

    jobs: JobsSpec
    kind: str = field(default="cosched", init=False)

    def model(self) -> Any:
        """The group model's view of the jobs (``costmodels.cosched.group.CoschedModel``), built once."""
        cached = self.__dict__.get("_model")
        if cached is None:
            from costmodels.cosched.group import CoschedModel

            cached = CoschedModel(self)
            object.__setattr__(self, "_model", cached)
        return cached

    def to_inputs(self) -> dict[str, Any]:
        return {"jobs": self.jobs.model_dump(mode="json")}
