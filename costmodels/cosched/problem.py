"""RL jobs for co-scheduling on shared rollout and training pools (RollMux §4.1).

Only the data shapes live here; the solvers live in ``formulations/cosched`` and
``heuristics/cosched``. Each job runs a rollout phase on ``rollout_gpus`` and a training phase on
``train_gpus`` per iteration, with solo phase durations in seconds, an SLO as the largest tolerated
slowdown of its iteration time over running alone (RollMux Appendix: SLO ~ U(1, 2)), and host-memory
footprints used to keep paused jobs resident (RollMux Table 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import get_gpu, get_model, reference_table
from costmodels.errors import SpecError, refuse_repeated_names
from costmodels.limits import MAX_JOBS, MAX_SECONDS, MAX_SIMULATED_GPUS

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def table_host_memory(model: str | None) -> tuple[float, float]:
    """RollMux Table 2's warm state (rollout, training) in GB per 8-GPU node for the smallest listed
    model size >= the model's, scaled linearly past the largest; (0, 0) for a job without a
    model."""
    if model is None:
        return 0.0, 0.0
    size = get_model(model).params_b
    rows = sorted(
        (
            float(r["model_size"].rstrip("B")),
            float(r["rollout_state_gb_per_8gpu_node"]),
            float(r["train_state_gb_per_8gpu_node"]),
        )
        for r in reference_table("rollmux_host_memory.csv")
    )
    for s, roll, train in rows:
        if size <= s + 1e-9:
            return roll, train
    s, roll, train = rows[-1]
    return roll * size / s, train * size / s


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
    duration_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_SECONDS,
        description="running time alone (traces: the job leaves after this much solo work)",
    )
    min_train_gpus: int | None = Field(
        default=None,
        gt=0,
        le=MAX_SIMULATED_GPUS,
        description=(
            "the fewest training GPUs the job's training may run on (absent: any pool its "
            "training state fits)"
        ),
    )


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
        refuse_repeated_names((j.name for j in self.jobs), "jobs[{}].name", "duplicate job name")
        for i, job in enumerate(self.jobs):
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
                raise SpecError(
                    f"{pool}.gpu",
                    gpu,
                    "has no price (usd_per_hour) in the GPU catalog: the objective is $/h",
                )
        for i, job in enumerate(self.jobs):
            roll_mem, train_mem = table_host_memory(job.model)
            mem_roll, mem_train = (
                job.rollout_host_memory_gb or roll_mem,
                job.train_host_memory_gb or train_mem,
            )
            if mem_roll > self.rollout_pool.host_memory_gb_per_node:
                raise SpecError(
                    f"jobs[{i}].rollout_host_memory_gb",
                    mem_roll,
                    "more than a rollout node's host memory "
                    f"({self.rollout_pool.host_memory_gb_per_node} GB)",
                )
            if mem_train > self.train_pool.host_memory_gb_per_node:
                raise SpecError(
                    f"jobs[{i}].train_host_memory_gb",
                    mem_train,
                    "more than a training node's host memory "
                    f"({self.train_pool.host_memory_gb_per_node} GB)",
                )


@dataclass(frozen=True, eq=False)
class CoscheduleProblem:
    """Pack RL jobs into co-execution groups (RollMux §4.1; the model:
    ``costmodels.cosched.group``)."""

    jobs: JobsSpec
    kind: str = field(default="cosched", init=False)

    def to_inputs(self) -> dict[str, Any]:
        return {"jobs": self.jobs.model_dump(mode="json")}
