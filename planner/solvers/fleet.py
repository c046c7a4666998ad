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
    """Every co-scheduling solver with what the planner gives it: its injections (the optimum's
    warm start) and, when the fleet planner passes no time limit, its own default cap (the
    optimum's 120 s), at most what the fleet's limit leaves."""

    def bound(entry):
        fn = functools.partial(entry.load(), **{k: load() for k, load in entry.inject.items()})

        def call(problem, *, time_limit=None, seed=0, **options):
            caps = [t for t in (time_limit, entry.time_limit) if t is not None]
            return fn(problem, time_limit=min(caps) if caps else None, seed=seed, **options)

        return call

    return {e.name: bound(e) for e in cosched.SOLVERS}


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
