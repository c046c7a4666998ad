"""OrchestrRL's Eq. 1 as a MILP on HiGHS, built with numpy and solved through formulations.highs.

The model is exact with respect to ``costmodels.replan.problem`` (its docstring defines T_j,
C_mig, C_sw and constraints (2)-(6)): decoding the optimum and evaluating it gives the MILP's
objective. It ranges over every plan the validator accepts (one layout per node: off, keep, or a
uniform candidate TP), so it contains the plan of every other ``replan`` solver.

**Sets.** Nodes n with layouts ℓ ∈ Λ_n; slots j ∈ J_nℓ, the instances layout ℓ creates (config
y_j, switch cost σ_j, kept current instance k_j or none); bins b = 1..B sorted by length, L_0 = 0.

**Variables.** v_nℓ ∈ {0,1} layout choice; x_jb ∈ Z+ requests of bin b on slot j (only where the
bin fits, (5)); z_jb ∈ {0,1} "slot j holds a request of length >= L_b", so z_j1 says j is used;
m_jb >= 0 requests of bin b that migrate onto a kept slot; S_j >= 0 decode steps of slot j;
M makespan.

**Constraints.**

    (6)  Σ_ℓ v_nℓ = 1                                        every node takes one layout
    (3)  Σ_nℓ G_ℓ v_nℓ <= G_total                            GPU budget
    (4)  Σ_j x_jb = N_b                                      every request once
    (a)  x_jb <= N_b z_jb,  z_j,b+1 <= z_jb,  z_j1 <= v_nℓ   presence chain, slot exists
    (b)  S_j >= Σ_b (L_b - L_b-1) z_jb                       the longest request (telescoped chain)
    (c)  S_j >= Σ_b (L_b / B_yb) x_jb                        tokens over concurrency
    (d)  m_jb >= x_jb - n_kb (kept slots; else m_jb = x_jb)  who pays migration
    (1)  M >= Σ_b w_yb x_jb + α_y S_j + Σ_b μ_yb m_jb + σ_j z_j1
    (2)  (μ - δ) K_y z_j1 <= Σ_b (κ_b + L_b) x_jb <= (μ + δ) K_y z_j1   when δ is set

minimise M. Interchangeable slots (one node layout, same switch cost, not kept) are ordered by
use and by Σ_b L_b x_jb (symmetry breaking).

**At scale, before HiGHS.** This model's LP relaxation is the fluid bound: fractional requests
spread every bin over every slot, so no instance pays for its longest request, and at 1 024 GPUs
(97 732 columns) HiGHS does not finish its root. Two pieces run first and make the answer at any
size:

* the bound: the **aggregate model** (``formulations.replan.aggregate``: instances counted by type
  and longest bin, nodes by class; both forms of (1) summed per group) bisected on M, at least the
  fluid bound and the longest request alone. It is what M starts at here;
* the plan: the **packing** (``formulations.replan.packing``) at targets between that bound and
  the warm start, on the warm start's layout and on the aggregate model's, longest bins first,
  residents kept home only while their instance stays under the target.

When the packing's plan is within ``mip_gap`` of the bound (one more aggregate test just under
the plan decides), it is returned as optimal; within :data:`HANDOVER_GAP` it is returned with its
gap when this model is large; otherwise it warm-starts this model, and over the column budget it
returns with the bound.
The result message says where the plan and the bound came from. Measured here
(``benchmarks/results/replan/at_scale.md``): ``replan-1024`` within 0.002% of its bound in about
3 s, where the greedy alone is 2.7% above it; ``replan-64`` proven optimal in under 2 s, 3.6%
below the greedy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from costmodels.replan.check import check_replan
from costmodels.replan.judge import evaluate_replan
from costmodels.replan.layouts import Slot
from costmodels.replan.plan import NewInstance, ReplanPlan, plan_counts
from costmodels.replan.problem import ReplanProblem, instance_cost
from costmodels.replan.slots import slots
from costmodels.solving import Deadline, SolverOutput, Status, note_work
from formulations.highs import HighsOutcome, solve_highs
from formulations.replan.at_scale import Scale, at_scale
from formulations.replan.fluid import lower_bound

#: HiGHS presolve + root LP time per column measured here (49k columns: ~1.9 s, 97k: ~2.7 s);
#: with less time per column HiGHS cannot finish its root within the limit
SECONDS_PER_COLUMN = 4e-5


class _Columns:
    """Column bookkeeping: bounds, costs and integrality, appended in blocks."""

    def __init__(self) -> None:
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[bool] = []

    def add(self, lower: float, upper: float, integer: bool) -> int:
        self.lower.append(lower)
        self.upper.append(upper)
        self.integer.append(integer)
        return len(self.lower) - 1


class _Rows:
    """Sparse rows in COO form."""

    def __init__(self) -> None:
        self.r: list[int] = []
        self.c: list[int] = []
        self.v: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def add(self, cols: list[int], vals: list[float], lo: float, hi: float) -> None:
        i = len(self.lo)
        self.r.extend([i] * len(cols))
        self.c.extend(cols)
        self.v.extend(vals)
        self.lo.append(lo)
        self.hi.append(hi)


def build(problem: ReplanProblem, floor: float | None = None) -> dict[str, Any]:
    """The model's arrays and the index maps needed to decode and warm-start it; ``floor``: a
    lower bound on M known beforehand (default :func:`lower_bound`)."""
    inf = math.inf
    bins = problem.bins
    nb = len(bins)
    N = [b.count for b in bins]
    L = problem.lengths
    dL = np.diff(np.concatenate([[0.0], L]))
    demand = problem.demand
    s = problem.spec
    cols, rows = _Columns(), _Rows()
    M = cols.add(lower_bound(problem) if floor is None else floor, inf, False)
    table = slots(problem)
    v: dict[tuple[int, int], int] = {}
    info: list[dict[str, Any]] = []  # per slot: slot, x cols by bin, z cols, m cols
    per_bin: list[list[int]] = [[] for _ in range(nb)]
    budget_cols, budget_vals = [], []
    for n, layouts in enumerate(table):
        lay_cols = []
        for li, slot_list in enumerate(layouts):
            v[n, li] = cols.add(0, 1, True)
            lay_cols.append(v[n, li])
            gpus = sum(sl.tp for sl in slot_list)
            if gpus:
                budget_cols.append(v[n, li])
                budget_vals.append(float(gpus))
            prev = None
            for sl in slot_list:
                entry = _slot_model(problem, sl, cols, rows, v[n, li], N, dL, M, per_bin)
                info.append(entry)
                # symmetry: interchangeable slots of one layout are used, and loaded, in order
                entry["follows"] = (
                    prev is not None
                    and prev["slot"].kept is None
                    and sl.kept is None
                    and abs(prev["slot"].switch_s - sl.switch_s) < 1e-12
                )
                if entry["follows"]:
                    rows.add([prev["z"][0], entry["z"][0]], [1.0, -1.0], 0.0, inf)
                    c1 = list(prev["x"].values()) + list(entry["x"].values())
                    v1 = [L[b] for b in prev["x"]] + [-L[b] for b in entry["x"]]
                    rows.add(c1, v1, 0.0, inf)
                prev = entry
        rows.add(lay_cols, [1.0] * len(lay_cols), 1.0, 1.0)  # (6)
    rows.add(budget_cols, budget_vals, -inf, float(problem.budget))  # (3)
    for b in range(nb):  # (4)
        rows.add(per_bin[b], [1.0] * len(per_bin[b]), float(N[b]), float(N[b]))
    if s.kv_delta is not None:
        mu, delta = problem.kv_target, s.kv_delta
        for e in info:  # (2)
            cap = problem.configs[e["slot"].tp].kv_tokens
            xc = list(e["x"].values())
            dv = [demand[b] for b in e["x"]]
            rows.add(xc + [e["z"][0]], dv + [-(mu + delta) * cap], -inf, 0.0)
            rows.add(xc + [e["z"][0]], dv + [-(mu - delta) * cap], 0.0, inf)
    return {"cols": cols, "rows": rows, "M": M, "v": v, "slots": info, "table": table}


def _slot_model(
    problem: ReplanProblem,
    sl: Slot,
    cols: _Columns,
    rows: _Rows,
    v_col: int,
    N: list[int],
    dL: np.ndarray,
    M: int,
    per_bin: list[list[int]],
) -> dict[str, Any]:
    inf = math.inf
    cfg = problem.configs[sl.tp]
    nb = len(N)
    local = problem.resident[sl.kept] if sl.kept is not None else np.zeros(nb, dtype=np.int64)
    z = [cols.add(0, 1, True) for _ in range(nb)]
    S = cols.add(0, inf, False)
    x: dict[int, int] = {}
    m: dict[int, int] = {}
    rows.add([z[0], v_col], [1.0, -1.0], -inf, 0.0)  # (a) slot exists
    for b in range(nb - 1):
        rows.add([z[b + 1], z[b]], [1.0, -1.0], -inf, 0.0)  # (a) chain
    rows.add([S] + z, [1.0] + [-float(d) for d in dL], 0.0, inf)  # (b)
    for b in range(nb):
        if not cfg.fits(b):
            continue
        x[b] = cols.add(0, N[b], True)
        per_bin[b].append(x[b])
        rows.add([x[b], z[b]], [1.0, -float(N[b])], -inf, 0.0)  # (a)
        if local[b] > 0:
            m[b] = cols.add(0, inf, False)
            rows.add([m[b], x[b]], [1.0, -1.0], -float(local[b]), inf)  # (d)
    rows.add([S] + list(x.values()), [1.0] + [-cfg.token_steps[b] for b in x], 0.0, inf)  # (c)
    # (1): M - w x - alpha S - mu (m or x) - sigma z_1 >= 0
    c1, v1 = [M, S, z[0]], [1.0, -cfg.alpha, -sl.switch_s]
    for b, col in x.items():
        c1.append(col)
        v1.append(-(cfg.work[b] + (0.0 if b in m else cfg.migrate[b])))
    for b, col in m.items():
        c1.append(col)
        v1.append(-cfg.migrate[b])
    rows.add(c1, v1, 0.0, inf)
    return {"slot": sl, "x": x, "z": z, "m": m, "S": S, "local": local}


def _warm_values(
    model: dict[str, Any], problem: ReplanProblem, plan: ReplanPlan, n_cols: int
) -> np.ndarray | None:
    """Column values of a plan inside this model (None if the plan is not expressible)."""
    val = np.zeros(n_cols)
    x = plan_counts(problem, plan)
    where = {(i.node, i.gpu, i.tp): j for j, i in enumerate(plan.instances)}
    L = problem.lengths
    chosen_layout = {}
    for n, layouts in enumerate(model["table"]):
        mine = tuple(sorted((i.gpu, i.tp) for i in plan.instances if i.node == n))
        for li, slot_list in enumerate(layouts):
            if tuple(sorted((s.gpu, s.tp) for s in slot_list)) == mine:
                chosen_layout[n] = li
                break
        else:
            return None
        val[model["v"][n, chosen_layout[n]]] = 1.0
    worst = 0.0
    entries = []
    for e in model["slots"]:
        sl = e["slot"]
        j = where.get((sl.node, sl.gpu, sl.tp)) if chosen_layout.get(sl.node) == sl.layout else None
        xs = x[j] if j is not None else np.zeros(len(problem.bins), dtype=np.int64)
        entries.append((e, xs))
    # interchangeable slots must meet the ordering rows: sort each run's loads (same objective)
    runs: list[list[int]] = []
    for i, (e, _) in enumerate(entries):
        if e.get("follows"):
            runs[-1].append(i)
        else:
            runs.append([i])
    for run in runs:
        loads = sorted(
            (entries[i][1] for i in run),
            key=lambda xs: (bool(xs.any()), float(xs @ L)),
            reverse=True,
        )
        for i, xs in zip(run, loads, strict=True):
            entries[i] = (entries[i][0], xs)
    for e, xs in entries:
        for b, col in e["x"].items():
            val[col] = xs[b]
        if any(xs[b] and b not in e["x"] for b in range(len(xs))):
            return None
        present = np.flatnonzero(xs)
        top = present.max() if len(present) else -1
        for b in range(top + 1):
            val[e["z"][b]] = 1.0
        for b, col in e["m"].items():
            val[col] = max(0, xs[b] - e["local"][b])
        sl = e["slot"]
        cost = instance_cost(
            problem, sl.node, sl.gpu, sl.tp, xs
        )  # the cost model's T_j + C_mig + C_sw
        val[e["S"]] = cost.steps
        worst = max(worst, cost.total_s)
    val[model["M"]] = max(worst, model["cols"].lower[model["M"]])
    return val


def _decode(model: dict[str, Any], problem: ReplanProblem, values: np.ndarray) -> ReplanPlan:
    out = []
    chosen = {
        n: max(range(len(layouts)), key=lambda k: values[model["v"][n, k]])
        for n, layouts in enumerate(model["table"])
    }
    for e in model["slots"]:
        sl = e["slot"]
        if chosen[sl.node] != sl.layout:
            continue
        bins = [
            (problem.bins[b].upper, int(round(values[col])))
            for b, col in e["x"].items()
            if round(values[col]) > 0
        ]
        out.append(NewInstance(node=sl.node, gpu=sl.gpu, tp=sl.tp, bins=bins))
    return ReplanPlan(instances=out)


#: HiGHS branch-and-bound nodes without a time limit (``nodes``): the MILP's work budget, so the
#: same state gives the same plan on any machine (HiGHS is deterministic below its time limit).
#: 100 nodes of an open-gap 8 502-column model took ~10 s here; replan-tail is proven in 0.1 s
DEFAULT_NODES = 100
#: columns above which, without a time limit, HiGHS is not started and the packing's plan returns
#: with the aggregate bound (``max_columns``): replan-64's 8 502 columns take ~10 s for 100 nodes,
#: while replan-1024's 97 732 did not finish HiGHS's root in 120 s on the development machine
DEFAULT_MAX_COLUMNS = 50_000
#: a gap a large per-slot model is not started for (HiGHS's own default relative gap): its LP
#: bound is the fluid one, so its nodes cannot close a gap the aggregate bound leaves this small
#: (at 256 GPUs 100 nodes took 80 s here and left a 0.001% gap as it was)
HANDOVER_GAP = 1e-4
#: models of up to about this many columns go to HiGHS whatever the gap: it proves them in about a
#: second (replan-tail's 1 092 columns in 0.1 s)
HANDOVER_COLUMNS = 10_000


def solve_replan_milp(
    problem: ReplanProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    mip_gap: float = 1e-6,
    warm_start: Callable[..., SolverOutput] | None = None,
    threads: int | None = None,
    nodes: Annotated[
        int | None,
        Field(
            ge=1,
            le=10**9,
            description=(
                "HiGHS branch-and-bound node budget (default 100 without --time-limit; with one, "
                "until the limit)"
            ),
        ),
    ] = None,
    max_columns: Annotated[
        int | None,
        Field(
            ge=1,
            le=10**9,
            description=(
                "largest per-slot model handed to HiGHS without --time-limit (default 50000); a "
                "larger one returns the packing's plan with the aggregate bound"
            ),
        ),
    ] = None,
) -> SolverOutput:
    """Eq. 1 (module doc): the aggregate bound and the packing first, then HiGHS on the per-slot
    model when the gap is still open. ``warm_start``: a heuristic solver whose plan seeds both.

    Effort is a work budget (docs/architecture.md, "Solver plumbing"): the bisection and the
    packing take a fixed number of steps, and without ``time_limit`` HiGHS stops after ``nodes``
    branch-and-bound nodes and a model over ``max_columns`` columns is not handed to it, so a
    state gives the same plan on any machine; the façade's default cap is only a safety net,
    reported when it binds. With ``time_limit`` HiGHS runs until the limit, and a model whose
    presolve alone would overrun what is left returns the packing's plan."""
    t0 = time.perf_counter()
    deadline = Deadline(time_limit)
    by_time = time_limit is not None
    node_budget = nodes if nodes is not None else (None if by_time else DEFAULT_NODES)
    column_budget = (
        max_columns if max_columns is not None else (None if by_time else DEFAULT_MAX_COLUMNS)
    )
    incumbent = _incumbent(problem, warm_start, time_limit, seed)
    # no plan here (no bin fits, or every packing breaks (2)) leaves the per-slot model to decide
    scale = at_scale(problem, incumbent, deadline, mip_gap)
    stats = dict(scale.stats)
    early = _settledat_scale(problem, scale, mip_gap)
    if early is not None:
        return early
    model = build(problem, floor=scale.bound)
    a, cost, n_rows, n_cols = _slot_matrix(model)
    warm = None if scale.plan is None else _warm_values(model, problem, scale.plan, n_cols)
    build_s = time.perf_counter() - t0
    skip = _skip_reason(n_cols, column_budget, deadline)
    stats.update({"columns": n_cols, "rows": n_rows, "build_s": build_s})
    if skip:
        # HiGHS's presolve alone would overrun: the packing's plan and the aggregate bound stand
        stats["highs_status"] = "skipped (budget)" if column_budget else "skipped (time limit)"
        if scale.plan is None:
            return SolverOutput(Status.NO_SOLUTION, message=f"{skip}; no plan found", stats=stats)
        return scale.output(Status.FEASIBLE, f"{skip}; {scale.source}", stats)
    out = _run_highs(model, a, cost, warm, deadline, mip_gap, seed, threads, node_budget)
    stats.update(
        {
            "nonzeros": int(a.nnz),
            "solve_s": time.perf_counter() - t0 - build_s,
            "highs_status": out.highs_status,
            "nodes": out.nodes,
        }
    )
    return _highs_answer(problem, model, scale, out, stats, mip_gap)


def _incumbent(
    problem: ReplanProblem,
    warm_start: Callable[..., SolverOutput] | None,
    time_limit: float | None,
    seed: int,
) -> SolverOutput | None:
    """The warm-start heuristic's answer (with 40% of a time limit), when its plan passes the
    validator."""
    if warm_start is None:
        return None
    by_time = time_limit is not None
    incumbent = warm_start(problem, time_limit=None if not by_time else 0.4 * time_limit, seed=seed)
    if incumbent.plan is None or check_replan(problem, incumbent.plan):
        return None  # a heuristic's plan that breaks a rule, e.g. (2), is no incumbent
    return incumbent


def _settledat_scale(problem: ReplanProblem, scale: Scale, mip_gap: float) -> SolverOutput | None:
    """The answer without the per-slot model: the packing's plan proved within the gap, or a
    large model whose gap is already under HANDOVER_GAP (None: build the model)."""
    if scale.objective <= scale.bound * (1.0 + mip_gap):
        return scale.output(Status.OPTIMAL, f"{scale.source}: proved within the gap {mip_gap:g}")
    # the per-slot model's size before it is built: per slot a z and at most an x per bin
    slots_n = sum(len(slot_list) for layouts in slots(problem) for slot_list in layouts)
    columns = slots_n * (2 * len(problem.bins) + 1)
    if columns > HANDOVER_COLUMNS and scale.objective <= scale.bound * (1.0 + HANDOVER_GAP):
        return scale.output(
            Status.FEASIBLE,
            f"{scale.source}; gap under {HANDOVER_GAP:g}, the per-slot model (about {columns} "
            "columns) not started",
        )
    return None


def _slot_matrix(model: dict[str, Any]) -> tuple[Any, np.ndarray, int, int]:
    """The built model's constraint matrix, its cost (M alone) and its row and column counts."""
    cols, rows = model["cols"], model["rows"]
    n_cols, n_rows = len(cols.lower), len(rows.lo)
    from scipy.sparse import csc_matrix

    a = csc_matrix(
        (np.array(rows.v, dtype=float), (np.array(rows.r), np.array(rows.c))),
        shape=(n_rows, n_cols),
    )
    cost = np.zeros(n_cols)
    cost[model["M"]] = 1.0
    return a, cost, n_rows, n_cols


def _skip_reason(n_cols: int, column_budget: int | None, deadline: Deadline) -> str:
    """Why the per-slot model is not handed to HiGHS (over the column budget, or too little time
    left for its presolve); empty: it is."""
    left = deadline.remaining()
    skip = ""
    if column_budget is not None and n_cols > column_budget:
        skip = f"the per-slot model's {n_cols} columns are over the budget of {column_budget}"
    elif left is not None and left < n_cols * SECONDS_PER_COLUMN:
        skip = f"{left:.2f} s left for the per-slot model's {n_cols} columns"
    return skip


def _run_highs(
    model: dict[str, Any],
    a: Any,
    cost: np.ndarray,
    warm: np.ndarray | None,
    deadline: Deadline,
    mip_gap: float,
    seed: int,
    threads: int | None,
    node_budget: int | None,
) -> HighsOutcome:
    """HiGHS on the per-slot model, warm-started, until the deadline or the node budget."""
    remaining = deadline.remaining()
    # no restarts and no sub-MIP heuristics: on replan-64 they spent 34 s of root work without
    # improving the warm start or the bound (the packing's plan and the aggregate bound supply both)
    out = solve_highs(
        cost,
        a,
        np.array(model["rows"].lo, dtype=float),
        np.array(model["rows"].hi, dtype=float),
        np.array(model["cols"].lower, dtype=float),
        np.array(model["cols"].upper, dtype=float),
        model["cols"].integer,
        time_limit=None if remaining is None else max(0.05, remaining),
        mip_gap=mip_gap,
        seed=seed,
        threads=threads,
        node_limit=node_budget,
        restarts=False,
        sub_mip_heuristics=False,
        warm_start=warm,
    )
    if out.stopped == "time_limit":
        deadline.note_bound()
    note_work(out.nodes, node_budget, "nodes")
    return out


def _highs_answer(
    problem: ReplanProblem,
    model: dict[str, Any],
    scale: Scale,
    out: HighsOutcome,
    stats: dict[str, Any],
    mip_gap: float,
) -> SolverOutput:
    """HiGHS's plan when it beats the packing's, against the better of its bound and the
    aggregate one."""
    # HiGHS's bound, or the aggregate one (M's lower bound) when the search stopped before it had
    # one
    bound = max(out.dual_bound, scale.bound) if out.dual_bound is not None else scale.bound
    if out.stopped == "infeasible":
        return SolverOutput(Status.INFEASIBLE, message="HiGHS: infeasible", stats=stats)
    plan, objective = scale.plan, scale.objective
    if out.x is not None and out.objective is not None and out.objective < objective - 1e-9:
        plan = _decode(model, problem, out.x)
        objective = float(out.objective)
        stats["cost_model_objective"] = evaluate_replan(problem, plan)[0]
    if plan is None:
        return SolverOutput(
            Status.NO_SOLUTION, message=f"HiGHS: {stats['highs_status']}, no plan", stats=stats
        )
    optimal = out.optimal or objective <= bound * (1.0 + mip_gap)
    return SolverOutput(
        Status.OPTIMAL if optimal else Status.FEASIBLE,
        plan,
        objective,
        bound,
        message=f"HiGHS: {stats['highs_status']}; {scale.source}",
        stats=stats,
    )
