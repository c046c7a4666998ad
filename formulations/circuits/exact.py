"""Exact circuit allocation: the optimum of Algorithm 3's objective (OrchestrRL App. D.1–D.2).

The objective is lexicographic (Eq. 7 makes a demanded pair without a circuit an infinite
bottleneck, so coverage comes first):

1. maximise the demand volume on covered pairs (a demanded eligible pair is covered when it has
   at least one circuit), i.e. minimise the volume left at +inf pair time;
2. among allocations with that coverage, minimise the bottleneck max_p t1_p / c_p over covered
   pairs, where t1_p = max(D(a->b), D(b->a)) * 8 / B_link is the pair's one-circuit time (Eq. 7).

Notation: pairs p = demanded eligible pairs, cap_p = min(deg(a), deg(b)); integer c_p in
[0, cap_p]; binary y_p = [c_p >= 1] (y_p <= c_p <= cap_p * y_p); port budgets (Eq. 6)
sum_{p ∋ v} c_p <= deg(v).

Both stages are solved on one solver; stage 2 keeps stage 1's covered volume as a constraint.
Between the stages the bottleneck is bracketed (``_Model.window``): above by an incumbent (stage
1's coverage with spare ports filled by the ``fill`` allocator, Algorithm 3 when the planner
passes it in; docs/architecture.md, "The house": formulations never import heuristics), below,
when every pair is covered, by max_v sum_{p at v} t1_p / deg(v) and max_p t1_p / cap_p. A covered
pair then needs kmin_p..kmax_p circuits; nothing outside that window can matter, which keeps both
models small.

* ``milp`` (HiGHS through PuLP) maximises a throughput floor w: w <= s_p * c_p + M (1 - y_p) with
  s_p = t_min / t1_p (scaled so that 0 < s_p <= 1) and M = max cap_p; the bottleneck is t_min / w;
  c_p >= kmin_p y_p. Stage 1 weighs coverage by demand / max demand.
* ``cpsat`` (OR-Tools CP-SAT, integers only) picks the bottleneck from its finite candidate set
  {t1_p / k} inside the window: an index variable i into the sorted candidates and, per pair and
  k in (kmin_p, kmax_p], "c_p >= k unless i >= j_pk" where j_pk is the first candidate at or above
  t1_p / (k - 1), and "i >= j_p" for a covered pair, j_p the first candidate at or above
  t1_p / kmax_p (its fastest). Stage 1 weighs coverage by whole bytes.

After stage 2 the ``fill`` allocator hands out spare ports: adding circuits never raises a pair
time, so the optimum is kept and no port sits idle.

Note (tested in tests/test_circuits_solvers.py): when Algorithm 3 covers every demanded pair, its
bottleneck is already optimal; let b be its bottleneck pair and v the endpoint of b that filled up
first: every circuit at v went to a pair whose time before it was >= b's time then >= T_greedy, so
beating T_greedy needs deg(v) + 1 circuits at v. The exact models earn their keep on coverage
(port-starved fabrics, where covering the most volume is a b-matching) and as certificates.

A time limit is shared by both stages; when it runs out the best allocation found so far is
returned with status ``feasible`` (an all-zero allocation is always feasible, so there always is
one).
"""

from __future__ import annotations

import bisect
import math
import time
import warnings
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from costmodels.circuits.judge import pair_time_s
from costmodels.circuits.plan import Counts, plan_from_counts
from costmodels.circuits.problem import CircuitProblem, DemandedPair, demanded_pairs
from costmodels.solving import Deadline, SolverOutput, Status, native_stdout_silenced
from formulations.pulp_util import variable_factory

Fill = Callable[[CircuitProblem, Counts], Counts]


def _bottleneck(pairs: list[DemandedPair], counts: Counts, link_gbps: float) -> float:
    return max(
        (
            pair_time_s(p.demand, counts.get((p.a, p.b), 0), link_gbps)
            for p in pairs
            if counts.get((p.a, p.b), 0) > 0
        ),
        default=0.0,
    )


def _incident(pairs: list[DemandedPair]) -> dict[str, list[int]]:
    inc: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        inc.setdefault(p.a, []).append(i)
        inc.setdefault(p.b, []).append(i)
    return inc


class _Model:
    """Shared stage structure; subclasses supply the two solves."""

    def __init__(self, problem: CircuitProblem, time_limit: float | None):
        self.problem = problem
        self.link = problem.fabric.link_gbps
        self.deg = problem.fabric.degrees()
        self.pairs = [p for p in demanded_pairs(problem) if p.cap > 0]
        self.t1 = [pair_time_s(p.demand, 1, self.link) for p in self.pairs]
        self.inc = _incident(self.pairs)
        self.deadline = Deadline(time_limit)
        self.stats: dict[str, Any] = {"pairs": len(self.pairs)}
        self.said: list[str] = []  # the backend's own status after each solve, kept in the message

    def counts_of(self, values: list[int]) -> Counts:
        return {(p.a, p.b): int(v) for p, v in zip(self.pairs, values, strict=True) if v > 0}

    def run(self, fill: Fill | None) -> SolverOutput:
        if not self.pairs:
            return SolverOutput(
                Status.OPTIMAL,
                plan_from_counts({}),
                objective=0.0,
                bound=0.0,
                message="no demanded eligible pair can get a circuit",
                stats=self.stats,
            )
        t0 = time.perf_counter()
        cover, cover_optimal = self.stage1()
        self.stats["stage1_s"] = time.perf_counter() - t0
        self.stats["covered_pairs"] = sum(1 for v in cover if v > 0)
        # incumbent with the stage-1 coverage: spare ports filled (Algorithm 3 when the planner
        # passes it); its bottleneck bounds the optimum from above
        incumbent = self.counts_of(cover)
        if fill is not None:
            incumbent = fill(self.problem, incumbent)
        self.window(cover, _bottleneck(self.pairs, incumbent, self.link))
        t1 = time.perf_counter()
        best, optimal, bound = (
            self.stage2(cover, incumbent) if self.deadline.remaining() != 0 else (None, False, None)
        )
        self.stats["stage2_s"] = time.perf_counter() - t1
        counts = incumbent  # already filled
        if best is not None:
            counts = self.counts_of(best)
            if fill is not None:
                counts = fill(self.problem, counts)
        optimal = optimal and cover_optimal and best is not None
        objective = _bottleneck(self.pairs, counts, self.link)
        status = Status.OPTIMAL if optimal else Status.FEASIBLE
        if optimal:
            why = "optimal"
        elif self.deadline.remaining() == 0:
            why = "time limit reached: best allocation so far"
        else:
            why = "the backend stopped without proving optimality: best allocation so far"
        return SolverOutput(
            status,
            plan_from_counts(counts),
            objective=objective,
            bound=objective if optimal else (bound if cover_optimal else None),
            message=f"{self.name}: {why} ({'; '.join(self.said)})",
            stats=self.stats,
        )

    def window(self, cover: list[int], upper: float) -> None:
        """Bounds on the optimal bottleneck T* and, per pair, the circuits a covered pair needs:
        T* <= ``upper`` (an incumbent), and when every pair is covered T* >= the per-endpoint
        bound sum_{p at v} t1_p / deg(v) and >= t1_p / cap_p. A covered pair then needs between
        kmin_p = ceil(t1_p / upper) and kmax_p = ceil(t1_p / lower) circuits; nothing outside
        this window can matter, which keeps both models small."""
        lower = 0.0
        if all(v > 0 for v in cover):
            lower = max(t / p.cap for t, p in zip(self.t1, self.pairs, strict=True))
            for v, idx in self.inc.items():
                if self.deg[v] > 0:
                    lower = max(lower, sum(self.t1[i] for i in idx) / self.deg[v])
        self.upper, self.lower = upper, min(lower, upper)
        shrink = 1 - 1e-12  # t1 / (t1 / k) may round just above k
        self.kmin = [
            max(1, min(p.cap, math.ceil(t / upper * shrink))) if upper > 0 else 1
            for t, p in zip(self.t1, self.pairs, strict=True)
        ]
        self.kmax = [
            min(p.cap, math.ceil(t / self.lower * shrink)) if self.lower > 0 else p.cap
            for t, p in zip(self.t1, self.pairs, strict=True)
        ]
        self.stats.update(upper_s=upper, lower_s=self.lower)

    name = "exact"

    def stage1(self) -> tuple[list[int], bool]:
        raise NotImplementedError

    def stage2(
        self, cover: list[int], incumbent: Counts
    ) -> tuple[list[int] | None, bool, float | None]:
        raise NotImplementedError


class _HighsModel(_Model):
    name = "milp (HiGHS)"

    def _base(self, sense: int):
        import pulp

        prob = pulp.LpProblem("circuits", sense)
        var = variable_factory(prob)
        c = [
            var(f"c_{i}", lowBound=0, upBound=p.cap, cat="Integer")
            for i, p in enumerate(self.pairs)
        ]
        y = [var(f"y_{i}", cat="Binary") for i in range(len(self.pairs))]
        for i, p in enumerate(self.pairs):
            prob += c[i] >= y[i], f"cover_lo_{i}"
            prob += c[i] <= p.cap * y[i], f"cover_hi_{i}"
        for k, (v, idx) in enumerate(self.inc.items()):
            if sum(self.pairs[i].cap for i in idx) > self.deg[v]:  # (6), only where it can bind
                prob += pulp.lpSum(c[i] for i in idx) <= self.deg[v], f"ports_{k}"
        return prob, c, y

    def _solve(self, prob) -> tuple[bool, bool]:
        import pulp

        limit = self.deadline.remaining()
        solver = pulp.HiGHS(msg=False, timeLimit=limit, gapRel=0.0, gapAbs=0.0, threads=1)
        with warnings.catch_warnings(), native_stdout_silenced():
            warnings.simplefilter("ignore")
            prob.solve(solver)
        self.said.append(
            f"stage {len(self.said) + 1}: HiGHS {pulp.LpStatus.get(prob.status, prob.status)}, "
            f"{pulp.LpSolution.get(prob.sol_status, prob.sol_status)}"
        )
        if prob.sol_status != pulp.LpSolutionOptimal:
            # marks the solve as clock-bound when the limit is what stopped HiGHS
            self.deadline.expired()
        has = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
        return has, prob.sol_status == pulp.LpSolutionOptimal

    def stage1(self) -> tuple[list[int], bool]:
        import pulp

        prob, c, y = self._base(pulp.LpMaximize)
        dmax = max(p.demand for p in self.pairs)
        self.weights = [p.demand / dmax for p in self.pairs]
        prob += pulp.lpSum(w * yi for w, yi in zip(self.weights, y, strict=True))
        has, optimal = self._solve(prob)
        if not has:
            return [0] * len(self.pairs), False
        return [round(v.value()) for v in c], optimal

    def stage2(self, cover: list[int], incumbent: Counts):
        import pulp

        prob, c, y = self._base(pulp.LpMaximize)
        tmin = min(self.t1)
        big_m = max(p.cap for p in self.pairs)
        # w = tmin / T: a throughput floor; the incumbent and the lower bound bracket it
        w = variable_factory(prob)(
            "w",
            lowBound=tmin / self.upper if self.upper > 0 else 0,
            upBound=tmin / self.lower if self.lower > 0 else big_m,
        )
        prob += w
        target = sum(wt for wt, v in zip(self.weights, cover, strict=True) if v > 0)
        prob += (
            pulp.lpSum(wt * yi for wt, yi in zip(self.weights, y, strict=True))
            >= target * (1 - 1e-9),
            "keep_coverage",
        )
        for i in range(len(self.pairs)):
            prob += w <= (tmin / self.t1[i]) * c[i] + big_m * (1 - y[i]), f"floor_{i}"
            if self.kmin[i] > 1:
                prob += c[i] >= self.kmin[i] * y[i], f"kmin_{i}"
        has, optimal = self._solve(prob)
        if not has:
            return None, False, None
        bound = None
        try:
            wb = float(prob.solverModel.getInfo().mip_dual_bound)
            bound = tmin / wb if wb > 0 and math.isfinite(wb) else None
        except Exception:  # noqa: BLE001 - the bound is informative only
            pass
        return [round(v.value()) for v in c], optimal, bound


class _CpSatModel(_Model):
    name = "cpsat (OR-Tools CP-SAT)"

    def _base(self):
        from ortools.sat.python import cp_model

        m = cp_model.CpModel()
        c = [m.NewIntVar(0, p.cap, f"c_{i}") for i, p in enumerate(self.pairs)]
        y = [m.NewBoolVar(f"y_{i}") for i in range(len(self.pairs))]
        for i in range(len(self.pairs)):
            m.Add(c[i] >= 1).OnlyEnforceIf(y[i])
            m.Add(c[i] == 0).OnlyEnforceIf(y[i].Not())
        for v, idx in self.inc.items():
            if sum(self.pairs[i].cap for i in idx) > self.deg[v]:
                m.Add(sum(c[i] for i in idx) <= self.deg[v])
        return m, c, y

    def _solve(self, m):
        from ortools.sat.python import cp_model

        solver = cp_model.CpSolver()
        limit = self.deadline.remaining()
        if limit is not None:
            solver.parameters.max_time_in_seconds = max(limit, 1e-3)
        solver.parameters.num_workers = 1  # deterministic; the benchmark compares one core each
        status = solver.Solve(m)
        self.said.append(f"stage {len(self.said) + 1}: CP-SAT {solver.StatusName(status)}")
        if status != cp_model.OPTIMAL:
            # marks the solve as clock-bound when the limit is what stopped CP-SAT
            self.deadline.expired()
        return solver, status in (cp_model.OPTIMAL, cp_model.FEASIBLE), status == cp_model.OPTIMAL

    def stage1(self) -> tuple[list[int], bool]:
        m, c, y = self._base()
        self.weights = [max(1, round(p.demand)) for p in self.pairs]
        m.Maximize(sum(w * yi for w, yi in zip(self.weights, y, strict=True)))
        solver, has, optimal = self._solve(m)
        if not has:
            return [0] * len(self.pairs), False
        return [solver.Value(ci) for ci in c], optimal

    def stage2(self, cover: list[int], incumbent: Counts):
        m, c, y = self._base()
        covered_weight = sum(w for w, v in zip(self.weights, cover, strict=True) if v > 0)
        m.Add(sum(w * yi for w, yi in zip(self.weights, y, strict=True)) >= covered_weight)
        # candidates for T*: t1_p / k inside the window, ascending; T* is one of them
        tol = 1e-12
        cands = sorted(
            {
                self.t1[i] / k
                for i in range(len(self.pairs))
                for k in range(self.kmin[i], self.kmax[i] + 1)
                if self.lower * (1 - tol) <= self.t1[i] / k <= self.upper * (1 + tol)
            }
        )
        self.stats["candidates"] = len(cands)
        idx = m.NewIntVar(0, len(cands) - 1, "bottleneck_index")
        at_least: dict[int, Any] = {}  # j -> literal [idx >= j], shared by every pair that needs it

        def index_at_least(j: int):
            if j not in at_least:
                b = m.NewBoolVar(f"idx_ge_{j}")
                m.Add(idx >= j).OnlyEnforceIf(b)
                m.Add(idx < j).OnlyEnforceIf(b.Not())
                at_least[j] = b
            return at_least[j]

        for i in range(len(self.pairs)):
            if self.kmin[i] > 1:
                m.Add(c[i] >= self.kmin[i]).OnlyEnforceIf(y[i])
            # a covered pair is never faster than with kmax_p circuits: T >= t1_p / kmax_p (the
            # loop below only asks for more circuits as T falls; without this a pair held at
            # one circuit by its ports would let T drop under its own time)
            top = bisect.bisect_left(cands, self.t1[i] / self.kmax[i] * (1 - tol))
            if top >= len(cands):
                m.Add(y[i] == 0)  # covering it needs T above the incumbent's bottleneck
            elif top > 0:
                m.Add(idx >= top).OnlyEnforceIf(y[i])
            for k in range(self.kmin[i] + 1, self.kmax[i] + 1):
                # a covered pair needs k circuits exactly when T < t1 / (k - 1)
                j = bisect.bisect_left(cands, self.t1[i] / (k - 1) * (1 - tol))
                if j == 0:
                    continue  # every candidate is >= t1 / (k - 1): k - 1 circuits always do
                if j < len(cands):
                    m.Add(c[i] >= k).OnlyEnforceIf([y[i], index_at_least(j).Not()])
                else:
                    m.Add(c[i] >= k).OnlyEnforceIf(y[i])  # every candidate is below t1 / (k - 1)
        hint = [incumbent.get((p.a, p.b), 0) for p in self.pairs]
        for ci, yi, v in zip(c, y, hint, strict=True):
            m.AddHint(ci, v)
            m.AddHint(yi, v > 0)
        m.Minimize(idx)
        solver, has, optimal = self._solve(m)
        if not has:
            return None, False, None
        bound = cands[int(solver.BestObjectiveBound())] if not optimal else None
        return [solver.Value(ci) for ci in c], optimal, bound


#: the exact solvers' ``fill`` option (``--solver help`` shows its description)
FillOption = Annotated[
    bool, Field(description="hand spare ports out with Algorithm 3 after the exact stages")
]


def _exact_solver(model: type[_Model], name: str, backend: str) -> Callable[..., SolverOutput]:
    """A registered solver for one back end of the lexicographic exact model (module docstring):
    both back ends take the same options and return through :meth:`_Model.run`."""

    def solve(
        problem: CircuitProblem,
        *,
        time_limit: float | None = None,
        seed: int = 0,
        fill: FillOption = True,
        fill_with: Fill | None = None,
    ) -> SolverOutput:
        return model(problem, time_limit).run(fill_with if fill else None)

    solve.__name__ = solve.__qualname__ = name
    solve.__doc__ = f"The lexicographic exact model on {backend} (module docstring)."
    return solve


solve_circuits_milp = _exact_solver(_HighsModel, "solve_circuits_milp", "HiGHS through PuLP")
solve_circuits_cpsat = _exact_solver(_CpSatModel, "solve_circuits_cpsat", "OR-Tools CP-SAT")
