"""Fast re-planning heuristics and OrchestrRL's §6 baselines, on the cost model's T_j.

All of them choose one layout per node (``costmodels.replan.problem``), then assign the bins with
the same routine, :func:`assign`:

1. requests already on a kept instance stay there (free);
2. the rest, longest bin first, go one at a time to the instance whose objective term
   T_j + C_mig_j + C_sw_j grows least (LPT on the exact T_j, vectorised over instances);
3. local search: move one request off the instance that sets the makespan while that lowers it.

Layout choice:

* ``greedy``: enumerate configuration mixes — keep, every uniform TP, and two-TP mixes (k nodes
  on the larger TP, the rest on the smaller, nodes already at a TP take it first) — rank them by
  a fluid lower bound (a small LP: bins split fractionally over the mix's instances, per-request
  costs w_yb + α_y L_b / B_yb, and the longest request alone), assign the best few exactly and
  keep the best by the cost model.
* ``verl-to``: the best single uniform TP over the pool (veRL's TP/DP sweep), §6.
* ``verl-lo``: the largest candidate TP everywhere (latency-optimised), §6.
* ``keep``: the current instances, only re-balanced (steps 1-3).
"""

from __future__ import annotations

import time

import numpy as np

from costmodels.replan.judge import evaluate_replan
from costmodels.replan.layouts import Slot
from costmodels.replan.plan import ReplanPlan, to_plan
from costmodels.replan.problem import ReplanProblem
from costmodels.replan.slots import layout_slots
from costmodels.solving import Deadline, SolverOutput, Status
from search.replan.loads import Loads


def _deadline(time_limit: float | None) -> Deadline:
    """Every heuristic here is bounded by work (the shortlist, ``_improve``'s rounds), so its
    answer is the same on any machine; the deadline is only the caller's limit or the façade's
    default cap, a safety net (docs/architecture.md, "Solver plumbing")."""
    return Deadline(time_limit)


def assign(
    problem: ReplanProblem, chosen: list[Slot], deadline: Deadline | None = None
) -> np.ndarray | None:
    """x_jb for the chosen instances (module doc, steps 1-3); None when some bin fits nowhere."""
    if not chosen:
        return None
    ld = Loads(problem, chosen)
    left = np.array([b.count for b in problem.bins], dtype=np.int64)
    # 1. residents stay on kept instances
    for j, b in zip(*np.nonzero(np.where(ld.fits, ld.local, 0)), strict=True):
        ld.add(int(j), int(b), int(ld.local[j, b]))
        left[b] -= ld.local[j, b]
    # 2. LPT: longest bins first, one request at a time to the instance whose term grows least
    for b in reversed(range(len(problem.bins))):
        if left[b] == 0:
            continue
        if not ld.fits[:, b].any():
            return None
        for _ in range(int(left[b])):
            ld.add(int(np.argmin(ld.after_add(b))), b)
    _improve(ld, deadline)
    return ld.x


def _improve(ld: Loads, deadline: Deadline | None, rounds: int = 400) -> None:
    """3. Move single requests off the makespan instance while that lowers the makespan."""
    for _ in range(rounds):
        if deadline is not None and deadline.expired():
            return
        totals = ld.totals()
        j = int(np.argmax(totals))
        best = (totals[j], None)
        for b in np.flatnonzero(ld.x[j]):
            b = int(b)
            ld.remove(j, b)
            src = ld.totals()[j]
            if src < best[0]:
                dest = ld.after_add(b)
                dest[j] = np.inf
                k = int(np.argmin(dest))
                if max(src, dest[k]) < best[0] - 1e-9:
                    best = (max(src, dest[k]), (b, k))
            ld.add(j, b)
        if best[1] is None:
            return
        b, k = best[1]
        ld.remove(j, b)
        ld.add(k, b)


def _layout_index(problem: ReplanProblem, node: int, name: str) -> int | None:
    """Index of a layout by name; ``tpT`` is found by its instances, so a uniform TP equal to the
    node's current layout finds ``keep``."""
    lays = problem.layouts(node)
    if name.startswith("tp"):
        t = int(name[2:])
        want = tuple((k * t, t) for k in range(problem.gpus_per_node // t))
        return next((i for i, lay in enumerate(lays) if lay.slots == want), None)
    return next((i for i, lay in enumerate(lays) if lay.name == name), None)


def budget_ok(problem: ReplanProblem, chosen: list[Slot]) -> bool:
    return sum(s.tp for s in chosen) <= problem.budget


def uniform_choice(problem: ReplanProblem, tp: int) -> list[int] | None:
    """Every node on TP ``tp`` (nodes beyond the GPU budget off)."""
    out, gpus = [], 0
    for n in range(problem.spec.nodes):
        i = _layout_index(problem, n, f"tp{tp}")
        if i is None:
            return None
        if gpus + problem.gpus_per_node > problem.budget:
            out.append(0)  # off
            continue
        gpus += problem.gpus_per_node
        out.append(i)
    return out


def keep_choice(problem: ReplanProblem) -> list[int]:
    return [(_layout_index(problem, n, "keep") or 0) for n in range(problem.spec.nodes)]


def mixed_choice(problem: ReplanProblem, big: int, small: int, k: int) -> list[int] | None:
    """k nodes on TP ``big``, the rest on TP ``small``; nodes already running a TP take it first."""
    nodes = range(problem.spec.nodes)
    on_node: dict[int, set[int]] = {}
    for inst in problem.spec.instances:  # one pass, not one per node: 128 nodes at 1 024 GPUs
        on_node.setdefault(inst.node, set()).add(inst.tp)

    def current_tp(n: int) -> int | None:
        tps = on_node.get(n, set())
        return next(iter(tps)) if len(tps) == 1 else None

    order = sorted(nodes, key=lambda n: (current_tp(n) != big, n))
    bigs = set(order[:k])
    out = []
    for n in nodes:
        i = _layout_index(problem, n, f"tp{big if n in bigs else small}")
        if i is None:
            return None
        out.append(i)
    chosen = layout_slots(problem, out)
    return out if budget_ok(problem, chosen) else None


def fluid_bound(problem: ReplanProblem, chosen: list[Slot]) -> float:
    """A lower bound on the makespan of any assignment to ``chosen`` (module doc): the longest
    request alone on its best instance, and the LP that spreads bins fractionally so that every
    configuration's instances share its work equally."""
    from scipy.optimize import linprog

    tps = sorted({s.tp for s in chosen})
    count = {t: sum(1 for s in chosen if s.tp == t) for t in tps}
    bins = problem.bins
    nb, ny = len(bins), len(tps)
    L = problem.lengths
    cost = np.zeros((ny, nb))
    longest = np.inf
    for yi, t in enumerate(tps):
        c = problem.configs[t]
        cost[yi] = np.where(c.concurrency > 0, c.floor, np.inf)
        if c.fits(nb - 1):
            longest = min(longest, c.work[nb - 1] + c.alpha * L[nb - 1])
    # variables: x_yb (fractional requests), M; min M
    nvar = ny * nb + 1
    obj = np.zeros(nvar)
    obj[-1] = 1.0
    a_eq = np.zeros((nb, nvar))
    for b in range(nb):
        a_eq[b, [yi * nb + b for yi in range(ny)]] = 1.0
    a_ub = np.zeros((ny, nvar))
    for yi, t in enumerate(tps):
        a_ub[yi, yi * nb : (yi + 1) * nb] = np.where(np.isfinite(cost[yi]), cost[yi], 0.0)
        a_ub[yi, -1] = -count[t]
    bounds = [
        (0, None if np.isfinite(cost[yi, b]) else 0) for yi in range(ny) for b in range(nb)
    ] + [(0, None)]
    res = linprog(
        obj,
        A_ub=a_ub,
        b_ub=np.zeros(ny),
        A_eq=a_eq,
        b_eq=np.array([b.count for b in bins], dtype=float),
        bounds=bounds,
        method="highs",
    )
    if res.status != 0:
        return np.inf
    return max(float(res.fun), longest)


def candidate_choices(problem: ReplanProblem) -> list[tuple[str, list[int]]]:
    """Configuration mixes the greedy ranks (module doc)."""
    out: list[tuple[str, list[int]]] = [("keep", keep_choice(problem))]
    tps = problem.candidate_tps
    for t in tps:
        c = uniform_choice(problem, t)
        if c is not None:
            out.append((f"tp{t}", c))
    nodes = problem.spec.nodes
    ks = sorted(
        {
            k
            for k in (1, 2, 3, 4, nodes // 8, nodes // 4, nodes // 2, 3 * nodes // 4)
            if 0 < k < nodes
        }
    )
    for i, big in enumerate(tps):
        for small in tps[:i]:
            for k in ks:
                c = mixed_choice(problem, big, small, k)
                if c is not None:
                    out.append((f"{k}x tp{big} + {nodes - k}x tp{small}", c))
    return out


def _whole_node_reason(problem: ReplanProblem) -> str | None:
    """Why a whole-node layout (veRL's) has no instance, when the budget is the cause."""
    if problem.budget < problem.gpus_per_node:
        return (
            f"its layouts turn whole nodes to one TP, {problem.gpus_per_node} GPUs each, and "
            f"the GPU budget is {problem.budget}"
        )
    return None


def _output(
    problem: ReplanProblem,
    plan: ReplanPlan | None,
    t0: float,
    message: str,
    *,
    whole_nodes: bool = False,
    **stats,
) -> SolverOutput:
    if plan is None:
        why = (_whole_node_reason(problem) if whole_nodes else None) or (
            "some bin fits no instance of any candidate configuration"
        )
        return SolverOutput(Status.INFEASIBLE, message=why)
    obj, _ = evaluate_replan(problem, plan)
    return SolverOutput(
        Status.FEASIBLE,
        plan,
        obj,
        message=message,
        stats={"wall_s": time.perf_counter() - t0, **stats},
    )


def best_of(
    problem: ReplanProblem, choices: list[tuple[str, list[int]]], deadline: Deadline
) -> tuple[str, ReplanPlan | None, float]:
    best: tuple[str, ReplanPlan | None, float] = ("", None, np.inf)
    for name, choice in choices:
        if deadline.expired() and best[1] is not None:
            break
        chosen = layout_slots(problem, choice)
        if not budget_ok(problem, chosen):
            continue
        x = assign(problem, chosen, deadline)
        if x is None:
            continue
        plan = to_plan(problem, chosen, x)
        obj, _ = evaluate_replan(problem, plan)
        if obj < best[2]:
            best = (name, plan, obj)
    return best


def solve_greedy(
    problem: ReplanProblem, *, time_limit: float | None = None, seed: int = 0, shortlist: int = 4
) -> SolverOutput:
    """Enumerate configuration mixes, rank by the fluid bound, assign the best ``shortlist``."""
    t0, deadline = time.perf_counter(), _deadline(time_limit)
    ranked = []
    for name, choice in candidate_choices(problem):
        chosen = layout_slots(problem, choice)
        if budget_ok(problem, chosen):
            ranked.append((fluid_bound(problem, chosen), name, choice))
    ranked.sort(key=lambda r: r[0])
    # keep is always tried: it pays no switch or migration, which the fluid bound leaves out
    short = [(n, c) for _, n, c in ranked if n == "keep"] + [
        (n, c) for _, n, c in ranked[:shortlist] if n != "keep"
    ]
    name, plan, _ = best_of(problem, short, deadline)
    return _output(
        problem, plan, t0, f"greedy: {name}", mixes=len(ranked), assigned=len(short), layout=name
    )


def solve_verl_to(
    problem: ReplanProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """veRL-TO (§6): the best single TP over the whole pool, by sweep."""
    t0, deadline = time.perf_counter(), _deadline(time_limit)
    choices = [
        (f"tp{t}", c)
        for t in problem.candidate_tps
        if (c := uniform_choice(problem, t)) is not None
    ]
    name, plan, _ = best_of(problem, choices, deadline)
    return _output(problem, plan, t0, f"verl-to: {name}", whole_nodes=True, layout=name)


def solve_verl_lo(
    problem: ReplanProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """veRL-LO (§6): the largest candidate TP on every node."""
    t0 = time.perf_counter()
    t = max(problem.candidate_tps)
    choice = uniform_choice(problem, t)
    name, plan, _ = best_of(problem, [(f"tp{t}", choice)] if choice else [], _deadline(time_limit))
    return _output(problem, plan, t0, f"verl-lo: {name}", whole_nodes=True, layout=name)


def solve_keep(
    problem: ReplanProblem, *, time_limit: float | None = None, seed: int = 0
) -> SolverOutput:
    """The current instances, requests re-balanced."""
    t0 = time.perf_counter()
    _, plan, _ = best_of(problem, [("keep", keep_choice(problem))], _deadline(time_limit))
    return _output(problem, plan, t0, "keep: current instances, re-balanced", layout="keep")
