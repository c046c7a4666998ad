"""The replan problem's solvers:
OrchestrRL §4.1, Eq. 1: the MILP, the greedy and the veRL baselines.

Each entry names its function directly; the module holding it is imported when the solver is
first used, so listing solvers (``rlplan plan replan --solver help``) imports no backend."""

from __future__ import annotations

from planner.solvers.entry import SolverEntry


def _milp():
    from formulations.replan import milp

    return milp


def _greedy():
    from heuristics.replan import greedy

    return greedy


def _bruteforce():
    from formulations.replan import bruteforce

    return bruteforce


SOLVERS = (
    SolverEntry(
        "milp",
        lambda: _milp().solve_replan_milp,
        description=(
            "Eq. 1 exactly on HiGHS (numpy-built matrix via highspy), warm-started by greedy"
        ),
        exact=True,
        default=True,
        time_limit=120.0,
        inject={"warm_start": lambda: _greedy().solve_greedy},
    ),
    SolverEntry(
        "greedy",
        lambda: _greedy().solve_greedy,
        description=(
            "configuration mixes ranked by a fluid bound, LPT assignment on the "
            "exact T_j, local search"
        ),
        time_limit=10.0,
    ),
    SolverEntry(
        "verl-to",
        lambda: _greedy().solve_verl_to,
        description="veRL-TO (OrchestrRL §6): the best single TP over the pool",
    ),
    SolverEntry(
        "verl-lo",
        lambda: _greedy().solve_verl_lo,
        description="veRL-LO (OrchestrRL §6): the largest TP everywhere",
    ),
    SolverEntry(
        "keep",
        lambda: _greedy().solve_keep,
        description="the current instances, requests re-balanced",
    ),
    SolverEntry(
        "bruteforce",
        lambda: _bruteforce().solve_replan_bruteforce,
        description=(
            "enumerate every layout and split (tiny states only; ground truth for the MILP)"
        ),
        exact=True,
        time_limit=300.0,
    ),
)
