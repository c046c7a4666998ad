"""What users touch: ``plan()`` (a problem to its plan file, as ``rlplan plan`` does), ``solve()``,
the loaders, the Result, the solver registry, plan files.

>>> from planner import PlanRequest, plan
>>> outcome = plan(PlanRequest("placement", solver="verl", output="plan.json"))
>>> from planner import solve, load_problem
>>> result = solve(load_problem("default"), solver="verl")
"""

__version__ = "0.1.0"

from costmodels import (  # noqa: E402  (re-exported so schedulers import from one place)
    CircuitPlan,
    CircuitProblem,
    ClusterSpec,
    CoscheduleProblem,
    CostParams,
    FabricSpec,
    PlacementPlan,
    PlacementProblem,
    SpecError,
    WorkflowSpec,
)
from costmodels.broadcast.plan import BroadcastPlan  # noqa: E402
from costmodels.broadcast.problem import BroadcastProblem, BroadcastSpec  # noqa: E402
from costmodels.circuits.fabric import DemandSpec  # noqa: E402
from costmodels.circuits.rfabric import RFabricSpec  # noqa: E402
from costmodels.solving import SolverOutput, Status  # noqa: E402
from heuristics.circuits.materialize import Materializer  # noqa: E402
from planner.io import build_problem, load_cluster, load_problem, load_workflow  # noqa: E402
from planner.planning import PlanOutcome, PlanRequest, plan  # noqa: E402
from planner.registry import (  # noqa: E402
    PluginError,
    Registry,
    UnknownSolverError,
    default_registry,
)
from planner.result import Result  # noqa: E402
from planner.solve import solve  # noqa: E402

__all__ = [
    "BroadcastPlan",
    "BroadcastProblem",
    "BroadcastSpec",
    "DemandSpec",
    "Materializer",
    "RFabricSpec",
    "CircuitPlan",
    "CircuitProblem",
    "ClusterSpec",
    "CoscheduleProblem",
    "CostParams",
    "FabricSpec",
    "PlacementPlan",
    "PlacementProblem",
    "PlanOutcome",
    "PlanRequest",
    "Registry",
    "Result",
    "SolverOutput",
    "SpecError",
    "Status",
    "UnknownSolverError",
    "PluginError",
    "WorkflowSpec",
    "build_problem",
    "default_registry",
    "load_cluster",
    "load_problem",
    "load_workflow",
    "plan",
    "solve",
]
