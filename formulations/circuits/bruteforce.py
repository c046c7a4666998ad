"""Every circuit allocation of a tiny instance, scored lexicographically like the exact models
(covered demand first, then the bottleneck; OrchestrRL App. D). Ground truth for the tests."""

from __future__ import annotations

import itertools

from costmodels.circuits.judge import pair_time_s
from costmodels.circuits.plan import plan_from_counts
from costmodels.circuits.problem import CircuitProblem, demanded_pairs
from costmodels.solving import Deadline, SolverOutput, Status

MAX_ALLOCATIONS = 2_000_000


def solve_circuits_bruteforce(
    problem: CircuitProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """Enumerate c_p in [0, cap_p] for every demanded eligible pair under the port budgets."""
    deg = problem.fabric.degrees()
    link = problem.fabric.link_gbps
    pairs = [p for p in demanded_pairs(problem) if p.cap > 0]
    size = 1
    for p in pairs:
        size *= p.cap + 1
    if size > MAX_ALLOCATIONS:
        return SolverOutput(
            Status.NO_SOLUTION,
            message=(
                f"brute force would enumerate more than {MAX_ALLOCATIONS} allocations; use milp "
                "or cpsat"
            ),
        )
    deadline = Deadline(time_limit)
    best_key, best = None, None
    stopped = False
    for n, values in enumerate(itertools.product(*(range(p.cap + 1) for p in pairs))):
        if n % 4096 == 0 and deadline.expired():
            stopped = True
            break
        used: dict[str, int] = {}
        for p, c in zip(pairs, values, strict=True):
            used[p.a] = used.get(p.a, 0) + c
            used[p.b] = used.get(p.b, 0) + c
        if any(n > deg[v] for v, n in used.items()):
            continue
        uncovered = sum(p.demand for p, c in zip(pairs, values, strict=True) if c == 0)
        bottleneck = max(
            (pair_time_s(p.demand, c, link) for p, c in zip(pairs, values, strict=True) if c),
            default=0.0,
        )
        key = (uncovered, bottleneck)
        if best_key is None or key < best_key:
            best_key, best = key, values
    counts = {(p.a, p.b): c for p, c in zip(pairs, best or (), strict=True) if c}
    objective = best_key[1] if best_key else 0.0
    if stopped:
        if best is None:
            return SolverOutput(Status.NO_SOLUTION, message="time limit before any allocation")
        return SolverOutput(
            Status.FEASIBLE,
            plan_from_counts(counts),
            objective=objective,
            message=f"time limit after {n} of {size} allocations",
        )
    return SolverOutput(
        Status.OPTIMAL,
        plan_from_counts(counts),
        objective=objective,
        bound=objective,
        message=f"brute force over {size} allocations",
        stats={"allocations": size},
    )
