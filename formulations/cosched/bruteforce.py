"""Every grouping of a tiny job set (RollMux's brute-force optimum, §7.5): each set partition of the
jobs into groups; each group alone as Solo-D, co-located, or (any size) a disaggregated group with
a training pool of any job's size (what a group can be opened with), any rollout pool from the
largest member's k_j to Σ k_j
nodes, and any pinning of each job to k_j of them. Jobs keep their arrival order in a group (the
round-robin order). The cheapest valid grouping is the optimum over that space, which contains
every plan the ``cosched`` heuristics return. Ground truth for the tests."""

from __future__ import annotations

import itertools
import math

from costmodels.combinatorics import set_partitions
from costmodels.cosched.group import (
    CoschedModel,
    GroupState,
    colocated_group,
    cosched_model,
    group_ok,
)
from costmodels.cosched.plan import CoschedulePlan
from costmodels.cosched.problem import CoscheduleProblem
from costmodels.solving import Deadline, SolverOutput, Status, enumerated

MAX_JOBS = 6


def cheapest_group(m: CoschedModel, members: list[str]) -> tuple[float, GroupState] | None:
    """The cheapest valid configuration of one group (module doc), or None."""
    best: tuple[float, GroupState] | None = None
    members = sorted(members, key=m.order.index)
    jobs = [m.jobs[n] for n in members]
    for train in sorted(
        {j.n for j in m.jobs.values()}
    ):  # the pool sizes a group can be opened with
        for nodes in range(max(j.k for j in jobs), sum(j.k for j in jobs) + 1):
            cost = m.cost(nodes, train)
            if best is not None and cost >= best[0]:
                break
            for pins in itertools.product(
                *(itertools.combinations(range(nodes), j.k) for j in jobs)
            ):
                g = GroupState(train, list(members), dict(zip(members, pins, strict=True)), nodes)
                if group_ok(m, g):
                    best = (cost, g)
                    break
    return best


def solve_cosched_bruteforce(
    problem: CoscheduleProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    m = cosched_model(problem)
    names = list(m.order)
    if len(names) > MAX_JOBS:
        return SolverOutput(
            Status.NO_SOLUTION,
            message=(
                f"brute force enumerates every grouping of at most {MAX_JOBS} jobs; this file has "
                f"{len(names)} (use optimal)"
            ),
        )
    cache: dict[tuple[str, ...], tuple[float, GroupState] | None] = {}
    best: tuple[float, list[GroupState]] | None = None
    count = 0
    deadline = Deadline(time_limit)
    stopped = False
    for part in set_partitions(names):
        if deadline.expired():
            stopped = True
            break
        if any(len(b) > m.spec.max_group_size for b in part):
            continue
        count += 1
        total, groups = 0.0, []
        for block in part:
            key = tuple(sorted(block))
            if key not in cache:
                cache[key] = _best_block(m, list(key))
            found = cache[key]
            if found is None:
                break
            total += found[0]
            groups.append(found[1])
        else:
            if best is None or total < best[0] - 1e-9:
                best = (total, groups)
    plan = CoschedulePlan(groups=[g.to_group() for g in best[1]]) if best is not None else None
    return enumerated(
        plan,
        best[0] if best is not None else math.inf,
        count=count,
        unit="partitions",
        stopped=stopped,
        none_valid="no grouping meets every SLO and memory limit",
    )


def _best_block(m: CoschedModel, members: list[str]) -> tuple[float, GroupState] | None:
    options = []
    found = cheapest_group(m, members)
    if found is not None:
        options.append(found)
    if len(members) == 1 and (g := colocated_group(m, members[0])) is not None:
        options.append((m.cost(0, g.train_nodes), g))
    return min(options, key=lambda o: o[0]) if options else None
