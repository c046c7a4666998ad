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

import itertools
import math
import time
from collections.abc import Iterator

import numpy as np

from costmodels.combinatorics import restricted_growth_strings
from costmodels.cosched.group import (
    CoschedModel,
    CoschedulePlan,
    GroupState,
    colocated_group,
    cosched_model,
    memory_ok,
    slo_ok,
    train_time,
)
from costmodels.cosched.problem import CoscheduleProblem
from costmodels.solving import (
    Deadline,
    DeadlineExceeded,
    SolverOutput,
    Status,
)
from formulations.highs import solve_highs


def _pinnings(
    m: CoschedModel, members: list[str], nodes: int
) -> Iterator[dict[str, tuple[int, ...]]]:
    ks = [m.jobs[n].k for n in members]
    if all(k == 1 for k in ks):
        for labels in restricted_growth_strings(len(members), nodes):
            yield {name: (lab,) for name, lab in zip(members, labels, strict=True)}
        return
    for pins in itertools.product(*(itertools.combinations(range(nodes), k) for k in ks)):
        if len(set().union(*map(set, pins))) == nodes:  # every node used (fewer is a smaller pool)
            yield dict(zip(members, pins, strict=True))


def cheapest_group(
    m: CoschedModel, members: list[str], train_sizes: list[int], deadline: Deadline | None = None
) -> tuple[float, GroupState] | None:
    """c_S and its configuration (module doc), or None when no configuration is valid."""
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
        if sum(j.mem_train * j.n for j in jobs) / train > m.mem_t + 1e-9:
            continue
        low = max(
            max(j.k for j in jobs), math.ceil(sum(j.k * j.roll_s for j in jobs) / target - 1e-9)
        )
        for nodes in range(low, sum(j.k for j in jobs) + 1):
            cost = m.cost(nodes, train)
            if best is not None and cost >= best[0] - 1e-12:
                break
            found = None
            for pins in _pinnings(m, members, nodes):
                if deadline is not None:
                    deadline.check()  # pinnings are Bell-many: a large group must stop at the limit
                g = GroupState(train, list(members), pins, nodes)
                if memory_ok(m, g) and slo_ok(m, g):
                    found = g
                    break
            if found is not None:
                best = (cost, found)
                break
    if (
        len(members) == 1
        and (g := colocated_group(m, members[0])) is not None
        and (best is None or m.cost(0, g.train_nodes) < best[0])
    ):
        best = (m.cost(0, g.train_nodes), g)
    return best


def feasible_columns(
    m: CoschedModel,
    deadline: Deadline,
    out: list[tuple[tuple[str, ...], float, GroupState]] | None = None,
) -> list[tuple[tuple[str, ...], float, GroupState]]:
    """Every feasible subset with its cheapest configuration: the singletons first (so columns
    cut short by the time limit still cover every job that has a valid group of its own), then
    depth first from each feasible singleton with pruning. Appends to ``out`` as it goes, so a
    caller that catches :class:`DeadlineExceeded` keeps the columns found."""
    names = list(m.order)
    sizes = sorted({j.n for j in m.jobs.values()})
    out = [] if out is None else out
    feasible: list[int] = []
    for i, name in enumerate(names):
        deadline.check()
        found = cheapest_group(m, [name], sizes, deadline)
        if found is not None:
            out.append(((name,), found[0], found[1]))
            feasible.append(i)
    ok = set(feasible)

    def extend(subset: list[int]) -> None:
        for i in range(subset[-1] + 1, len(names)):
            if i not in ok:
                continue  # a job with no group of its own is in no larger group either
            deadline.check()
            cand = [*subset, i]
            found = cheapest_group(m, [names[k] for k in cand], sizes, deadline)
            if found is None:
                continue  # no superset is feasible either
            out.append((tuple(names[k] for k in cand), found[0], found[1]))
            if len(cand) < m.spec.max_group_size:
                extend(cand)

    if m.spec.max_group_size > 1:
        for i in feasible:
            extend([i])
    return out


def solve_cosched_optimal(
    problem: CoscheduleProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """Set partitioning over feasible groups on HiGHS (module doc). Its work is fixed by the
    instance (every feasible group, then the master to optimality), so it needs no budget: the
    time limit (or the façade's default cap) is a safety net. When it binds during column
    generation, the master runs over the columns found (singletons come first, so every job
    with a group of its own is covered) and returns their best partition, status feasible."""
    from scipy.sparse import csc_matrix

    t0 = time.perf_counter()
    deadline = Deadline(time_limit)
    m = cosched_model(problem)
    columns: list[tuple[tuple[str, ...], float, GroupState]] = []
    cut_short = False
    try:
        feasible_columns(m, deadline, columns)
    except DeadlineExceeded:
        cut_short = True
    gen_s = time.perf_counter() - t0
    names = list(m.order)
    row = {n: i for i, n in enumerate(names)}
    r_idx, c_idx = [], []
    for c, (members, _, _) in enumerate(columns):
        for n in members:
            r_idx.append(row[n])
            c_idx.append(c)
    covered = {n for members, _, _ in columns for n in members}
    if covered != set(names):
        if cut_short:
            return SolverOutput(
                Status.NO_SOLUTION,
                message=f"time limit while generating feasible groups ({len(columns)} found, "
                f"job(s) {sorted(set(names) - covered)[:5]} not yet covered)",
                stats={"columns_s": gen_s, "columns": len(columns)},
            )
        return SolverOutput(
            Status.INFEASIBLE, message=f"no valid group holds job(s) {sorted(set(names) - covered)}"
        )
    a = csc_matrix(
        (np.ones(len(r_idx)), (np.array(r_idx), np.array(c_idx))), shape=(len(names), len(columns))
    )
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
    )
    if out.stopped == "time_limit":
        deadline.note_bound()
    stats = {
        "columns": len(columns),
        "columns_s": gen_s,
        "highs_status": out.highs_status,
        "solve_s": time.perf_counter() - t0 - gen_s,
        "columns_cut_short": cut_short,
    }
    if out.stopped == "infeasible":
        return SolverOutput(Status.INFEASIBLE, message="HiGHS: infeasible", stats=stats)
    if out.x is None:
        return SolverOutput(
            Status.NO_SOLUTION, message=f"HiGHS: {stats['highs_status']}", stats=stats
        )
    x = out.x
    chosen = [columns[c][2] for c in np.flatnonzero(x > 0.5)]
    plan = CoschedulePlan(groups=[g.to_group() for g in chosen])
    objective = float(sum(columns[c][1] for c in np.flatnonzero(x > 0.5)))
    optimal = out.optimal and not cut_short
    bound = out.dual_bound if not cut_short else None
    what = f"{len(columns)} feasible groups" + (
        " (column generation cut short by the time limit: the best partition of those)"
        if cut_short
        else ""
    )
    return SolverOutput(
        Status.OPTIMAL if optimal else Status.FEASIBLE,
        plan,
        objective,
        objective if optimal else bound,
        message=f"{what}; HiGHS: {stats['highs_status']}",
        stats=stats,
    )
