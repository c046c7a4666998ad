"""rlplan's language and judge: specs, plans and analytic cost models. Imports nothing of ours."""

from costmodels.catalog import GPUSpec, ModelSpec, get_gpu, get_model, gpu_catalog, model_catalog
from costmodels.circuits.fabric import DemandSpec, FabricSpec
from costmodels.circuits.plan import Circuit, CircuitPlan
from costmodels.circuits.problem import CircuitProblem
from costmodels.cluster import ClusterSpec, build_topology
from costmodels.cosched.problem import CoscheduleProblem, JobsSpec
from costmodels.errors import SpecError
from costmodels.placement.plan import PlacementPlan, TaskGroup, TaskPlacement
from costmodels.placement.problem import CostParams, PlacementProblem
from costmodels.violations import Violation
from costmodels.workflow import WorkflowSpec

__all__ = [
    "Circuit",
    "CircuitPlan",
    "CircuitProblem",
    "ClusterSpec",
    "CoscheduleProblem",
    "CostParams",
    "DemandSpec",
    "FabricSpec",
    "GPUSpec",
    "JobsSpec",
    "ModelSpec",
    "PlacementPlan",
    "PlacementProblem",
    "SpecError",
    "TaskGroup",
    "TaskPlacement",
    "Violation",
    "WorkflowSpec",
    "build_topology",
    "get_gpu",
    "get_model",
    "gpu_catalog",
    "model_catalog",
]
