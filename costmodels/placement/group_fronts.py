"""Group options: the Pareto-optimal ways to run a set of co-located tasks on a GPU group.

For a task subset T and a group *composition* c (GPUs taken from each interchangeable class,
``costmodels.placement.space.node_classes``), every task configuration is costed by the cost
model on the canonical layout; configurations that break C3 alone are dropped, dominated ones (in
time, per-GPU resident and working memory, and weight-transfer terms) too; the survivors are
merged task by task, dropping combinations that break C3 together and partial combinations that
are dominated. What is left is the Pareto front of (generation time, inference phase Φ, training
phase Φ, weight-transfer share) over the group's feasible configuration choices.

The exact ILP (``formulations.placement.ilp``) chooses among these options; SHA-EA
(``heuristics.placement.sha_ea``) uses them to solve Level 4 exactly for a Level-3 assignment,
as HetRL enumerates intra-model parallelization at Level 4 (§3.4).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from costmodels import comm
from costmodels.placement.cost import (
    decode_batches,
    full_weights_gb,
    generation_floor,
    phi,
    replica_allgather,
    task_cost,
    task_memory,
    zone_fanout,
)
from costmodels.placement.frameworks import rules_of
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import (
    TaskConfig,
    is_heterogeneous,
    node_classes,
    place_task,
    task_configs,
)
from costmodels.solving import UNLIMITED, Deadline
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING, TaskKind


@dataclass
class Candidate:
    cfg: TaskConfig
    time: float
    model: np.ndarray
    working: np.ndarray
    ag_min: float = 0.0
    ag_max: float = 0.0
    #: generation with dbs "as many as fit": its time depends on the group's other residents, so
    #: it is costed when merged (last) into a combination, never compared on its own
    deferred: bool = False


@dataclass
class GroupOption:
    """One way to run a task subset on a composition. ``busy`` is what keeps generation's GPUs
    busy (generation plus the group's inference and training phases; 0 without generation);
    ``xfer`` the group's own weight-transfer share (C_reshard, or the training all-gather of
    C_sync); ``fanout`` F_z per zone of the group's generation GPUs (C_sync; none for C_reshard)."""

    tasks: tuple[str, ...]
    comp: tuple[int, ...]
    configs: dict[str, TaskConfig]
    gen: float
    inf: float
    trn: float
    xfer: float
    busy: float = 0.0
    fanout: dict[str, float] | None = None


@dataclass
class _CandidateTable:
    """A task's candidates on one composition as arrays (rows: candidates; model and working
    per GPU of the composition); ``time`` is a deferred candidate's floor alone."""

    cands: list[Candidate]
    time: np.ndarray
    model: np.ndarray
    working: np.ndarray
    ag_min: np.ndarray
    ag_max: np.ndarray
    deferred: np.ndarray


def dominates(a: Candidate, b: Candidate) -> bool:
    return (
        a.time <= b.time
        and a.ag_min <= b.ag_min
        and a.ag_max <= b.ag_max
        and bool((a.model <= b.model).all())
        and bool((a.working <= b.working).all())
    )


def pareto_candidates(cands: list[Candidate]) -> list[Candidate]:
    deferred = [c for c in cands if c.deferred]
    cands = sorted(
        (c for c in cands if not c.deferred),
        key=lambda c: (c.time, float(c.model.sum()), float(c.working.sum())),
    )
    kept: list[Candidate] = list(deferred)
    for c in cands:
        if not any(dominates(k, c) for k in kept if not k.deferred):
            kept.append(c)
    return kept


def pareto_pairs(rows: list[tuple[tuple[float, ...], Any]]) -> list[tuple[tuple[float, ...], Any]]:
    """The (vector, item) rows whose vector no other kept row dominates (all <=)."""
    rows = sorted(rows, key=lambda r: r[0])
    kept: list[tuple[tuple[float, ...], Any]] = []
    for vec, item in rows:
        if not any(all(a <= b + 1e-15 for a, b in zip(kv, vec, strict=True)) for kv, _ in kept):
            kept.append((vec, item))
    return kept


def pareto_rows(rows: list[tuple[tuple[float, ...], Any]]) -> list[Any]:
    return [item for _, item in pareto_pairs(rows)]


@dataclass
class Partial:
    """A partial combination of task configurations on one composition."""

    key: tuple[float, ...]  # gen, inf_max, inf_sum, trn_max, trn_sum, ag_min, ag_max
    model: np.ndarray
    working: np.ndarray
    configs: dict[str, TaskConfig]

    @staticmethod
    def empty(n: int) -> Partial:
        return Partial((0.0,) * 7, np.zeros(n), np.zeros(n), {})

    def add(self, name: str, kind: TaskKind, c: Candidate) -> Partial:
        gen, imax, isum, tmax, tsum, agn, agx = self.key
        if kind is TaskKind.GENERATION:
            gen = c.time
        elif kind is TaskKind.INFERENCE:
            imax, isum = max(imax, c.time), isum + c.time
        else:
            tmax, tsum = max(tmax, c.time), tsum + c.time
        if name == ACTOR_TRAINING:
            agn, agx = c.ag_min, c.ag_max
        return Partial(
            (gen, imax, isum, tmax, tsum, agn, agx),
            self.model + c.model,
            np.maximum(self.working, c.working),
            {**self.configs, name: c.cfg},
        )

    def phases(self, eta: float) -> tuple[float, float, float]:
        """(generation, Φ_η inference, Φ_η training) of the combination so far."""
        gen, imax, isum, tmax, tsum, *_ = self.key
        return gen, eta * imax + (1 - eta) * isum, eta * tmax + (1 - eta) * tsum

    def option(
        self, subset: tuple[str, ...], comp: tuple[int, ...], wf: Any, fanout: dict[str, float]
    ) -> GroupOption:
        """The group option of this combination (``fanout``: F_z of the group's GPUs)."""
        *_, agn, agx = self.key
        gen, inf, trn = self.phases(wf.eta)
        has_gen, has_train = ACTOR_GENERATION in subset, ACTOR_TRAINING in subset
        if has_gen and has_train and wf.mode == "sync":
            xfer, fan = agx, None  # C_reshard
        elif has_train:
            xfer, fan = agn, (fanout if has_gen else None)
        else:
            xfer, fan = 0.0, (fanout if has_gen else None)
        busy = gen + inf + trn if has_gen else 0.0
        return GroupOption(subset, comp, dict(self.configs), gen, inf, trn, xfer, busy, fan)


def group_phases(
    kinds: list[TaskKind], times: list[float], eta: float
) -> tuple[float, float, float]:
    """(generation, Φ_η inference, Φ_η training) of co-located tasks of these kinds and times."""
    gen = sum(x for x, k in zip(times, kinds, strict=True) if k is TaskKind.GENERATION)
    inf = phi([x for x, k in zip(times, kinds, strict=True) if k is TaskKind.INFERENCE], eta)
    trn = phi([x for x, k in zip(times, kinds, strict=True) if k is TaskKind.TRAINING], eta)
    return gen, inf, trn


def prune_partials(states: list[Partial], deadline: Deadline = UNLIMITED) -> list[Partial]:
    """Drop partial combinations dominated in every metric and every GPU's memory (vectorised).
    Quadratic in the states, so it checks ``deadline`` as it goes."""
    if len(states) <= 1:
        return states
    mat = np.array([np.concatenate([np.asarray(st.key), st.model, st.working]) for st in states])
    order = np.lexsort(mat.T[::-1])
    kept = np.empty_like(mat)
    rows: list[int] = []
    for n, i in enumerate(order):
        if n % 256 == 255:
            deadline.check(256 * mat.shape[1])
        row = mat[i]
        k = len(rows)
        if k and np.any(np.all(kept[:k] <= row + 1e-12, axis=1)):
            continue
        kept[k] = row
        rows.append(int(i))
    return [states[i] for i in rows]


class GroupOptions:
    """Cached candidates and options of one problem, keyed by (task or subset, composition)."""

    def __init__(self, problem: PlacementProblem):
        self.problem = problem
        self.classes = node_classes(problem)
        self.cap = [len(g) for _, g in self.classes]
        self.tasks = {t.name: t for t in problem.tasks}
        self._cap_gb = {
            d.id: d.gpu.memory_gb - problem.params.memory_reserve_gb
            for d in problem.topology.devices
        }
        self._index = problem.topology.index_of()
        self._cands: dict[tuple[str, tuple[int, ...]], list[Candidate]] = {}
        self._opts: dict[tuple[tuple[str, ...], tuple[int, ...]], list[GroupOption]] = {}
        self._tables: dict[tuple[Any, tuple[int, ...]], _CandidateTable | None] = {}
        self._fan: dict[Any, dict[str, float]] = {}
        self._resolved: dict[Any, float] = {}
        self._routes: dict[tuple[int, int], float] | None = None
        self.evaluations = 0
        self._class_of = {g: k for k, (_, members) in enumerate(self.classes) for g in members}
        self._rules = rules_of(problem)
        #: tasks whose TP and PP must equal a partner's (framework target), and the pairs
        self._ties = self._rules.ties(problem) if self._rules is not None else ()
        self._tied = {n for pair in self._ties for n in pair}

    def gpus(self, comp: tuple[int, ...]) -> list[str]:
        return [g for k, n in enumerate(comp) for g in self.classes[k][1][:n]]

    def node_counts(self, comp: tuple[int, ...]) -> list[int]:
        """GPUs a composition takes from each node (a class is a node, or one GPU of a node
        under an explicit per-GPU matrix)."""
        counts: dict[str, int] = {}
        index = self._index
        for g in self.gpus(comp):
            node = self.problem.topology.devices[index[g]].node
            counts[node] = counts.get(node, 0) + 1
        return list(counts.values())

    def capacity(self, comp: tuple[int, ...]) -> np.ndarray:
        return np.array([self._cap_gb[g] for g in self.gpus(comp)])

    def composition(self, gpus: list[str]) -> tuple[int, ...]:
        """The composition of a concrete GPU set."""
        of = self._class_of
        comp = [0] * len(self.classes)
        for g in gpus:
            comp[of[g]] += 1
        return tuple(comp)

    def signature(self, name: str) -> tuple[Any, ...]:
        """What a task's candidates depend on: its kind, its model, and whether it is actor
        training (whose all-gather feeds weight sync). Tasks with one signature (PPO's reference,
        reward and critic inference on one model) are interchangeable: they share candidates,
        and task groupings that differ only by swapping them are one grouping."""
        t = self.tasks[name]
        if self._rules is not None:
            # a framework target treats tasks by role (verl's reference goes with the actor,
            # its reward model may not): no two tasks are interchangeable
            return (t.kind, self.problem.workflow.model(t.role).name, name == ACTOR_TRAINING, name)
        return (t.kind, self.problem.workflow.model(t.role).name, name == ACTOR_TRAINING)

    def candidates(
        self, name: str, comp: tuple[int, ...], deadline: Deadline = UNLIMITED
    ) -> list[Candidate]:
        """Every configuration of one task on a composition that fits alone, Pareto-filtered.
        Costing them all can take minutes on a large group: past ``deadline`` it raises
        :class:`DeadlineExceeded` and caches nothing."""
        key = (self.signature(name), comp)
        if key in self._cands:
            return self._cands[key]
        p, task = self.problem, self.tasks[name]
        gpus = self.gpus(comp)
        capacity = self.capacity(comp)
        pos = {self._index[g]: i for i, g in enumerate(gpus)}
        cands = []
        for cfg in task_configs(p, task, len(gpus), is_heterogeneous(p, gpus)):
            deadline.check()
            placement = place_task(p, task, gpus, cfg)
            model = np.zeros(len(gpus))
            working = np.zeros(len(gpus))
            for d, (mo, wo) in task_memory(p, task, placement).items():
                model[pos[d]], working[pos[d]] = mo, wo
            if np.any(model + working > capacity + 1e-9):
                continue
            if task.kind is TaskKind.GENERATION and cfg.decode_batch is None:
                cands.append(Candidate(cfg, 0.0, model, working, deferred=True))
                continue
            cost, _ = task_cost(p, task, placement)
            self.evaluations += 1
            cand = Candidate(cfg, cost["time_s"], model, working)
            if name == ACTOR_TRAINING:
                ag, _ = replica_allgather(p, placement)
                cand.ag_min, cand.ag_max = min(ag), max(ag)
            cands.append(cand)
        if name in self._tied:
            # a tied task's layout is fixed by its partner's: keep the front of each (TP, PP)
            by_layout: dict[tuple[int, int], list[Candidate]] = {}
            for c in cands:
                by_layout.setdefault((c.cfg.tp, c.cfg.pp), []).append(c)
            self._cands[key] = [c for grp in by_layout.values() for c in pareto_candidates(grp)]
        else:
            self._cands[key] = pareto_candidates(cands)
        return self._cands[key]

    def _table(
        self, name: str, comp: tuple[int, ...], deadline: Deadline = UNLIMITED
    ) -> _CandidateTable | None:
        """A task's candidates on a composition as arrays (deferred generation at its floor
        alone); None when no configuration fits alone."""
        key = (self.signature(name), comp)
        if key not in self._tables:
            cands = self.candidates(name, comp, deadline)
            self._tables[key] = (
                _CandidateTable(
                    cands,
                    np.array([self._floor(name, comp, c) if c.deferred else c.time for c in cands]),
                    np.array([c.model for c in cands]),
                    np.array([c.working for c in cands]),
                    np.array([c.ag_min for c in cands]),
                    np.array([c.ag_max for c in cands]),
                    np.array([c.deferred for c in cands], dtype=bool),
                )
                if cands
                else None
            )
        return self._tables[key]

    def _floor(
        self, name: str, comp: tuple[int, ...], c: Candidate, others: np.ndarray | None = None
    ) -> float:
        """generation_floor of a deferred candidate on its GPUs beside at least ``others`` GB of
        other tasks' models per GPU (none: alone)."""
        return self._beside(
            "floor", name, comp, c.cfg, c.model if others is None else c.model + others
        )

    def _beside(
        self, what: str, name: str, comp: tuple[int, ...], cfg: TaskConfig, resident: np.ndarray
    ) -> float:
        """Generation "as many as fit" under ``cfg`` on ``comp`` with ``resident`` GB of models per
        GPU: its time (``what="time"``, the cost model's) or its floor (``"floor"``,
        :func:`~costmodels.placement.cost.generation_floor`). Both depend on the residents only
        through each replica's dbs, so they are memoised on them."""
        p, task = self.problem, self.tasks[name]
        mem = self._memory_map(comp, resident)
        placement = place_task(p, task, self.gpus(comp), cfg)
        key = (what, name, comp, cfg, decode_batches(p, task, placement, mem))
        hit = self._resolved.get(key)
        if hit is None:
            self.evaluations += 1
            hit = (
                task_cost(p, task, placement, mem)[0]["time_s"]
                if what == "time"
                else generation_floor(p, task, placement, mem)
            )
            self._resolved[key] = hit
        return hit

    def bound_option(
        self, subset: tuple[str, ...], comp: tuple[int, ...], deadline: Deadline = UNLIMITED
    ) -> GroupOption | None:
        """A relaxed option of ``subset`` on ``comp``: every term is a lower bound on the same term
        of each of :meth:`options` (None means no option fits), ``configs`` empty. The objective
        is non-decreasing in every term, so a plan built from relaxed options costs no more than
        any plan of real ones.

        Memory couples the co-located tasks. With m_u, w_u the per-GPU model and working memory
        of task u's configuration and cap the usable GB, an option fits when
        sum_u m_u + max_u w_u <= cap on every GPU (C3). Every configuration u can take has
        m_u >= m̲_u and w_u >= w̲_u (element-wise minima over the configurations still possible),
        so task t can only use configurations c with m_c + sum_{u != t} m̲_u + max(w_c, max_{u != t}
        w̲_u) <= cap;
        the minima are re-taken over those and the filter repeated until nothing changes. Each
        task is then bounded by its fastest surviving configuration; generation "as many as fit"
        at its :func:`~costmodels.placement.cost.generation_floor` beside the others' least models
        (more residents leave fewer KV slots, which the floor covers), tried fastest alone first
        and stopped once the next one's floor alone cannot beat the best so far."""
        tables = [self._table(n, comp, deadline) for n in subset]
        if any(t is None for t in tables):
            return None
        capacity = self.capacity(comp) + 1e-9
        fits = [np.ones(len(t.time), dtype=bool) for t in tables]  # type: ignore[union-attr]
        while True:
            model = [t.model[f].min(axis=0) for t, f in zip(tables, fits, strict=True)]  # type: ignore[union-attr]
            working = [t.working[f].min(axis=0) for t, f in zip(tables, fits, strict=True)]  # type: ignore[union-attr]
            total = np.sum(model, axis=0)
            changed = False
            for i, t in enumerate(tables):
                others_w = (
                    np.max([w for j, w in enumerate(working) if j != i], axis=0)
                    if len(tables) > 1
                    else 0.0
                )
                ok = fits[i] & (
                    (t.model + (total - model[i]) + np.maximum(t.working, others_w)) <= capacity
                ).all(axis=1)  # type: ignore[union-attr]
                if not ok.any():
                    return None
                if (ok != fits[i]).any():
                    fits[i], changed = ok, True
            if not changed:
                break
        times = []
        for name, t, f, m in zip(subset, tables, fits, model, strict=True):
            times.append(self._coupled_time(name, comp, t, f, total - m))  # type: ignore[arg-type]
        wf = self.problem.workflow
        gen, inf, trn = group_phases([self.tasks[n].kind for n in subset], times, wf.eta)
        has_gen, has_train = ACTOR_GENERATION in subset, ACTOR_TRAINING in subset
        ag_min = ag_max = 0.0
        if has_train:
            i = subset.index(ACTOR_TRAINING)
            t, f = tables[i], fits[i]
            ag_min, ag_max = float(t.ag_min[f].min()), float(t.ag_max[f].min())  # type: ignore[union-attr]
        fanout = self.fanout(comp) if has_gen else None
        if has_gen and has_train and wf.mode == "sync":
            xfer, fanout = ag_max, None
        else:
            xfer = ag_min
        busy = gen + inf + trn if has_gen else 0.0
        return GroupOption(subset, comp, {}, gen, inf, trn, xfer, busy, fanout)

    def _coupled_time(
        self,
        name: str,
        comp: tuple[int, ...],
        t: _CandidateTable,
        fits: np.ndarray,
        others: np.ndarray,
    ) -> float:
        """The least time of a task's fitting candidates beside ``others`` GB of resident models."""
        explicit = t.time[fits & ~t.deferred]
        best = float(explicit.min()) if len(explicit) else math.inf
        if not t.deferred.any() or not others.any():
            return min(best, float(t.time[fits].min()))
        for i in np.flatnonzero(fits & t.deferred)[
            np.argsort(t.time[fits & t.deferred], kind="stable")
        ]:
            if t.time[i] >= best:  # its floor alone is already no better: so are the rest
                break
            best = min(best, self._floor(name, comp, t.cands[i], others))
        return best

    def options(
        self,
        subset: tuple[str, ...],
        comp: tuple[int, ...],
        keep: Callable[[Partial], bool] | None = None,
        cache_pruned: bool = False,
        deadline: Deadline = UNLIMITED,
    ) -> list[GroupOption]:
        """Pareto options of ``subset`` on ``comp``; ``keep`` may prune partial combinations
        (bound-based pruning). Pruned results are cached only with ``cache_pruned``, for callers
        whose bound never rises (an incumbent). The combination of many co-located tasks can
        explode; past ``deadline`` it raises :class:`costmodels.solving.DeadlineExceeded` and caches
        nothing."""
        key = (subset, comp)
        if key in self._opts:
            return self._opts[key]
        capacity, lists = self._inputs(subset, comp, deadline)
        if any(not lst for lst in lists):
            return self._store(key, [], keep is None or cache_pruned)
        # GPUs whose memory rows agree for every candidate (same stage of different replicas,
        # same capacity) are one constraint: merge them to keep dominance checks small
        cols = np.vstack(
            [capacity]
            + [c.model for lst in lists for c in lst]
            + [c.working for lst in lists for c in lst]
        )
        _, first, inverse = np.unique(cols, axis=1, return_index=True, return_inverse=True)
        keep_cols = np.sort(first)
        capacity = capacity[keep_cols]
        lists = [
            [
                Candidate(
                    c.cfg,
                    c.time,
                    c.model[keep_cols],
                    c.working[keep_cols],
                    c.ag_min,
                    c.ag_max,
                    c.deferred,
                )
                for c in lst
            ]
            for lst in lists
        ]
        col_of = np.searchsorted(keep_cols, first[np.asarray(inverse).reshape(-1)])
        states = [Partial.empty(len(capacity))]
        for names, lsts in self._merge_steps(subset, lists):
            merged = [
                m
                for m in self._extend_step(states, names, lsts, comp, col_of, capacity, deadline)
                if keep is None or keep(m)
            ]
            deadline.check()
            states = prune_partials(merged, deadline)
            if not states:
                break
        return self._store(key, self._front(subset, comp, states), keep is None or cache_pruned)

    def quick_options(
        self,
        subset: tuple[str, ...],
        comp: tuple[int, ...],
        beam: int = 8,
        deadline: Deadline = UNLIMITED,
    ) -> list[GroupOption]:
        """A cheap Level 4: :meth:`options` with the merge cut to a beam. After each task only
        the (estimated time, memory) Pareto front of the partial combinations survives, thinned
        to 2 ``beam`` states (:func:`_thin_front`: fast ones and ones that leave memory for the
        tasks still to come); generation's "as many as fit" candidates are costed only for the
        ``beam`` configurations whose explicit-dbs sibling is fastest. Every option returned is one
        :meth:`options` would consider, so its cost is achievable; it may miss the best one (SHA-EA
        re-solves survivors exactly)."""
        key = ("quick", subset, comp, beam)
        if key in self._opts:
            return self._opts[key]
        capacity, lists = self._inputs(subset, comp, deadline)
        if any(not lst for lst in lists):
            return self._store(key, [], True)
        wf = self.problem.workflow

        def est(st: Partial) -> float:  # the group's time so far, with its weight transfer
            gen, inf, trn = st.phases(wf.eta)
            return (gen + inf + trn if wf.mode == "sync" else max(gen, inf + trn)) + st.key[6]

        states = [Partial.empty(len(capacity))]
        col_of = np.arange(len(capacity))
        for names, lsts in self._merge_steps(subset, lists):
            if names == (ACTOR_GENERATION,):
                lsts = [self._quick_generation(lsts[0], beam)]
            merged = self._extend_step(states, names, lsts, comp, col_of, capacity, deadline)
            if not merged:
                return self._store(key, [], True)
            states = _thin_front(merged, est, capacity, 2 * beam)
        return self._store(key, self._front(subset, comp, states), True)

    def _merge_steps(
        self, subset: tuple[str, ...], lists: list[list[Candidate]]
    ) -> list[tuple[tuple[str, ...], list[list[Candidate]]]]:
        """The order tasks are merged in: generation last (a deferred "as many as fit" candidate
        is costed knowing every resident), and a framework's tied pair (same TP and PP) in one
        step, so no partial combination is pruned before its partner's layout is known."""
        of = dict(zip(subset, lists, strict=True))
        steps: list[tuple[tuple[str, ...], list[list[Candidate]]]] = []
        done: set[str] = set()
        for a, b in self._ties:
            if a in of and b in of:
                steps.append(((a, b), [of[a], of[b]]))
                done |= {a, b}
        steps += [((n,), [of[n]]) for n in subset if n not in done]
        return sorted(steps, key=lambda st: ACTOR_GENERATION in st[0])

    def _extend_step(
        self,
        states: list[Partial],
        names: tuple[str, ...],
        lists: list[list[Candidate]],
        comp: tuple[int, ...],
        col_of: np.ndarray,
        capacity: np.ndarray,
        deadline: Deadline,
    ) -> list[Partial]:
        """:meth:`_extend` by one task, or by a tied pair's candidates of equal TP and PP."""
        if len(names) == 1:
            return self._extend(states, names[0], lists[0], comp, col_of, capacity, deadline)
        (a, b), (first, second) = names, lists
        ka, kb = self.tasks[a].kind, self.tasks[b].kind
        by_layout: dict[tuple[int, int], list[Candidate]] = {}
        for c in second:
            by_layout.setdefault((c.cfg.tp, c.cfg.pp), []).append(c)
        out = []
        for st in states:
            deadline.check(len(first) * len(second) * len(capacity))
            for ca in first:
                for cb in by_layout.get((ca.cfg.tp, ca.cfg.pp), ()):
                    m = st.add(a, ka, ca).add(b, kb, cb)
                    if (m.model + m.working <= capacity + 1e-9).all():
                        out.append(m)
        return out

    def _extend(
        self,
        states: list[Partial],
        name: str,
        cands: list[Candidate],
        comp: tuple[int, ...],
        col_of: np.ndarray,
        capacity: np.ndarray,
        deadline: Deadline,
    ) -> list[Partial]:
        """Every partial combination extended by every candidate of task ``name`` that still fits
        (C3); deferred generation candidates costed knowing the residents."""
        kind = self.tasks[name].kind
        out = []
        work = len(cands) * len(
            capacity
        )  # one step's cost: candidates x the group's GPUs (work boxes count it)
        for st in states:
            deadline.check(work)
            for c in cands:
                if c.deferred:
                    c = self._resolve(name, comp, c, st, col_of)
                m = st.add(name, kind, c)
                if (
                    m.model + m.working <= capacity + 1e-9
                ).all():  # ndarray.all: np.all's dispatch costs more here
                    out.append(m)
        return out

    def _memory_map(
        self, comp: tuple[int, ...], resident: np.ndarray
    ) -> dict[int, dict[str, float]]:
        """The cost model's memory map of a composition's GPUs holding ``resident`` GB each."""
        capacity = self.capacity(comp)
        return {
            self._index[g]: {
                "model_gb": float(resident[i]),
                "working_gb": 0.0,
                "capacity_gb": float(capacity[i]),
            }
            for i, g in enumerate(self.gpus(comp))
        }

    def _inputs(
        self, subset: tuple[str, ...], comp: tuple[int, ...], deadline: Deadline
    ) -> tuple[np.ndarray, list[list[Candidate]]]:
        """What a merge starts from: the composition's usable GB per GPU and each task's
        candidates."""
        deadline.check()
        return self.capacity(comp), [self.candidates(name, comp, deadline) for name in subset]

    def _front(
        self, subset: tuple[str, ...], comp: tuple[int, ...], states: list[Partial]
    ) -> list[GroupOption]:
        """The Pareto-optimal group options of the final partial combinations."""
        fanout = self.fanout(comp) if ACTOR_GENERATION in subset else {}
        rows = []
        for st in states:
            o = st.option(subset, comp, self.problem.workflow, fanout)
            rows.append(((o.gen, o.inf, o.trn, o.xfer, o.busy), o))
        return pareto_rows(rows)

    @staticmethod
    def _quick_generation(cands: list[Candidate], beam: int) -> list[Candidate]:
        """Generation's explicit-dbs candidates, plus the deferred ("as many as fit") ones of the
        ``beam`` configurations with the fastest explicit sibling (or of any, when none has one)."""
        explicit = [c for c in cands if not c.deferred]
        fastest: dict[tuple[Any, ...], float] = {}
        for c in explicit:
            k = (c.cfg.tp, c.cfg.pp, c.cfg.dp, c.cfg.balance)
            fastest[k] = min(fastest.get(k, math.inf), c.time)
        deferred = sorted(
            (c for c in cands if c.deferred),
            key=lambda c: fastest.get((c.cfg.tp, c.cfg.pp, c.cfg.dp, c.cfg.balance), math.inf),
        )
        return explicit + deferred[:beam]

    def _resolve(
        self, name: str, comp: tuple[int, ...], c: Candidate, st: Partial, col_of: np.ndarray
    ) -> Candidate:
        """Cost a deferred generation candidate in a combination: its dbs per replica is what the
        KV cache left beside every resident model of the group allows (``cost._decode_batch``)."""
        time = self._beside("time", name, comp, c.cfg, (st.model + c.model)[col_of])
        return Candidate(c.cfg, time, c.model, c.working, c.ag_min, c.ag_max)

    def _store(self, key: Any, out: list[GroupOption], cache: bool) -> list[GroupOption]:
        if cache:
            self._opts[key] = out
        return out

    def zone_of_class(self) -> list[str]:
        index = self._index
        return [self.problem.topology.devices[index[g[0]]].zone for _, g in self.classes]

    def fanout(self, comp: tuple[int, ...]) -> dict[str, float]:
        """F_z of the generation GPUs of a composition, per zone (``cost.zone_fanout``)."""
        key = ("fanout", comp)
        if key not in self._fan:
            zones: dict[str, list[int]] = {}
            for g in self.gpus(comp):
                d = self._index[g]
                zones.setdefault(self.problem.topology.devices[d].zone, []).append(d)
            self._fan[key] = {z: zone_fanout(self.problem, devs) for z, devs in zones.items()}
        return self._fan[key]

    def routes(self) -> dict[tuple[int, int], float]:
        """R(a, b): full-weights route time from a training GPU of class b to a different
        (generation) GPU of class a (``comm.route_time``); absent when class a == b has one GPU."""
        if self._routes is None:
            topo = self.problem.topology
            full = full_weights_gb(self.problem)
            out = {}
            for a, (_, ga) in enumerate(self.classes):
                for b, (_, gb) in enumerate(self.classes):
                    if a == b and len(ga) < 2:
                        continue
                    da, db = self._index[ga[0]], self._index[gb[1] if a == b else gb[0]]
                    out[(a, b)] = comm.route_time(topo, db, da, full)
            self._routes = out
        return self._routes

    def plan_sync_time(self, groups: list[tuple[tuple[str, ...], tuple[int, ...]]]) -> float:
        """:meth:`sync_time` of a plan's (task subset, composition) groups: 0 when synchronous
        generation shares its group with actor training (C_reshard is in that group's option)."""
        gen = next(i for i, (names, _) in enumerate(groups) if ACTOR_GENERATION in names)
        train = next(i for i, (names, _) in enumerate(groups) if ACTOR_TRAINING in names)
        together = gen == train
        if together and self.problem.workflow.mode == "sync":
            return 0.0
        return self.sync_time(groups[gen][1], groups[train][1], together)

    def sync_time(
        self, gen_comp: tuple[int, ...], train_comp: tuple[int, ...], together: bool
    ) -> float:
        """max_z (A_z + F_z) of C_sync for generation and actor training on these compositions
        (the evaluator's ``cost.sync_arrivals`` at class level)."""
        routes = self.routes()
        zone = self.zone_of_class()
        fan = self.fanout(gen_comp)
        worst = 0.0
        for z, f in fan.items():
            arrival = 0.0
            if not together:
                arrival = min(
                    routes[(a, b)]
                    for a, na in enumerate(gen_comp)
                    if na and zone[a] == z
                    for b, nb in enumerate(train_comp)
                    if nb and (a, b) in routes
                )
            worst = max(worst, arrival + f)
        return worst


def _thin_front(
    states: list[Partial], est: Callable[[Partial], float], capacity: np.ndarray, width: int
) -> list[Partial]:
    """The (estimated time, memory) Pareto front of partial combinations, thinned to ``width``
    states spread evenly along it (both ends kept). Memory is summarised two ways, the fullest
    GPU's share and the total resident GB, and a state on either front is kept: a fast state
    that fills memory and a slow one that leaves room are both worth extending."""
    scored = [
        (est(st), float(np.max((st.model + st.working) / capacity)), float(st.model.sum()), i)
        for i, st in enumerate(states)
    ]
    keep: dict[int, None] = {}
    for col in (1, 2):
        front: list[tuple[float, float, int]] = []
        for row in sorted(scored, key=lambda r: (r[0], r[col])):
            if not front or row[col] < front[-1][1] - 1e-12:
                front.append((row[0], row[col], row[3]))
        if len(front) > width:
            step = (len(front) - 1) / (width - 1)
            front = [front[round(k * step)] for k in range(width)]
        keep.update((i, None) for _, _, i in front)
    return [states[i] for i in keep]


def combine(
    options_per_group: list[list[GroupOption]], mode: str, sync_s: float
) -> tuple[float, list[GroupOption]] | None:
    """Best choice of one option per group: iteration time (HetRL B.4 as ``cost`` reads it) and
    the options. ``sync_s`` is max_z (A_z + F_z) of C_sync, fixed by the groups' compositions
    (0 when synchronous generation shares its group with actor training: C_reshard)."""
    states: list[tuple[tuple[float, ...], list[GroupOption]]] = [((0.0, 0.0, 0.0, 0.0, 0.0), [])]
    for opts in options_per_group:
        if not opts:
            return None
        merged = []
        for (g, i, t, x, b), chosen in states:
            for o in opts:
                merged.append(
                    (
                        (g + o.gen, max(i, o.inf), max(t, o.trn), x + o.xfer, b + o.busy),
                        [*chosen, o],
                    )
                )
        states = pareto_pairs(merged)
    best = None
    for (g, i, t, x, b), chosen in states:
        total = (g + i + t if mode == "sync" else max(b, i + t)) + x + sync_s
        if best is None or total < best[0]:
            best = (total, chosen)
    return best
