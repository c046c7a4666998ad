"""Exact ILP for HetRL placement (HetRL §3.5) over rlplan's placement space, by lazy column
expansion.

Notation. Tasks t; GPU classes k (the GPUs of one node, interchangeable on a hierarchical
network) with capacity N_k; a *pair* (T, c) a task subset T co-located on a composition c in
N^K; a *group option* o of a pair fixes one configuration per task of T and is costed by the cost
model itself (``search.placement.group_options``):

* ``gen_o``  generation time C^1 if actor generation is in T_o, else 0;
* ``inf_o``  Φ_η over the inference tasks of T_o;  ``trn_o`` Φ_η over its training tasks;
* ``busy_o`` gen_o + inf_o + trn_o if generation is in T_o (what keeps generation's GPUs busy in
  async mode: tasks sharing GPUs add up), else 0;
* ``xfer_o`` its own share of the weight transfer: C_reshard (sync, generation and actor training
  together), the fastest training replica's all-gather (actor training otherwise), 0 otherwise;
* ``F_z(o)`` the in-zone fan-out of C_sync over the option's generation GPUs in zone z (none for
  C_reshard); ``R_ab`` the route time of the full weights from a training GPU of class b to a
  generation GPU of class a (``GroupOptions.routes``; the evaluator's ``comm.route_time``).

* ``L_t(c)`` the least time of task t alone on any composition within c (its relaxed
  single-task columns, :class:`~formulations.placement.columns.LeftoverBounds`), and
  ``(ḡ_o, ī_o, r̄_o)`` the least generation, inference and training phases of any plan that uses
  o: its own terms, raised by the tasks it leaves out on the GPUs it leaves, (8).

Variables: x_o in {0,1}; continuous G, I, R >= 0 (generation, inference and training phases;
G in sync mode and when the trainer trails generation); S >= 0 (the arrival-plus-fan-out part
of C_sync); q^z_ab in [0,1] (the class pair that feeds zone z when generation and actor training
are in different groups); M >= 0 (async and fully-async: the overlapping modes).

    (1) sum_{o: t in T_o} x_o = 1                      every task placed once (C2)
    (2) sum_o c_o[k] x_o <= N_k                         GPU groups are disjoint (C1)
    (3) for every task t:  I >= sum_{o ∋ t} ī_o x_o,  R >= sum_{o ∋ t} r̄_o x_o, and in sync mode
        G >= sum_{o ∋ t} ḡ_o x_o,  G + I + R >= sum_{o ∋ t} (ḡ_o + ī_o + r̄_o) x_o; in async mode
        M >= sum_{o ∋ t} max(busy_o, ḡ_o, ī_o + r̄_o) x_o. The option covering t is unique, so
        for the inference task t the first row is "phase = slowest group" (Φ per group), and
        aggregating over the cover gives a far tighter LP relaxation than I >= inf_o x_o. The
        rows of the other tasks only add (8)'s bounds: at an integer point each is at most the
        true phase, so the master's value of exact columns is still the cost model's
    (4) sum_{a in z, b} q^z_ab = sum_{o ∋ gen, ∌ train, o has GPUs in z} x_o   zone z is fed
        from outside iff generation is apart from training and has GPUs there
    (5) q^z_ab <= sum_{o ∋ gen, ∌ train, c_o[a] > 0} x_o,  q^z_ab <= sum_{o ∋ train, ∌ gen, c_o[b] >
    0} x_o
    (6) S >= sum_ab R_ab q^z_ab + sum_{o ∋ gen} F_z(o) x_o   for every zone z: S = max_z (A_z + F_z)
    (7) sum_{o ∋ a} r_o x_o <= sum_{o ∋ b} r_o x_o  for consecutive interchangeable tasks a, b
        (same kind and model, e.g. PPO's reward, reference and critic inference), r_o a rank of
        the column that renaming them leaves unchanged: one plan of each mirror-image set stays
    (8) ḡ_o = max(gen_o, max_{t ∉ T_o generation} L_t(N - c_o)), ī_o and r̄_o likewise over the
        inference and training tasks: each task o leaves out runs in a group within the GPUs
        N - c_o that o leaves (C1), no faster than alone there (co-located tasks only take memory
        away), and a phase is at least its slowest task. A column whose left-out tasks need more
        least model memory than N - c_o holds, or cannot run there at all, is in no plan: dropped
    (9) for every class k, the big columns B_k = {o: 2 c_o[k] > N_k} exclude each other under
        (2): sum_{o in B_k} x_o <= 1, and every phase row of (3) holds with B_k in place of a
        task's cover (I >= sum_{o in B_k} ī_o x_o, ...): at most one of them is in the plan, and
        each phase is at least its term there. The LP otherwise time-shares a large group over
        several big compositions of one class (the overlapping step's trainer, its phase an
        average of its times where a plan pays one): small-24 PPO async's last master keeps
        1 506 of 8 472 columns after reduced-cost fixing instead of 1 841 and closes in half
        the time
    objective (sync)  G + W + I + R + sum xfer_o x_o + S,  W >= c
    objective (async) M + sum xfer_o x_o + S,  M >= c + I + R, and M >= G + w (c + I + R) with
                      the G rows of (3) when a fully-async rollouter drains before each sync
                      (w = 1 / updates_per_sync: ``costmodels.placement.judge.overlapped_step``)

where c is the workflow's reward stage in seconds (``costmodels.workflow.RewardStage``, 0 and W
absent without one): a constant on the trainer's path, so it moves no decision in sync mode and
can in the overlapping modes, where it lengthens the trainer against generation.

C3 (memory) is inside the options: combinations that break it on any GPU are never columns.

**Why lazy.** Enumerating every pair's options up front does not scale to PPO (six tasks, 63
subsets): the time goes to merging the configurations of many co-located tasks, and to costing
generation's "as many as fit" decode batch for each combination of residents. Instead
(``formulations.placement.columns``):

* every pair starts as one *relaxed* column whose terms bound each of its options' from below
  (:meth:`~search.placement.group_options.GroupOptions.bound_option`: each task at its fastest
  configuration that fits beside the other tasks' least memory, to a fixed point; generation
  with "as many as fit" at the :func:`~costmodels.placement.task_cost.generation_floor` beside the
  others' least models, valid for every decode batch its residents could leave; a pair that
  cannot fit has no column). Coupling the co-located tasks' memory is what makes PPO tractable:
  without it a relaxed group of four or five tasks looks as fast as its tasks alone, and the
  master picks one such group after another, each costing a master solve. A group without
  generation also bounds its inference + training together (``joint``: each task's
  configuration in turn, the others at their fastest that fit beside it), because a task's
  fastest configuration and its smallest one are often not the same. The bound that prunes a
  pair (``option_bound``) and the overlapping modes' M row take the larger; the synchronous
  G + I + R row keeps the separate floors, because there the joint coefficient made HiGHS's
  masters slower than the columns it saved (small-24 PPO sync: master time 3.9 -> 5.4 s,
  same masters, measured interleaved; ``benchmarks/results/performance-history.md``);
* the master ILP over relaxed and exact columns is a relaxation: its optimum is a lower bound;
* each pair the master picks while relaxed is *expanded* into its exact Pareto options, pruned by
  the incumbent, and the master is solved again. Picked pairs that are all exact give a feasible
  plan (it becomes the incumbent when it is better), and so does the master over the exact
  columns alone, asked after each iteration while it keeps finding better plans
  (:meth:`PlacementILP._restricted_while_better`); when the master's optimum uses exact
  columns only, that optimum is attained and proven: status optimal;
* a master solve costs far more than an expansion once the incumbent prunes them, so each
  iteration expands more than the master picked: the pairs that swap tasks of one kind and model
  with a picked one (PPO's actor and critic training: the master picks the twin next), and up to
  :data:`EXPAND_MORE` of the relaxed pairs the LP does not rule out of a plan costing the
  master's optimum, least reduced cost first, which saves master solves;
* a pair of co-located tasks gets a relaxed column only if its tasks' single-task bounds on c,
  with (8), can beat the co-located incumbent (the incumbent only falls), so many pairs are never
  costed at all.

The cost model scores every incumbent; the master's value of exact columns agrees with it to 1e-6
(tests/test_placement_exact.py). Interchangeable tasks are costed once per symmetry class.
Infeasibility: when the tasks' least model memory
(:func:`~costmodels.placement.memory.memory_floor_gb`)
exceeds the cluster's, at once; otherwise when the master over relaxed columns is infeasible.
Columns whose own bound exceeds the incumbent are dropped (they cannot be in a better plan), and
before each master MIP so are those the master's LP relaxation rules out: with z its optimum and
d_j column j's reduced cost, every solution with x_j = 1 costs at least z + d_j, so columns with
z + d_j > incumbent go (reduced-cost fixing; it shrinks the MIP root's cut loop). The cut loop's
rounds grow with the columns, so (8) pays twice: it prunes columns and it lifts z.
Under a time limit: the incumbent, and the best lower bound proven so far (the master's optimum or
HiGHS's dual bound), so the gap is always known. Accepted instances: group-aware overlap (the
default); the pairs number 2^|tasks| prod_k (N_k + 1), which keeps it to a few nodes per class.

**Where the columns are costed.** Relaxed columns and expansions are pure functions of the pair
(and of the pruning bound), so ``workers`` processes can cost them
(:mod:`formulations.placement.costing`: each composition always in the same worker, results
consumed in the order asked); the path, the columns and the plan are the same with any number
of workers. The singles are costed while this process builds the co-located incumbent; each
iteration's expansions (picked, kin and promising pairs) go out as one batch.

What these choices measured when they were made: ``benchmarks/results/performance-history.md``.
"""

from __future__ import annotations

import math
import time
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from costmodels.placement.judge import StepShape, evaluate_placement
from costmodels.placement.memory import memory_floor_gb, memory_need_and_capacity
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import best_colocated
from costmodels.solving import (
    LOCAL_WORKERS,
    UNLIMITED,
    Deadline,
    DeadlineExceeded,
    SolverOutput,
    Status,
    Trace,
)
from costmodels.workflow import ACTOR_GENERATION, TaskKind
from formulations.placement.columns import Column, ColumnPool, LeftoverBounds, Pair
from formulations.placement.costing import KeepSpec, column_costing, option_bound
from formulations.placement.master import Master
from search.placement.combine import combine, plan_of
from search.placement.group_options import GroupOptions
from search.placement.options import GroupOption, group_phases

#: after each master, at most this many relaxed pairs it did not pick are expanded too. On the
#: merged 64-GPU testbed a master over 60 000-90 000 columns takes 2-160 s and an expansion
#: under the incumbent milliseconds: 48 left PPO sync 5.7% short of a proof in 600 s, 500 proves
#: it in 419 s (44 masters). PPO async's first master leaves 7 490 pairs in reach (3 088
#: symmetry classes): at a 600 s cap, 500 bound it within 1.06% (seven masters), 1 000 within
#: 0.70%, 2 000 prove it in 520 s (four masters), and every pair in reach only within 1.67%:
#: more exact columns make the exact-columns master and the next master slower (117 s and
#: 105 s against 62 s and 34 s at 2 000). On small-24 PPO every pair the LP leaves in reach
#: fits under 500 (the same 450 and 310 expansions at 2 000), and the placement suite's 15
#: presets take the same path at both (benchmarks/results/performance-history.md)
EXPAND_MORE = 2000


class PlacementILP:
    """Lazy-expansion ILP for one problem; :meth:`solve` returns a SolverOutput."""

    def __init__(
        self,
        problem: PlacementProblem,
        deadline: Deadline = UNLIMITED,
        upper_bound: float | None = None,
        workers: int | None = 1,
    ):
        if not problem.params.group_aware_overlap:
            raise ValueError(
                "the placement ILP models group-aware task overlap "
                "(CostParams.group_aware_overlap=True)"
            )
        self.problem = problem
        self.workers = workers
        self.shape = StepShape.of(problem.workflow)
        self.deadline = deadline
        self.trace = Trace(
            deadline
        )  # anytime curve: the co-located incumbent, then each better plan
        self.builder = GroupOptions(problem, defer_explicit=True)
        self.classes = self.builder.classes
        self.tasks = self.builder.tasks
        self.pool = ColumnPool(self.builder, deadline)
        self.stats: dict[str, Any] = {}
        self.incumbent: tuple[float, Any] = (math.inf, None)
        self.cutoff = math.inf if upper_bound is None else upper_bound  # prune options above this
        self.lower = 0.0
        self.phase_lb = (0.0, 0.0, 0.0)
        self.leftover: LeftoverBounds | None = None
        self.last_master: float | None = None  # the last master's optimum (the ladder's hint)
        self.deferred_whole = False  # whether a whole-plan pair waited once (_defer_whole)
        #: whether the master over exact columns alone is still asked for a plan after each
        #: iteration (_restricted_while_better)
        self.restricting = True
        #: per option (by identity, with the option): the least plan using it (_least_plan)
        self._least: dict[int, tuple[GroupOption, float]] = {}

    def memory_infeasible(self) -> str | None:
        """Why no plan fits, when the tasks' least model memory exceeds the cluster's (C3)."""
        need, have = memory_need_and_capacity(self.problem)
        if need > have + 1e-9:
            return (
                f"the tasks' model memory alone needs {need:.1f} GB, the cluster has {have:.1f} GB"
            )
        return None

    def _offer(self, cost: float, plan: Any) -> None:
        if plan is not None and cost < self.incumbent[0]:
            self.incumbent = (cost, plan)
            self.cutoff = min(self.cutoff, cost)
            self.trace.record(cost)

    def _keep_option(self, o: GroupOption) -> bool:
        """Whether a plan using ``o`` may beat the cutoff: its bound (:meth:`_least_plan`)."""
        if self.leftover is None:  # the bounds are not fixed yet: nothing to keep
            return self._below_cutoff(self._least_plan(o))
        hit = self._least.get(id(o))
        if hit is None:
            # keyed by identity, holding the option so that its id is not reused
            hit = self._least[id(o)] = (o, self._least_plan(o))
        return self._below_cutoff(hit[1])

    def _below_cutoff(self, bound: float | None) -> bool:
        """Whether a plan bounded below by ``bound`` (None: no plan) may beat the cutoff."""
        return bound is not None and bound <= self.cutoff * (1 + 1e-9)

    def _least_plan(self, o: GroupOption) -> float | None:
        """The least iteration time of any plan using ``o``: its terms, raised to the
        whole-cluster phase bounds and to what the tasks it leaves out cost on the GPUs it
        leaves (None when they do not fit there: no plan uses it, whatever the cutoff). Both
        bounds are fixed once the single-task columns are built, so every master reads it once
        per option."""
        rest = self.leftover.phases(o) if self.leftover is not None else (0.0, 0.0, 0.0)
        if rest is None:  # the tasks it leaves out do not fit on the GPUs it leaves
            return None
        lb = (
            max(self.phase_lb[0], rest[0]),
            max(self.phase_lb[1], rest[1]),
            max(self.phase_lb[2], rest[2]),
        )
        # the larger of the two bounds, so that the test is the one of the whole-cluster bound
        # and then the leftover one, to the last bit
        return max(option_bound(o, self.shape, self.phase_lb), option_bound(o, self.shape, lb))

    def _admit(self, subset: tuple[str, ...], comp: tuple[int, ...]) -> bool:
        """Whether a pair is worth a relaxed column: its tasks each at their single-task bound on
        ``comp`` (co-located tasks only slow each other down) must pass :meth:`_keep_option`."""
        times = [self.pool.single_time(name, comp) for name in subset]
        if any(t is None for t in times):  # a task that does not fit alone: nor beside others
            return False
        gen, inf, trn = group_phases(
            [self.tasks[n].kind for n in subset], times, self.problem.workflow.eta
        )  # type: ignore[arg-type]
        busy = gen + inf + trn if ACTOR_GENERATION in subset else 0.0
        return self._below_cutoff(
            self._least_plan(GroupOption(subset, comp, {}, gen, inf, trn, 0.0, busy))
        )

    def _keep_spec(self, pair: Pair) -> KeepSpec:
        """The pruning bound of ``pair``'s partial combinations while it is expanded
        (:func:`~formulations.placement.costing.partial_keep`): a partial's phases only grow as
        tasks join, so one whose bound already exceeds the cutoff leads to no option worth a
        column. The bound takes the phases of the tasks the pair leaves out on the GPUs it leaves
        (8) besides the whole-cluster ones: the same test :meth:`_keep_option` puts its options
        to, applied before they are costed. The pair's symmetry class leaves out tasks of the
        same signatures, so the test holds for every pair the expansion fills, and so does its
        relaxed column (the same terms, renamed), the floor of every term of its options."""
        lb = self.phase_lb
        floor = self.pool.relaxed.get(pair)
        if self.leftover is not None:
            rest = self.leftover.phases_of(*pair)
            if rest is None:  # the tasks it leaves out do not fit on the GPUs it leaves
                return None, self.cutoff, floor
            lb = (max(lb[0], rest[0]), max(lb[1], rest[1]), max(lb[2], rest[2]))
        return lb, self.cutoff, floor

    def _phase_bounds(self) -> tuple[float, float, float]:
        """No plan's phase is faster than its slowest task's bound on its best composition."""
        best: dict[str, float] = {}
        for (subset, _), o in self.pool.relaxed.items():
            if len(subset) == 1:
                t = self.tasks[subset[0]]
                v = (
                    o.gen
                    if t.kind is TaskKind.GENERATION
                    else (o.inf if t.kind is TaskKind.INFERENCE else o.trn)
                )
                best[subset[0]] = min(best.get(subset[0], math.inf), v)
        out = []
        for kind in (TaskKind.GENERATION, TaskKind.INFERENCE, TaskKind.TRAINING):
            times = [best.get(n, 0.0) for n, t in self.tasks.items() if t.kind is kind]
            out.append(max(times) if times else 0.0)
        return out[0], out[1], out[2]

    def solve(self, backend: str, threads: int | None = None) -> SolverOutput:
        """Solve, costing columns as :func:`~formulations.placement.costing.column_costing`
        says for ``workers``; the worker processes end with the solve."""
        why = self.memory_infeasible()
        if why is None:
            self.pool.costing = column_costing(self.builder, self.workers)
        try:
            return self._solve(backend, threads, why)
        finally:
            self.stats["workers"] = self.pool.costing.workers
            self.pool.costing.close()

    def _solve(self, backend: str, threads: int | None, why: str | None) -> SolverOutput:
        start = time.perf_counter()
        if why is not None:
            return SolverOutput(
                Status.INFEASIBLE, message=f"no placement fits: {why}", bound=None, stats=self.stats
            )
        singles = self.pool.start_relax_singles()  # in workers, beside the co-located plan
        self._offer(*best_colocated(self.problem, self.deadline))
        self.stats["colocated"] = self.incumbent[0] if self.incumbent[1] is not None else None
        singles()
        self.phase_lb = self._phase_bounds()
        self.leftover = LeftoverBounds(
            self.pool, {t.name: memory_floor_gb(self.problem, t) for t in self.problem.tasks}
        )
        self.pool.relax_groups(self._admit)
        self.stats["pairs"] = len(self.pool.relaxed)
        self.stats["build_s"] = time.perf_counter() - start
        iterations = 0
        while True:
            iterations += 1
            self.stats["iterations"] = iterations
            columns = self.pool.columns(self._keep_option)
            self.stats["columns"] = len(columns)
            if not columns:
                return self._finish(
                    "no group option fits" if self.incumbent[1] is None else "", proven=True
                )
            t0 = time.perf_counter()
            master = self._master(columns)
            remaining = self.deadline.remaining()
            status, x, value, bound = master.solve(
                backend, remaining, threads, self.cutoff * (1 + 1e-7), hint=self.last_master
            )
            self.stats["master_solves"] = self.stats.get("master_solves", 0) + master.probes
            if status == "optimal" and value is not None:
                self.last_master = value  # the next master's optimum is at least this
            now = time.perf_counter()
            self.stats["master_s"] = self.stats.get("master_s", 0.0) + now - t0
            # the lower bound's climb: per master, [seconds since the start, its optimum (or
            # the bound it proved when the limit stopped it), its seconds, its columns]; a
            # proof that does not close shows here how far each master still moves it
            optimum = value if status == "optimal" else bound
            self.stats.setdefault("masters", []).append(
                [round(now - start, 2), optimum, round(now - t0, 2), len(columns)]
            )
            if status == "infeasible":
                # no plan beats the incumbent: it is optimal (or nothing fits at all)
                return self._finish("", proven=True)
            if bound is not None:
                self.lower = max(self.lower, min(bound, self.incumbent[0]))
            if status != "optimal" or x is None:
                # marks the solve as clock-bound when the limit stopped the master
                self.deadline.expired()
                return self._finish(
                    f"{backend}: master not solved to optimality within the limit", proven=False
                )
            chosen = [columns[i] for i in range(len(columns)) if x[i] > 0.5]
            relaxed = [c for c in chosen if c.relaxed]
            if not relaxed:
                self._offer(*self._score([c.option for c in chosen]))
                return self._finish("", proven=True)
            t0 = time.perf_counter()
            picked = [c.pair for c in relaxed]
            defer = self._defer_whole(picked)
            picked = [p for p in picked if p not in defer]
            picked += [p for q in picked for p in self.pool.kin_pairs(q) if p in self.pool.relaxed]
            more = [
                p
                for p in self._promising(columns, x, master.lp, value, picked)
                # a pair of every task is a whole plan, the costliest expansion there is: only
                # when the master picks it (_defer_whole), never on speculation
                if len(p[0]) < len(self.tasks)
            ]
            if defer and not picked and self._loose():
                # the master picked a whole plan alone, which waits: the best plan without
                # one goes first, its relaxed pairs made exact and the best plan of the exact
                # columns taken, so the whole plan is expanded under that plan's cutoff, not
                # the co-located one's (small-16 PPO sync: that expansion 20.7 s -> none of
                # note, 33 948 -> 4 410 evaluations). It stays first when promising pairs are
                # in reach too, because those alone can leave the cutoff loose (small-16 PPO
                # sync with the joint bound: 29 041 evaluations in the whole plan after two)
                picked = self._apart_from_whole(columns, backend, threads)
            if more and self._loose():
                # under the co-located plan's cutoff an expansion keeps most of its options:
                # the picked pairs first, then the best plan of the exact columns, and the
                # promising pairs under the cutoff it sets (small-16 PPO async: the first
                # batch 2.8 -> 0.5 s, same masters). With nothing picked, a plan's worth of
                # the most promising pairs (as many as there are tasks: a plan has no more
                # groups) go first in its place
                if not picked:
                    picked, more = more[: len(self.tasks)], more[len(self.tasks) :]
                self._expand(picked)
                self._restricted_incumbent(backend, threads)
                picked = []
            picked += more
            self._expand(picked)
            if defer:
                self._restricted_incumbent(backend, threads)
            else:
                self._incumbent_from([c.pair for c in chosen])
            self.stats["expand_s"] = self.stats.get("expand_s", 0.0) + time.perf_counter() - t0
            if not defer:  # a deferred whole plan has just had this incumbent
                self._restricted_while_better(backend, threads, start)

    def _promising(
        self,
        columns: list[Column],
        x: np.ndarray,
        lp: tuple[float, np.ndarray] | None,
        value: float,
        picked: list[Pair],
    ) -> list[Pair]:
        """Up to :data:`EXPAND_MORE` relaxed pairs the master did not pick, least LP reduced cost
        first, among those the LP does not rule out of a plan costing the master's optimum
        ``value`` (z + d_j <= value), one per symmetry class and none of ``picked``'s: the pairs
        the next masters would turn to. A master solve costs far more than an expansion once
        the incumbent prunes them, so a few expansions that turn out useless buy fewer master
        solves (small-24 PPO async: 14 -> 3 masters). A count, not a time budget, so the solve stays
        deterministic."""
        if lp is None:
            return []
        z, dj = lp
        rows = sorted(
            (dj[i], i)
            for i, c in enumerate(columns)
            if c.relaxed and x[i] < 0.5 and z + dj[i] <= value
        )
        seen = {self.pool.class_of(p) for p in picked}
        out: list[Pair] = []
        for _, i in rows:
            if len(out) >= EXPAND_MORE:
                break
            pair = columns[i].pair
            key = self.pool.class_of(pair)
            if pair in self.pool.relaxed and key not in seen:
                seen.add(key)
                out.append(pair)
        return out

    def _master(self, columns: list[Column]) -> Master:
        """The master ILP over ``columns``, with the leftover bounds of each."""
        leftover = (
            [self.leftover.phases(c.option) or (0.0, 0.0, 0.0) for c in columns]
            if self.leftover
            else None
        )
        return Master(
            self.builder,
            self.shape,
            columns,
            self.pool.interchangeable(),
            self.pool.ranks(columns),
            leftover,
            # two rungs at a time when the columns are costed in worker processes: those idle
            # while a master is solved, and were started because the CPUs are there; the
            # answer is the same either way (Master._ladder)
            rung_threads=2 if self.pool.costing.workers > 1 else 1,
        )

    def _defer_whole(self, picked: list[Pair]) -> list[Pair]:
        """The picked pairs to expand later: those of every task (whole plans) while the
        incumbent is still the co-located plan, once. Under that loose cutoff such a pair's
        expansion enumerates nearly every co-located configuration (small-24 PPO sync: 11 s
        for 74 options, against 0.9 s and none under the next incumbent), so the other pairs
        it picked, or else the relaxed pairs of its best plan without a whole plan
        (:meth:`_apart_from_whole`), are expanded first and the master on exact columns alone
        (:meth:`_restricted_incumbent`) gives the cutoff. Deferred once only, so the loop
        still expands a pair per iteration and ends."""
        if self.deferred_whole or self.incumbent[0] < self._colocated():
            return []
        whole = [p for p in picked if len(p[0]) == len(self.tasks)]
        if whole:
            self.deferred_whole = True
        return whole

    def _apart_from_whole(
        self, columns: list[Column], backend: str, threads: int | None
    ) -> list[Pair]:
        """The relaxed pairs of the master's best plan without a pair of every task."""
        apart = [c for c in columns if len(c.pair[0]) < len(self.tasks)]
        return [c.pair for c in self._best_plan_of(apart, backend, threads) if c.relaxed]

    def _colocated(self) -> float:
        """The co-located plan's cost (inf when none fits)."""
        start = self.stats.get("colocated")
        return math.inf if start is None else start

    def _loose(self) -> bool:
        """Whether the cutoff is still the co-located plan's (no better plan, and no caller's
        ``upper_bound`` below it)."""
        return self.cutoff >= self._colocated()

    def _expand(self, pairs: list[Pair]) -> None:
        """Make ``pairs`` exact, each pruned by its spec under the cutoff now."""
        self.pool.start_expansions(pairs, [self._keep_spec(p) for p in pairs])()

    def _restricted_incumbent(self, backend: str, threads: int | None) -> None:
        """The best plan of the exact columns alone (the master without its relaxed columns:
        an incumbent, as price-and-branch takes one)."""
        exact = [c for c in self.pool.columns(self._keep_option) if not c.relaxed]
        chosen = self._best_plan_of(exact, backend, threads)
        if chosen:
            self._offer(*self._score([c.option for c in chosen]))

    def _restricted_while_better(self, backend: str, threads: int | None, start: float) -> None:
        """Price-and-branch's incumbent after every iteration, while it keeps improving: the
        master over the exact columns alone, below the cutoff (:meth:`_restricted_incumbent`).
        The picked pairs' own plan (:meth:`_incumbent_from`) only combines the groups one master
        chose, and the masters choose relaxed pairs whose exact options are slower than their
        bounds; the promising pairs' expansions meanwhile make exact columns that the master
        never combines while relaxed ones look better. On the merged testbed's PPO async, under
        SHA-EA's 194.66 s and 500 promising pairs a master, the picked pairs' plans stayed
        above 211 s for six masters, while the exact columns after the first master held a
        186.14 s plan and after the second the optimum, 185.09 s (12 and 16 s solves; at
        :data:`EXPAND_MORE` = 2 000 the first call finds it, in 62 s). The restricted master
        grows with the exact columns (54 s by the sixth master there), so it is asked again
        only after it found a better plan: once it finds none, the masters go on alone. A count
        of improvements, not a time, so the path stays deterministic. Skipped while the cutoff
        is the co-located plan's: the loop then takes this incumbent before the promising pairs
        (:meth:`_loose`). Each call: [seconds since the start, its seconds, the incumbent
        before and after] in ``stats["restricted"]``."""
        if not self.restricting or self._loose():
            return
        t0 = time.perf_counter()
        before = self.incumbent[0]
        self._restricted_incumbent(backend, threads)
        self.restricting = self.incumbent[0] < before
        seconds = round(time.perf_counter() - t0, 2)
        known = before if math.isfinite(before) else None
        self.stats.setdefault("restricted", []).append(
            [round(t0 - start, 2), seconds, known, self.incumbent[0]]
        )

    def _best_plan_of(
        self, columns: list[Column], backend: str, threads: int | None
    ) -> list[Column]:
        """The columns of the master's optimum over ``columns`` alone, below the cutoff (none
        when it has none or is not solved)."""
        if not columns:
            return []
        master = self._master(columns)
        status, x, _, _ = master.solve(
            backend, self.deadline.remaining(), threads, self.cutoff * (1 + 1e-7)
        )
        self.stats["master_solves"] = self.stats.get("master_solves", 0) + master.probes
        if status != "optimal" or x is None:
            return []
        return [c for c, v in zip(columns, x, strict=False) if v > 0.5]

    def _incumbent_from(self, pairs: list[tuple[tuple[str, ...], tuple[int, ...]]]) -> None:
        """The best plan on the groups the master picked, now exact (a cheap anytime incumbent)."""
        lists = [self.pool.exact.get(p, []) for p in pairs]
        if any(not lst for lst in lists):
            return
        best = combine(lists, self.shape, self.builder.plan_sync_time(pairs))
        if best is not None:
            self._offer(*self._score(best[1]))

    def _score(self, chosen: list[GroupOption]) -> tuple[float, Any]:
        """The cost model's iteration time of the plan these options make (the authority)."""
        plan = self.decode(chosen)
        return evaluate_placement(self.problem, plan).objective, plan

    def _finish(self, why: str, proven: bool) -> SolverOutput:
        self.stats["trace"] = self.trace.rows()
        self.stats["expansions"] = self.pool.expansions
        self.stats["task_evaluations"] = self.pool.costing.evaluations
        #: no plan below the incumbent, or below the caller's upper_bound when none is
        self.stats["proven"] = proven
        cost, plan = self.incumbent
        if plan is None:
            if proven and math.isfinite(self.cutoff):  # the caller's upper_bound pruned every plan
                return SolverOutput(
                    Status.NO_SOLUTION,
                    message=f"no plan costs less than upper_bound={self.cutoff:g}",
                    stats=self.stats,
                )
            if proven:
                return SolverOutput(
                    Status.INFEASIBLE,
                    message="the ILP is infeasible: no placement fits",
                    stats=self.stats,
                )
            return SolverOutput(
                Status.NO_SOLUTION,
                message=why or "no plan found within the limit",
                bound=self.lower or None,
                stats=self.stats,
            )
        # the caller's upper_bound pruned what lay between
        if proven and cost > self.cutoff * (1 + 1e-7):
            msg = (
                f"no plan costs less than upper_bound={self.cutoff:g}; "
                f"returning the best known ({cost:.4g})"
            )
            return SolverOutput(
                Status.FEASIBLE, plan=plan, objective=cost, message=msg, stats=self.stats
            )
        if proven:
            msg = (
                f"optimal after {self.pool.expansions} pair expansions in "
                f"{self.stats.get('iterations', 0)} master solves"
            )
            if self.pool.rules is not None:  # a restriction of rlplan's space: say so
                msg += f", over the plans {self.pool.rules.framework} runs (--target)"
            return SolverOutput(
                Status.OPTIMAL, plan=plan, objective=cost, bound=cost, message=msg, stats=self.stats
            )
        gap = (cost - self.lower) / cost if cost > 0 else 0.0
        msg = f"{why}; incumbent {cost:.4g}, bound {self.lower:.4g} (gap {gap:.1%})"
        return SolverOutput(
            Status.FEASIBLE,
            plan=plan,
            objective=cost,
            bound=self.lower,
            message=msg,
            stats=self.stats,
        )

    def decode(self, chosen: list[GroupOption]):
        return plan_of(self.problem, self.classes, chosen)


#: the ILP's solver options, as the planner reads them (shared by every entry that runs it)
Backend = Annotated[
    Literal["highs", "cbc"], Field(description="MILP backend: HiGHS (highspy) or CBC (PuLP)")
]
Threads = Annotated[int | None, Field(ge=1, description="solver threads (default: the backend's)")]
UpperBound = Annotated[
    float | None, Field(gt=0, description="prune options whose cost exceeds this (s/iteration)")
]
Workers = Annotated[
    int | None,
    Field(
        ge=1,
        le=LOCAL_WORKERS,
        description=(
            "processes that cost the columns (1: in process; default: up to 2 on instances "
            "of 4096 relaxed pairs or more); the same plan and path with any number"
        ),
    ),
]


def solve_placement_ilp(
    problem: PlacementProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    backend: Backend = "highs",
    threads: Threads = None,
    upper_bound: UpperBound = None,
    workers: Workers = None,
) -> SolverOutput:
    """HetRL §3.5 ILP by lazy column expansion on HiGHS (``backend="cbc"`` for CBC). With a time
    limit it returns the incumbent with status feasible and the best proven lower bound; building
    the columns counts against the limit too."""
    del seed  # deterministic
    return solve_under(problem, Deadline(time_limit), backend, threads, upper_bound, workers)


def solve_under(
    problem: PlacementProblem,
    deadline: Deadline,
    backend: str = "highs",
    threads: int | None = None,
    upper_bound: float | None = None,
    workers: int | None = None,
) -> SolverOutput:
    """:func:`solve_placement_ilp` under a deadline already running: a solve that runs the ILP
    more than once (``formulations.placement.node_merge.solve_merging_nodes``) shares one."""
    model = PlacementILP(problem, deadline, upper_bound, workers)
    try:
        return model.solve(backend, threads)
    except DeadlineExceeded:
        return model._finish("time limit reached while building columns", proven=False)
