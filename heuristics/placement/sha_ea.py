"""SHA-EA: HetRL's hybrid scheduling algorithm (HetRL §3.4, Algorithm 1).

Nested successive halving allocates the search budget: task groupings are the Level-1 arms,
GPU groupings (group sizes, plus idle GPUs) the Level-2 arms of each task grouping; every
(task grouping, GPU grouping) arm runs a steady-state evolutionary algorithm over Levels 3-5
whose state persists across rounds, and after each round the worse half of the arms is dropped
and the budget per arm doubles (lines 14-33).

The EA searches Level 3 (which GPUs form each group; HetRL: randomly initialised medium-grained
assignments) and, for every phenotype, enumerates Level 4 exactly: the Pareto options of each
group's tasks on its composition (``search.placement.group_options``) and their best combination.
Offspring come from mutation (with probability
``fast_gpu_rate``, a GPU of a training group is swapped for a higher-TFLOPS GPU outside every
training group; otherwise a cross-group GPU swap or a new task configuration), then a swap-based
local search greedily raises GPU-group locality (node, zone, region affinity) keeping group
sizes; the offspring enters the population with the better of its own and its improved
phenotype's cost, replacing the worst individual if it is better, and the improved phenotype is
not written back to the genotype (Baldwinian learning, as HetRL describes).

The budget is counted in cost-model evaluations (``evaluations``), which makes a run exactly
reproducible for a seed; with only ``time_limit`` the evaluation budget is estimated from the
measured evaluation rate and the wall clock also stops the search. Evaluations of a batch go
through ``toolbox.map`` (DEAP): in process, on a process pool (``workers > 1``) or on Ray actors
(``executor="ray"``, ``ray_address``), with the same plan for a given budget
(:mod:`heuristics.placement.executors`).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from deap import base
from pydantic import Field

from costmodels.combinatorics import set_partitions
from costmodels.placement.frameworks import rules_of
from costmodels.placement.problem import PlacementProblem
from costmodels.solving import Deadline, SolverOutput, Status, Trace, note_work
from costmodels.workflow import TaskKind
from heuristics.placement.executors import EvaluationPool, Executor, evaluation_pool
from heuristics.placement.genome import EXACT_WORK, Individual, PlacementSpace
from heuristics.placement.streamrl import DEFAULT_CANDIDATES

#: improving swaps per local search, and pairs sampled per step on clusters over 64 GPUs
LOCAL_SEARCH_STEPS = 32
LOCAL_SEARCH_PAIRS = 4096


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


def group_work(space: PlacementSpace, grouping: tuple[tuple[str, ...], ...]) -> list[float]:
    """A rough share of the work of each group: its tasks' parameters, weighted 3 for training
    (forward and backward), 1.5 for generation and 1 for inference."""
    wf = space.problem.workflow
    weight = []
    for names in grouping:
        w = 0.0
        for name in names:
            kind = space.tasks[name].kind
            params = wf.model(space.tasks[name].role).params_b
            w += params * (
                3.0 if kind is TaskKind.TRAINING else 1.5 if kind is TaskKind.GENERATION else 1.0
            )
        weight.append(w)
    return weight


#: GPU-type assignments enumerated per task grouping before sampling instead
TYPE_SPLIT_ENUMERATION = 4096


def type_splits(
    space: PlacementSpace, grouping: tuple[tuple[str, ...], ...], rng: random.Random, count: int
) -> list[tuple[float, Individual]]:
    """Level-3 starts that give each GPU type's whole pool to one group, every group at least
    one type: surjections of the T GPU types onto the k groups (none when k > T), the ``count``
    whose group sizes are closest to the groups' work shares (:func:`group_work`) first, each
    with that distance (the L1 distance between size shares and work shares).

    Why: on a cluster of a few GPU types the best plans often split by type, and neither the
    proportional sizes nor the fastest-first greedy start reaches them. On small-24 (8 A100,
    8 L40S, 8 L4) PPO sync the ILP's plan is {critic inference, critic training} on the L40S and
    the other four tasks on the A100 and L4, while the fastest-first start of that grouping does
    not even fit. Enumerated while k^T <= :data:`TYPE_SPLIT_ENUMERATION`, sampled above."""
    k = len(grouping)
    types = sorted(set(space.gpu_type))
    if k > len(types):
        return []
    pool = {t: space.gpu_type.count(t) for t in types}
    gpus = len(space.gpu_type)
    if k ** len(types) <= TYPE_SPLIT_ENUMERATION:
        maps = itertools.product(range(k), repeat=len(types))
    else:
        maps = (tuple(rng.randrange(k) for _ in types) for _ in range(TYPE_SPLIT_ENUMERATION))
    work = group_work(space, grouping)
    share = [w / sum(work) for w in work]
    scored: dict[tuple[int, ...], float] = {}
    for m in maps:
        if len(set(m)) < k:
            continue
        sizes = [0] * k
        for t, gi in zip(types, m, strict=True):
            sizes[gi] += pool[t]
        scored.setdefault(m, sum(abs(s / gpus - f) for s, f in zip(sizes, share, strict=True)))
    out = []
    for m in sorted(scored, key=lambda m: (scored[m], m))[:count]:
        where = dict(zip(types, m, strict=True))
        configs = {name: 0 for names in grouping for name in names}
        out.append((scored[m], Individual(grouping, [where[t] for t in space.gpu_type], configs)))
    return out


def gpu_groupings(
    space: PlacementSpace, grouping: tuple[tuple[str, ...], ...], rng: random.Random, count: int
) -> list[tuple[int, ...]]:
    """Level-2 arms: group sizes in proportion to each group's work, whole-node variants and
    random perturbations; with and without leaving the slowest GPUs idle."""
    n = len(space.devices)
    k = len(grouping)
    if n < k:
        return []
    weight = group_work(space, grouping)
    out: list[tuple[int, ...]] = []

    def add(sizes: list[int]) -> None:
        t = tuple(sizes)
        if all(s >= 1 for s in t) and sum(t) <= n and t not in out:
            out.append(t)

    # totals: all GPUs, three quarters, and all but the slowest GPU types (a heterogeneous cluster's
    # slowest GPUs can cost more than they add)
    by_speed = sorted(set(space.tflops))
    totals = [n, n - n // 4]
    for cut in by_speed[:-1]:
        kept = sum(1 for t in space.tflops if t > cut)
        if kept >= k:
            totals.append(kept)
    for total in dict.fromkeys(totals):
        raw = [total * w / sum(weight) for w in weight]
        base = [max(1, int(r)) for r in raw]
        while sum(base) < total:
            base[max(range(k), key=lambda i: raw[i] - base[i])] += 1
        while sum(base) > total:
            base[max(range(k), key=lambda i: base[i])] -= 1
        add(base)
        add([max(1, 2 ** round(math.log2(max(b, 1)))) for b in base])
    # whole-node splits: group sizes that are sums of nodes taken fastest first (a group that owns
    # whole nodes keeps its traffic off the slower links)
    node_sizes: dict[str, int] = {}
    node_speed: dict[str, float] = {}
    for g, node in enumerate(space.node):
        node_sizes[node] = node_sizes.get(node, 0) + 1
        node_speed[node] = space.tflops[g]
    nodes = sorted(node_sizes, key=lambda nd: -node_speed[nd])
    node_based = 0
    for _ in range(20 * count if 1 < k <= len(nodes) else 0):
        if node_based >= count:
            break
        bounds = [0, *sorted(rng.sample(range(1, len(nodes)), k - 1)), len(nodes)]
        before = len(out)
        add(
            [
                sum(node_sizes[nd] for nd in nodes[a:b])
                for a, b in zip(bounds, bounds[1:], strict=False)
            ]
        )
        node_based += len(out) > before
    tries = 0
    while len(out) < count and tries < 50 * count:
        tries += 1
        cuts = sorted(rng.sample(range(1, n), k - 1)) if k > 1 else []
        add([b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)])
    return out[: max(count, len(totals)) + node_based]


def successive_halving(
    arms: list[Any],
    budget: float,
    run: Callable[[Any, float], None],
    score: Callable[[Any], float],
    stop: Callable[[], bool],
) -> list[Any]:
    """Algorithm 1's halving loop: ceil(log2 |arms|) rounds, budget B / (|arms_m| * rounds) each."""
    rounds = max(1, math.ceil(math.log2(len(arms)))) if arms else 0
    alive = list(arms)
    for _ in range(rounds):
        if stop() or len(alive) <= 1:
            break
        per_arm = budget / (len(alive) * rounds)
        for arm in alive:
            if stop():
                break
            run(arm, per_arm)
        alive = sorted(alive, key=score)[: max(1, math.ceil(len(alive) / 2))]
    for arm in alive:  # what is left of the budget goes to the survivors
        if stop():
            break
        run(arm, budget / (max(1, len(alive)) * max(1, rounds)))
    return alive


# : the evaluation budget (distinct phenotypes costed) when neither ``evaluations`` nor
# ``time_limit`` is given
DEFAULT_EVALUATIONS = 300
#: phenotypes re-solved exactly at the end (exact on survivors), each in a work box of
#: POLISH_WORK units (4x a search pass's box, ~7 s on the development machine: a pass the search
#: cut short gets one real chance; passes that finished are not repeated)
POLISH = 16
POLISH_WORK = 4 * EXACT_WORK
#: share of a caller's time limit the baseline seeds may use
SEED_SHARE = 0.15
#: StreamRL candidates the seed sweep costs without a time limit: the standalone baseline's own
#: default budget, so SHA-EA's default plan is never worse than ``--solver streamrl``'s
SEED_CANDIDATES = DEFAULT_CANDIDATES
#: share of the evaluation budget and of the time limit the GPU-type-split probes may use
PROBE_SHARE = 0.1


def canonical(problem: PlacementProblem, grouping: Any) -> tuple[tuple[str, ...], ...]:
    """A task grouping in one spelling: tasks in workflow order inside a group, groups ordered by
    their first task."""
    order = {t.name: i for i, t in enumerate(problem.tasks)}
    groups = [tuple(sorted(g, key=order.__getitem__)) for g in grouping]
    return tuple(sorted(groups, key=lambda g: order[g[0]]))


def task_groupings(space: PlacementSpace) -> list[tuple[tuple[str, ...], ...]]:
    """Level-1 arms: every set partition of the tasks, one per symmetry class (tasks with one
    ``GroupOptions.signature`` are interchangeable: {ref}{reward, critic} is {reward}{ref,
    critic}); with a framework target, only the groupings it runs."""
    problem = space.problem
    sig = space.builder.signature
    seen: dict[Any, tuple[tuple[str, ...], ...]] = {}
    rules = rules_of(problem)
    for part in set_partitions([t.name for t in problem.tasks]):
        if rules is not None and not rules.admits_grouping(problem, part):
            continue  # the target framework cannot run this grouping
        tg = canonical(problem, part)
        key = tuple(sorted(tuple(sorted(map(sig, g))) for g in tg))
        seen.setdefault(key, tg)
    return list(seen.values())


def individual_of(space: PlacementSpace, plan: Any) -> Individual:
    """The genotype of a plan (its grouping and GPU groups; Level 4 is re-solved)."""
    grouping = canonical(space.problem, [g.tasks for g in plan.groups])
    where = {tuple(sorted(g)): gi for gi, g in enumerate(grouping)}
    index = space.problem.topology.index_of()
    assign = [-1] * len(space.devices)
    for g in plan.groups:
        for d in g.devices:
            assign[index[d]] = where[tuple(sorted(g.tasks))]
    return Individual(grouping, assign, {n: 0 for names in grouping for n in names})


def baseline_seeds(
    problem: PlacementProblem, deadline: Deadline, share: float
) -> list[tuple[str, float, Any]]:
    """(name, cost, plan) of the verl and StreamRL baselines: SHA-EA starts from them and never
    returns worse. Under a caller's time limit they run in ``share`` of it; otherwise on work
    budgets (verl's whole sweep, StreamRL's first :data:`SEED_CANDIDATES` candidates), so the
    seeds are the same on any machine."""
    from heuristics.placement.colocated import solve_colocated
    from heuristics.placement.streamrl import solve_streamrl

    out = []
    limit = deadline.time_limit
    for name, solver, part in (("verl", solve_colocated, 0.3), ("StreamRL", solve_streamrl, 0.7)):
        if deadline.expired():
            break
        if limit is None:
            r = solver(
                problem, **({"candidates": SEED_CANDIDATES} if solver is solve_streamrl else {})
            )
        else:
            r = solver(
                problem,
                time_limit=min(max(0.05, share * limit * part), deadline.remaining() or 0.0),
            )
        if r.plan is not None and r.objective is not None:
            out.append((name, float(r.objective), r.plan))
    return out


def solve_sha_ea(  # noqa: C901
    problem: PlacementProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    evaluations: Annotated[
        int | None,
        Field(
            ge=1,
            description=(
                "budget of distinct plans costed: same seed and budget, same plan (when the "
                "baseline seeds finish their sweeps)"
            ),
        ),
    ] = None,
    population: Annotated[int, Field(ge=2, description="EA population per arm")] = 6,
    gpu_groupings_per_arm: Annotated[
        int,
        Field(ge=1, description="GPU groupings tried per task grouping (successive-halving arms)"),
    ] = 6,
    task_grouping_arms: Annotated[
        int,
        Field(ge=1, description="task groupings kept for the halving after one cheap probe each"),
    ] = 12,
    type_split_probes: Annotated[
        int,
        Field(
            ge=0,
            description=(
                "GPU-type splits (each GPU type's pool to one group) probed per task grouping"
            ),
        ),
    ] = 4,
    fast_gpu_rate: Annotated[
        float, Field(ge=0, le=1, description="probability of HetRL's fast-GPU mutation")
    ] = 0.3,
    exact_margin: Annotated[
        float,
        Field(
            ge=0,
            description=(
                "re-solve Level 4 exactly for individuals within this share of the incumbent"
            ),
        ),
    ] = 0.05,
    seeds: Annotated[
        bool, Field(description="start from the verl and StreamRL baselines' plans")
    ] = True,
    workers: Annotated[
        int | None,
        Field(
            ge=1,
            description=(
                "processes (local) or Ray actors evaluating candidates in parallel; default 1 "
                "locally, one per CPU of the Ray cluster with executor=ray"
            ),
        ),
    ] = None,
    executor: Annotated[
        Executor,
        Field(
            description=(
                "where evaluations run: local (in process, or a process pool with workers > 1) or "
                "ray"
            )
        ),
    ] = "local",
    ray_address: Annotated[
        str | None,
        Field(
            description=(
                "Ray cluster to run the evaluations on, e.g. auto or ray://head:10001 (implies "
                "executor=ray; without it executor=ray starts a local Ray)"
            )
        ),
    ] = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> SolverOutput:
    """Run SHA-EA.

    Set-up is bounded: the baselines (verl, StreamRL) run in :data:`SEED_SHARE` of the limit and
    seed the incumbent and the arms of their groupings; each task grouping (symmetry classes
    only) gets one cheap probe (its fastest-first greedy start), then up to ``type_split_probes``
    GPU-type splits (:func:`type_splits`, within :data:`PROBE_SHARE`), and the
    ``task_grouping_arms`` best by their best probe enter the halving. The budget is
    ``evaluations`` distinct plans; with only ``time_limit`` the halving restarts with a doubled
    budget until the limit (arms keep their populations); with neither it is 300, stopped by the
    default cap if the run has one. The result is never worse than the best seed."""
    rng = random.Random(seed)
    deadline = Deadline(time_limit)
    space = PlacementSpace(problem, deadline)
    space.exact_margin = exact_margin
    seed_plans = baseline_seeds(problem, deadline, SEED_SHARE) if seeds else []
    best_seed = min(seed_plans, key=lambda s: s[1], default=None)
    if best_seed is not None:
        space.incumbent = best_seed[1]
    by_time = evaluations is None and time_limit is not None
    budget_total = evaluations if evaluations is not None else DEFAULT_EVALUATIONS
    ev = Evaluator(
        space,
        budget_total,
        deadline,
        evaluation_pool(space, workers, executor, ray_address),
        progress,
    )
    probes: dict[Any, float] = {}
    converged = False
    # from here on the evaluation pool's workers (processes, Ray actors) are released at the end
    try:
        if (
            progress is not None
        ):  # set-up is over: say so before the first batch (which may be slow)
            progress(0, budget_total, best_seed[1] if best_seed else math.inf)
        tgs_all = task_groupings(space)
        arms_by_tg: dict[Any, list[ArmEA]] = {}
        seeded_tgs = []
        for *_, plan in seed_plans:
            ind = individual_of(space, plan)
            arm = ArmEA(
                space,
                ind.grouping,
                ind.sizes(),
                random.Random(rng.random()),
                population,
                fast_gpu_rate,
            )
            arm.seeds.append(ind)
            arms_by_tg.setdefault(ind.grouping, []).append(arm)
            seeded_tgs.append(ind.grouping)
        probe_arm: dict[Any, ArmEA] = {}  # the first GPU-grouping arm of each task grouping
        for tg in tgs_all:
            sizes = gpu_groupings(space, tg, rng, gpu_groupings_per_arm)
            arms = [
                ArmEA(space, tg, s, random.Random(rng.random()), population, fast_gpu_rate)
                for s in sizes
            ]
            arms_by_tg.setdefault(tg, []).extend(arms)
            if arms:
                probe_arm[tg] = arms[0]
        # one cheap probe per task grouping (its greedy individual on the first GPU grouping)
        for tg, arm in probe_arm.items():
            if ev.exhausted():
                break
            probe = arm.greedy()
            ev([probe])
            probes[tg] = probe.fitness
            arm.seeds.append(probe)
        # then GPU-type splits (:func:`type_splits`): each task grouping's closest split to its
        # work shares, closest first, then each one's second, and so on; within PROBE_SHARE of the
        # time limit (from here) and, under an evaluation budget, of the budget. Each split seeds
        # the arm of its group sizes. (Not ordered by the greedy probe: a grouping whose greedy
        # start does not fit can have the best split, as on small-24 PPO.)
        splits = {tg: type_splits(space, tg, rng, type_split_probes) for tg in probe_arm}
        cap = (
            sum(map(len, splits.values()))
            if by_time
            else max(len(probe_arm), int(PROBE_SHARE * budget_total))
        )
        probe_stop = ev.used + cap
        probe_end = None if not by_time else deadline.elapsed() + PROBE_SHARE * deadline.limit
        chunk = max(1, ev.pool.workers)

        def seed_arm(tg: Any, ind: Individual) -> None:
            """``ind`` seeds the unstarted arm of its group sizes (a new arm when there is none)."""
            sizes = ind.sizes()
            arm = next((a for a in arms_by_tg[tg] if a.sizes == sizes and not a.population), None)
            if arm is None:
                arm = ArmEA(
                    space, tg, sizes, random.Random(rng.random()), population, fast_gpu_rate
                )
                arms_by_tg[tg].append(arm)
            arm.seeds.append(ind)

        def probing() -> bool:
            over_time = probe_end is not None and deadline.elapsed() >= probe_end
            return not (ev.exhausted() or over_time or ev.used >= probe_stop)

        for depth in range(type_split_probes):
            todo = sorted(
                ((tg, splits[tg][depth][1]) for tg in splits if depth < len(splits[tg])),
                key=lambda pair: splits[pair[0]][depth][0],
            )
            at = 0
            while at < len(todo) and probing():
                # never past probe_stop, so the probes do not depend on the number of workers
                part = todo[at : at + min(chunk, probe_stop - ev.used)]
                at += len(part)
                ev([ind for _, ind in part])
                for tg, ind in part:
                    probes[tg] = min(probes.get(tg, math.inf), ind.fitness)
                    seed_arm(tg, ind)
        ranked = sorted((tg for tg in tgs_all if tg in probes), key=lambda tg: probes[tg])
        tgs = list(dict.fromkeys(seeded_tgs + ranked[:task_grouping_arms]))
        tgs = [tg for tg in tgs if arms_by_tg.get(tg)]

        def best_of(tg: Any) -> float:
            return min((a.best for a in arms_by_tg[tg]), default=math.inf)

        def run_tg(tg: Any, budget: float) -> None:  # Level 2: halving over GPU groupings
            arms_by_tg[tg] = successive_halving(
                arms_by_tg[tg],
                budget,
                lambda arm, b: arm.run(ev, max(1, int(b))),
                lambda arm: arm.best,
                ev.exhausted,
            )

        tried = {
            tg: {a.sizes for a in arms} for tg, arms in arms_by_tg.items()
        }  # GPU groupings ever armed

        def widen() -> bool:
            """Budget or time is left but every arm has converged: the next task groupings by
            probe and new GPU groupings for those in play enter the halving. False when none is
            left."""
            playing = list(tgs)
            tgs.extend(
                [tg for tg in ranked if tg not in playing and arms_by_tg.get(tg)][
                    :task_grouping_arms
                ]
            )
            added = len(tgs) > len(playing)
            for tg in playing:
                fresh = [
                    z
                    for z in gpu_groupings(space, tg, rng, gpu_groupings_per_arm + len(tried[tg]))
                    if z not in tried[tg]
                ]
                for z in fresh[:gpu_groupings_per_arm]:
                    tried[tg].add(z)
                    arms_by_tg[tg].append(
                        ArmEA(space, tg, z, random.Random(rng.random()), population, fast_gpu_rate)
                    )
                    added = True
            return added

        budget = float(max(budget_total - ev.used, len(tgs)))
        box = 2 * space.exact_work
        while not ev.exhausted():
            before = ev.used
            successive_halving(tgs, budget, run_tg, best_of, ev.exhausted)
            if (
                by_time
            ):  # the best phenotype whose exact pass ran out of its box: again, in twice the box
                ev.polish(1, box)
                box *= 2
            if deadline.expired():
                break
            if (
                ev.used == before and not widen()
            ):  # every arm has converged and nothing is left to try
                converged = True
                break
            # budget left (an evaluation budget the converged arms did not use, or a wall-clock
            # limit): run the halving again, with twice the budget under a wall-clock limit; the
            # arms keep their populations, so the search resumes where it stopped
            if by_time:
                budget *= 2
                ev.budget = ev.used + int(budget)
            else:
                budget = float(max(1, ev.budget - ev.used))
        polished = ev.polish(POLISH, POLISH_WORK)
    finally:
        ev.close()
    note_work(ev.used, ev.budget, "evaluations")
    stats = {
        "polished": polished,
        "evaluations": ev.used,
        "lookups": ev.lookups,
        "exact_level4": space.exact_solves,
        "exact_level4_timeouts": space.exact_timeouts,
        "budget": budget_total,
        "trace": ev.trace.rows(),
        "task_groupings": len(probes),
        "seeds": {name: cost for name, cost, _ in seed_plans},
    }
    stopped = "time limit" if deadline.expired() else "converged" if converged else "budget"
    if best_seed is not None and not ev.best < best_seed[1]:
        return SolverOutput(
            Status.FEASIBLE,
            plan=best_seed[2],
            objective=best_seed[1],
            message=(
                f"SHA-EA: the {best_seed[0]} seed was not beaten in {ev.used} evaluations "
                f"({stopped})"
            ),
            stats=stats,
        )
    if ev.best_ind is None or not math.isfinite(ev.best):
        return SolverOutput(
            Status.NO_SOLUTION, message="no valid plan found within the budget", stats=stats
        )
    configs = ev.best_configs
    assert configs is not None
    plan = space.decode_with(ev.best_ind, configs)
    gain = (
        f", {best_seed[1] / ev.best:.2f}x better than its best seed ({best_seed[0]})"
        if best_seed
        else ""
    )
    return SolverOutput(
        Status.FEASIBLE,
        plan=plan,
        objective=ev.best,
        message=f"SHA-EA: best of {ev.used} evaluations ({stopped}){gain}",
        stats=stats,
    )
