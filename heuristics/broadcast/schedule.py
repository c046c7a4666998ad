"""Budget-aware wave scheduling of the weight-sync broadcast (OrchestrRL App. E).

Both schedules share one wave builder so that their comparison is fair:

* ``two-level`` (E.1 + E.2): each generation PoD gets ``seeds_per_pod`` seeds, shards split among
  them round-robin; Phase A delivers each shard to its seed in every generation PoD, from any
  endpoint of another PoD that already holds it (training holders, and seeds of earlier waves
  when ``relay`` is on, so copies multiply wave by wave like a tree); Phase B fans out inside.
* ``naive`` one-to-all: every generation rank fetches every shard straight from its holder.

Wave builder (E.1, "greedy, budget-aware"): take pending transfers in order, give each one circuit
from a source whose PoD (and the destination's) still has boundary budget; then add circuits, one
at a time, to the wave's slowest edge while both of its PoDs have budget left (bottleneck
equalisation, as in App. D). Pending transfers that found no budget wait for the next wave.
"""

from __future__ import annotations

import heapq
import time
from typing import Annotated

from pydantic import Field

from costmodels.broadcast.plan import BroadcastPlan, Edge, FanoutTree, Wave
from costmodels.broadcast.problem import BroadcastProblem, pod_of
from costmodels.limits import BROADCAST_TRANSFER_BYTES, memory_limit_bytes
from costmodels.solving import UNLIMITED, Deadline, SolverOutput, Status


class _OutOfTime(Exception):
    """The wave builder passed its deadline; ``done`` transfers of ``total`` were scheduled."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"{done:,} of {total:,} transfers scheduled")
        self.done, self.total = done, total


def _waves(
    problem: BroadcastProblem,
    pending: list[tuple[int, str]],
    relay: bool,
    deadline: Deadline = UNLIMITED,
) -> list[Wave]:
    """Schedule ``pending`` (shard, destination) transfers in budget-feasible waves; raise
    :class:`_OutOfTime` past ``deadline`` (the caller's limit, else the default cap)."""
    s = problem.spec
    budget = {p.name: p.budget for p in s.pods}
    holders_of: dict[int, list[str]] = {i: [h] for i, h in enumerate(s.holders())}
    waves: list[Wave] = []
    todo = list(pending)
    while todo:
        # each wave rescans what is left, so the naive schedule (every rank x every shard) grows
        # quadratically: a time limit must stop it rather than be ignored
        if deadline.expired():
            raise _OutOfTime(len(pending) - len(todo), len(pending))
        left = dict(budget)
        chosen: list[list] = []  # [src, dst, shard, circuits]
        waiting = []
        for shard, dst in todo:
            dpod = pod_of(dst)
            sources = [h for h in holders_of[shard] if pod_of(h) != dpod and left[pod_of(h)] > 0]
            if left[dpod] <= 0 or not sources:
                waiting.append((shard, dst))
                continue
            src = max(sources, key=lambda h: (left[pod_of(h)], -holders_of[shard].index(h)))
            left[pod_of(src)] -= 1
            left[dpod] -= 1
            chosen.append([src, dst, shard, 1])
        if not chosen:
            raise ValueError(
                "no transfer can be scheduled: every source PoD is out of boundary budget"
            )
        # bottleneck equalisation: all edges carry one shard, so the slowest has the fewest circuits
        heap = [(e[3], i) for i, e in enumerate(chosen)]
        heapq.heapify(heap)
        while heap:
            c, i = heapq.heappop(heap)
            src, dst = chosen[i][0], chosen[i][1]
            if left[pod_of(src)] > 0 and left[pod_of(dst)] > 0:
                left[pod_of(src)] -= 1
                left[pod_of(dst)] -= 1
                chosen[i][3] = c + 1
                heapq.heappush(heap, (c + 1, i))
        waves.append(
            Wave(edges=[Edge(src=a, dst=b, shard=sh, circuits=c) for a, b, sh, c in chosen])
        )
        if relay:
            for _, dst, shard, _ in chosen:
                holders_of[shard].append(dst)
        todo = waiting
    return waves


def _out_of_time(name: str, exc: _OutOfTime) -> SolverOutput:
    return SolverOutput(
        Status.NO_SOLUTION,
        message=f"{name}: time limit reached with {exc}",
    )


def _finish(problem: BroadcastProblem, plan: BroadcastPlan, t0: float, name: str) -> SolverOutput:
    return SolverOutput(
        Status.FEASIBLE,
        plan,
        message=f"{name}: {len(plan.phase_a)} Phase A waves, {len(plan.phase_b)} fan-out trees",
        stats={"schedule_s": time.perf_counter() - t0},
    )


def solve_two_level(
    problem: BroadcastProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    relay: Annotated[bool, Field(description="seeded PoDs relay to PoDs not yet seeded")] = True,
) -> SolverOutput:
    """RFabric's two-level broadcast (App. E): cross-PoD seeding in waves, then intra-PoD trees."""
    t0 = time.perf_counter()
    s = problem.spec
    nshards = len(s.holders())
    pending, trees = [], []
    for p in s.pods:
        if p.role != "gen":
            continue
        seeds = [f"{p.name}/{r}" for r in range(min(s.seeds_per_pod, p.ranks, nshards))]
        for k, seed_ep in enumerate(seeds):
            shards = list(range(k, nshards, len(seeds)))
            pending.extend((i, seed_ep) for i in shards)
            if p.ranks > 1:
                trees.append(FanoutTree(seed=seed_ep, shards=shards))
    pending.sort()  # shard-major: every PoD's copy of shard 0 first, so relays can start early
    try:
        waves = _waves(problem, pending, relay, Deadline(time_limit))
    except _OutOfTime as exc:
        return _out_of_time("two-level", exc)
    plan = BroadcastPlan(phase_a=waves, phase_b=trees)
    return _finish(problem, plan, t0, "two-level")


def solve_naive(
    problem: BroadcastProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """Naive one-to-all (App. E): each holder sends its shard to every generation rank directly."""
    t0 = time.perf_counter()
    s = problem.spec
    # every rank fetches every shard itself: sized before the list of transfers is built
    transfers = sum(p.ranks for p in s.pods if p.role == "gen") * len(s.holders())
    need, limit = transfers * BROADCAST_TRANSFER_BYTES, memory_limit_bytes()
    if need > limit:
        return SolverOutput(
            Status.NO_SOLUTION,
            message=(
                f"naive one-to-all: {transfers:,} transfers need about {need / 1e9:,.1f} GB, "
                f"above the memory limit of {limit / 1e9:g} GB (raise it with --memory-limit-gb)"
            ),
        )
    pending = [
        (i, f"{p.name}/{r}")
        for p in s.pods
        if p.role == "gen"
        for r in range(p.ranks)
        for i in range(len(s.holders()))
    ]
    try:
        waves = _waves(problem, pending, False, Deadline(time_limit))
    except _OutOfTime as exc:
        return _out_of_time("naive one-to-all", exc)
    plan = BroadcastPlan(phase_a=waves)
    return _finish(problem, plan, t0, "naive one-to-all")
