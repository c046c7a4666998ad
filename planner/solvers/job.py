"""The job problem's solvers (``costmodels.job``): the placement solvers, then the generation
knobs. The placement solvers are injected (the job heuristic never imports an exact model)."""

from __future__ import annotations

from planner.solvers import placement
from planner.solvers.entry import SolverEntry


def _sequential():
    from heuristics.job import sequential

    return sequential


def _fixed_point():
    from heuristics.job import fixed_point

    return fixed_point


def _placers():
    return {e.name: e.load() for e in placement.SOLVERS}


SOLVERS = (
    SolverEntry(
        "sequential",
        lambda: _sequential().solve_sequential,
        description=(
            "a placement solver on its work budget, then RollPacker's generation knobs on the "
            "rollout problem the placement leaves"
        ),
        default=True,
        inject={"placers": _placers},
        time_limit=900.0,
    ),
    SolverEntry(
        "fixed-point",
        lambda: _fixed_point().solve_fixed_point,
        description=(
            "the sequential plan, then the placement re-solved with generation scaled by the "
            "knobs' effect until it repeats; the best plan judged"
        ),
        inject={"placers": _placers},
        time_limit=1800.0,
    ),
)
