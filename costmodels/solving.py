"""What every solver returns, whatever its problem (DESIGN.md, "Data flow" step 3).

Solvers live in ``heuristics`` and ``formulations`` and import only ``costmodels``, so the shared
return type lives here. The planner turns a :class:`SolverOutput` into a checked ``Result``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel


class Status(StrEnum):
    """Outcome of a solve (after python-mip: stopped-with-a-plan differs from stopped-without)."""

    OPTIMAL = "optimal"  # plan proven optimal for the solver's model
    FEASIBLE = "feasible"  # a valid plan, optimality not proven (time limit, heuristic)
    INFEASIBLE = "infeasible"  # proven: no plan satisfies the constraints
    NO_SOLUTION = "no_solution"  # stopped (time limit) before any plan was found
    INVALID = "invalid"  # the solver returned a plan the independent validator rejects
    ERROR = "error"  # the solver crashed

    @property
    def has_plan(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


@dataclass
class SolverOutput:
    """A solver's raw answer. ``objective`` is the solver's own claim, which the planner checks
    against the cost model; ``bound`` is a proven lower bound on the optimum, if any."""

    status: Status
    plan: BaseModel | None = None
    objective: float | None = None
    bound: float | None = None
    message: str = ""
    stats: dict[str, Any] = field(default_factory=dict)


def improvements(trace: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """An anytime trace (elapsed s, ..., best) cut to the points where the best improved, plus the
    last point, so a long search keeps its whole curve in a few entries."""
    out: list[tuple[Any, ...]] = []
    for point in trace:
        if not out or point[-1] < out[-1][-1]:
            out.append(point)
    if trace and out[-1] is not trace[-1]:
        out.append(trace[-1])
    return out
