"""A job plan: the placement and the rollout knobs of its generation stage."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from costmodels.circuits.plan import CircuitPlan
from costmodels.placement.plan import PlacementPlan
from costmodels.rollout.plan import RolloutPlan

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
#: the mean generation makespan re-planning must save to be advised (``heuristics.job.replan``)
REPLAN_MARGIN = 0.02


class ReplanAdvice(BaseModel):
    """Whether OrchestrRL's online re-planning (§4, Algorithm 1: proactive planning and reactive
    balancing) pays on this job's generation pool, measured on the generation simulator over
    ``steps`` steps drawn from the job's length distribution (``heuristics.job.replan``)."""

    model_config = _STRICT

    decision: Literal["re-plan", "keep"] = Field(
        description="re-plan when it shortens generation by at least the margin on average"
    )
    start_tp: int = Field(ge=1, description="the placement's generation TP, where steps start")
    steps: int = Field(ge=1, description="steps simulated (seeds 0..steps-1)")
    static_s: float = Field(ge=0, description="mean generation makespan at start_tp, s")
    replanned_s: float = Field(ge=0, description="mean generation makespan re-planned, s")
    ratio: float = Field(gt=0, description="replanned_s / static_s")
    best_static_tp: int = Field(ge=1, description="the static TP best on most of the steps")
    best_static_s: float = Field(
        ge=0, description="mean makespan of each step's best static TP (an oracle), s"
    )
    first_switch_s: float | None = Field(
        default=None, ge=0, description="mean time of the first re-plan applied, s (None: none)"
    )
    switches: int = Field(ge=0, description="re-plans applied over all steps")
    migrations: int = Field(ge=0, description="requests moved by the balancer over all steps")


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
    replan: ReplanAdvice | None = Field(
        default=None,
        description=(
            "OrchestrRL §4's online re-planning of the generation pool, measured; advice only: "
            "no framework the plan exports to runs it, so the step keeps the static TP. Null "
            "where the pool cannot be re-planned (costmodels.job.derive says why)"
        ),
    )
    circuits: CircuitPlan | None = Field(
        default=None,
        description=(
            "RFabric's OCS circuits for the weight sync between the training and generation "
            "nodes, on the job's optical fabric; null without a fabric or a demand between nodes"
        ),
    )
