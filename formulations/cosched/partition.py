"""RollMux's offline optimum as set partitioning over feasible groups (the optimum RollMux §7.5
measures Algorithm 1 against).

**Columns.** A column is a job subset S (|S| <= max group size) with its cheapest valid
configuration c_S (``cheapest_group``): a training pool of N^T nodes (any job's n_j: the sizes a
group can be opened with), the fewest rollout nodes, and a pinning of every job to k_j of them,
checked by the group model (memory residency, every member's SLO on the exact round-robin
period); a singleton may instead be co-located. Subsets are generated depth first in arrival
order and a subset with no valid configuration is not extended: for a fixed configuration, adding
a job only adds events and arcs to the max-plus schedule (the period cannot shrink) and warm
state to the nodes, and any configuration of S + {j} restricted to S is one of S's, so no
superset of an infeasible subset is feasible.

Inside a subset the search is cut by bounds the period cannot beat: the cycle max_j (R_j + T'_j),
the training pool's Σ_j T'_j, and the busiest rollout node's load (at least Σ_j k_j R_j / N^R);
every member's SLO needs the period <= min_j SLO_j T_solo_j, which gives the smallest N^R to try.
Rollout nodes are interchangeable, so jobs of one node each are pinned by set partitions into
exactly N^R blocks (Bell-many, not N^R^|S|).

**Model.** min Σ_S c_S y_S  s.t.  Σ_{S ∋ j} y_S = 1 for every job j (each job in exactly one
group), y_S ∈ {0,1}; on HiGHS (highspy). Its space contains every ``cosched`` heuristic's plan
(their
groups are feasible subsets, each with a configuration no cheaper than c_S), and equals the brute
force's on the instances both solve (the tests check).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from costmodels.combinatorics import canonical_pinnings
from costmodels.cosched.group import (
    CoschedModel,
    GroupState,
    colocated_group,
    cosched_model,
    slo_ok,
    state_of,
    train_host_memory_ok,
    train_state_fits,
    train_time,
)
from costmodels.cosched.plan import CoschedulePlan
from costmodels.cosched.problem import CoscheduleProblem
from costmodels.solving import (
    Deadline,
    DeadlineExceeded,
    SolverOutput,
    Status,
)
from formulations.highs import HighsOutcome, solve_highs


def _pinnings(
    m: CoschedModel, members: list[str], nodes: int, target: float
) -> Iterator[dict[str, tuple[int, ...]]]:
    """The members' pinnings to ``nodes`` interchangeable rollout nodes, one per orbit
    (:func:`~costmodels.combinatorics.canonical_pinnings`), none with a node over the SLO
    target in load (the period is at least every node's load) or over its host memory."""
    jobs = [m.jobs[n] for n in members]
    for pins in canonical_pinnings(
        [j.k for j in jobs],
        nodes,
        weights=[(j.roll_s, j.mem_roll) for j in jobs],
        capacity=(target, m.mem_r),
    ):
        yield dict(zip(members, pins, strict=True))


def cheapest_group(
    m: CoschedModel,
    members: list[str],
    train_sizes: list[int],
    deadline: Deadline | None = None,
    colocate: bool = True,
) -> tuple[float, GroupState] | None:
    """c_S and its configuration (module doc), or None when no configuration is valid;
    ``colocate=False`` leaves out the co-located singleton."""
    members = sorted(members, key=m.order.index)
    jobs = [m.jobs[n] for n in members]
    best: tuple[float, GroupState] | None = None
    if len(members) > m.spec.max_group_size:
        return None
    target = min(j.slo * j.solo_s for j in jobs) * (1 + 1e-9)
    for train in train_sizes:
        tt = [train_time(m, j, train) for j in jobs]
        if max(j.roll_s + t for j, t in zip(jobs, tt, strict=True)) > target or sum(tt) > target:
            continue
        if not (train_host_memory_ok(m, members, train) and train_state_fits(m, members, train)):
            continue
        low = max(
            max(j.k for j in jobs), math.ceil(sum(j.k * j.roll_s for j in jobs) / target - 1e-9)
        )
        for nodes in range(low, sum(j.k for j in jobs) + 1):
            cost = m.cost(nodes, train)
            if best is not None and cost >= best[0] - 1e-12:
                break
            found = None
            for pins in _pinnings(m, members, nodes, target):
                if deadline is not None:
                    deadline.check()  # pinnings are Bell-many: a large group must stop at the limit
                g = GroupState(train, list(members), pins, nodes)
                if slo_ok(m, g):
                    found = g
                    break
            if found is not None:
                best = (cost, found)
                break
    if (
        colocate
        and len(members) == 1
        and (g := colocated_group(m, members[0])) is not None
        and (best is None or m.cost(0, g.train_nodes) < best[0])
    ):
        best = (m.cost(0, g.train_nodes), g)
    return best


def feasible_columns(
    m: CoschedModel,
    deadline: Deadline,
    out: list[tuple[tuple[str, ...], float, GroupState]] | None = None,
    space: str = "free",
) -> list[tuple[tuple[str, ...], float, GroupState]]:
    """Every feasible subset with its cheapest configuration: the singletons first (so columns
    cut short by the time limit still cover every job that has a valid group of its own), then
    depth first from each feasible singleton with pruning. Appends to ``out`` as it goes, so a
    caller that catches :class:`DeadlineExceeded` keeps the columns found. ``space`` is
    :func:`solve_cosched_optimal`'s: ``free`` (any grouping, any training pool a group can be
    opened with, co-located singletons) or ``algorithm1`` (what RollMux's online scheduler can
    build: a group's training pool is its first job's, by arrival, never scaled; no
    co-location)."""
    names = list(m.order)
    every_size = sorted({j.n for j in m.jobs.values()})
    online = space == "algorithm1"

    def group_of(members: list[str]) -> tuple[float, GroupState] | None:
        sizes = [m.jobs[members[0]].n] if online else every_size
        return cheapest_group(m, members, sizes, deadline, colocate=not online)

    out = [] if out is None else out
    feasible: list[int] = []
    for i, name in enumerate(names):
        deadline.check()
        found = group_of([name])
        if found is not None:
            out.append(((name,), found[0], found[1]))
            feasible.append(i)
    # a job with no group of its own under any pool is in no larger group either; under
    # ``algorithm1`` its own pool is the only one tried alone, and a larger group's may differ
    ok = set(feasible) if not online else set(range(len(names)))

    def extend(subset: list[int]) -> None:
        for i in range(subset[-1] + 1, len(names)):
            if i not in ok:
                continue
            deadline.check()
            cand = [*subset, i]
            found = group_of([names[k] for k in cand])
            if found is None:
                continue  # no superset is feasible either (the first job, so the pool, is kept)
            out.append((tuple(names[k] for k in cand), found[0], found[1]))
            if len(cand) < m.spec.max_group_size:
                extend(cand)

    if m.spec.max_group_size > 1:
        for i in feasible:
            extend([i])
    return out


def resource_lower_bound(m: CoschedModel, colocate: bool = True) -> float:
    """A floor on any valid plan's cost that needs no column: in a disaggregated group every
    member's SLO caps the period at tau_j = SLO_j T_solo_j, and the period is at least every
    rollout node's load and the training pool's sum, so N^R_G >= sum_j k_j R_j / tau_j and
    N^T_G >= sum_j T_j n_j / tau_j; a co-located job pays at least its fewest valid training
    nodes. Summed per job: sum_j min(p_R k_j R_j / tau_j + p_T T_j n_j / tau_j, coloc_j)."""
    total = 0.0
    for name, j in m.jobs.items():
        tau = j.slo * j.solo_s
        share = (m.price_r * j.k * j.roll_s + m.price_t * j.n * j.train_s) / tau
        if colocate and (g := colocated_group(m, name)) is not None:
            share = min(share, m.cost(0, g.train_nodes))
        total += share
    return total


def _warm_columns(
    m: CoschedModel,
    problem: CoscheduleProblem,
    warm_start: Callable[..., SolverOutput],
    deadline: Deadline,
) -> list[tuple[tuple[str, ...], float, GroupState]]:
    """The warm start's groups as columns (each at its own configuration's cost)."""
    out = warm_start(problem, time_limit=deadline.remaining())  # within the solve's limit
    if out.plan is None:
        return []
    cols = []
    for group in out.plan.groups:
        g = state_of(group)
        members = tuple(sorted(g.members, key=m.order.index))
        cols.append((members, m.cost(g.rollout_nodes, g.train_nodes), g))
    return cols


def solve_cosched_optimal(
    problem: CoscheduleProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    space: Annotated[
        Literal["free", "algorithm1"],
        Field(
            description="free (any grouping; the offline optimum) or algorithm1 (the optimum over "
            "what RollMux's online scheduler can build: no co-location, first job's pool)",
        ),
    ] = "free",
    warm_start: Callable[..., SolverOutput] | None = None,
) -> SolverOutput:
    """Set partitioning over feasible groups on HiGHS (module doc). Its work is fixed by the
    instance (every feasible group, then the master to optimality), so it needs no budget: the
    time limit (or the façade's default cap) is a safety net. ``warm_start`` (RollMux's Algorithm 1
    when the planner injects it, run within the same limit) adds its groups as columns and starts
    HiGHS from its plan, so a run the limit cuts short still returns at least the plan Algorithm 1
    reached by then (``heuristics.cosched.online``: later jobs alone). When the limit binds during
    column generation, the master runs over the columns found (singletons first, then the warm
    start's groups) and returns their best partition, status feasible, with
    :func:`resource_lower_bound` as its bound."""
    t0 = time.perf_counter()
    deadline = Deadline(time_limit)
    m = cosched_model(problem)
    colocate = space == "free"
    warm = _warm_columns(m, problem, warm_start, deadline) if warm_start is not None else []
    columns: list[tuple[tuple[str, ...], float, GroupState]] = []
    cut_short = False
    try:
        feasible_columns(m, deadline, columns, space)
    except DeadlineExceeded:
        cut_short = True
    gen_s = time.perf_counter() - t0
    start = _add_warm_columns(columns, warm)
    names = list(m.order)
    floor = resource_lower_bound(m, colocate)
    covered = {n for members, _, _ in columns for n in members}
    if covered != set(names):
        if cut_short:
            return SolverOutput(
                Status.NO_SOLUTION,
                bound=floor,
                message=f"time limit while generating feasible groups ({len(columns)} found, "
                f"job(s) {sorted(set(names) - covered)[:5]} not yet covered)",
                stats={"columns_s": gen_s, "columns": len(columns)},
            )
        return SolverOutput(
            Status.INFEASIBLE, message=f"no valid group holds job(s) {sorted(set(names) - covered)}"
        )
    out = _solve_master(names, columns, start, deadline, seed)
    stats = {
        "columns": len(columns),
        "columns_s": gen_s,
        "highs_status": out.highs_status,
        "solve_s": time.perf_counter() - t0 - gen_s,
        "columns_cut_short": cut_short,
        "space": space,
        "resource_lower_bound": floor,
    }
    return _master_answer(columns, out, stats, floor, cut_short)


def _add_warm_columns(
    columns: list[tuple[tuple[str, ...], float, GroupState]],
    warm: list[tuple[tuple[str, ...], float, GroupState]],
) -> list[int]:
    """Indices of the warm start's groups among ``columns``, appending those that are new."""
    # the warm start's groups: a column of their own unless a cheaper one holds the same jobs
    known = {members: (i, c) for i, (members, c, _) in enumerate(columns)}
    start = []
    for members, cost, g in warm:
        if members in known and known[members][1] <= cost + 1e-9:
            start.append(known[members][0])
        else:
            columns.append((members, cost, g))
            start.append(len(columns) - 1)
    return start


def _solve_master(
    names: list[str],
    columns: list[tuple[tuple[str, ...], float, GroupState]],
    start: list[int],
    deadline: Deadline,
    seed: int,
) -> HighsOutcome:
    """The set-partitioning master on HiGHS: every job in exactly one chosen group, at least
    cost, started from the warm start's columns."""
    from scipy.sparse import csc_matrix

    row = {n: i for i, n in enumerate(names)}
    r_idx, c_idx = [], []
    for c, (members, _, _) in enumerate(columns):
        for n in members:
            r_idx.append(row[n])
            c_idx.append(c)
    a = csc_matrix(
        (np.ones(len(r_idx)), (np.array(r_idx), np.array(c_idx))), shape=(len(names), len(columns))
    )
    x0 = None
    if start:
        x0 = np.zeros(len(columns))
        x0[start] = 1.0
    out = solve_highs(
        np.array([c for _, c, _ in columns], dtype=float),
        a,
        np.ones(len(names)),
        np.ones(len(names)),
        np.zeros(len(columns)),
        np.ones(len(columns)),
        [True] * len(columns),
        time_limit=max(0.1, deadline.remaining() or 0.1),
        mip_gap=1e-9,
        seed=seed,
        warm_start=x0,
    )
    if out.stopped == "time_limit":
        deadline.note_bound()
    return out


def _master_answer(
    columns: list[tuple[tuple[str, ...], float, GroupState]],
    out: HighsOutcome,
    stats: dict[str, Any],
    floor: float,
    cut_short: bool,
) -> SolverOutput:
    """The chosen groups as the plan; optimal only when every feasible group was a column."""
    if out.stopped == "infeasible":
        return SolverOutput(Status.INFEASIBLE, message="HiGHS: infeasible", stats=stats)
    if out.x is None:
        return SolverOutput(
            Status.NO_SOLUTION, bound=floor, message=f"HiGHS: {stats['highs_status']}", stats=stats
        )
    x = out.x
    chosen = [columns[c][2] for c in np.flatnonzero(x > 0.5)]
    plan = CoschedulePlan(groups=[g.to_group() for g in chosen])
    objective = float(sum(columns[c][1] for c in np.flatnonzero(x > 0.5)))
    optimal = out.optimal and not cut_short
    # the master's dual bound holds for the whole space only when every column is in it
    bound = objective if optimal else (out.dual_bound if not cut_short else None)
    bound = max(b for b in (bound, floor) if b is not None)
    what = f"{len(columns)} feasible groups" + (
        " (column generation cut short by the time limit: the best partition of those)"
        if cut_short
        else ""
    )
    return SolverOutput(
        Status.OPTIMAL if optimal else Status.FEASIBLE,
        plan,
        objective,
        min(bound, objective),
        message=f"{what}; HiGHS: {stats['highs_status']}",
        stats=stats,
    )
