"""The fleet problem (``costmodels.fleet``'s module doc): pools, the links between them and RL
jobs, each a workflow with its GPUs per pool and its SLO.

Defaults are RollMux's testbed (§7, "Cluster Setup"): an H20 rollout pool and an H800 training
pool of 8-GPU nodes, each pool on a 400 Gbps InfiniBand fabric, the two pools joined by a 20 Gbps
Ethernet link. The link's latency is not given; rlplan takes 1 ms (a metro link; latency is
negligible beside a model's bytes at 20 Gbps).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from costmodels.cluster import LinkSpec
from costmodels.cosched.problem import JobsSpec, PoolSpec
from costmodels.errors import SpecError, refuse_repeated_names
from costmodels.lax_input import refuse_lax
from costmodels.limits import MAX_SECONDS, MAX_SIMULATED_GPUS
from costmodels.workflow import WorkflowSpec

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

#: jobs one fleet plan may hold: each is placed twice (alone, then in its group) and every
#: distinct job type's knobs are simulated, so a planning call stays within minutes
MAX_FLEET_JOBS = 500
#: GPUs all the jobs of one fleet ask for together (each job's rollout and training GPUs, as if
#: alone): :data:`costmodels.limits.MAX_SIMULATED_GPUS`. Every job is placed at least twice
#: whatever the time limit, measured at about 2 s a job of 1 024 + 1 024 GPUs with the least
#: search, so a fleet at this bound still plans in a couple of minutes
MAX_FLEET_GPUS = MAX_SIMULATED_GPUS
#: GPUs of one pool one job may ask for: each is a device of the job's placement problems, and
#: RollMux's jobs ask for 8-32 (Table 3); the HetRL testbed has 64
MAX_JOB_GPUS = 1024


class PoolLinks(BaseModel):
    """The fabric inside each pool and the link between the pools (module doc)."""

    model_config = _STRICT

    intra_pool: LinkSpec = LinkSpec(bandwidth_gbps=400.0, latency_ms=0.005)
    between_pools: LinkSpec = LinkSpec(bandwidth_gbps=20.0, latency_ms=1.0)


class FleetJobSpec(BaseModel):
    """One RL job of the fleet: what it runs (a workflow preset's name or a workflow inline, in
    the placement problem's format), what it asks of each pool and its SLO (the largest tolerated
    slowdown of its iteration over running alone, RollMux §4.1)."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    workflow: str | dict[str, Any] = Field(
        description="a workflow preset's name (rlplan presets --kind workflow) or a workflow inline"
    )
    rollout_gpus: int = Field(gt=0, le=MAX_JOB_GPUS, description="GPUs of the rollout pool")
    train_gpus: int = Field(gt=0, le=MAX_JOB_GPUS, description="GPUs of the training pool")
    slo: float = Field(default=1.5, ge=1, le=1e6, description="max iteration slowdown vs solo")
    rollout_host_memory_gb: float = Field(default=0, ge=0, le=1e9)
    train_host_memory_gb: float = Field(default=0, ge=0, le=1e9)
    arrival_s: float = Field(default=0, ge=0, le=MAX_SECONDS)
    duration_s: float | None = Field(
        default=None, gt=0, le=MAX_SECONDS, description="running time alone (trace replays)"
    )


class FleetSpec(BaseModel):
    """Pools and jobs (module doc). ``phases`` is how a job's rollout phase is timed for
    co-scheduling: ``worst-case`` (RollMux §4.2's conservative planning: every response at the
    cap) or ``expected`` (the judge's step on the workflow's length distribution, which the
    generation knobs then shorten)."""

    model_config = _STRICT

    name: str = ""
    description: str = ""
    rollout_pool: PoolSpec = PoolSpec(gpu="H20")
    train_pool: PoolSpec = PoolSpec(gpu="H800")
    network: PoolLinks = PoolLinks()
    max_group_size: int = Field(default=5, gt=0, le=64)
    phases: Literal["worst-case", "expected"] = "worst-case"
    jobs: list[FleetJobSpec] = Field(min_length=1, max_length=MAX_FLEET_JOBS)

    def check(self) -> None:
        asked = sum(j.rollout_gpus + j.train_gpus for j in self.jobs)
        if asked > MAX_FLEET_GPUS:
            raise SpecError(
                "jobs",
                f"{asked:,} GPUs",
                f"the jobs' rollout and training GPUs add up past {MAX_FLEET_GPUS:,}; plan the "
                "fleet in parts",
            )
        refuse_repeated_names((j.name for j in self.jobs), "jobs[{}].name", "duplicate job name")
        actors = {j.name: self.workflow(i).models.actor for i, j in enumerate(self.jobs)}
        # the pools' prices and host memory against every job (the co-scheduling rules)
        self.cosched_jobs({j.name: (1.0, 1.0) for j in self.jobs}, actors).check()

    def cosched_jobs(
        self, phases: Mapping[str, tuple[float, float]], actors: Mapping[str, str]
    ) -> JobsSpec:
        """The co-scheduling jobs file of the fleet with these (rollout, training) phase seconds,
        each job's actor (``actors``, by job name) as its model (RollMux Table 2's warm state, the
        training pool's GPU memory rule)."""
        jobs = []
        for j in self.jobs:
            roll, train = phases[j.name]
            jobs.append(
                {
                    "name": j.name,
                    "model": actors[j.name],
                    "rollout_gpus": j.rollout_gpus,
                    "train_gpus": j.train_gpus,
                    "t_rollout_s": roll,
                    "t_train_s": train,
                    "slo": j.slo,
                    "rollout_host_memory_gb": j.rollout_host_memory_gb,
                    "train_host_memory_gb": j.train_host_memory_gb,
                    "arrival_s": j.arrival_s,
                    "duration_s": j.duration_s,
                    # its training was planned on its own GPUs: a group never gives it fewer
                    "min_train_gpus": j.train_gpus,
                }
            )
        return JobsSpec.model_validate(
            {
                "name": self.name,
                "description": self.description,
                "rollout_pool": self.rollout_pool.model_dump(),
                "train_pool": self.train_pool.model_dump(),
                "max_group_size": self.max_group_size,
                "jobs": jobs,
            }
        )

    def workflow(self, i: int) -> WorkflowSpec:
        """Job ``i``'s workflow, its preset resolved and checked; refused (``SpecError`` naming
        ``jobs[i].workflow``) when unknown, malformed or not a synchronous job."""
        from costmodels.placement.presets import placement_presets

        job, where = self.jobs[i], f"jobs[{i}].workflow"
        data = job.workflow
        if isinstance(data, str):
            known = {p.name: p for p in placement_presets() if p.kind == "workflow"}
            if data not in known:
                raise SpecError(
                    where, data, "not a workflow preset (rlplan presets --kind workflow)"
                )
            data = known[data].data()
        try:
            wf = WorkflowSpec.model_validate(data)
            refuse_lax(data, wf)  # as a workflow file is (planner.io.parse_model)
            wf.check()
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise SpecError(f"{where}.{loc}", err.get("input"), err["msg"]) from None
        except SpecError as exc:
            raise SpecError(f"{where}.{exc.field}", exc.value, exc.reason) from None
        if wf.mode != "sync":
            raise SpecError(
                f"{where}.mode",
                wf.mode,
                "RollMux co-schedules synchronous on-policy jobs (§2): rollout, then training",
            )
        return wf


@dataclass(frozen=True, eq=False)
class FleetProblem:
    """Plan a fleet of RL jobs on two pools (``costmodels.fleet``'s module doc)."""

    fleet: FleetSpec
    kind: str = field(default="fleet", init=False)

    def to_inputs(self) -> dict[str, Any]:
        return {"fleet": self.fleet.model_dump(mode="json")}

    @cached_property
    def workflows(self) -> dict[str, WorkflowSpec]:
        """Every job's workflow, resolved and checked, by job name."""
        return {j.name: self.fleet.workflow(i) for i, j in enumerate(self.fleet.jobs)}

    @cached_property
    def index(self) -> dict[str, int]:
        return {j.name: i for i, j in enumerate(self.fleet.jobs)}
