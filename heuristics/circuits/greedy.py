"""Greedy circuit allocation (OrchestrRL Appendix D.2, Algorithm 3) and the uniform baseline
(Appendix I).

Algorithm 3 adds one full-duplex circuit at a time to the demanded eligible pair with free ports
at both ends and the largest pair time (Eq. 7): uncovered pairs (+inf) first, ties broken by the
larger directional demand max(D(u->v), D(v->u)). The paper leaves remaining ties open; rlplan
breaks them by the smaller (a, b) name pair so that every implementation allocates the same.

Two implementations of the same rule:

* :func:`allocate_greedy` sorts *events* instead of stepping a heap. Pair p's c-th circuit has
  the key (t_p(c), D_p, names) with t_p(c) = D_p / (c B) falling in c, so the largest live key
  never rises and the circuits Algorithm 3 adds come in descending key order; an event whose
  pair has lost a port's endpoint is skipped, and such a pair never comes back (ports only
  decrease). So Algorithm 3 is: sort every pair's events by key, take each one whose two
  endpoints still have a free port. Only the events above a level are generated at a time, the
  level chosen in closed form so a chunk holds about twice the circuits still possible
  (count(T) = sum_p #{c : D_p / (c B) >= T}); the next chunk, below it, only if pairs remain
  live. One numpy lexsort and one linear scan per chunk: O(E log E) for E events generated,
  instead of a heap operation per circuit.
* :func:`allocate_greedy_reference` is a plain transcription of Algorithm 3: every step rebuilds
  the candidate set and scans it, O(K * P). The tests check both allocate the same, and the
  benchmark times one against the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from costmodels.circuits.judge import pair_time_s
from costmodels.circuits.plan import Counts, plan_from_counts
from costmodels.circuits.problem import CircuitProblem, demanded_pairs
from costmodels.solving import SolverOutput, Status


def _free_ports(problem: CircuitProblem, start: Counts | None) -> dict[str, int]:
    free = dict(problem.fabric.degrees())
    for (a, b), n in (start or {}).items():
        free[a] -= n
        free[b] -= n
    return free


def allocate_greedy(problem: CircuitProblem, start: Counts | None = None) -> Counts:
    """Algorithm 3 as one ordered scan of circuit events (module doc); ``start`` continues from
    an existing allocation."""
    link = problem.fabric.link_gbps
    counts: Counts = dict(start or {})
    free = _free_ports(problem, start)
    pairs = demanded_pairs(problem)
    if not pairs:
        return counts
    names = list(free)
    where = {n: i for i, n in enumerate(names)}
    n = len(pairs)
    ends_a = np.fromiter((where[p.a] for p in pairs), np.int64, n)
    ends_b = np.fromiter((where[p.b] for p in pairs), np.int64, n)
    demand = np.fromiter((p.demand for p in pairs), np.float64, n)
    first = np.fromiter((counts.get((p.a, p.b), 0) for p in pairs), np.int64, n)
    free_list = [free[v] for v in names]
    ports = np.array(free_list, dtype=np.int64)
    nxt = first.copy()  # the count a pair's next event starts from
    end = first + np.maximum(np.minimum(ports[ends_a], ports[ends_b]), 0)
    a_list, b_list = ends_a.tolist(), ends_b.tolist()
    won = [0] * n
    while True:
        ids = np.nonzero((nxt < end) & (ports[ends_a] > 0) & (ports[ends_b] > 0))[0]
        if len(ids) == 0:
            break
        scaled = demand[ids] * 8 / (link * 1e9)  # a pair's c-th event has key scaled / c
        level = _chunk_level(
            scaled,
            nxt[ids],
            end[ids] - nxt[ids],
            2 * (int(np.clip(ports, 0, None).sum()) // 2) + len(ids),
        )
        pair, key = _events(ids, scaled, demand, nxt, end, link, level)
        nxt += np.bincount(
            pair, minlength=n
        )  # events at or above the level are spent, taken or not
        for i in pair[np.lexsort((pair, -demand[pair], -key))].tolist():
            a, b = a_list[i], b_list[i]
            if free_list[a] > 0 and free_list[b] > 0:
                free_list[a] -= 1
                free_list[b] -= 1
                won[i] += 1
        ports = np.array(free_list, dtype=np.int64)
    for p, k in zip(pairs, won, strict=True):
        if k:
            counts[(p.a, p.b)] = counts.get((p.a, p.b), 0) + k
    return counts


def _chunk_level(scaled: np.ndarray, base: np.ndarray, room: np.ndarray, want: int) -> float:
    """The key level whose events (key >= level) number about ``want`` (0: all of them).
    A pair's c-th event has key ``scaled / c``, so the count at a level is closed-form."""
    if room.sum() <= want:
        return 0.0

    def count(level: float) -> int:
        return int(np.clip(np.floor(scaled / level) - base + 1, 0, room).sum())

    lo, hi = 0.0, float(scaled.max()) + 1.0  # count(lo) >= want > count(hi) (first circuits aside)
    for _ in range(64):
        mid = (lo + hi) / 2
        if count(mid) >= want:
            lo = mid
        else:
            hi = mid
    return lo


def _events(
    ids: np.ndarray,
    scaled: np.ndarray,
    demand: np.ndarray,
    nxt: np.ndarray,
    end: np.ndarray,
    link: float,
    level: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(pair, key) of every event of the pairs ``ids`` with key >= ``level``, each key computed
    as :func:`pair_time_s` does (so ties and order match the transcription bit for bit)."""
    base, room = nxt[ids], end[ids] - nxt[ids]
    if level > 0:  # closed-form count, +2 against rounding; the exact filter below decides
        est = np.clip(np.floor(scaled / level) - base + 1, 0, None).astype(np.int64)
        take = np.minimum(room, np.maximum(est + 2, (base == 0).astype(np.int64)))
    else:
        take = room
    pair = np.repeat(ids, take)
    count = np.repeat(base, take) + np.arange(len(pair)) - np.repeat(np.cumsum(take) - take, take)
    with np.errstate(divide="ignore"):
        key = np.where(count == 0, np.inf, demand[pair] * 8 / (count * link * 1e9))
    keep = key >= level
    if not keep.any():  # rounding left nothing at the level: take the top key's events
        keep = key >= key.max()
    return pair[keep], key[keep]


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
        for (
            q
        ) in candidates:  # lines 12-14: max PAIRTIME, then MAXDIRDEMAND; first in (a, b) order wins
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
    def solve(
        problem: CircuitProblem, *, time_limit: float | None = None, seed: int = 0
    ) -> SolverOutput:
        # deterministic and bounded by sum(deg)/2 steps: time_limit and seed have nothing to steer
        t0 = time.perf_counter()
        counts = allocate(problem)
        return SolverOutput(
            Status.FEASIBLE,
            plan_from_counts(counts),
            stats={"allocate_s": time.perf_counter() - t0, "circuits": sum(counts.values())},
            message=f"{name}: {sum(counts.values())} circuits",
        )

    solve.__name__ = f"solve_{name.replace('-', '_')}"
    solve.__doc__ = allocate.__doc__
    return solve


solve_greedy = _as_solver(allocate_greedy, "greedy")
solve_greedy_reference = _as_solver(allocate_greedy_reference, "greedy-reference")
solve_uniform = _as_solver(allocate_uniform, "uniform")

__all__ = [
    "allocate_greedy",
    "allocate_greedy_reference",
    "allocate_uniform",
    "solve_greedy",
    "solve_greedy_reference",
    "solve_uniform",
]
