"""The one Result every solve returns (docs/architecture.md, "Data flow" step 3; like scipy's
OptimizeResult)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from costmodels.solving import Status, Termination


@dataclass
class Result:
    """A checked solve.

    ``objective`` is always the cost model's value for ``plan`` (never the solver's own claim,
    which is kept as ``solver_objective``); ``bound`` and ``gap`` are set only where the solver
    proves a bound. ``violations`` lists what the independent validator rejected when
    ``status`` is ``invalid``.
    """

    problem: Any
    solver: str
    status: Status
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    wall_time_s: float = 0.0
    plan: BaseModel | None = None
    breakdown: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    time_limit: float | None = None
    message: str = ""
    violations: list[str] = field(default_factory=list)
    solver_objective: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    #: '' when the work budget decided the result (same input, seed and budget: same plan on any
    #: machine); otherwise why the wall clock did ("stopped by the time cap of 60 s after 9 of
    #: 300 plans: this result depends on machine speed")
    clock: str = ""
    #: why the solver stopped (``costmodels.solving.Termination``), apart from ``status`` (what it
    #: returned); None only for results made outside the façade
    termination: Termination | None = None

    @property
    def deterministic(self) -> bool:
        """True when no wall-clock limit or cap stopped any of the solver's work."""
        return not self.clock

    @property
    def success(self) -> bool:
        """True when a valid plan came back (status optimal or feasible)."""
        return self.status.has_plan and self.plan is not None

    @property
    def kind(self) -> str:
        return self.problem.kind

    def __repr__(self) -> str:  # short, for notebooks and logs
        obj = "None" if self.objective is None else f"{self.objective:.6g}"
        return (
            f"Result(problem={self.kind!r}, solver={self.solver!r}, status={self.status.value!r}, "
            f"objective={obj}, wall_time_s={self.wall_time_s:.3f})"
        )


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """(objective - bound) / |objective|, 0 when both are 0; None without a bound."""
    if (
        objective is None
        or bound is None
        or not math.isfinite(objective)
        or not math.isfinite(bound)
    ):
        return None
    if objective == 0:
        return 0.0 if bound >= 0 else None
    return max(0.0, (objective - bound) / abs(objective))
