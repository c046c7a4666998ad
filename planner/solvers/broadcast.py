"""The broadcast problem's solvers:
RFabric / OrchestrRL App. E: the two-level schedule and the naive one-to-all.

Each entry names its function directly; the module holding it is imported when the solver is
first used, so listing solvers (``rlplan plan broadcast --solver help``) imports no backend."""

from __future__ import annotations

from planner.solvers.entry import SolverEntry


def _schedule():
    from heuristics.broadcast import schedule

    return schedule


SOLVERS = (
    SolverEntry(
        "two-level",
        lambda: _schedule().solve_two_level,
        description=(
            "RFabric App. E: cross-PoD seeding in budget-aware waves (relay on), "
            "intra-PoD fan-out trees"
        ),
        default=True,
    ),
    SolverEntry(
        "naive",
        lambda: _schedule().solve_naive,
        description=("naive one-to-all: every generation rank fetches every shard from its holder"),
    ),
)
