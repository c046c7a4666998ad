"""SHA-EA's budgeted evaluation (HetRL §3.4): phenotypes costed through the executor's DEAP
``map``, counted against the budget, and the exact Level-4 pass on the best survivors."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from deap import base

from costmodels.solving import Deadline, Trace
from heuristics.placement.executors import EvaluationPool, evaluation_pool
from heuristics.placement.genome import Individual, PlacementSpace


class Evaluator:
    """Budgeted evaluation with a DEAP toolbox whose ``map`` is the executor's
    (:mod:`heuristics.placement.executors`: in process, a process pool or Ray actors).

    ``used`` counts distinct phenotypes (grouping and per-group compositions) costed, the budget's
    unit; ``lookups`` every individual scored, repeats included (a converged arm re-proposes plans
    it has seen, which costs a memo lookup, not an evaluation)."""

    def __init__(
        self,
        space: PlacementSpace,
        budget: int,
        deadline: Deadline,
        pool: EvaluationPool | None = None,
        progress: Callable[[int, int, float], None] | None = None,
    ):
        self.space, self.budget, self.deadline = space, budget, deadline
        self.used = self.lookups = 0
        self.seen: dict[Any, Individual] = {}  # phenotype -> the first individual that had it
        self.best = math.inf
        self.best_ind: Individual | None = None
        self.best_configs: dict[str, Any] | None = None
        self.trace = Trace(deadline)  # best cost after each batch of evaluations
        self.progress = progress
        self.pool = pool if pool is not None else evaluation_pool(space)
        self.toolbox = base.Toolbox()
        self.toolbox.register("map", self.pool.map)
        self.toolbox.register("evaluate", self.pool.evaluate)

    def exhausted(self) -> bool:
        # the lookup guard stops a search that only re-proposes known plans
        return (
            self.used >= self.budget
            or self.deadline.expired()
            or self.lookups >= 50 * self.budget + 1000
        )

    def __call__(self, inds: list[Individual]) -> None:
        results = list(self.toolbox.map(self.toolbox.evaluate, inds))
        for ind, (cost, configs) in zip(inds, results, strict=True):
            ind.fitness = cost
            self.lookups += 1
            key = self.space.phenotype(ind)
            if key not in self.seen:
                self.seen[key] = ind
                self.used += 1
            if cost < self.best:
                self.best, self.best_ind, self.best_configs = cost, ind.copy(), configs
                self.best_ind.fitness = cost
        self.trace.record(self.best, self.used)
        if self.progress:
            self.progress(self.used, self.budget, self.best)

    def polish(self, count: int, work: int) -> int:
        """Exact on survivors: the exact Level-4 pass on the ``count`` best phenotypes seen that
        have not had it (in this process), best first, each in a work box of ``work`` merge
        steps; a phenotype whose pass ran out of a box at least as large is skipped. Returns how
        many ran."""
        space = self.space
        done = 0
        ranked = sorted(self.seen.values(), key=lambda i: i.fitness)
        for ind in ranked:
            if done >= count or self.deadline.expired():
                break
            if not math.isfinite(ind.fitness) or space.exact_done(ind):
                continue
            failed = space.exact_timeout(
                ind
            )  # the box its pass ran out of (inf: all the time there was)
            if failed is not None and failed >= work:
                continue
            cost, configs = space.level4(ind, exact=True, force=True, work=work)
            done += 1
            if cost < self.best:
                self.best, self.best_ind, self.best_configs = cost, ind.copy(), configs
                self.best_ind.fitness = cost
                self.trace.record(self.best, self.used)
        return done

    def close(self) -> None:
        self.pool.close()
