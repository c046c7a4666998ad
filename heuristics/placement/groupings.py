"""SHA-EA's arms (HetRL §3.4): the task groupings (Level 1, one per symmetry class), the GPU
groupings of each (Level 2: group sizes, plus idle GPUs), GPU-type splits as Level-3 starts, and
the genotype of a baseline's plan."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

from costmodels.combinatorics import set_partitions
from costmodels.placement.frameworks import rules_of
from costmodels.placement.problem import PlacementProblem
from costmodels.workflow import TaskKind
from heuristics.placement.genome import Individual, PlacementSpace


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
    one type, and the slowest type's pool to a group or to none: maps of the T GPU types onto
    the k groups that cover every group (none when k > T), and of the T-1 faster types with the
    slowest idle (when T > k). Each kind's ``count`` whose group sizes are closest to the groups'
    work shares (:func:`group_work`), alternating, every type in use first, each with that
    distance (the L1 distance between the used GPUs' size shares and the work shares).

    Why: on a cluster of a few GPU types the best plans often split by type, and neither the
    proportional sizes nor the fastest-first greedy start reaches them. On small-24 (8 A100,
    8 L40S, 8 L4) PPO sync the ILP's plan is {critic inference, critic training} on the L40S and
    the other four tasks on the A100 and L4, while the fastest-first start of that grouping does
    not even fit. And the slowest type can cost more than it adds: on the multi-region hybrid
    testbed (24 A100, 24 L40S, 16 L4) ReaL's chain (``heuristics.placement.real_mcmc``) ran
    the actor's tasks on the A100, the critic's and the reference on the L40S, left the L4 idle,
    and beat SHA-EA's PPO plans by 15% (sync) and 2% (async) until these starts existed
    (``benchmarks/results/field-planners``). Enumerated while the maps number at most
    :data:`TYPE_SPLIT_ENUMERATION`, sampled above."""
    k = len(grouping)
    types = sorted(set(space.gpu_type))
    speed = {t: tf for t, tf in zip(space.gpu_type, space.tflops, strict=True)}
    # the slowest type (ties: by name) may go idle (group k) when the others cover every group
    slowest = min(types, key=lambda t: (speed[t], t)) if len(types) > k else None
    choices = [list(range(k + 1)) if t == slowest else list(range(k)) for t in types]
    if k > len(types):
        return []
    pool = {t: space.gpu_type.count(t) for t in types}
    if math.prod(map(len, choices)) <= TYPE_SPLIT_ENUMERATION:
        maps = itertools.product(*choices)
    else:
        maps = (tuple(rng.choice(c) for c in choices) for _ in range(TYPE_SPLIT_ENUMERATION))
    work = group_work(space, grouping)
    share = [w / sum(work) for w in work]
    scored: dict[tuple[int, ...], float] = {}
    for m in maps:
        if len(set(m) - {k}) < k:
            continue
        sizes = [0] * (k + 1)
        for t, gi in zip(types, m, strict=True):
            sizes[gi] += pool[t]
        used = sum(sizes[:k])
        scored.setdefault(m, sum(abs(s / used - f) for s, f in zip(sizes, share, strict=False)))
    # alternating: closest ``count`` with every type in use, interleaved with the slowest
    # idle. Sorted together, the idle starts (fewer GPUs, often closer) crowd the others out of
    # the probe budget: on small-24 PPO the halving then settles 3% worse (713.5 s against
    # 691.7 s); interleaved, small-24 is unchanged and the hybrid testbed's PPO finds plans
    # 5-11% faster than ReaL's
    ranked = sorted(scored, key=lambda m: (k in m, scored[m], m))
    full = [m for m in ranked if k not in m][:count]
    idle = [m for m in ranked if k in m][:count]
    out = []
    for m in [m for pair in itertools.zip_longest(full, idle) for m in pair if m is not None]:
        where = {t: (-1 if gi == k else gi) for t, gi in zip(types, m, strict=True)}
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
