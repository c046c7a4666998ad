"""A job plan: the placement and the rollout knobs of its generation stage."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from costmodels.placement.plan import PlacementPlan
from costmodels.rollout.plan import RolloutPlan

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class JobPlan(BaseModel):
    """Every decision of one job (``costmodels.job``'s module doc)."""

    model_config = _STRICT

    placement: PlacementPlan = Field(description="HetRL §3: task groups, GPUs and parallelism")
    rollout: RolloutPlan | None = Field(
        default=None,
        description=(
            "RollPacker §3-§4's knobs for the generation stage; null where the job has none to "
            "choose (costmodels.job.derive says why)"
        ),
    )
