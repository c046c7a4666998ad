"""A lower bound on Eq. 1 that holds at 1 024 GPUs: instances aggregated by type and longest bin.

The per-slot MILP (``formulations.replan.milp``) grows with nodes x layouts x bins (97 732 columns
on ``replan-1024``), and its LP relaxation is no stronger than the fluid bound: fractional
requests spread every bin over every instance, so no instance pays for decoding its longest
request. This relaxation keeps exactly that cost and forgets which instance is which.

**Types.** A slot's type y = (TP t, switch cost σ_y, kept or not). Nodes whose layouts offer the
same multisets of types form a class c of |c| nodes; a layout ℓ offers a_ℓy slots of type y and
uses G_ℓ GPUs. Per-request cost on y: w'_yb = w_yb + μ_yb on a new instance (every request it
runs migrates onto it), w_yb on a kept one (its residents' migration is dropped: a relaxation).

**Groups.** Every instance that runs requests has a longest bin τ and holds k >= 1 requests of
it; the group (y, τ, k) counts n_yτk such instances (integer) and f_yτkb of their requests of
bin b < τ (bins that fit y only). k runs 1 .. K (:data:`TOP_COUNTS`), the last group meaning "K
or more", with its count of bin τ a column f_yτKτ >= K n_yτK; below K the group holds exactly
k n_yτk of bin τ. Without k an instance could hold a fraction of a second long request.

**The model at a makespan M** (a MILP in u and n; feasible at every M an Eq. 1 plan reaches):

    Σ_ℓ u_cℓ = |c|                                    every node of a class takes a layout
    Σ_cℓ G_ℓ u_cℓ <= G_total                           (3) GPU budget
    Σ_τk n_yτk <= Σ_cℓ a_ℓy u_cℓ                       instances of a type exist
    Σ_yτk f_yτkb + Σ_y,k<K k n_ybk = N_b               (4) every request once
    Σ_b<τ w'_yb f_yτkb + (α_y L_τ + σ_y + k w'_yτ) n_yτk <= M n_yτk
                                                       (1) with S_j >= L_τ, summed over the group
    Σ_b<τ c_yb f_yτkb + (σ_y + k c_yτ) n_yτk <= M n_yτk
                                                       (1) with S_j >= tokens / concurrency

with c_yb = w'_yb + α_y L_b / B_yb (and in group K the top bin's column in place of k n). Any
plan gives a solution (n and f summed over its instances; both forms of (1) hold per instance
since S_j is at least each term), so the smallest feasible M bounds every plan's makespan from
below. Groups whose k longest requests alone overrun M (α_y L_τ + σ_y + k w'_yτ > M) are left
out. The bound is the largest M bisection finds infeasible; it is at least the fluid bound (the
second rows summed over groups are the fluid work, the first the longest request alone), and above
it wherever instances holding long requests cannot also carry their share of the short ones:
``replan-64`` 62.10 s against the fluid 59.50 s, which the packing's plan meets (it was 61.46 s
before groups were told apart by k, and 64.42 s is the greedy's plan). Constraint (2) is left out
(a relaxation). The layout counts u_cℓ also suggest a layout for the packing primal
(``formulations.replan.packing``)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csc_matrix

from costmodels.replan.layouts import Slot
from costmodels.replan.problem import ReplanProblem
from costmodels.solving import UNLIMITED, Deadline
from formulations.highs import solve_highs


@dataclass(frozen=True)
class SlotType:
    """y: the TP, the switch cost and whether the slot keeps a current instance."""

    tp: int
    switch_s: float
    kept: bool


def slot_type(sl: Slot) -> SlotType:
    return SlotType(sl.tp, round(sl.switch_s, 9), sl.kept is not None)


@dataclass
class Classes:
    """Node classes, their distinct layouts (as type counts) and the types they offer."""

    types: list[SlotType]
    #: per class: its nodes, and per distinct layout (type counts, GPUs, one layout index per node)
    nodes: list[list[int]]
    layouts: list[list[tuple[tuple[int, ...], int, list[int]]]]


def node_classes(problem: ReplanProblem) -> Classes:
    """Group the nodes by the type multisets their layouts offer (module doc)."""
    table = problem.slot_table
    types: dict[SlotType, int] = {}
    menus: dict[tuple, int] = {}
    nodes: list[list[int]] = []
    layouts: list[list[tuple[tuple[int, ...], int, list[int]]]] = []
    per_node = []
    for n, lays in enumerate(table):
        menu: dict[tuple[tuple[int, int], ...], int] = {}
        for li, slot_list in enumerate(lays):
            count = Counter(types.setdefault(slot_type(sl), len(types)) for sl in slot_list)
            menu.setdefault(tuple(sorted(count.items())), li)
        per_node.append(menu)
        key = tuple(menu)
        if key not in menus:
            menus[key] = len(nodes)
            nodes.append([])
            layouts.append([])
        nodes[menus[key]].append(n)
    for c, members in enumerate(nodes):
        for key in per_node[members[0]]:
            gpus = sum(list(types)[y].tp * k for y, k in key)
            layouts[c].append((key, gpus, [per_node[n][key] for n in members]))
    ordered = sorted(types, key=lambda t: types[t])
    out_layouts = [
        [(_dense(key, len(ordered)), gpus, idx) for key, gpus, idx in lays] for lays in layouts
    ]
    return Classes(ordered, nodes, out_layouts)


def _dense(key: tuple[tuple[int, int], ...], size: int) -> tuple[int, ...]:
    out = [0] * size
    for y, k in key:
        out[y] = k
    return tuple(out)


#: instances are told apart by how many requests of their longest bin they hold, 1 .. this (the
#: last: at least this many), so that none holds a fraction of a second long request, which the
#: summed rows of (1) alone allow: on ``replan-64`` the bound rises from 61.46 s to the optimum,
#: 62.10 s, and the tests get faster (0.7 s against 2.4 s), their integer counts being tighter
TOP_COUNTS = 3
#: HiGHS branch-and-bound nodes per feasibility test: a work budget, so the bound is the same on
#: any machine; a test that runs out proves nothing and counts as feasible (the bound stays valid).
#: replan-64's tests take 2-40 nodes
NODES_PER_TEST = 2_000


@dataclass
class AggregateBound:
    """The bound, the bisection that found it and the layout counts at the least feasible M."""

    bound: float
    feasible_at: float
    iterations: int
    #: per class, per distinct layout: the LP's node count at ``feasible_at``
    layout_counts: list[list[float]]
    classes: Classes
    model: _Model | None = None

    def raise_to(self, m: float, deadline: Deadline = UNLIMITED) -> float:
        """The bound after one more test at ``m`` (a plan's makespan less the gap asked for): ``m``
        when the model is infeasible there, else the bound as it was."""
        if self.model is None or m <= self.bound:
            return self.bound
        ok, _ = self.model.feasible(m, deadline.remaining())
        if ok is False:
            self.bound = m
        return self.bound

    def choice(self) -> list[int] | None:
        """A layout index per node with the counts found at ``feasible_at`` (a class's nodes take
        them in node order), or None when the bisection found none."""
        if not self.layout_counts:
            return None
        out = [0] * sum(len(nodes) for nodes in self.classes.nodes)
        for nodes, lays, counts in zip(
            self.classes.nodes, self.classes.layouts, self.layout_counts, strict=True
        ):
            k = 0
            for (_, _, index), count in zip(lays, counts, strict=True):
                for _ in range(int(round(count))):
                    out[nodes[k]] = index[k]
                    k += 1
        return out


class _Model:
    """The LP's constant parts; :meth:`feasible` fills in M."""

    def __init__(self, problem: ReplanProblem, integral: bool) -> None:
        self.problem, self.integral = problem, integral
        self.classes = node_classes(problem)
        self.N = np.array([b.count for b in problem.bins], dtype=float)
        self.L = problem.lengths
        nb = len(self.N)
        self.cost: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, float, float]] = {}
        for y, ty in enumerate(self.classes.types):
            cfg = problem.configs[ty.tp]
            per = cfg.work + (0.0 if ty.kept else cfg.migrate)
            fits = cfg.concurrency > 0
            alone = per + cfg.alpha * self.L + ty.switch_s
            self.cost[y] = (
                per,
                per + cfg.alpha * cfg.token_steps,
                np.where(fits, alone, math.inf),
                cfg.alpha,
                ty.switch_s,
            )
        self.nb = nb

    def _groups(self, y: int, m: float) -> list[tuple[int, int]]:
        """(τ, k) groups of type y that can finish within ``m``: k requests of the longest bin τ
        alone take w'_yτ k + α_y L_τ + σ_y."""
        per, _, alone, _, _ = self.cost[y]
        return [
            (tau, k)
            for tau in range(self.nb)
            for k in range(1, min(TOP_COUNTS, int(self.N[tau])) + 1)
            if alone[tau] + (k - 1) * per[tau] <= m
        ]

    def feasible(
        self, m: float, time_limit: float | None = None
    ) -> tuple[bool | None, list[list[float]]]:
        """Is the model feasible at makespan ``m`` (None: HiGHS's node budget or ``time_limit``
        ran out before it knew); the layout counts when it found a solution."""
        mx = _Matrix(self.integral)
        u = self._layout_rows(mx)
        cover: list[list[tuple[int, float]]] = [[] for _ in range(self.nb)]
        for y in range(len(self.classes.types)):
            self._type_rows(mx, y, m, u, cover)
        for b in range(self.nb):
            if not cover[b]:
                return False, []
            mx.row([c for c, _ in cover[b]], [v for _, v in cover[b]], self.N[b], self.N[b])
        n_cols = len(mx.col_hi)
        a = csc_matrix((mx.rows_v, (mx.rows_r, mx.rows_c)), shape=(len(mx.lo), n_cols))
        out = solve_highs(
            np.zeros(n_cols),
            a,
            np.array(mx.lo),
            np.array(mx.hi),
            np.zeros(n_cols),
            np.array(mx.col_hi),
            mx.integer if self.integral else None,
            time_limit=time_limit,
            node_limit=NODES_PER_TEST,
        )
        if out.x is not None:
            return True, [[float(out.x[i]) for i in uc] for uc in u]
        return (False if out.stopped == "infeasible" else None), []

    def _layout_rows(self, mx: _Matrix) -> list[list[int]]:
        """The layout counts u_cℓ: Σ_ℓ u_cℓ = |c| per class, then (3) Σ_cℓ G_ℓ u_cℓ <= G_total."""
        cls = self.classes
        u = [
            [mx.col(len(nodes), True) for _ in lays]
            for nodes, lays in zip(cls.nodes, cls.layouts, strict=True)
        ]
        for c, lays in enumerate(cls.layouts):
            mx.row(u[c], [1.0] * len(lays), len(cls.nodes[c]), len(cls.nodes[c]))
        mx.row(
            [u[c][i] for c, lays in enumerate(cls.layouts) for i in range(len(lays))],
            [float(g) for lays in cls.layouts for _, g, _ in lays],
            -math.inf,
            float(self.problem.budget),
        )
        return u

    def _type_rows(
        self,
        mx: _Matrix,
        y: int,
        m: float,
        u: list[list[int]],
        cover: list[list[tuple[int, float]]],
    ) -> None:
        """Type y's groups (τ, k) that fit ``m``: their columns n_yτk and f_yτkb, both forms of
        (1) per group, then Σ_τk n_yτk <= Σ_cℓ a_ℓy u_cℓ; each group's share of (4) goes to
        ``cover`` per bin."""
        per, tokens, alone, alpha, sigma = self.cost[y]
        groups = []
        for tau, k in self._groups(y, m):
            # k < TOP_COUNTS: exactly k requests of bin τ per instance; k = TOP_COUNTS: at
            # least that many (their count a column)
            n = mx.col(math.inf, True)
            groups.append(n)
            f = {b: mx.col(self.N[b]) for b in range(tau) if math.isfinite(alone[b])}
            top = k * per[tau], k * tokens[tau]
            if k == TOP_COUNTS:
                f[tau] = mx.col(self.N[tau])
                mx.row([n, f[tau]], [float(k), -1.0], -math.inf, 0.0)
                top = 0.0, 0.0
            else:
                cover[tau].append((n, float(k)))
            for b, fc in f.items():
                cover[b].append((fc, 1.0))
            fb = list(f)
            mx.row(
                list(f.values()) + [n],
                [per[b] for b in fb] + [alpha * self.L[tau] + sigma + top[0] - m],
                -math.inf,
                0.0,
            )
            mx.row(
                list(f.values()) + [n],
                [tokens[b] for b in fb] + [sigma + top[1] - m],
                -math.inf,
                0.0,
            )
        cls = self.classes
        offered = [
            (u[c][i], -float(key[y]))
            for c, lays in enumerate(cls.layouts)
            for i, (key, _, _) in enumerate(lays)
            if key[y]
        ]
        if groups:
            mx.row(
                groups + [c for c, _ in offered],
                [1.0] * len(groups) + [v for _, v in offered],
                -math.inf,
                0.0,
            )


class _Matrix:
    """The model at one M as it is built: rows in COO form with their bounds, and the columns'
    upper bounds and integrality (whole columns are integer only in the integral model)."""

    def __init__(self, integral: bool) -> None:
        self.integral = integral
        self.rows_r: list[int] = []
        self.rows_c: list[int] = []
        self.rows_v: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.col_hi: list[float] = []
        self.integer: list[bool] = []

    def row(self, cols: list[int], vals: list[float], low: float, high: float) -> None:
        i = len(self.lo)
        self.rows_r.extend([i] * len(cols))
        self.rows_c.extend(cols)
        self.rows_v.extend(vals)
        self.lo.append(low)
        self.hi.append(high)

    def col(self, upper: float, whole: bool = False) -> int:
        self.col_hi.append(upper)
        self.integer.append(whole and self.integral)
        return len(self.col_hi) - 1


def aggregate_bound(
    problem: ReplanProblem,
    lower: float,
    upper: float | None,
    *,
    rel_tol: float = 1e-5,
    max_iter: int = 30,
    integral: bool = True,
    deadline: Deadline = UNLIMITED,
) -> AggregateBound:
    """Bisect M between ``lower`` (a known bound) and ``upper`` (a plan's makespan; None: found by
    doubling) to relative precision ``rel_tol`` (module doc). Work-bounded (at most ``max_iter``
    tests of at most :data:`NODES_PER_TEST` nodes each); the deadline, a safety cap, ends the
    bisection early with the bound reached so far. A test that proves nothing moves the upper
    end, never the bound."""
    model = _Model(problem, integral)
    ok, counts = model.feasible(lower, deadline.remaining())
    if ok is not False:
        return AggregateBound(float(lower), float(lower), 1, counts, model.classes, model)
    it = 1
    if upper is None:  # no plan known: double until the relaxation is feasible
        upper = lower
        ok = False
        while ok is False and it < max_iter:
            lower, upper = upper, 2.0 * upper
            ok, counts = model.feasible(upper, deadline.remaining())
            it += 1
    else:
        ok, counts = model.feasible(upper, deadline.remaining())
        it += 1
    if ok is False:  # every plan is in the relaxation, so only numerics get here: keep ``lower``
        return AggregateBound(float(lower), float(upper), it, [], model.classes, model)
    lo, hi = lower, upper
    while hi - lo > rel_tol * hi and it < max_iter and not deadline.expired():
        mid = 0.5 * (lo + hi)
        ok, got = model.feasible(mid, deadline.remaining())
        it += 1
        if ok is False:
            lo = mid
        else:
            hi = mid
            counts = got or counts
    return AggregateBound(float(lo), float(hi), it, counts, model.classes, model)
