"""A fleet plan: each job's solo placement and phase times, the co-execution groups, and each
job's plan in its group (``costmodels.fleet``'s module doc)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from costmodels.cosched.plan import CoschedulePlan
from costmodels.job.plan import JobPlan
from costmodels.placement.plan import PlacementPlan

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class JobPhases(BaseModel):
    """A job alone on its own GPUs (``costmodels.fleet.derive``): the placement that times it and
    the phase seconds the judge gives that placement."""

    model_config = _STRICT

    rollout_s: float = Field(ge=0, description="rollout phase: generation, seconds")
    train_s: float = Field(
        ge=0, description="training phase: inference + training + weight transfer, seconds"
    )
    placement: PlacementPlan = Field(
        description="generation on the rollout GPUs, the rest on training"
    )


class FleetPlan(BaseModel):
    """Every decision of a fleet (``costmodels.fleet``'s module doc)."""

    model_config = _STRICT

    phases: dict[str, JobPhases] = Field(description="per job: alone, its phases (RollMux §4.2)")
    cosched: CoschedulePlan = Field(description="RollMux §4.1: the co-execution groups")
    jobs: dict[str, JobPlan] = Field(
        description="per job: its placement and knobs on its group's GPUs (costmodels.job)"
    )
