"""Level 4's candidates (HetRL §3.4, §3.5): every configuration of one task on a GPU group
*composition* c (GPUs taken from each interchangeable class,
``costmodels.placement.space.node_classes``), costed by the cost model on the canonical layout;
configurations that break C3 alone are dropped, dominated ones (in time, per-GPU resident and
working memory, and weight-transfer terms) too. Cached per task signature and composition, with
the class-level C_sync terms of compositions. ``search.placement.group_options`` merges the
candidates of co-located tasks into group options."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from costmodels import comm
from costmodels.placement.decode_cost import GenerationCoster
from costmodels.placement.frameworks import rules_of
from costmodels.placement.memory import tasklet_rows, tasklet_rows_key
from costmodels.placement.plan import TaskPlacement
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import (
    TaskConfig,
    is_heterogeneous,
    node_classes,
    place_task,
    task_configs,
)
from costmodels.placement.task_cost import FloorKernel, coster_cost, coster_floor, task_cost
from costmodels.placement.transfer import full_weights_gb, replica_allgather, zone_fanout
from costmodels.solving import UNLIMITED, Deadline
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING, Task, TaskKind
from search.placement.options import Candidate, CandidateTable
from search.placement.pareto import pareto_candidates

#: a costed configuration (:meth:`TaskCandidates._cost_configs`)
Costed = tuple[TaskConfig, float, np.ndarray, np.ndarray, bool, tuple[float, float]]


class TaskCandidates:
    """Cached candidates of one problem's tasks, keyed by (task signature, composition), and the
    class-level C_sync terms of compositions (:class:`GroupOptions` combines the candidates).

    With ``defer_explicit`` (the exact ILP's expansions), generation's explicit-dbs candidates
    are deferred like its "as many as fit" ones: not costed until a merge reaches them.
    Generation is merged last, each combination by its fastest fitting candidate, tried in order
    of a lower bound on each one's time (``GroupOptions._extend_fastest``); for an explicit dbs d
    that bound is ``generation_floor`` with d as the largest dbs (exact prefill, and
    ``GenerationCoster.decode_floor`` bounds every dbs <= d), so the merge still finds each
    combination's fastest candidate and the options are the same. On small-24 PPO almost none is
    reached: costing every one was about a third of the expansions' time. Without a time, they
    skip the Pareto filter of :meth:`candidates`; the search's quick merge reads their times, so
    it keeps them costed."""

    def __init__(self, problem: PlacementProblem, defer_explicit: bool = False):
        self.problem = problem
        #: generation's explicit-dbs candidates deferred like "as many as fit": see the class doc
        self.defer_explicit = defer_explicit
        self.classes = node_classes(problem)
        self.cap = [len(g) for _, g in self.classes]
        self.tasks = {t.name: t for t in problem.tasks}
        self._cap_gb = {
            d.id: d.gpu.memory_gb - problem.params.memory_reserve_gb
            for d in problem.topology.devices
        }
        self._index = problem.topology.index_of()
        self._cands: dict[tuple[str, tuple[int, ...]], list[Candidate]] = {}
        self._tables: dict[tuple[Any, tuple[int, ...]], CandidateTable | None] = {}
        self._fan: dict[Any, dict[str, float]] = {}
        self._resolved: dict[Any, float] = {}
        #: deferred generation candidates' placements, costed again for every resident set
        self._placements: dict[tuple[str, tuple[int, ...], TaskConfig], TaskPlacement] = {}
        #: generation floors' costers per (task, composition, layout) (:meth:`_beside`)
        self._kernels: dict[tuple[str, tuple[int, ...], TaskConfig], FloorKernel | None] = {}
        #: per-GPU memory arrays per layout shape (:meth:`_memory`)
        self._rows: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
        #: :meth:`_configured`'s costed configurations per (kind, model, composition, explicit
        #: dbs): tasks that share them cost alike (PPO's actor and critic training on one model)
        self._alike: dict[Any, list[Costed]] = {}
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
        cands = self._configured(name, comp, deadline, explicit_dbs=True)
        if name in self._tied:
            # a tied task's layout is fixed by its partner's: keep the front of each (TP, PP)
            by_layout: dict[tuple[int, int], list[Candidate]] = {}
            for c in cands:
                by_layout.setdefault((c.cfg.tp, c.cfg.pp), []).append(c)
            self._cands[key] = [c for grp in by_layout.values() for c in pareto_candidates(grp)]
        else:
            self._cands[key] = pareto_candidates(cands)
        return self._cands[key]

    def _bound_candidates(
        self, name: str, comp: tuple[int, ...], deadline: Deadline = UNLIMITED
    ) -> list[Candidate]:
        """The candidates a relaxed column reads (:meth:`GroupOptions.bound_option`): those of
        :meth:`candidates`, but for generation only its "as many as fit" ones, never costing the
        explicit decode batches. Each explicit dbs d is slower than its layout's "as many as fit"
        sibling's floor beside any residents it fits beside: its KV of min(d, S) sequences fits
        there, so the sibling's dbs there is at least that, and the floor
        (``decode_cost.GenerationCoster.decode_floor``) bounds every such dbs. Its model memory is
        the sibling's and its working memory no less, so the least memories the relaxed column
        couples the tasks with are the same too. Every deferred candidate is on the Pareto front
        (:func:`~search.placement.pareto.pareto_candidates`), so these are the deferred ones of
        :meth:`candidates`; generation is most of the relaxed columns' costing."""
        if self.tasks[name].kind is not TaskKind.GENERATION:
            return self.candidates(name, comp, deadline)
        hit = self._cands.get((self.signature(name), comp))
        if hit is not None:
            return [c for c in hit if c.deferred and c.cfg.decode_batch is None]
        return self._configured(name, comp, deadline, explicit_dbs=False)

    def _configured(
        self, name: str, comp: tuple[int, ...], deadline: Deadline, explicit_dbs: bool
    ) -> list[Candidate]:
        """Every configuration of one task on a composition that fits alone, costed (generation
        "as many as fit" deferred); without ``explicit_dbs``, generation's explicit decode
        batches are left out. A task's configurations, placements, memory and time read only its
        kind and model (``costmodels.placement``), so tasks that share both share them unless a
        framework target tells tasks apart by role; the actor's training adds its all-gather."""
        alike = self._alike_key(name, comp, explicit_dbs)
        costed = self._alike.get(alike) if alike is not None else None
        if costed is None:
            # the actor's all-gather is taken with the placement at hand, for every task that
            # shares the actor's table
            actor = ACTOR_TRAINING in self.tasks and self._alike_key(
                ACTOR_TRAINING, comp, explicit_dbs
            )
            allgather = name == ACTOR_TRAINING or (alike is not None and alike == actor)
            costed = self._cost_configs(name, comp, deadline, explicit_dbs, allgather)
            if alike is not None:
                self._alike[alike] = costed
        cands = []
        for cfg, time, model, working, deferred, ag in costed:
            cand = Candidate(cfg, time, model, working, deferred=deferred)
            if name == ACTOR_TRAINING:
                cand.ag_min, cand.ag_max = ag
            cands.append(cand)
        return cands

    def _alike_key(self, name: str, comp: tuple[int, ...], explicit_dbs: bool) -> Any:
        """What :meth:`_configured`'s table of ``name`` is shared by: its kind and model (None
        under a framework target, which tells tasks apart by role)."""
        if self._rules is not None:
            return None
        task = self.tasks[name]
        return (task.kind, self.problem.workflow.model(task.role).name, comp, explicit_dbs)

    def _defers_explicit(self) -> bool:
        """Whether generation's explicit-dbs candidates are deferred (class doc): only when
        generation is merged on its own, last, by its fastest candidate, which a framework
        target's ties between tasks rule out."""
        return self.defer_explicit and not self._ties

    def _cost_configs(
        self,
        name: str,
        comp: tuple[int, ...],
        deadline: Deadline,
        explicit_dbs: bool,
        allgather: bool,
    ) -> list[Costed]:
        """(configuration, time, model GB, working GB per GPU, deferred, (least, largest)
        replica all-gather of the actor's weights, or zeros without ``allgather``) of
        :meth:`_configured`; a deferred generation configuration's placement is kept for
        :meth:`_beside`."""
        p, task = self.problem, self.tasks[name]
        gpus = self.gpus(comp)
        capacity = self.capacity(comp)
        out = []
        for cfg in task_configs(p, task, len(gpus), is_heterogeneous(p, gpus)):
            if not explicit_dbs and cfg.decode_batch is not None:
                continue
            deadline.check()
            placement = place_task(p, task, gpus, cfg)
            model, working = self._memory(task, placement)
            if np.any(model + working > capacity + 1e-9):
                continue
            if task.kind is TaskKind.GENERATION and (
                cfg.decode_batch is None or self._defers_explicit()
            ):
                self._placements[(name, comp, cfg)] = placement
                out.append((cfg, 0.0, model, working, True, (0.0, 0.0)))
                continue
            cost, _ = task_cost(p, task, placement)
            self.evaluations += 1
            ag = replica_allgather(p, placement)[0] if allgather else [0.0]
            out.append((cfg, cost["time_s"], model, working, False, (min(ag), max(ag))))
        return out

    def _memory(self, task: Task, placement: TaskPlacement) -> tuple[np.ndarray, np.ndarray]:
        """Per-GPU (model, working) GB of ``task`` under ``placement``, position by position of
        its GPUs: the canonical layout (``place_task``) fills them in order, TP innermost, so
        each tasklet's row repeats over its TP group. A tasklet's memory reads only the task's
        kind and model and the layout's shape (``tasklet_rows_key``), which compositions of one
        size share (every even split), so the arrays are memoised on it and kept read-only."""
        key = tasklet_rows_key(self.problem, task, placement)
        hit = self._rows.get(key)
        if hit is None:
            per_gpu = [
                mem for stages in tasklet_rows(self.problem, task, placement) for mem in stages
            ]
            model, working = np.repeat(np.array(per_gpu), placement.tp, axis=0).T.copy()
            model.flags.writeable = working.flags.writeable = False
            hit = self._rows[key] = (model, working)
        return hit

    def _table(
        self, name: str, comp: tuple[int, ...], deadline: Deadline = UNLIMITED
    ) -> CandidateTable | None:
        """A task's :meth:`_bound_candidates` on a composition as arrays (deferred generation at
        its floor alone); None when no configuration fits alone."""
        key = (self.signature(name), comp)
        if key not in self._tables:
            cands = self._bound_candidates(name, comp, deadline)
            self._tables[key] = (
                CandidateTable(
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
        """Generation under ``cfg`` on ``comp`` with ``resident`` GB of models per GPU: its time
        (``what="time"``, the cost model's) or its floor (``"floor"``,
        :func:`~costmodels.placement.task_cost.generation_floor`). Both depend on the residents only
        through each replica's dbs, so they are memoised on them, and first on the residents
        themselves (a merge meets one resident set in many combinations: no coster to build);
        an explicit ``decode_batch`` reads no residents at all."""
        seen = (
            what,
            name,
            comp,
            cfg,
            None if cfg.decode_batch is not None else resident.tobytes(),
        )
        hit = self._resolved.get(seen)
        if hit is not None:
            return hit
        p, task = self.problem, self.tasks[name]
        mem = self._memory_map(comp, resident)
        layout = (name, comp, cfg)
        placement = self._placements.get(layout)
        if placement is None:  # its canonical layout: the same for every resident set
            placement = self._placements[layout] = place_task(p, task, self.gpus(comp), cfg)
        value: Callable[[], float]
        if what == "floor" and FloorKernel.applies(p) and layout in self._kernels:
            # one coster per layout for every resident set after the first (a layout bounded
            # beside one resident set only, alone, keeps none): its prefill is taken once
            kernel = self._kernels[layout]
            if kernel is None:
                kernel = self._kernels[layout] = FloorKernel(
                    GenerationCoster(p, task, placement, mem)
                )
            dbs, value = kernel.dbs(mem), kernel.floor
        else:
            if what == "floor":
                self._kernels[layout] = None  # the next resident set gets a kernel
            coster = GenerationCoster(p, task, placement, mem)  # its dbs are read once, here
            dbs = coster.replica_dbs()
            value = (
                (lambda: coster_cost(coster)["time_s"])
                if what == "time"
                else (lambda: coster_floor(coster))
            )
        key = (what, name, comp, cfg, dbs)
        hit = self._resolved.get(key)
        if hit is None:
            self.evaluations += 1
            hit = self._resolved[key] = value()
        self._resolved[seen] = hit
        return hit

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

    def zone_of_class(self) -> list[str]:
        index = self._index
        return [self.problem.topology.devices[index[g[0]]].zone for _, g in self.classes]

    def fanout(self, comp: tuple[int, ...]) -> dict[str, float]:
        """F_z of the generation GPUs of a composition, per zone (``transfer.zone_fanout``)."""
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
        if together and not self.problem.workflow.overlaps:
            return 0.0
        return self.sync_time(groups[gen][1], groups[train][1], together)

    def sync_time(
        self, gen_comp: tuple[int, ...], train_comp: tuple[int, ...], together: bool
    ) -> float:
        """max_z (A_z + F_z) of C_sync for generation and actor training on these compositions
        (the evaluator's ``transfer.sync_arrivals`` at class level)."""
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
