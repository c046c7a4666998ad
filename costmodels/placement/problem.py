"""The placement problem of HetRL §3.1 (Definition 1): place an RL workflow's tasks on a
heterogeneous cluster, under the cost model's parameters and, optionally, a framework target. Its
plans are ``costmodels.placement.plan``'s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from costmodels.cluster import ClusterSpec, Topology, build_topology
from costmodels.cost_params import CostParams as CostParams
from costmodels.workflow import Task, WorkflowSpec, with_framework_passes

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class FrameworkTarget(BaseModel):
    """The framework the plan must run in (``--target``): every solver then searches only the
    plans it can run (``costmodels.placement.frameworks``). ``None``: rlplan's whole space."""

    model_config = _STRICT

    framework: Literal["verl", "roll"] | None = Field(
        default=None,
        description=(
            "verl or roll: restrict the placement space to plans that framework runs as planned"
        ),
    )


@dataclass(frozen=True, eq=False)
class PlacementProblem:
    """Place an RL workflow on a heterogeneous cluster (HetRL Definition 1)."""

    cluster: ClusterSpec
    workflow: WorkflowSpec
    params: CostParams = field(default_factory=CostParams)
    target: FrameworkTarget = field(default_factory=FrameworkTarget)
    kind: str = field(default="placement", init=False)
    topology: Topology = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "topology", build_topology(self.cluster))
        # the passes before training the target framework runs when the workflow leaves them
        # open: decided once, so every solver, the judge and the plan file see the same
        object.__setattr__(
            self, "workflow", with_framework_passes(self.workflow, self.target.framework)
        )

    @property
    def tasks(self) -> tuple[Task, ...]:
        return self.workflow.tasks()

    def to_inputs(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster.model_dump(mode="json"),
            "workflow": self.workflow.model_dump(mode="json"),
            "params": self.params.model_dump(mode="json"),
            **(
                {"target": self.target.model_dump(mode="json")}
                if self.target.framework is not None
                else {}
            ),
        }
