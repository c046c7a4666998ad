"""The wiring: the toy's solvers, and the plugin rlplan calls (``rlplan.plugins`` entry point or
``RLPLAN_PLUGINS=rlplan_toy.register:register``). Each loader imports its solver's module only
when the solver is first used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.solvers.entry import SolverEntry, SolverFn
from rlplan_toy.kind import KIND

if TYPE_CHECKING:
    from planner.registry import Registry


def _lpt() -> SolverFn:
    from rlplan_toy.heuristic import solve_lpt

    return solve_lpt


def _exhaustive() -> SolverFn:
    from rlplan_toy.exact import solve_exhaustive

    return solve_exhaustive


SOLVERS = (
    SolverEntry("lpt", _lpt, "longest processing time first", default=True),
    SolverEntry("exhaustive", _exhaustive, "every assignment", exact=True),
)


def register(registry: Registry) -> None:
    """Add the toy problem with its solvers to ``registry``."""
    registry.add_problem(KIND, solvers=SOLVERS)
