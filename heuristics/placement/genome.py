"""Genotype, decoding and memoised evaluation shared by rlplan's placement searches.

An individual fixes a task grouping (Level 1), GPU groups (Levels 2-3: ``assign[g]`` is the group
of GPU g, or -1 for an idle GPU) and one configuration per task (Level 4 with load balancing and
the decode batch; ``costmodels.placement.space``). Decoding builds the canonical plan; the cost
model scores it; plans that break C1-C3 score +inf. Scores are memoised on the phenotype's
symmetry class (per group: tasks, per-node GPU counts, configurations), since GPUs of one node are
interchangeable.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from costmodels.placement.check import check_placement
from costmodels.placement.frameworks import rules_of
from costmodels.placement.judge import StepShape, evaluate_placement
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import TaskConfig, build_plan, task_configs
from costmodels.solving import UNLIMITED, Deadline, DeadlineExceeded
from search.placement.combine import combine
from search.placement.group_options import GroupOptions

#: the work box of one exact Level-4 pass (``PlacementSpace.exact_work``), in the units
#: ``GroupOptions`` checks: candidates x GPUs per partial combination extended, states x columns
#: per prune. The unit runs at about the same rate on small and large clusters, so it tracks time
#: across cluster sizes: 500 000 units is ~2 s on one core (the rate measured:
#: ``benchmarks/results/performance-history.md``)
EXACT_WORK = 500_000


@dataclass
class Individual:
    grouping: tuple[tuple[str, ...], ...]
    assign: list[int]
    configs: dict[str, int]
    fitness: float = math.inf

    def copy(self) -> Individual:
        return Individual(self.grouping, list(self.assign), dict(self.configs), self.fitness)

    def sizes(self) -> tuple[int, ...]:
        """GPUs per group (its Level-2 GPU grouping)."""
        out = [0] * len(self.grouping)
        for a in self.assign:
            if a >= 0:
                out[a] += 1
        return tuple(out)


class PlacementSpace:
    """Decoding and evaluation for one problem (picklable: workers rebuild caches lazily)."""

    def __init__(self, problem: PlacementProblem, deadline: Deadline = UNLIMITED):
        self.problem = problem
        self.devices = [d.id for d in problem.topology.devices]
        self._pos = {d: i for i, d in enumerate(self.devices)}
        self.node = [d.node for d in problem.topology.devices]
        self.zone = [d.zone for d in problem.topology.devices]
        self.region = [d.region for d in problem.topology.devices]
        self.tflops = [d.gpu.tflops_bf16_dense for d in problem.topology.devices]
        self.gpu_type = [d.gpu.name for d in problem.topology.devices]
        self.tasks = {t.name: t for t in problem.tasks}
        self.rules = rules_of(problem)
        #: (leader, follower) pairs a framework target ties to one TP and PP
        self.ties = self.rules.ties(problem) if self.rules is not None else ()
        self._configs: dict[tuple[str, int], list[TaskConfig]] = {}
        self._memo: dict[Any, float] = {}
        # (grouping, compositions) -> (cost, configs, exact pass done)
        self._level4: dict[Any, tuple[float, dict[str, TaskConfig] | None, bool]] = {}
        self.evaluations = 0  # distinct phenotypes costed (Level-4 solves, not memo lookups)
        self.lookups = 0  # every Level-4 request, memo hits included
        self.exact_solves = self.exact_timeouts = 0
        #: phenotype -> the work box its exact pass ran out of; retried only with a larger box
        self.exact_timed_out: dict[Any, float] = {}
        # : an individual whose cheap Level 4 is within this share of the incumbent gets
        # the exact pass
        self.exact_margin = 0.05
        #: work box of one exact Level-4 pass (:data:`EXACT_WORK`): a count, not seconds, so a
        # : pass ends the same way on any machine at any load (docs/architecture.md,
        # "Solver plumbing")
        self.exact_work = EXACT_WORK
        self._builder: GroupOptions | None = None
        self.incumbent = math.inf
        self.deadline = deadline  # Level-4 enumerations stop here (the solver's time limit)

    def configs(self, task: str, size: int) -> list[TaskConfig]:
        key = (task, size)
        if key not in self._configs:
            self._configs[key] = task_configs(
                self.problem, self.tasks[task], size, heterogeneous=True
            )
        return self._configs[key]

    def groups(self, ind: Individual) -> list[list[str]]:
        out: list[list[str]] = [[] for _ in ind.grouping]
        for g, a in enumerate(ind.assign):
            if a >= 0:
                out[a].append(self.devices[g])
        if self.rules is not None and self.rules.framework == "verl":
            out = [self._uniform(g) for g in out]
        return out

    def _uniform(self, gpus: list[str]) -> list[str]:
        """The largest part of a GPU group that verl can ask for (the same count k on every node
        it uses; :meth:`~costmodels.placement.frameworks.FrameworkRules.admits_composition`): the
        genotype keeps its free assignment, its phenotype is this projection (first GPUs of each
        node kept), so mutation and crossover work unchanged under a verl target."""
        by_node: dict[str, list[str]] = {}
        for d in gpus:
            by_node.setdefault(self.node[self._pos[d]], []).append(d)
        counts = sorted({len(v) for v in by_node.values()})
        if len(counts) <= 1:
            return gpus
        k = max(counts, key=lambda c: (c * sum(len(v) >= c for v in by_node.values()), c))
        keep = {d for v in by_node.values() if len(v) >= k for d in v[:k]}
        return [d for d in gpus if d in keep]

    def decode(self, ind: Individual) -> PlacementPlan | None:
        gpus = self.groups(ind)
        if any(not g for g in gpus):
            return None
        configs = {}
        for names, group in zip(ind.grouping, gpus, strict=True):
            for name in names:
                options = self.configs(name, len(group))
                if not options:
                    return None
                configs[name] = options[ind.configs[name] % len(options)]
        for leader, follower in self.ties:
            # a framework's tied pair: the follower's gene picks among the leader's TP and PP
            lead = configs[leader]
            size = lead.tp * lead.pp * lead.dp
            same = [c for c in self.configs(follower, size) if (c.tp, c.pp) == (lead.tp, lead.pp)]
            if not same:
                return None
            configs[follower] = same[ind.configs[follower] % len(same)]
        return build_plan(
            self.problem, [(list(n), g) for n, g in zip(ind.grouping, gpus, strict=True)], configs
        )

    def key(self, ind: Individual) -> Any:
        counts: list[dict[str, int]] = [{} for _ in ind.grouping]
        for g, a in enumerate(ind.assign):
            if a >= 0:
                counts[a][self.node[g]] = counts[a].get(self.node[g], 0) + 1
        sizes = [sum(c.values()) for c in counts]
        cfg = tuple(
            (n, ind.configs[n] % max(1, len(self.configs(n, sizes[gi]))))
            for gi, names in enumerate(ind.grouping)
            for n in names
        )
        return (ind.grouping, tuple(tuple(sorted(c.items())) for c in counts), cfg)

    def evaluate(self, ind: Individual) -> float:
        """The cost model's objective for the individual's plan (+inf when invalid)."""
        if self.problem.topology.explicit_matrix:
            key = (ind.grouping, tuple(ind.assign), tuple(sorted(ind.configs.items())))
        else:
            key = self.key(ind)
        if key in self._memo:
            return self._memo[key]
        self.evaluations += 1
        plan = self.decode(ind)
        cost = math.inf
        if plan is not None and not check_placement(self.problem, plan):
            cost = evaluate_placement(self.problem, plan).objective
        self._memo[key] = cost
        return cost

    # -- Level 4 solved exactly (SHA-EA) ---------------------------------------------------

    @property
    def builder(self) -> GroupOptions:
        if self._builder is None:
            self._builder = GroupOptions(self.problem)
        return self._builder

    def phenotype(self, ind: Individual) -> Any:
        """What Level 4 and the cost depend on: the grouping and each group's composition."""
        b = self.builder
        return (ind.grouping, tuple(b.composition(g) for g in self.groups(ind)))

    def exact_done(self, ind: Individual) -> bool:
        hit = self._level4.get(self.phenotype(ind))
        return hit is not None and hit[2]

    def exact_timeout(self, ind: Individual) -> float | None:
        """The box an exact pass of this phenotype ran out of, if one did."""
        return self.exact_timed_out.get(self.phenotype(ind))

    def level4(
        self, ind: Individual, exact: bool = True, force: bool = False, work: int | None = None
    ) -> tuple[float, dict[str, TaskConfig] | None]:
        """The best configuration of every task for the individual's groups (HetRL enumerates
        Level 4), memoised on (grouping, compositions).

        Cheap first: every group's options from a beam-cut merge (``GroupOptions.quick_options``),
        combined. Exact on survivors: when ``exact`` and the cheap cost is within
        ``exact_margin`` of the incumbent, the full Pareto enumeration (``GroupOptions.options``,
        pruned by the incumbent) is run in a work box of ``exact_work`` steps and kept when it
        finishes; so an individual's cost is never worse than its cheap one and is exact where it
        matters. A pass that runs out of its box is not retried by the search; ``force`` (the
        polish) retries it in a box of ``work`` steps (default: unboxed, to the time limit)."""
        key = self.phenotype(ind)
        grouping, comps = key
        if not all(any(c) for c in comps):  # a group without GPUs
            return math.inf, None
        if self.rules is not None and not all(
            self.rules.admits_composition(self.builder.node_counts(c)) for c in comps
        ):
            return math.inf, None  # a GPU group the target framework cannot ask for
        self.lookups += 1
        hit = self._level4.get(key)
        if hit is None:
            self.evaluations += 1
            try:
                quick = [
                    self.builder.quick_options(tuple(names), comp, deadline=self.deadline)
                    for names, comp in zip(grouping, comps, strict=True)
                ]
            except DeadlineExceeded:  # out of time: this individual stays unevaluated (not cached)
                return math.inf, None
            hit = self._remember(
                key,
                *self._best(
                    combine(
                        quick, StepShape.of(self.problem.workflow), self._sync_s(grouping, comps)
                    )
                ),
                exact=False,
            )
        if (
            hit[2]
            or not exact
            or not (force or key not in self.exact_timed_out and self._worth_exact(hit[0]))
        ):
            return hit[0], hit[1]
        return self._exact(key, hit, work if force else self.exact_work)

    def _exact(
        self, key: Any, hit: tuple[float, dict[str, TaskConfig] | None, bool], work: int | None
    ) -> tuple[float, dict[str, TaskConfig] | None]:
        """The exact Level-4 pass of one phenotype, pruned by the incumbent, inside its work box;
        the cheap answer ``hit`` stands when the pass runs out of it or finds nothing better."""
        grouping, comps = key
        bound = self.incumbent
        wf = self.problem.workflow
        eta, shape = wf.eta, StepShape.of(wf)

        def keep(st: Any) -> bool:
            # a partial combination already slower than the best plan found cannot help; the
            # incumbent only falls, so options kept under an older bound stay valid
            g, i, t = st.phases(eta)
            return shape.core(g, i, t, g) <= bound * (1 + 1e-9)

        self.exact_solves += 1
        box = self.deadline if work is None else self.deadline.work(work)
        try:
            options = [
                self.builder.options(
                    tuple(names),
                    comp,
                    keep if math.isfinite(bound) else None,
                    cache_pruned=True,
                    deadline=box,
                )
                for names, comp in zip(grouping, comps, strict=True)
            ]
        except DeadlineExceeded:  # the exact pass did not fit its box: keep the cheap answer
            self.exact_timeouts += 1
            self.exact_timed_out[key] = math.inf if work is None else work
            return hit[0], hit[1]
        self.exact_timed_out.pop(key, None)
        cost, configs = self._best(combine(options, shape, self._sync_s(grouping, comps)))
        if not cost < hit[0]:  # pruned by the incumbent, or no better: the cheap answer stands
            cost, configs = hit[0], hit[1]
        return self._remember(key, cost, configs, exact=True)[:2]

    def _remember(
        self, key: Any, cost: float, configs: dict[str, TaskConfig] | None, exact: bool
    ) -> tuple[float, dict[str, TaskConfig] | None, bool]:
        """Memoise a Level-4 answer and lower the incumbent with it."""
        self._level4[key] = (cost, configs, exact)
        self.incumbent = min(self.incumbent, cost)
        return self._level4[key]

    def _sync_s(
        self, grouping: tuple[tuple[str, ...], ...], comps: tuple[tuple[int, ...], ...]
    ) -> float:
        return self.builder.plan_sync_time(list(zip(grouping, comps, strict=True)))

    def _worth_exact(self, cost: float) -> bool:
        return math.isfinite(cost) and cost <= self.incumbent * (1 + self.exact_margin)

    @staticmethod
    def _best(best: tuple[float, list[Any]] | None) -> tuple[float, dict[str, TaskConfig] | None]:
        if best is None:
            return math.inf, None
        configs: dict[str, TaskConfig] = {}
        for o in best[1]:
            configs.update(o.configs)
        return best[0], configs

    def best_configs(self, ind: Individual) -> tuple[float, dict[str, TaskConfig] | None]:
        """:meth:`level4` with the exact pass on survivors."""
        return self.level4(ind, exact=True)

    def decode_with(self, ind: Individual, configs: dict[str, TaskConfig]) -> PlacementPlan:
        gpus = self.groups(ind)
        return build_plan(
            self.problem, [(list(n), g) for n, g in zip(ind.grouping, gpus, strict=True)], configs
        )

    def random_individual(
        self, rng: random.Random, grouping: tuple[tuple[str, ...], ...], sizes: tuple[int, ...]
    ) -> Individual:
        order = list(range(len(self.devices)))
        rng.shuffle(order)
        assign = [-1] * len(self.devices)
        pos = 0
        for gi, size in enumerate(sizes):
            for g in order[pos : pos + size]:
                assign[g] = gi
            pos += size
        configs = {}
        for gi, names in enumerate(grouping):
            for n in names:
                configs[n] = rng.randrange(max(1, len(self.configs(n, sizes[gi]))))
        return Individual(grouping, assign, configs)

    def locality(self, assign: list[int]) -> float:
        """Machine-, zone- and region-level affinity of GPU groups (pairs in the same place)."""
        score = 0.0
        groups: dict[int, list[int]] = {}
        for g, a in enumerate(assign):
            if a >= 0:
                groups.setdefault(a, []).append(g)
        for members in groups.values():
            for level, weight in ((self.node, 4.0), (self.zone, 2.0), (self.region, 1.0)):
                counts: dict[str, int] = {}
                for g in members:
                    counts[level[g]] = counts.get(level[g], 0) + 1
                score += weight * sum(c * (c - 1) / 2 for c in counts.values())
        return score
