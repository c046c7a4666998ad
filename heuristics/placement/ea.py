"""Baselines over the same placement space: a plain evolutionary algorithm and random search.

Plain EA (HetRL §5.4's "standard evolutionary algorithm implemented using DEAP"): one flat
genotype (task grouping index, a group label per GPU with -1 for idle, a configuration index per
task), generational evolution with tournament selection, two-point crossover and uniform integer
mutation, elitism (the best so far replaces the worst child); no successive halving, no Level-4
enumeration,
no local search. Random search samples the same genotype uniformly. Both use their own seeded
``random.Random`` (DEAP's operators use the global ``random``; we keep it untouched).
"""

from __future__ import annotations

import math
import random
from typing import Annotated

from deap import base
from pydantic import Field

from costmodels.combinatorics import set_partitions
from costmodels.placement.frameworks import rules_of
from costmodels.placement.problem import PlacementProblem
from costmodels.solving import Deadline, SolverOutput, Status, Trace
from heuristics.placement.genome import Individual, PlacementSpace


class _Codec:
    def __init__(self, space: PlacementSpace):
        names = [t.name for t in space.problem.tasks]
        self.space = space
        rules = rules_of(space.problem)
        self.groupings = [
            tuple(tuple(g) for g in part)
            for part in set_partitions(names)
            if rules is None or rules.admits_grouping(space.problem, part)
        ]
        self.names = names
        self.n = len(space.devices)

    def random(self, rng: random.Random) -> list[int]:
        k = max(len(g) for g in self.groupings)
        return (
            [rng.randrange(len(self.groupings))]
            + [rng.randrange(-1, k) for _ in range(self.n)]
            + [rng.randrange(1 << 16) for _ in self.names]
        )

    def decode(self, genes: list[int]) -> Individual:
        grouping = self.groupings[genes[0] % len(self.groupings)]
        k = len(grouping)
        assign = [(-1 if g < 0 else g % k) for g in genes[1 : 1 + self.n]]
        return Individual(grouping, assign, dict(zip(self.names, genes[1 + self.n :], strict=True)))


def _budget(evaluations: int | None, time_limit: float | None) -> int:
    if evaluations is not None:
        return evaluations
    return 10**12 if time_limit is not None else 3000


def _result(
    space: PlacementSpace, best: Individual | None, cost: float, evals: int, what: str, trace: Trace
) -> SolverOutput:
    stats = {"evaluations": evals, "distinct_plans": space.evaluations, "trace": trace.rows()}
    if best is None or not math.isfinite(cost):
        return SolverOutput(
            Status.NO_SOLUTION, message=f"{what}: no valid plan within the budget", stats=stats
        )
    return SolverOutput(
        Status.FEASIBLE,
        plan=space.decode(best),
        objective=cost,
        message=f"{what}: best of {evals} evaluations",
        stats=stats,
    )


def _setup(problem: PlacementProblem, time_limit: float | None, seed: int, evaluations: int | None):
    """What both searches start from: budget, rng, deadline-aware space and codec, and the
    anytime trace on the deadline's clock."""
    deadline = Deadline(time_limit)
    space = PlacementSpace(problem, deadline)
    return (
        _budget(evaluations, time_limit),
        random.Random(seed),
        space,
        _Codec(space),
        Trace(deadline),
        deadline,
    )


#: the evaluation-budget option of the placement EAs (``--solver help`` shows its description)
EvaluationBudget = Annotated[
    int | None,
    Field(
        ge=1,
        description=(
            "evaluation budget: same seed and budget, same plan; default from the time limit"
        ),
    ),
]


def solve_plain_ea(
    problem: PlacementProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    evaluations: EvaluationBudget = None,
    population: Annotated[int, Field(ge=2, description="individuals per generation")] = 32,
    crossover: Annotated[float, Field(ge=0, le=1, description="crossover probability")] = 0.7,
    mutation: Annotated[float, Field(ge=0, le=1, description="mutation probability")] = 0.2,
) -> SolverOutput:
    """Budget: ``evaluations``; with only ``time_limit``, until the wall clock runs out; with
    neither, 3000 evaluations."""
    evaluations, rng, space, codec, trace, deadline = _setup(problem, time_limit, seed, evaluations)
    toolbox = base.Toolbox()
    toolbox.register("map", map)
    toolbox.register("evaluate", lambda genes: space.evaluate(codec.decode(genes)))
    pop = [codec.random(rng) for _ in range(population)]
    fits = list(toolbox.map(toolbox.evaluate, pop))
    used = len(pop)
    best_genes, best = min(zip(pop, fits, strict=True), key=lambda x: x[1])
    trace.record(best, used)  # per generation
    while used < evaluations and not deadline.expired():
        nxt = [
            min((rng.randrange(population) for _ in range(3)), key=lambda i: fits[i])
            for _ in range(population)
        ]
        kids = [list(pop[i]) for i in nxt]
        for a, b in zip(kids[::2], kids[1::2], strict=False):
            if rng.random() < crossover:
                i, j = sorted(rng.sample(range(len(a)), 2))
                a[i:j], b[i:j] = b[i:j], a[i:j]
        for kid in kids:  # uniform integer mutation, about ``mutation`` x 4 genes per child
            fresh = codec.random(rng)
            for g in range(len(kid)):
                if rng.random() < mutation * 4 / len(kid):
                    kid[g] = fresh[g]
        kid_fits = list(toolbox.map(toolbox.evaluate, kids))
        used += len(kids)
        # elitism: the best so far survives
        worst = max(range(population), key=lambda i: kid_fits[i])
        kids[worst], kid_fits[worst] = list(best_genes), best
        pop, fits = kids, kid_fits
        i = min(range(population), key=lambda i: fits[i])
        if fits[i] < best:
            best_genes, best = list(pop[i]), fits[i]
        trace.record(best, used)
    best_ind = codec.decode(best_genes) if math.isfinite(best) else None
    return _result(space, best_ind, best, used, "plain EA", trace)


def solve_random(
    problem: PlacementProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    evaluations: EvaluationBudget = None,
) -> SolverOutput:
    """Same budget rules as :func:`solve_plain_ea`."""
    evaluations, rng, space, codec, trace, deadline = _setup(problem, time_limit, seed, evaluations)
    best, best_ind, used = math.inf, None, 0
    while used < evaluations and not deadline.expired():
        ind = codec.decode(codec.random(rng))
        used += 1
        cost = space.evaluate(ind)
        if cost < best:
            best, best_ind = cost, ind
            trace.record(best, used)
    return _result(space, best_ind, best, used, "random search", trace)
