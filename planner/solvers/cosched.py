"""The cosched problem's solvers:
RollMux §4 and §7.4-7.5: Algorithm 1, the offline optimum and the baselines.

Each entry names its function directly; the module holding it is imported when the solver is
first used, so listing solvers (``rlplan plan cosched --solver help``) imports no backend."""

from __future__ import annotations

from planner.solvers.entry import SolverEntry


def _online():
    from heuristics.cosched import online

    return online


def _partition():
    from formulations.cosched import partition

    return partition


def _bruteforce():
    from formulations.cosched import bruteforce

    return bruteforce


SOLVERS = (
    SolverEntry(
        "rollmux",
        lambda: _online().solve_rollmux,
        description=(
            "RollMux Algorithm 1: direct packing / rollout scaling into unsaturated"
            " groups at least marginal cost"
        ),
        default=True,
    ),
    SolverEntry(
        "random",
        lambda: _online().solve_random,
        description=(
            "§7.5: a random group that can hold the job (memory, size; no SLO "
            "check), random nodes; its plans may break SLOs, as the paper's do"
        ),
        ignores=("SLO",),
    ),
    SolverEntry(
        "greedy",
        lambda: _online().solve_greedy,
        description="§7.5: the most idle group that can hold the job (no SLO check)",
        ignores=("SLO",),
    ),
    SolverEntry(
        "random-slo",
        lambda: _online().solve_random_slo,
        description="random, admitting a job only where every member keeps its SLO",
    ),
    SolverEntry(
        "greedy-slo",
        lambda: _online().solve_greedy_slo,
        description="greedy, admitting a job only where every member keeps its SLO",
    ),
    SolverEntry(
        "solo",
        lambda: _online().solve_solo,
        description="Solo-D: every job alone on 1:1 rollout and training pools (§7.4)",
    ),
    SolverEntry(
        "colocated",
        lambda: _online().solve_colocated,
        description="veRL-style: every job alone, both phases on training GPUs (§7.4)",
    ),
    SolverEntry(
        "optimal",
        lambda: _partition().solve_cosched_optimal,
        description=(
            "the offline optimum: set partitioning over feasible groups (canonical "
            "pinnings) on HiGHS, warm-started by Algorithm 1; -O space=algorithm1 "
            "for what it can build"
        ),
        exact=True,
        time_limit=120.0,
        inject={"warm_start": lambda: _online().solve_rollmux},
    ),
    SolverEntry(
        "bruteforce",
        lambda: _bruteforce().solve_cosched_bruteforce,
        description=(
            "every grouping of up to 6 jobs (the paper's brute-force optimum; ground truth)"
        ),
        exact=True,
        time_limit=300.0,
    ),
)
