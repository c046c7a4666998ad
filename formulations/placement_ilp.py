"""Exact ILP for HetRL placement (HetRL §3.5) over rlplan's placement space.

Notation. Tasks t; GPU classes k (the GPUs of one node, interchangeable on a hierarchical
network) with capacity N_k; a *group option* o = (task subset T_o, composition c_o in N^K, one
configuration per task in T_o) whose costs are computed by the cost model itself:

* ``gen_o``  generation time C^1 if actor generation is in T_o, else 0;
* ``inf_o``  Φ_η over the inference tasks of T_o;  ``trn_o`` Φ_η over its training tasks;
* ``xfer_o`` its share of the weight transfer: C_reshard (sync, generation and actor training
  together), min all-gather + max broadcast (async, together), min all-gather (actor training
  without generation), max broadcast (generation without actor training).

Options are enumerated per (T, c) and filtered: configurations dominated in (time, per-GPU
memory, transfer terms) are dropped per task, combinations that break C3 on any GPU are dropped,
and of the rest only Pareto-optimal (gen, inf, trn, xfer) vectors are kept. That keeps exactness:
the objective is non-decreasing in each of the four.

Variables: x_o in {0,1}; continuous I, R >= 0 (inference and training phases); q_ab in [0,1]
(the class pair carrying the point-to-point weight copy when generation and actor training are in
different groups); M >= 0 (async).

    (1) sum_{o: t in T_o} x_o = 1                      every task placed once (C2)
    (2) sum_o c_o[k] x_o <= N_k                         GPU groups are disjoint (C1)
    (3) I >= sum_{o ∋ t} inf_o x_o for every inference task t (R likewise for training tasks):
        the option covering t is unique, so this is "phase = slowest group" (Φ per group), and
        aggregating over the cover gives a far tighter LP relaxation than I >= inf_o x_o
    (4) sum_ab q_ab = 1 - sum_{o ∋ gen, train} x_o      a p2p copy iff the two are apart
    (5) q_ab <= sum_{o ∋ gen, ∌ train, c_o[a] > 0} x_o,  q_ab <= sum_{o ∋ train, ∌ gen, c_o[b] > 0} x_o
    objective (sync)  sum gen_o x_o + I + R + sum xfer_o x_o + sum w_ab q_ab
    objective (async) M + sum xfer_o x_o + sum w_ab q_ab,  M >= sum gen_o x_o,  M >= I + R

C3 (memory) is inside the option filter. The decoded plan is scored by the cost model and the two
agree to 1e-6 (tests/test_placement_exact.py). Accepted instances: group-aware overlap (the
default); the enumeration grows with prod_k (N_k + 1), which keeps it to a few nodes per class.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from costmodels import comm
from costmodels.hetrl_cost import full_weights_gb, replica_allgather, task_cost, task_memory
from costmodels.placement import PlacementProblem
from costmodels.placement_space import (
    TaskConfig,
    build_plan,
    colocated_candidates,
    compositions,
    is_heterogeneous,
    node_classes,
    place_task,
    task_configs,
)
from costmodels.solving import SolverOutput, Status
from costmodels.workflow import TaskKind


@dataclass
class _Cand:
    cfg: TaskConfig
    time: float
    model: np.ndarray
    working: np.ndarray
    ag_min: float = 0.0
    ag_max: float = 0.0
    bc_max: float = 0.0


@dataclass
class _Option:
    tasks: tuple[str, ...]
    comp: tuple[int, ...]
    configs: dict[str, TaskConfig]
    gen: float
    inf: float
    trn: float
    xfer: float
    meta: dict[str, Any] = field(default_factory=dict)


def _dominates(a: _Cand, b: _Cand) -> bool:
    return (a.time <= b.time and a.ag_min <= b.ag_min and a.ag_max <= b.ag_max and a.bc_max <= b.bc_max
            and bool(np.all(a.model <= b.model)) and bool(np.all(a.working <= b.working)))


def _pareto(cands: list[_Cand]) -> list[_Cand]:
    cands = sorted(cands, key=lambda c: (c.time, float(c.model.sum()), float(c.working.sum())))
    kept: list[_Cand] = []
    for c in cands:
        if not any(_dominates(k, c) for k in kept):
            kept.append(c)
    return kept


def _pareto_vectors(rows: list[tuple[tuple[float, ...], Any]]) -> list[Any]:
    rows = sorted(rows, key=lambda r: r[0])
    kept: list[tuple[tuple[float, ...], Any]] = []
    for vec, item in rows:
        if not any(all(a <= b + 1e-15 for a, b in zip(kv, vec, strict=True)) for kv, _ in kept):
            kept.append((vec, item))
    return [item for _, item in kept]


@dataclass
class _Partial:
    """A partial combination of task configurations on one composition."""

    key: tuple[float, ...]  # gen, inf_max, inf_sum, trn_max, trn_sum, ag_min, ag_max, bc_max
    model: np.ndarray
    working: np.ndarray
    configs: dict[str, TaskConfig]

    @staticmethod
    def empty(n: int) -> _Partial:
        return _Partial((0.0,) * 8, np.zeros(n), np.zeros(n), {})

    def add(self, name: str, kind: TaskKind, c: _Cand) -> _Partial:
        gen, imax, isum, tmax, tsum, agn, agx, bcx = self.key
        if kind is TaskKind.GENERATION:
            gen = c.time
            bcx = c.bc_max
        elif kind is TaskKind.INFERENCE:
            imax, isum = max(imax, c.time), isum + c.time
        else:
            tmax, tsum = max(tmax, c.time), tsum + c.time
        if name == "actor_training":
            agn, agx = c.ag_min, c.ag_max
        return _Partial((gen, imax, isum, tmax, tsum, agn, agx, bcx), self.model + c.model,
                        np.maximum(self.working, c.working), {**self.configs, name: c.cfg})

    def option(self, subset: tuple[str, ...], comp: tuple[int, ...], wf: Any) -> _Option:
        gen, imax, isum, tmax, tsum, agn, agx, bcx = self.key
        inf = wf.eta * imax + (1 - wf.eta) * isum
        trn = wf.eta * tmax + (1 - wf.eta) * tsum
        has_gen, has_train = "actor_generation" in subset, "actor_training" in subset
        if has_gen and has_train:
            xfer = agx if wf.mode == "sync" else agn + bcx
        elif has_train:
            xfer = agn
        elif has_gen:
            xfer = bcx
        else:
            xfer = 0.0
        return _Option(subset, comp, dict(self.configs), gen, inf, trn, xfer)


def _prune(states: list[_Partial]) -> list[_Partial]:
    """Drop partial combinations dominated in every metric and every GPU's memory (vectorised)."""
    if len(states) <= 1:
        return states
    mat = np.array([np.concatenate([np.asarray(st.key), st.model, st.working]) for st in states])
    order = np.lexsort(mat.T[::-1])
    kept_rows: list[int] = []
    kept = np.empty((0, mat.shape[1]))
    for i in order:
        row = mat[i]
        if kept.shape[0] and np.any(np.all(kept <= row + 1e-12, axis=1)):
            continue
        kept_rows.append(int(i))
        kept = np.vstack([kept, row])
    return [states[i] for i in kept_rows]


class PlacementILP:
    """Builds the option set and the ILP for one problem; :meth:`solve` returns a SolverOutput."""

    def __init__(self, problem: PlacementProblem, deadline: float | None = None, upper_bound: float | None = None):
        if not problem.params.group_aware_overlap:
            raise ValueError("the placement ILP models group-aware task overlap (CostParams.group_aware_overlap=True)")
        self.problem = problem
        self.deadline = deadline
        self.classes = node_classes(problem)
        self.cap = [len(g) for _, g in self.classes]
        self.tasks = {t.name: t for t in problem.tasks}
        self.stats: dict[str, Any] = {}
        self.ub = math.inf if upper_bound is None else upper_bound
        self.lb = {k: 0.0 for k in TaskKind}
        cap_gb = {d.id: d.gpu.memory_gb - problem.params.memory_reserve_gb for d in problem.topology.devices}
        self.capacity = {c: np.array([cap_gb[g] for g in self._gpus(c)]) for c in compositions(self.cap)}

    def _gpus(self, comp: tuple[int, ...]) -> list[str]:
        return [g for k, n in enumerate(comp) for g in self.classes[k][1][:n]]

    def _check_time(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise TimeoutError

    def upper_bound(self) -> tuple[float, Any]:
        """An in-space plan's cost (best verl-style co-located plan), for bound-based pruning."""
        from costmodels.hetrl_cost import evaluate_placement
        from costmodels.placement_check import check_placement

        best, best_plan = math.inf, None
        for plan in colocated_candidates(self.problem):
            self._check_time()
            if check_placement(self.problem, plan):
                continue
            cost = evaluate_placement(self.problem, plan).objective
            if cost < best:
                best, best_plan = cost, plan
        return best, best_plan

    def _phase_bounds(self, cands: dict[tuple[str, tuple[int, ...]], list[_Cand]]) -> dict[TaskKind, float]:
        """Lower bound of each phase: no plan's phase is faster than its slowest task's fastest
        configuration."""
        best: dict[str, float] = {}
        for (name, _), lst in cands.items():
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

    def task_candidates(self) -> dict[tuple[str, tuple[int, ...]], list[_Cand]]:
        p = self.problem
        index = p.topology.index_of()
        out: dict[tuple[str, tuple[int, ...]], list[_Cand]] = {}
        evaluated = 0
        for comp, capacity in self.capacity.items():
            gpus = self._gpus(comp)
            pos = {index[g]: i for i, g in enumerate(gpus)}
            het = is_heterogeneous(p, gpus)
            for name, task in self.tasks.items():
                self._check_time()
                cands = []
                for cfg in task_configs(p, task, len(gpus), het):
                    placement = place_task(p, task, gpus, cfg)
                    mem = task_memory(p, task, placement)
                    model = np.zeros(len(gpus))
                    working = np.zeros(len(gpus))
                    for d, (mo, wo) in mem.items():
                        model[pos[d]], working[pos[d]] = mo, wo
                    if np.any(model + working > capacity + 1e-9):
                        continue
                    cost, _ = task_cost(p, task, placement)
                    evaluated += 1
                    cand = _Cand(cfg, cost["time_s"], model, working)
                    if name == "actor_training" or name == "actor_generation":
                        ag, _ = replica_allgather(p, placement)
                        if name == "actor_training":
                            cand.ag_min, cand.ag_max = min(ag), max(ag)
                        else:
                            cand.bc_max = max(ag)
                    cands.append(cand)
                if cands:
                    out[(name, comp)] = _pareto(cands)
        self.stats["task_evaluations"] = evaluated
        self.lb = self._phase_bounds(out)
        if math.isfinite(self.ub):
            # a configuration whose own time already forces the objective above a known plan's
            # cost cannot be in an optimal plan
            kept = {}
            for (name, comp), lst in out.items():
                kind = self.tasks[name].kind
                lst = [c for c in lst if self._lower_bound(*(c.time if kind is k else 0.0 for k in TaskKind)) <= self.ub * (1 + 1e-9)]
                if lst:
                    kept[(name, comp)] = lst
            out = kept
        self.stats["candidates"] = sum(len(v) for v in out.values())
        return out

    def options(self) -> list[_Option]:
        """Group options per composition, built task by task with Pareto pruning of partial
        combinations on (metrics, per-GPU memory) so large task subsets stay tractable."""
        cands = self.task_candidates()
        names = list(self.tasks)
        opts: list[_Option] = []
        for comp, capacity in self.capacity.items():
            self._check_time()
            # partial states: (subset, state list); a state is (key vector, model, working, configs)
            frontier: list[tuple[tuple[str, ...], list[_Partial]]] = [((), [_Partial.empty(len(capacity))])]
            for name in names:
                nxt = []
                for subset, states in frontier:
                    nxt.append((subset, states))  # without this task
                    lst = cands.get((name, comp))
                    if not lst:
                        continue
                    merged = [s.add(name, self.tasks[name].kind, c) for s in states for c in lst]
                    merged = [m for m in merged if np.all(m.model + m.working <= capacity + 1e-9)
                              and self._partial_bound(m) <= self.ub * (1 + 1e-9)]
                    if merged:
                        nxt.append(((*subset, name), _prune(merged)))
                frontier = nxt
            for subset, states in frontier:
                if not subset:
                    continue
                rows = []
                for st in states:
                    o = st.option(subset, comp, self.problem.workflow)
                    rows.append(((o.gen, o.inf, o.trn, o.xfer), o))
                opts.extend(_pareto_vectors(rows))
        self.stats["options"] = len(opts)
        return opts

    def _partial_bound(self, st: _Partial) -> float:
        gen, imax, isum, tmax, tsum, *_ = st.key
        eta = self.problem.workflow.eta
        return self._lower_bound(gen, eta * imax + (1 - eta) * isum, eta * tmax + (1 - eta) * tsum)

    def p2p_weights(self) -> dict[tuple[int, int], float]:
        """Full-weights copy time between a GPU of class a and a different GPU of class b."""
        topo = self.problem.topology
        index = topo.index_of()
        full = full_weights_gb(self.problem)
        out = {}
        for a, (_, ga) in enumerate(self.classes):
            for b, (_, gb) in enumerate(self.classes):
                if a == b and len(ga) < 2:
                    continue
                da, db = index[ga[0]], index[gb[1] if a == b else gb[0]]
                out[(a, b)] = comm.link_time(topo, da, db, full)
        return out

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
        x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(len(opts))]
        inf_v = pulp.LpVariable("I", lowBound=0)
        trn_v = pulp.LpVariable("R", lowBound=0)
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
        together = [i for i, o in enumerate(opts) if "actor_generation" in o.tasks and "actor_training" in o.tasks]
        gen_only = [i for i, o in enumerate(opts) if "actor_generation" in o.tasks and "actor_training" not in o.tasks]
        train_only = [i for i, o in enumerate(opts) if "actor_training" in o.tasks and "actor_generation" not in o.tasks]
        w = self.p2p_weights()
        q = {ab: pulp.LpVariable(f"q_{ab[0]}_{ab[1]}", lowBound=0, upBound=1) for ab in w}
        prob += pulp.lpSum(q.values()) == 1 - pulp.lpSum(x[i] for i in together), "p2p_iff_apart"  # (4)
        for (a, b), var in q.items():  # (5)
            prob += var <= pulp.lpSum(x[i] for i in gen_only if opts[i].comp[a]), f"p2p_gen_{a}_{b}"
            prob += var <= pulp.lpSum(x[i] for i in train_only if opts[i].comp[b]), f"p2p_train_{a}_{b}"
        gen = pulp.lpSum(o.gen * x[i] for i, o in enumerate(opts) if o.gen)
        xfer = pulp.lpSum(o.xfer * x[i] for i, o in enumerate(opts) if o.xfer) + pulp.lpSum(w[ab] * v for ab, v in q.items())
        if wf.mode == "sync":
            prob += gen + inf_v + trn_v + xfer
        else:
            m = pulp.LpVariable("M", lowBound=0)
            prob += m >= gen, "async_gen"
            prob += m >= inf_v + trn_v, "async_rest"
            prob += m + xfer
        remaining = None
        if time_limit is not None:
            remaining = time_limit - (time.perf_counter() - self._start)
            if remaining <= 0:
                return self._fallback("time limit reached before the ILP solve")
        if backend == "highs":
            solver = pulp.HiGHS(msg=False, timeLimit=remaining, threads=threads)
        elif backend == "cbc":
            solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=remaining, threads=threads)
        else:
            raise ValueError(f"unknown backend {backend!r}; use highs or cbc")
        solve_start = time.perf_counter()
        prob.solve(solver)
        self.stats["solve_s"] = time.perf_counter() - solve_start
        self.stats["variables"] = len(prob.variables())
        self.stats["constraints"] = len(prob.constraints)
        if prob.status == pulp.LpStatusInfeasible:
            return SolverOutput(Status.INFEASIBLE, message="the ILP is infeasible: no placement fits", stats=self.stats)
        chosen = [opts[i] for i, v in enumerate(x) if v.value() is not None and v.value() > 0.5]
        if not chosen:
            return self._fallback(f"{backend} stopped without an incumbent")
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
        msg = f"{backend}: {len(opts)} group options, {'optimal' if optimal else 'stopped at the time limit'}"
        return SolverOutput(status, plan=plan, objective=objective, bound=bound, message=msg, stats=self.stats)

    def _fallback(self, why: str) -> SolverOutput:
        """Out of time: the best plan known (the co-located upper-bound plan), status feasible."""
        cost, plan = getattr(self, "incumbent", (math.inf, None))
        if plan is None:
            return SolverOutput(Status.NO_SOLUTION, message=why, stats=self.stats)
        return SolverOutput(Status.FEASIBLE, plan=plan, objective=cost, message=f"{why}; returning the co-located incumbent", stats=self.stats)

    def decode(self, chosen: list[_Option]):
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
                        backend: str = "highs", threads: int | None = None, upper_bound: float | None = None) -> SolverOutput:
    """HetRL §3.5 ILP on HiGHS (``backend="cbc"`` for CBC). With a time limit it returns the
    incumbent with status feasible and the solver's bound; the option enumeration counts against
    the limit too."""
    del seed  # deterministic
    start = time.perf_counter()
    deadline = start + time_limit if time_limit is not None else None
    model = PlacementILP(problem, deadline, upper_bound)
    model._start = start
    try:
        return model.solve(backend, time_limit, threads)
    except TimeoutError:
        return model._fallback("time limit reached while enumerating group options")
