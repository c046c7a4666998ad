"""The steady-state evolutionary algorithm of one SHA-EA arm (HetRL §3.4, Algorithm 1 lines
14-33): a (task grouping, GPU grouping) pair's population over Levels 3-5, its fast-GPU and swap
mutations, and the locality local search (Baldwinian, as HetRL describes); resumable across the
halving's rounds."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from costmodels.workflow import TaskKind
from heuristics.placement.evaluator import Evaluator
from heuristics.placement.genome import Individual, PlacementSpace

#: improving swaps per local search, and pairs sampled per step on clusters over 64 GPUs
LOCAL_SEARCH_STEPS = 32
LOCAL_SEARCH_PAIRS = 4096


@dataclass
class ArmEA:
    """The steady-state EA of one (task grouping, GPU grouping) arm; resumable across rounds."""

    space: PlacementSpace
    grouping: tuple[tuple[str, ...], ...]
    sizes: tuple[int, ...]
    rng: random.Random
    population_size: int = 8
    fast_gpu_rate: float = 0.3
    batch: int = 4
    population: list[Individual] = field(default_factory=list)
    #: individuals that enter the first population before the random ones (baseline plans, probes)
    seeds: list[Individual] = field(default_factory=list)
    #: batches in a row without a new plan after which the arm counts as converged
    patience: int = 6
    stalled: bool = False

    @property
    def best(self) -> float:
        return min((i.fitness for i in self.population), default=math.inf)

    def run(self, evaluate: Evaluator, evals: int) -> None:
        target = evaluate.used + max(1, evals)
        if not self.population:
            # seeds (baseline plans, the probe), the greedy individual, then random ones
            pop = list(self.seeds)
            greedy = self.greedy()
            if all(s.assign != greedy.assign for s in pop):
                pop.append(greedy)
            while len(pop) < self.population_size:
                pop.append(self.space.random_individual(self.rng, self.grouping, self.sizes))
            self.population = pop
            evaluate([i for i in pop if i.fitness == math.inf])  # a scored seed keeps its score
        idle = 0
        while evaluate.used < target and not evaluate.exhausted() and not self.stalled:
            before = evaluate.used
            kids, improved = [], []
            for _ in range(self.batch):
                parent = self._tournament()
                child = self.mutate(parent)
                kids.append(child)
                improved.append(self.local_search(child))
            evaluate(kids + improved)
            for child, better in zip(kids, improved, strict=True):
                child.fitness = min(child.fitness, better.fitness)  # Baldwinian: genotype kept
                worst = max(range(len(self.population)), key=lambda i: self.population[i].fitness)
                if child.fitness < self.population[worst].fitness:
                    self.population[worst] = child
            idle = 0 if evaluate.used > before else idle + 1
            # an arm whose offspring are all known plans has converged; its budget goes elsewhere
            self.stalled = idle >= self.patience

    def greedy(self) -> Individual:
        """The fastest GPUs to the groups in role order (training first)."""
        priority = sorted(range(len(self.grouping)), key=self._role_rank)
        return self._fastest_first(priority)

    def _role_rank(self, gi: int) -> int:
        """Training groups first, then generation, then inference-only groups (HetRL §4: the
        fastest GPUs pay off most in training)."""
        kinds = {self.space.tasks[n].kind for n in self.grouping[gi]}
        return 0 if TaskKind.TRAINING in kinds else 1 if TaskKind.GENERATION in kinds else 2

    def _fastest_first(self, group_order: Any) -> Individual:
        sp = self.space
        order = sorted(range(len(sp.devices)), key=lambda g: (-sp.tflops[g], g))
        assign = [-1] * len(order)
        pos = 0
        for gi in group_order:
            size = self.sizes[gi]
            for g in order[pos : pos + size]:
                assign[g] = gi
            pos += size
        return Individual(self.grouping, assign, {n: 0 for names in self.grouping for n in names})

    def _tournament(self, k: int = 2) -> Individual:
        picks = [self.population[self.rng.randrange(len(self.population))] for _ in range(k)]
        return min(picks, key=lambda i: i.fitness)

    def _training_groups(self) -> set[int]:
        return {
            gi
            for gi, names in enumerate(self.grouping)
            if any(self.space.tasks[n].kind is TaskKind.TRAINING for n in names)
        }

    def mutate(self, parent: Individual) -> Individual:
        child = parent.copy()
        child.fitness = math.inf
        rng, sp = self.rng, self.space
        roll = rng.random()
        train = self._training_groups()
        if roll < self.fast_gpu_rate and train:
            # HetRL's mutation: a training-group GPU for a faster GPU outside every training group
            inside = [g for g, a in enumerate(child.assign) if a in train]
            outside = [g for g, a in enumerate(child.assign) if a not in train]
            if inside and outside:
                g = rng.choice(inside)
                faster = [h for h in outside if sp.tflops[h] > sp.tflops[g]]
                if faster:
                    h = rng.choice(faster)
                    child.assign[g], child.assign[h] = child.assign[h], child.assign[g]
                    return child
        # a cross-group swap (Level 3); Level 4 is enumerated for every phenotype
        for _ in range(8):
            g, h = rng.randrange(len(child.assign)), rng.randrange(len(child.assign))
            if child.assign[g] != child.assign[h] and sp.node[g] != sp.node[h]:
                child.assign[g], child.assign[h] = child.assign[h], child.assign[g]
                break
        return child

    def local_search(self, ind: Individual) -> Individual:  # noqa: C901
        """Greedy cross-group swaps that raise locality, group sizes fixed (phenotype only).

        Locality counts same-node, same-zone and same-region GPU pairs inside each group
        (weights 4, 2, 1); a swap's gain is computed from per-group counts in O(1)."""
        sp = self.space
        best = ind.copy()
        best.fitness = math.inf
        assign = best.assign
        n = len(assign)
        levels = ((sp.node, 4.0), (sp.zone, 2.0), (sp.region, 1.0))
        counts: list[dict[int, dict[str, int]]] = []
        for level, _ in levels:
            c: dict[int, dict[str, int]] = {}
            for g, a in enumerate(assign):
                if a >= 0:
                    c.setdefault(a, {})
                    c[a][level[g]] = c[a].get(level[g], 0) + 1
            counts.append(c)

        def gain(g: int, h: int) -> float:
            a, b = assign[g], assign[h]
            total = 0.0
            for (level, weight), c in zip(levels, counts, strict=True):
                vg, vh = level[g], level[h]
                if vg == vh:
                    continue
                if a >= 0:
                    total += weight * (c[a].get(vh, 0) - (c[a][vg] - 1))
                if b >= 0:
                    total += weight * (c[b].get(vg, 0) - (c[b][vh] - 1))
            return total

        # all pairs on small clusters; a seeded sample of them on large ones (the full scan is
        # quadratic per step), and at most ``LOCAL_SEARCH_STEPS`` improving swaps
        pairs = None if n <= 64 else LOCAL_SEARCH_PAIRS
        for _ in range(min(n, LOCAL_SEARCH_STEPS)):
            top, swap = 1e-12, None
            if pairs is None:
                candidates = ((g, h) for g in range(n) for h in range(g + 1, n))
            else:
                candidates = ((self.rng.randrange(n), self.rng.randrange(n)) for _ in range(pairs))
            for g, h in candidates:
                if assign[g] != assign[h]:
                    d = gain(g, h)
                    if d > top:
                        top, swap = d, (g, h)
            if swap is None:
                break
            g, h = swap
            a, b = assign[g], assign[h]
            for (level, _), c in zip(levels, counts, strict=True):
                vg, vh = level[g], level[h]
                if a >= 0:
                    c[a][vg] -= 1
                    c[a][vh] = c[a].get(vh, 0) + 1
                if b >= 0:
                    c[b][vh] -= 1
                    c[b][vg] = c[b].get(vg, 0) + 1
            assign[g], assign[h] = b, a
        return best
