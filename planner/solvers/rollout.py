"""The rollout problem's solvers:
RollPacker §3-§4 and §6: the knob search, the paper's and veRL's settings, the exhaustive optimum.

Each entry names its function directly; the module holding it is imported when the solver is
first used, so listing solvers (``rlplan plan rollout --solver help``) imports no backend."""

from __future__ import annotations

from planner.solvers.entry import SolverEntry


def _search():
    from heuristics.rollout import search

    return search


def _exhaustive():
    from formulations.rollout import exhaustive

    return exhaustive


SOLVERS = (
    SolverEntry(
        "search",
        lambda: _search().solve_search,
        description=(
            "coordinate descent over η, TP per round, stream trainer, reward and "
            "timeout on the simulator (whole space when small)"
        ),
        default=True,
        time_limit=900.0,
    ),
    SolverEntry(
        "paper",
        lambda: _search().solve_paper,
        description=(
            "RollPacker's settings: η = 1.25, the §4.2 TP rule, async reward with λ"
            " = 1.5, adaptive stream trainer"
        ),
    ),
    SolverEntry(
        "verl",
        lambda: _search().solve_verl,
        description=(
            "veRL's synchronous rollout: no speculation, reward after rollout, no stream trainer"
        ),
    ),
    SolverEntry(
        "exhaustive",
        lambda: _exhaustive().solve_exhaustive,
        description=(
            "every plan of the discrete space, one simulated epoch per rollout "
            "setting (the optimum on small jobs)"
        ),
        exact=True,
        time_limit=1800.0,
    ),
)
