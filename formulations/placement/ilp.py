"""Exact ILP for HetRL placement (HetRL §3.5) over rlplan's placement space.

Notation. Tasks t; GPU classes k (the GPUs of one node, interchangeable on a hierarchical
network) with capacity N_k; a *group option* o = (task subset T_o, composition c_o in N^K, one
configuration per task in T_o) whose costs are computed by the cost model itself:

* ``gen_o``  generation time C^1 if actor generation is in T_o, else 0;
* ``inf_o``  Φ_η over the inference tasks of T_o;  ``trn_o`` Φ_η over its training tasks;
* ``busy_o`` gen_o + inf_o + trn_o if generation is in T_o (what keeps generation's GPUs busy in
  async mode: tasks sharing GPUs add up), else 0;
* ``xfer_o`` its own share of the weight transfer: C_reshard (sync, generation and actor training
  together), the fastest training replica's all-gather (actor training otherwise), 0 otherwise;
* ``F_z(o)`` the in-zone fan-out of C_sync over the option's generation GPUs in zone z (none for
  C_reshard); ``R_ab`` the route time of the full weights from a training GPU of class b to a
  generation GPU of class a (``GroupOptions.routes``; the evaluator's ``comm.route_time``).

Options are enumerated per (T, c) and filtered: configurations dominated in (time, per-GPU
memory, transfer terms) are dropped per task, combinations that break C3 on any GPU are dropped,
and of the rest only Pareto-optimal (gen, inf, trn, xfer, busy) vectors are kept (F_z is fixed by
(T, c)). That keeps exactness: the objective is non-decreasing in each of them.

Variables: x_o in {0,1}; continuous I, R >= 0 (inference and training phases); S >= 0 (the
arrival-plus-fan-out part of C_sync); q^z_ab in [0,1] (the class pair that feeds zone z when
generation and actor training are in different groups); M >= 0 (async).

    (1) sum_{o: t in T_o} x_o = 1                      every task placed once (C2)
    (2) sum_o c_o[k] x_o <= N_k                         GPU groups are disjoint (C1)
    (3) I >= sum_{o ∋ t} inf_o x_o for every inference task t (R likewise for training tasks):
        the option covering t is unique, so this is "phase = slowest group" (Φ per group), and
        aggregating over the cover gives a far tighter LP relaxation than I >= inf_o x_o
    (4) sum_{a in z, b} q^z_ab = sum_{o ∋ gen, ∌ train, o has GPUs in z} x_o   zone z is fed
        from outside iff generation is apart from training and has GPUs there
    (5) q^z_ab <= sum_{o ∋ gen, ∌ train, c_o[a] > 0} x_o,  q^z_ab <= sum_{o ∋ train, ∌ gen, c_o[b] > 0} x_o
    (6) S >= sum_ab R_ab q^z_ab + sum_{o ∋ gen} F_z(o) x_o   for every zone z: S = max_z (A_z + F_z)
    objective (sync)  sum gen_o x_o + I + R + sum xfer_o x_o + S
    objective (async) M + sum xfer_o x_o + S,  M >= sum busy_o x_o,  M >= I + R

C3 (memory) is inside the option filter. The decoded plan is scored by the cost model and the two
agree to 1e-6 (tests/test_placement_exact.py). Accepted instances: group-aware overlap (the
default); the enumeration grows with prod_k (N_k + 1), which keeps it to a few nodes per class.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from typing import Annotated, Any, Literal

from pydantic import Field

from costmodels.placement.options import GroupOption, GroupOptions, Partial
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import best_colocated, build_plan, compositions
from costmodels.solving import (
    UNLIMITED,
    Deadline,
    DeadlineExceeded,
    SolverOutput,
    Status,
    Trace,
    native_stdout_silenced,
)
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING, TaskKind
from formulations.pulp_util import variable_factory


class PlacementILP:
    """Builds the option set and the ILP for one problem; :meth:`solve` returns a SolverOutput."""

    def __init__(self, problem: PlacementProblem, deadline: Deadline = UNLIMITED, upper_bound: float | None = None):
        self.incumbent: tuple[float, Any] = (math.inf, None)
        if not problem.params.group_aware_overlap:
            raise ValueError("the placement ILP models group-aware task overlap (CostParams.group_aware_overlap=True)")
        self.problem = problem
        self.deadline = deadline
        self.trace = Trace(deadline)  # anytime curve: the co-located incumbent, then HiGHS's improving solutions
        self.builder = GroupOptions(problem)
        self.classes = self.builder.classes
        self.cap = self.builder.cap
        self.tasks = self.builder.tasks
        self.stats: dict[str, Any] = {}
        self.ub = math.inf if upper_bound is None else upper_bound
        self.lb = {k: 0.0 for k in TaskKind}

    def _check_time(self) -> None:
        self.deadline.check()

    def upper_bound(self) -> tuple[float, Any]:
        """An in-space plan's cost (best verl-style co-located plan), for bound-based pruning."""
        return best_colocated(self.problem, self.deadline)

    def _phase_bounds(self) -> dict[TaskKind, float]:
        """Lower bound of each phase: no plan's phase is faster than its slowest task's fastest
        configuration on any composition."""
        best: dict[str, float] = {}
        for name in self.tasks:
            for comp in compositions(self.cap):
                self._check_time()
                lst = self.builder.candidates(name, comp, self.deadline)
                if lst:
                    best[name] = min(best.get(name, math.inf), min(c.time for c in lst))
        out = {}
        for kind in TaskKind:
            times = [best.get(n, math.inf) for n, t in self.tasks.items() if t.kind is kind]
            out[kind] = max(times) if times else 0.0
        return out

    def _lower_bound(self, gen: float, inf: float, trn: float) -> float:
        lb = self.lb
        g, i, r = max(gen, lb[TaskKind.GENERATION]), max(inf, lb[TaskKind.INFERENCE]), max(trn, lb[TaskKind.TRAINING])
        return g + i + r if self.problem.workflow.mode == "sync" else max(g, i + r)

    def options(self) -> list[GroupOption]:
        """Every group option of every task subset on every composition, bound-pruned."""
        self.lb = self._phase_bounds()
        names = list(self.tasks)
        eta = self.problem.workflow.eta

        def keep(st: Partial) -> bool:
            gen, imax, isum, tmax, tsum, *_ = st.key
            lb = self._lower_bound(gen, eta * imax + (1 - eta) * isum, eta * tmax + (1 - eta) * tsum)
            return lb <= self.ub * (1 + 1e-9)

        opts: list[GroupOption] = []
        for r in range(1, len(names) + 1):
            for subset in itertools.combinations(names, r):
                for comp in compositions(self.cap):
                    self._check_time()
                    opts.extend(self.builder.options(subset, comp, keep if math.isfinite(self.ub) else None))
        self.stats["task_evaluations"] = self.builder.evaluations
        self.stats["options"] = len(opts)
        return opts

    def solve(self, backend: str, time_limit: float | None, threads: int | None = None) -> SolverOutput:
        import pulp

        wf = self.problem.workflow
        build_start = time.perf_counter()
        ub, ub_plan = self.upper_bound()
        self.incumbent = (ub, ub_plan)
        self.ub = min(self.ub, ub)
        self.stats["upper_bound"] = self.ub if math.isfinite(self.ub) else None
        opts = self.options()
        self.stats["build_s"] = time.perf_counter() - build_start
        if not opts:
            return SolverOutput(Status.INFEASIBLE, message="no group option fits in GPU memory", stats=self.stats)
        prob = pulp.LpProblem("hetrl_placement", pulp.LpMinimize)
        var = variable_factory(prob)
        x = [var(f"x{i}", cat="Binary") for i in range(len(opts))]
        inf_v = var("I", lowBound=0)
        trn_v = var("R", lowBound=0)
        for t in self.tasks:  # (1)
            prob += pulp.lpSum(x[i] for i, o in enumerate(opts) if t in o.tasks) == 1, f"cover_{t}"
        for k, cap in enumerate(self.cap):  # (2)
            prob += pulp.lpSum(o.comp[k] * x[i] for i, o in enumerate(opts) if o.comp[k]) <= cap, f"capacity_{k}"
        # (3) aggregated over the option covering each task: exactly one option holds task t,
        # so I >= sum_{o ∋ t} inf_o x_o is I >= inf of that option; much tighter than per option
        for t, task in self.tasks.items():
            if task.kind is TaskKind.INFERENCE:
                prob += inf_v >= pulp.lpSum(o.inf * x[i] for i, o in enumerate(opts) if t in o.tasks and o.inf), f"inf_{t}"
            elif task.kind is TaskKind.TRAINING:
                prob += trn_v >= pulp.lpSum(o.trn * x[i] for i, o in enumerate(opts) if t in o.tasks and o.trn), f"trn_{t}"
        gen_apart = [i for i, o in enumerate(opts) if ACTOR_GENERATION in o.tasks and ACTOR_TRAINING not in o.tasks]
        train_apart = [i for i, o in enumerate(opts) if ACTOR_TRAINING in o.tasks and ACTOR_GENERATION not in o.tasks]
        routes = self.builder.routes()
        zone = self.builder.zone_of_class()
        sync_v = var("S", lowBound=0)
        gen_has = {a: pulp.lpSum(x[i] for i in gen_apart if opts[i].comp[a]) for a in range(len(self.cap))}
        train_has = {b: pulp.lpSum(x[i] for i in train_apart if opts[i].comp[b]) for b in range(len(self.cap))}
        for z in sorted(set(zone)):
            members = [a for a in range(len(self.cap)) if zone[a] == z]
            q = {(a, b): var(f"q_{a}_{b}", lowBound=0, upBound=1) for a in members for b in range(len(self.cap)) if (a, b) in routes}
            fed = pulp.lpSum(x[i] for i in gen_apart if any(opts[i].comp[a] for a in members))
            prob += pulp.lpSum(q.values()) == fed, f"fed_{z}"  # (4)
            for (a, b), qv in q.items():  # (5)
                prob += qv <= gen_has[a], f"route_gen_{a}_{b}"
                prob += qv <= train_has[b], f"route_train_{a}_{b}"
            fan = pulp.lpSum(o.fanout[z] * x[i] for i, o in enumerate(opts) if o.fanout and o.fanout.get(z))
            prob += sync_v >= pulp.lpSum(routes[ab] * v for ab, v in q.items()) + fan, f"sync_{z}"  # (6)
        gen = pulp.lpSum(o.gen * x[i] for i, o in enumerate(opts) if o.gen)
        xfer = pulp.lpSum(o.xfer * x[i] for i, o in enumerate(opts) if o.xfer) + sync_v
        if wf.mode == "sync":
            prob += gen + inf_v + trn_v + xfer
        else:
            m = var("M", lowBound=0)
            prob += m >= pulp.lpSum(o.busy * x[i] for i, o in enumerate(opts) if o.busy), "async_gen_group"
            prob += m >= inf_v + trn_v, "async_rest"
            prob += m + xfer
        remaining = self.deadline.remaining()
        if remaining is not None and remaining <= 0:
            return self._fallback("time limit reached before the ILP solve")
        if math.isfinite(self.incumbent[0]):
            self.trace.record(self.incumbent[0])
        trace = self.trace
        if backend == "highs":
            import highspy

            def improving(_type, _message, data_out, _data_in, sink):
                sink.record(float(data_out.objective_function_value))

            solver = pulp.HiGHS(msg=False, timeLimit=remaining, threads=threads, callbackTuple=(improving, trace),
                                callbacksToActivate=[highspy.cb.HighsCallbackType.kCallbackMipImprovingSolution])
        elif backend == "cbc":
            with warnings.catch_warnings():  # PuLP 3.x marks its bundled CBC deprecated; it still ships it
                warnings.simplefilter("ignore", DeprecationWarning)
                solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=remaining, threads=threads)
        else:
            raise ValueError(f"unknown backend {backend!r}; use highs or cbc")
        solve_start = time.perf_counter()
        with native_stdout_silenced():
            prob.solve(solver)
        self.stats["solve_s"] = time.perf_counter() - solve_start
        self.stats["variables"] = len(prob.variables())
        self.stats["constraints"] = prob.numConstraints()
        self.stats["trace"] = self.trace.rows()
        # the backend's own words, kept in every message (python-mip / scipy milp practice)
        said = f"{backend} status {pulp.LpStatus.get(prob.status, prob.status)}, solution {pulp.LpSolution.get(prob.sol_status, prob.sol_status)}"
        if prob.status == pulp.LpStatusInfeasible:
            return SolverOutput(Status.INFEASIBLE, message=f"the ILP is infeasible: no placement fits ({said})", stats=self.stats)
        chosen = [opts[i] for i, v in enumerate(x) if v.value() is not None and v.value() > 0.5]
        if not chosen:
            return self._fallback(f"{said}: no incumbent")
        plan = self.decode(chosen)
        objective = float(pulp.value(prob.objective))
        optimal = prob.sol_status == pulp.LpSolutionOptimal
        bound = objective if optimal else None
        if backend == "highs" and not optimal:
            try:
                b = float(prob.solverModel.getInfo().mip_dual_bound)
                bound = b if math.isfinite(b) else None
            except Exception:  # noqa: BLE001 - the bound is informative only
                bound = None
        status = Status.OPTIMAL if optimal else Status.FEASIBLE
        msg = f"{len(opts)} group options; {said}"
        return SolverOutput(status, plan=plan, objective=objective, bound=bound, message=msg, stats=self.stats)

    def _fallback(self, why: str) -> SolverOutput:
        """Out of time: the best plan known (the co-located upper-bound plan), status feasible."""
        cost, plan = self.incumbent
        self.stats["trace"] = self.trace.rows()
        if plan is None:
            return SolverOutput(Status.NO_SOLUTION, message=why, stats=self.stats)
        return SolverOutput(Status.FEASIBLE, plan=plan, objective=cost, message=f"{why}; returning the co-located incumbent", stats=self.stats)

    def decode(self, chosen: list[GroupOption]):
        used = [0] * len(self.classes)
        groups, configs = [], {}
        for o in chosen:
            gpus = []
            for k, n in enumerate(o.comp):
                gpus.extend(self.classes[k][1][used[k]:used[k] + n])
                used[k] += n
            groups.append((list(o.tasks), gpus))
            configs.update(o.configs)
        return build_plan(self.problem, groups, configs)


def solve_placement_ilp(problem: PlacementProblem, *, time_limit: float | None = None, seed: int = 0,
                        backend: Annotated[Literal["highs", "cbc"], Field(description="MILP backend through PuLP")] = "highs",
                        threads: Annotated[int | None, Field(ge=1, description="solver threads (default: the backend's)")] = None,
                        upper_bound: Annotated[float | None, Field(gt=0, description="prune options whose cost exceeds this (s/iteration)")] = None) -> SolverOutput:
    """HetRL §3.5 ILP on HiGHS (``backend="cbc"`` for CBC). With a time limit it returns the
    incumbent with status feasible and the solver's bound; the option enumeration counts against
    the limit too."""
    del seed  # deterministic
    model = PlacementILP(problem, Deadline(time_limit), upper_bound)
    try:
        return model.solve(backend, time_limit, threads)
    except DeadlineExceeded:
        return model._fallback("time limit reached while enumerating group options")
