"""One entry point per problem kind: its plan model, its evaluator and its validator.

The planner looks problems up here so that ``solve()`` never special-cases a kind
(DESIGN.md, "The cost model is the contract").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from costmodels.broadcast.problem import (
    BroadcastPlan,
    BroadcastProblem,
    check_broadcast,
    evaluate_broadcast,
)
from costmodels.circuits.problem import CircuitPlan, CircuitProblem, check_circuits, evaluate_circuits
from costmodels.placement.cost import evaluate_placement
from costmodels.placement.problem import PlacementPlan, PlacementProblem
from costmodels.placement.check import check_placement
from costmodels.violations import Violation


@dataclass(frozen=True)
class ProblemKind:
    name: str
    problem_type: type
    plan_type: type[BaseModel]
    evaluate: Callable[[Any, Any], tuple[float, dict[str, Any]]]
    check: Callable[[Any, Any], list[Violation]]
    objective: str


def _eval_placement(problem: PlacementProblem, plan: PlacementPlan) -> tuple[float, dict[str, Any]]:
    ev = evaluate_placement(problem, plan)
    return ev.objective, ev.breakdown


KINDS: dict[str, ProblemKind] = {
    "placement": ProblemKind(
        "placement", PlacementProblem, PlacementPlan, _eval_placement, check_placement,
        "predicted seconds per RL iteration (HetRL Appendix B.4)",
    ),
    "circuits": ProblemKind(
        "circuits", CircuitProblem, CircuitPlan, evaluate_circuits, check_circuits,
        "bottleneck pair time in seconds (OrchestrRL Eq. 7)",
    ),
    "broadcast": ProblemKind(
        "broadcast", BroadcastProblem, BroadcastPlan, evaluate_broadcast, check_broadcast,
        "weight-sync completion time in seconds, Phase A waves + Phase B fan-out (OrchestrRL App. E)",
    ),
}


def kind_of(problem: Any) -> ProblemKind:
    name = getattr(problem, "kind", None)
    if name not in KINDS:
        raise TypeError(f"not a problem rlplan can solve: {type(problem).__name__} (kind {name!r})")
    return KINDS[name]
