"""The job problem: a placement problem (cluster, workflow, judge knobs, framework target) planned
as a whole job (``costmodels.job``'s module doc)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from costmodels.circuits.fabric import FabricSpec
from costmodels.cluster import ClusterSpec
from costmodels.errors import SpecError
from costmodels.placement.problem import PlacementProblem
from costmodels.workflow import WorkflowSpec


def check_fabric_nodes(fabric: FabricSpec, cluster: ClusterSpec, prefix: str = "") -> None:
    """A job's fabric joins the cluster's nodes: every endpoint is one (a SpecError naming the
    first that is not, its field path under ``prefix``)."""
    nodes = {n.name for n in cluster.nodes}
    for i, ep in enumerate(fabric.endpoints):
        if ep.name not in nodes:
            raise SpecError(
                f"{prefix}endpoints[{i}].name",
                ep.name,
                "not a node of the cluster: a job's fabric joins the cluster's nodes",
            )


@dataclass(frozen=True, eq=False)
class JobProblem:
    """Plan every decision of one RL job on one cluster."""

    placement: PlacementProblem
    #: the optical circuit fabric between the cluster's nodes (RFabric), when it has one: each
    #: endpoint is a node (named as in the cluster), its ports the node's OCS ports
    fabric: FabricSpec | None = None
    kind: str = field(default="job", init=False)

    def __post_init__(self) -> None:
        if self.fabric is not None:
            check_fabric_nodes(self.fabric, self.cluster, "fabric.")

    @property
    def workflow(self) -> WorkflowSpec:
        return self.placement.workflow

    @property
    def cluster(self) -> ClusterSpec:
        return self.placement.cluster

    def to_inputs(self) -> dict[str, Any]:
        """The placement problem's inputs and the fabric: a job plan file re-checks against
        them."""
        out = self.placement.to_inputs()
        if self.fabric is not None:
            out["fabric"] = self.fabric.model_dump(mode="json")
        return out

    @property
    def framework(self) -> str | None:
        """The framework the plan must run in (``--target``), None for rlplan's whole space."""
        return self.placement.target.framework
