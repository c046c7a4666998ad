"""The circuits problem's solvers:
RFabric / OrchestrRL App. D: Algorithm 3, the exact lexicographic models, the uniform baseline.

Each entry names its function directly; the module holding it is imported when the solver is
first used, so listing solvers (``rlplan plan circuits --solver help``) imports no backend."""

from __future__ import annotations

from planner.solvers.entry import SolverEntry


def _greedy():
    from heuristics.circuits import greedy

    return greedy


def _exact():
    from formulations.circuits import exact

    return exact


def _bruteforce():
    from formulations.circuits import bruteforce

    return bruteforce


SOLVERS = (
    SolverEntry(
        "greedy",
        lambda: _greedy().solve_greedy,
        description=(
            "OrchestrRL Algorithm 3 (App. D.2): one circuit at a time to the "
            "largest pair time, as one sorted scan of circuit events"
        ),
        default=True,
    ),
    SolverEntry(
        "greedy-reference",
        lambda: _greedy().solve_greedy_reference,
        description=(
            "plain transcription of Algorithm 3 (rescans every pair each step); "
            "same allocation as greedy"
        ),
    ),
    SolverEntry(
        "milp",
        lambda: _exact().solve_circuits_milp,
        description=(
            "exact lexicographic model (max covered demand, then min bottleneck) on HiGHS via PuLP"
        ),
        exact=True,
        time_limit=120.0,
        inject={"fill_with": lambda: _greedy().allocate_greedy},  # spare ports: Algorithm 3
    ),
    SolverEntry(
        "cpsat",
        lambda: _exact().solve_circuits_cpsat,
        description=(
            "the same exact model on OR-Tools CP-SAT (bottleneck picked from its candidate set)"
        ),
        exact=True,
        time_limit=120.0,
        inject={"fill_with": lambda: _greedy().allocate_greedy},  # spare ports: Algorithm 3
    ),
    SolverEntry(
        "uniform",
        lambda: _greedy().solve_uniform,
        description=(
            "uniform splitting baseline (App. I): each endpoint's ports spread "
            "evenly over its demanded pairs"
        ),
    ),
    SolverEntry(
        "bruteforce",
        lambda: _bruteforce().solve_circuits_bruteforce,
        description=(
            "enumerate every allocation (tiny instances only; ground truth for the exact models)"
        ),
        exact=True,
        time_limit=300.0,
    ),
)
