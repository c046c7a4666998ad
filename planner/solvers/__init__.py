"""Every built-in problem's solvers, wired above the layers that hold them
(``docs/architecture.md``, "The house"): one module per problem names its heuristics and exact
models, so the cost-model layer (``costmodels/<problem>/kind.py``: the language and the judge)
knows nothing of them."""

from __future__ import annotations

from planner.solvers import broadcast, circuits, cosched, fleet, job, placement, replan, rollout
from planner.solvers.entry import SolverEntry, SolverFn


def builtin_solvers() -> dict[str, tuple[SolverEntry, ...]]:
    """The solvers of each built-in problem, by problem name."""
    return {
        "placement": placement.SOLVERS,
        "circuits": circuits.SOLVERS,
        "broadcast": broadcast.SOLVERS,
        "replan": replan.SOLVERS,
        "cosched": cosched.SOLVERS,
        "rollout": rollout.SOLVERS,
        "job": job.SOLVERS,
        "fleet": fleet.SOLVERS,
    }


__all__ = ["SolverEntry", "SolverFn", "builtin_solvers"]
