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

import heapq
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from costmodels.placement.judge import StepShape, phi_rows
from costmodels.placement.problem import PlacementProblem
from costmodels.solving import UNLIMITED, Deadline
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING, TaskKind
from search.placement.candidates import TaskCandidates
from search.placement.options import (
    Candidate,
    CandidateTable,
    GroupOption,
    Partial,
    added_key,
    group_phases,
)
from search.placement.pareto import pareto_rows, prune_partials, thin_front


class GroupOptions(TaskCandidates):
    """Cached candidates and options of one problem, keyed by (task or subset, composition)."""

    def __init__(self, problem: PlacementProblem, defer_explicit: bool = False):
        super().__init__(problem, defer_explicit)
        self._opts: dict[tuple[tuple[str, ...], tuple[int, ...]], list[GroupOption]] = {}

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
        at its :func:`~costmodels.placement.task_cost.generation_floor` beside the others' least
        models (more residents leave fewer KV slots, which the floor covers), tried fastest alone
        first and stopped once the next one's floor alone cannot beat the best so far."""
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
        joint = 0.0
        if not has_gen and len(subset) > 1:
            joint = self._joint_bound(subset, tables, fits, model, working, total, capacity)  # type: ignore[arg-type]
            if not math.isfinite(joint):
                return None
        ag_min = ag_max = 0.0
        if has_train:
            i = subset.index(ACTOR_TRAINING)
            t, f = tables[i], fits[i]
            ag_min, ag_max = float(t.ag_min[f].min()), float(t.ag_max[f].min())  # type: ignore[union-attr]
        fanout = self.fanout(comp) if has_gen else None
        if has_gen and has_train and not wf.overlaps:
            xfer, fanout = ag_max, None
        else:
            xfer = ag_min
        busy = gen + inf + trn if has_gen else 0.0
        return GroupOption(subset, comp, {}, gen, inf, trn, xfer, busy, fanout, joint)

    def _joint_bound(
        self,
        subset: tuple[str, ...],
        tables: list[CandidateTable],
        fits: list[np.ndarray],
        model: list[np.ndarray],
        working: list[np.ndarray],
        total: np.ndarray,
        capacity: np.ndarray,
    ) -> float:
        """A lower bound on inference + training of every option of a group without generation
        (:meth:`bound_option`'s ``joint``), inf when no option fits.

        The separate bounds take each task's fastest fitting configuration, which may hold the
        most memory, and each task's least memory from another configuration: on the testbed a
        trainer group of five tasks is 174.7 s that way and at least 239.4 s with its tasks'
        configurations coupled (``benchmarks/results/performance-history.md``). Coupled one
        task u at a time: for each configuration k of u that fits, each other task v takes its
        fastest configuration that fits (C3) beside k, the others' least models and their least
        working memory; the phases Φ_η of those times bound every option in which u runs k, the
        least over k bounds every option, and so does the largest of these over u. Vectorised
        over (k, v's configurations, GPUs)."""
        eta = self.problem.workflow.eta
        inference = np.array([self.tasks[n].kind is not TaskKind.TRAINING for n in subset])
        kinds = [k for k in (inference, ~inference) if k.any()]
        idx = [np.flatnonzero(f) for f in fits]

        bound = 0.0
        for u, tu in enumerate(tables):
            mu, wu = tu.model[idx[u]], tu.working[idx[u]]
            times = np.empty((len(idx[u]), len(subset)))
            times[:, u] = tu.time[idx[u]]
            for v, tv in enumerate(tables):
                if v == u:
                    continue
                rest = total - model[u] - model[v]
                others = [working[w] for w in range(len(subset)) if w not in (u, v)]
                beside = np.max(others, axis=0) if others else np.zeros_like(rest)
                need = (
                    tv.model[idx[v]][None]
                    + mu[:, None]
                    + rest
                    + np.maximum(np.maximum(tv.working[idx[v]][None], wu[:, None]), beside)
                )
                fit = (need <= capacity).all(axis=2)
                times[:, v] = np.where(fit, tv.time[idx[v]][None, :], np.inf).min(axis=1)
            feasible = np.isfinite(times).all(axis=1)
            if not feasible.any():
                return math.inf
            ok = times[feasible]
            bound = max(bound, float(sum(phi_rows(ok[:, k], eta) for k in kinds).min()))
        return bound

    def _coupled_time(
        self,
        name: str,
        comp: tuple[int, ...],
        t: CandidateTable,
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
        # generation's least time per candidate (a bound for every resident set), taken before
        # the GPUs are merged, and how to tighten it when a merge reaches it (:meth:`_gen_floors`)
        floors, refine = (
            self._gen_floors(comp, lists[subset.index(ACTOR_GENERATION)])
            if ACTOR_GENERATION in subset
            else ([], lambda i: 0.0)
        )
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
            if names == (ACTOR_GENERATION,):
                # the last step (``_merge_steps``): only each combination's fastest generation
                extended = self._extend_fastest(
                    states, lsts[0], floors, refine, comp, col_of, capacity, deadline, keep
                )
                # its bound test took a lower bound on each candidate's time: test the result
                extended = [m for m in extended if keep is None or keep(m)]
            else:  # tested before each combination is built (most fail: no arrays for them)
                extended = self._extend_step(
                    states, names, lsts, comp, col_of, capacity, deadline, keep
                )
            deadline.check()
            states = prune_partials(extended, deadline)
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
        to 2 ``beam`` states (:func:`~search.placement.pareto.thin_front`: fast ones and ones
        that leave memory for the tasks still to come); generation's "as many as fit" candidates
        are costed only for the ``beam`` configurations whose explicit-dbs sibling is fastest.
        Every option returned is one :meth:`options` would consider, so its cost is achievable; it
        may miss the best one (SHA-EA re-solves survivors exactly)."""
        if self.defer_explicit:
            raise ValueError("quick_options ranks by explicit-dbs times: not with defer_explicit")
        key = ("quick", subset, comp, beam)
        if key in self._opts:
            return self._opts[key]
        capacity, lists = self._inputs(subset, comp, deadline)
        if any(not lst for lst in lists):
            return self._store(key, [], True)
        wf = self.problem.workflow
        shape = StepShape.of(wf)

        def est(st: Partial) -> float:  # the group's time so far, with its weight transfer
            gen, inf, trn = st.phases(wf.eta)
            return shape.core(gen, inf, trn, gen) + st.key[6]

        states = [Partial.empty(len(capacity))]
        col_of = np.arange(len(capacity))
        for names, lsts in self._merge_steps(subset, lists):
            if names == (ACTOR_GENERATION,):
                lsts = [self._quick_generation(lsts[0], beam)]
            merged = self._extend_step(states, names, lsts, comp, col_of, capacity, deadline)
            if not merged:
                return self._store(key, [], True)
            states = thin_front(merged, est, capacity, 2 * beam)
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
        keep: Callable[[Partial], bool] | None = None,
    ) -> list[Partial]:
        """:meth:`_extend` by one task, or by a tied pair's candidates of equal TP and PP; only
        the combinations ``keep`` passes."""
        if len(names) == 1:
            return self._extend(states, names[0], lists[0], comp, col_of, capacity, deadline, keep)
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
                    if keep is not None:
                        key = added_key(added_key(st.key, a, ka, ca), b, kb, cb)
                        if not keep(st.with_key(key)):
                            continue
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
        keep: Callable[[Partial], bool] | None = None,
    ) -> list[Partial]:
        """Every partial combination extended by every candidate of task ``name`` that still fits
        (C3) and that ``keep`` passes (on its metrics, before its memory is added); deferred
        generation candidates costed knowing the residents."""
        kind = self.tasks[name].kind
        out: list[Partial] = []
        work = len(cands) * len(
            capacity
        )  # one step's cost: candidates x the group's GPUs (work boxes count it)
        if not cands:
            return out
        fits = _fitting(cands, capacity)
        for st in states:
            deadline.check(work)
            for i in fits(st):  # before costing: memory is not the time's
                c = cands[i]
                if c.deferred:
                    c = self._resolve(name, comp, c, st, col_of)
                if keep is not None and not keep(st.with_key(added_key(st.key, name, kind, c))):
                    continue
                out.append(st.add(name, kind, c))
        return out

    def _gen_floors(
        self, comp: tuple[int, ...], cands: list[Candidate]
    ) -> tuple[list[float], Callable[[int], float]]:
        """A lower bound on each generation candidate's time beside any residents, and a call
        giving candidate i's tighter one. A costed candidate's is its time; an "as many as fit"
        one's, its ``generation_floor`` alone. A deferred explicit-dbs one's
        (``TaskCandidates``' ``defer_explicit``) is first its layout's "as many as fit" floor
        alone, which bounds every explicit dbs of the layout (``TaskCandidates._bound_candidates``
        states why) and costs nothing more, then its own floor with its dbs as the largest,
        computed only when a merge reaches it."""
        floors: list[float] = []
        alone: dict[tuple[int, int, int, str], float] = {}
        for c in cands:
            if c.deferred and c.cfg.decode_batch is None:
                f = self._floor(ACTOR_GENERATION, comp, c)
                alone[(c.cfg.tp, c.cfg.pp, c.cfg.dp, c.cfg.balance)] = f
                floors.append(f)
            else:
                floors.append(c.time)
        own: dict[int, float] = {}
        for i, c in enumerate(cands):
            if c.deferred and c.cfg.decode_batch is not None:
                sibling = alone.get((c.cfg.tp, c.cfg.pp, c.cfg.dp, c.cfg.balance))
                if sibling is None:  # no sibling among the candidates: its own floor now
                    own[i] = floors[i] = self._floor(ACTOR_GENERATION, comp, c)
                else:
                    floors[i] = sibling

        def refine(i: int) -> float:
            hit = own.get(i)
            if hit is None:
                c = cands[i]
                hit = own[i] = (
                    self._floor(ACTOR_GENERATION, comp, c)
                    if c.deferred and c.cfg.decode_batch is not None
                    else floors[i]
                )
            return hit

        return floors, refine

    def _extend_fastest(
        self,
        states: list[Partial],
        cands: list[Candidate],
        floors: list[float],
        refine: Callable[[int], float],
        comp: tuple[int, ...],
        col_of: np.ndarray,
        capacity: np.ndarray,
        deadline: Deadline,
        keep: Callable[[Partial], bool] | None,
    ) -> list[Partial]:
        """Generation merged last: each combination extended by its fastest fitting candidate
        only. Generation's candidate moves no term of the option but gen (and busy, which grows
        with it), so the others are dominated and cannot change the Pareto front :meth:`options`
        returns. Candidates are tried in order of a lower bound on each one's time beside any
        residents (``floors``, tightened by ``refine`` when a candidate that fits is reached:
        it goes back in line at its tighter bound), and the search stops once the next bound
        cannot beat the best so far, or cannot pass ``keep`` (whose bound only grows with
        generation's time): most deferred candidates are never costed."""
        kind = self.tasks[ACTOR_GENERATION].kind
        order = sorted(range(len(cands)), key=lambda i: floors[i])
        work = len(cands) * len(capacity)
        out = []
        for st in states:
            deadline.check(work)
            best: Partial | None = None
            waiting: list[tuple[float, int]] = []  # (tighter bound, i), a heap
            k, n = 0, len(order)
            while k < n or waiting:
                # the least bound left: the sorted queue's next, or the heap's (the bound taken
                # only grows, so the stopping tests below hold for every candidate left)
                if k < n and (not waiting or floors[order[k]] <= waiting[0][0]):
                    i, bound, tight = order[k], floors[order[k]], False
                    k += 1
                else:
                    bound, i = heapq.heappop(waiting)
                    tight = True
                if best is not None and bound >= best.key[0]:
                    break
                if keep is not None and not keep(st.with_generation(bound)):
                    break
                c = cands[i]
                if not _fits(st, c, capacity):
                    continue
                if not tight:
                    sharper = refine(i)
                    if sharper > bound:
                        heapq.heappush(waiting, (sharper, i))
                        continue
                if c.deferred:
                    c = self._resolve(ACTOR_GENERATION, comp, c, st, col_of)
                if best is None or c.time < best.key[0]:
                    best = st.add(ACTOR_GENERATION, kind, c)
            if best is not None:
                out.append(best)
        return out

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
        KV cache left beside every resident model of the group allows
        (``decode_cost.GenerationCoster._decode_batch``), or its explicit dbs (a deferred
        explicit candidate, :class:`~search.placement.candidates.TaskCandidates`' doc)."""
        time = self._beside("time", name, comp, c.cfg, (st.model + c.model)[col_of])
        return Candidate(c.cfg, time, c.model, c.working, c.ag_min, c.ag_max)

    def _store(self, key: Any, out: list[GroupOption], cache: bool) -> list[GroupOption]:
        if cache:
            self._opts[key] = out
        return out


def _fitting(cands: list[Candidate], capacity: np.ndarray) -> Callable[[Partial], np.ndarray]:
    """The indices of ``cands`` that fit beside a combination, in order: :func:`_fits` of every
    candidate at once (the same sums and maxima element by element, so the same answers)."""
    model = np.array([c.model for c in cands])
    working = np.array([c.working for c in cands])
    limit = capacity + 1e-9

    def fits(st: Partial) -> np.ndarray:
        return np.flatnonzero(
            (st.model + model + np.maximum(st.working, working) <= limit).all(axis=1)
        )

    return fits


def _fits(st: Partial, c: Candidate, capacity: np.ndarray) -> bool:
    """Whether candidate ``c`` fits beside combination ``st`` on every GPU (C3: the models add
    up, the working memory is the largest). ndarray.all: np.all's dispatch costs more here."""
    return bool((st.model + c.model + np.maximum(st.working, c.working) <= capacity + 1e-9).all())
