"""The fleet problem's solver (``costmodels.fleet``): the stages in order, the co-scheduling
solvers injected (the fleet heuristic never imports an exact model)."""

from __future__ import annotations

import functools

from planner.solvers import cosched
from planner.solvers.entry import SolverEntry


def _plan():
    from heuristics.fleet import plan

    return plan


def _coschedulers():
    """Every co-scheduling solver with what the planner injects into it (the optimum's warm
    start)."""
    return {
        e.name: functools.partial(e.load(), **{k: load() for k, load in e.inject.items()})
        for e in cosched.SOLVERS
    }


SOLVERS = (
    SolverEntry(
        "stages",
        lambda: _plan().solve_fleet,
        description=(
            "each job's phases alone on the judge, then RollMux co-scheduling (-O cosched=), "
            "then each job's placement and RollPacker knobs on its group's GPUs"
        ),
        default=True,
        inject={"coschedulers": _coschedulers},
        time_limit=900.0,
    ),
)
