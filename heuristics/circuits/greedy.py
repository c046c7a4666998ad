"""Greedy circuit allocation (OrchestrRL Appendix D.2, Algorithm 3) and the uniform baseline
(Appendix I).

Algorithm 3 adds one full-duplex circuit at a time to the demanded eligible pair with free ports
at both ends and the largest pair time (Eq. 7): uncovered pairs (+inf) first, ties broken by the
larger directional demand max(D(u->v), D(v->u)). The paper leaves remaining ties open; rlplan
breaks them by the smaller (a, b) name pair so that every implementation allocates the same.

Two implementations of the same rule:

* :func:`allocate_greedy` keeps a heap keyed by (pair time, demand, names). A pair's key changes
  only when it gets a circuit, and a pair whose endpoint runs out of ports never becomes
  selectable again (ports only decrease), so stale entries are dropped lazily when popped:
  O((P + K) log P) for P demanded pairs and K circuits.
* :func:`allocate_greedy_reference` is a plain transcription of Algorithm 3: every step rebuilds
  the candidate set and scans it, O(K * P). The tests check both allocate the same, and the
  benchmark times one against the other.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

from costmodels.circuits.problem import (
    CircuitProblem,
    Counts,
    demanded_pairs,
    pair_time_s,
    plan_from_counts,
)
from costmodels.solving import SolverOutput, Status


def _free_ports(problem: CircuitProblem, start: Counts | None) -> dict[str, int]:
    free = dict(problem.fabric.degrees())
    for (a, b), n in (start or {}).items():
        free[a] -= n
        free[b] -= n
    return free


def allocate_greedy(problem: CircuitProblem, start: Counts | None = None) -> Counts:
    """Algorithm 3 with a lazy max-heap; ``start`` continues from an existing allocation."""
    link = problem.fabric.link_gbps
    counts: Counts = dict(start or {})
    free = _free_ports(problem, start)
    heap = []
    for p in demanded_pairs(problem):
        c = counts.get((p.a, p.b), 0)
        heap.append((-pair_time_s(p.demand, c, link), -p.demand, p.a, p.b))
    heapq.heapify(heap)
    while heap:
        neg_t, neg_d, a, b = heap[0]
        if free[a] <= 0 or free[b] <= 0:
            heapq.heappop(heap)  # dead for good: ports never come back during one allocation
            continue
        c = counts.get((a, b), 0) + 1
        counts[(a, b)] = c
        free[a] -= 1
        free[b] -= 1
        heapq.heapreplace(heap, (-pair_time_s(-neg_d, c, link), neg_d, a, b))
    return counts


def allocate_greedy_reference(problem: CircuitProblem, start: Counts | None = None) -> Counts:
    """Algorithm 3 transcribed line by line: rebuild the candidate set P, take the arg max."""
    link = problem.fabric.link_gbps
    pairs = demanded_pairs(problem)
    counts: Counts = dict(start or {})
    p_free = _free_ports(problem, start)  # lines 5-6
    while True:  # line 7
        candidates = [q for q in pairs if p_free[q.a] > 0 and p_free[q.b] > 0]  # line 8
        if not candidates:  # lines 9-10
            break
        best, best_key = None, None
        for q in candidates:  # lines 12-14: max PAIRTIME, then MAXDIRDEMAND; first in (a, b) order wins
            key = (pair_time_s(q.demand, counts.get((q.a, q.b), 0), link), q.demand)
            if best_key is None or key > best_key:
                best, best_key = q, key
        assert best is not None
        counts[(best.a, best.b)] = counts.get((best.a, best.b), 0) + 1  # lines 15-16
        p_free[best.a] -= 1  # line 17
        p_free[best.b] -= 1
    return counts


def allocate_uniform(problem: CircuitProblem) -> Counts:
    """Appendix I's uniform splitting: each endpoint spreads its ports evenly over its demanded
    eligible pairs, demand-blind (a pair gets the smaller of its two ends' even shares); ports
    left over are then handed out one circuit per pair, round-robin in name order."""
    free = dict(problem.fabric.degrees())
    pairs = [p for p in demanded_pairs(problem) if p.cap > 0]
    fanout: dict[str, int] = {}
    for p in pairs:
        fanout[p.a] = fanout.get(p.a, 0) + 1
        fanout[p.b] = fanout.get(p.b, 0) + 1
    counts: Counts = {}
    for p in pairs:
        n = min(free[p.a] // fanout[p.a], free[p.b] // fanout[p.b])
        if n:
            counts[(p.a, p.b)] = n
    for (a, b), n in counts.items():
        free[a] -= n
        free[b] -= n
    progress = True
    while progress:
        progress = False
        for p in pairs:
            if free[p.a] > 0 and free[p.b] > 0:
                counts[(p.a, p.b)] = counts.get((p.a, p.b), 0) + 1
                free[p.a] -= 1
                free[p.b] -= 1
                progress = True
    return counts


def _as_solver(allocate: Callable[[CircuitProblem], Counts], name: str):
    def solve(problem: CircuitProblem, *, time_limit: float | None = None, seed: int = 0) -> SolverOutput:
        # deterministic and bounded by sum(deg)/2 steps: time_limit and seed have nothing to steer
        t0 = time.perf_counter()
        counts = allocate(problem)
        return SolverOutput(Status.FEASIBLE, plan_from_counts(counts),
                            stats={"allocate_s": time.perf_counter() - t0, "circuits": sum(counts.values())},
                            message=f"{name}: {sum(counts.values())} circuits")
    solve.__name__ = f"solve_{name.replace('-', '_')}"
    solve.__doc__ = allocate.__doc__
    return solve


solve_greedy = _as_solver(allocate_greedy, "greedy")
solve_greedy_reference = _as_solver(allocate_greedy_reference, "greedy-reference")
solve_uniform = _as_solver(allocate_uniform, "uniform")

__all__ = ["allocate_greedy", "allocate_greedy_reference", "allocate_uniform",
           "solve_greedy", "solve_greedy_reference", "solve_uniform"]
