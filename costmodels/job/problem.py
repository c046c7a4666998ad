"""The job problem: a placement problem (cluster, workflow, judge knobs, framework target) planned
as a whole job (``costmodels.job``'s module doc)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from costmodels.cluster import ClusterSpec
from costmodels.placement.problem import PlacementProblem
from costmodels.workflow import WorkflowSpec


@dataclass(frozen=True, eq=False)
class JobProblem:
    """Plan every decision of one RL job on one cluster."""

    placement: PlacementProblem
    kind: str = field(default="job", init=False)

    @property
    def workflow(self) -> WorkflowSpec:
        return self.placement.workflow

    @property
    def cluster(self) -> ClusterSpec:
        return self.placement.cluster

    def to_inputs(self) -> dict[str, Any]:
        """The placement problem's inputs: a job plan file re-checks against them."""
        return self.placement.to_inputs()

    @property
    def framework(self) -> str | None:
        """The framework the plan must run in (``--target``), None for rlplan's whole space."""
        return self.placement.target.framework
