"""StreamRL-style baseline (HetRL §5.1): generation on one GPU group, every other task on the
other (StreamRL deploys generation and the rest in two data centres).

The sweep is what a StreamRL user would do, made to scale:

* **Sides.** Generation's side is a union of *units*: whole nodes when the cluster has at most
  :data:`MAX_UNITS` of them, and always the cluster's zones, GPU types and (zone, GPU type)
  blocks when there are at most :data:`MAX_UNITS` of each (a data centre, a GPU generation).
  Every non-empty proper subset of a unit list is a side, either side for generation; duplicates
  are dropped. At 1 024 GPUs this is a few hundred sides, not 2^128.
* **Order.** Sides are tried in order of how close generation's GPU share is to its share of
  the work (model size x 1.5 for generation, x 1 per inference task, x 3 per training task, as
  SHA-EA's Level-2 arms), so a time-limited sweep has tried the likely splits first.
* **Configurations.** Per side, generation's (TP, decode batch, balance) with PP = 1 and the
  rest's shared (TP, PP, DP, balance) are tuned by coordinate descent: every generation
  configuration with the rest's first feasible one, then every shared configuration with the
  best generation one, then generation once more. The sync objective is separable in the two
  (generation's time plus the rest's phases plus the transfer), so this finds each side's best
  pair there; in async mode it is a local optimum.

Every candidate is validated (C1-C3) and scored by the cost model. The sweep's effort is a
budget of ``candidates`` (default :data:`DEFAULT_CANDIDATES` when no time limit is given), so the
same cluster gives the same plan on any machine; with only ``time_limit`` the sweep runs until the
limit. The deadline (the limit, or the default cap as a safety net) is checked per candidate, and
the best plan so far is returned when it passes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Annotated

from pydantic import Field

from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import (
    TaskConfig,
    build_plan,
    is_heterogeneous,
    placement_keeper,
    task_configs,
)
from costmodels.solving import Deadline, KeepBest, SolverOutput, Status
from costmodels.workflow import TaskKind

#: largest unit list whose subsets are all tried (2^10 - 2 sides)
MAX_UNITS = 10
#: candidates costed when neither ``candidates`` nor ``time_limit`` is given: ~22 s on one core of
#: the development machine on the HetRL testbed (55 378 candidates fit its 60 s default cap), and
#: every split of the small presets' sweeps
DEFAULT_CANDIDATES = 20_000


def generation_sides(problem: PlacementProblem) -> list[frozenset[int]]:
    """Candidate GPU sets (device indices) for generation, ordered by closeness of their share of
    the GPUs to generation's share of the work (module doc)."""
    devices = problem.topology.devices
    n = len(devices)
    keys = {
        "node": [d.node for d in devices],
        "zone": [d.zone for d in devices],
        "type": [d.gpu.name for d in devices],
        "block": [f"{d.zone}/{d.gpu.name}" for d in devices],
    }
    sides: dict[frozenset[int], None] = {}
    for label in keys.values():
        units: dict[str, list[int]] = {}
        for i, u in enumerate(label):
            units.setdefault(u, []).append(i)
        members = list(units.values())
        if not 2 <= len(members) <= MAX_UNITS:
            continue
        for r in range(1, len(members)):
            for pick in itertools.combinations(range(len(members)), r):
                sides[frozenset(i for k in pick for i in members[k])] = None
    wf = problem.workflow
    work = {TaskKind.GENERATION: 1.5, TaskKind.INFERENCE: 1.0, TaskKind.TRAINING: 3.0}
    weight = {t.name: wf.model(t.role).params_b * work[t.kind] for t in problem.tasks}
    gen_name = next(t.name for t in problem.tasks if t.kind is TaskKind.GENERATION)
    target = weight[gen_name] / sum(weight.values())
    return sorted(sides, key=lambda s: (abs(len(s) / n - target), len(s), min(s)))


def _shared_configs(problem: PlacementProblem, others: list, gpus: list[str]) -> list[TaskConfig]:
    shared: set[TaskConfig] | None = None
    het = is_heterogeneous(problem, gpus)
    for t in others:
        cfgs = set(task_configs(problem, t, len(gpus), het))
        shared = cfgs if shared is None else shared & cfgs
    return sorted(shared or ())


def solve_streamrl(
    problem: PlacementProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    candidates: Annotated[
        int | None,
        Field(
            ge=1,
            le=10**9,
            description=(
                "budget of candidate plans costed (default 20000 without --time-limit; with one, "
                "until the limit)"
            ),
        ),
    ] = None,
) -> SolverOutput:
    """The sweep (module doc): sides in order, each side's configurations by coordinate descent,
    until the sides, the ``candidates`` budget or the time limit run out."""
    del seed  # deterministic sweep
    deadline = Deadline(time_limit)
    budget = (
        candidates
        if candidates is not None
        else (DEFAULT_CANDIDATES if time_limit is None else None)
    )
    keep = placement_keeper(problem)
    sides = generation_sides(problem)
    stopped, spent = _sweep(problem, keep, sides, budget, deadline)
    if keep.plan is None:
        if stopped:
            return SolverOutput(
                Status.NO_SOLUTION,
                message="time limit reached before any generation/rest split fit",
                stats={"candidates": keep.offered, "sides": len(sides)},
            )
        return SolverOutput(
            Status.INFEASIBLE,
            message="no generation/rest split of the sweep fits in memory",
            stats={"candidates": keep.offered, "sides": len(sides)},
        )
    return SolverOutput(
        Status.FEASIBLE,
        plan=keep.plan,
        objective=keep.best,
        message=f"best of {keep.offered} candidates over {len(sides)} generation/rest splits"
        + (" (time limit: the sweep was cut short)" if stopped else "")
        + (f" (the budget of {budget} candidates ended the sweep)" if spent else ""),
        stats={"candidates": keep.offered, "sides": len(sides)},
    )


def _sweep(
    problem: PlacementProblem,
    keep: KeepBest,
    sides: list[frozenset[int]],
    budget: int | None,
    deadline: Deadline,
) -> tuple[bool, bool]:
    """Tune every side in turn, stopping at the budget of candidates or the deadline; whether
    the deadline (``stopped``) or the budget (``spent``) ended the sweep."""
    spent = False
    ids = [d.id for d in problem.topology.devices]
    stopped = False
    for side in sides:
        gen_gpus = [ids[i] for i in sorted(side)]
        rest = [ids[i] for i in range(len(ids)) if i not in side]
        for _ in tune_split(problem, keep, gen_gpus, rest):
            if budget is not None and keep.offered >= budget:
                spent = True
                break
            if deadline.expired():
                stopped = True
                break
        if stopped or spent:
            break
    return stopped, spent


def tune_split(
    problem: PlacementProblem, keep: KeepBest, gen_gpus: list[str], rest: list[str]
) -> Iterator[None]:
    """Coordinate descent over the two sides' configurations; yields after each candidate."""
    tasks = problem.tasks
    gen = next(t for t in tasks if t.kind is TaskKind.GENERATION)
    others = [t for t in tasks if t is not gen]
    gen_cfgs = [
        c
        for c in task_configs(problem, gen, len(gen_gpus), is_heterogeneous(problem, gen_gpus))
        if c.pp == 1
    ]
    shared = _shared_configs(problem, others, rest)
    if not gen_cfgs or not shared:
        return
    groups = [([gen.name], gen_gpus), ([t.name for t in others], rest)]

    def cost(gc: TaskConfig, oc: TaskConfig) -> float:
        return keep.offer(
            build_plan(problem, groups, {gen.name: gc, **{t.name: oc for t in others}})
        )

    best_g, best_o, best = gen_cfgs[0], None, float("inf")
    for oc in shared:  # the rest's first configuration that fits beside any generation config
        for gc in gen_cfgs:
            c = cost(gc, oc)
            yield
            if c < best:
                best, best_g, best_o = c, gc, oc
        if best_o is not None:
            break
    if best_o is None:
        return
    # generation with the rest fixed is swept in the loop above; now the rest, then generation
    for _ in range(2):
        for oc in shared:
            c = cost(best_g, oc)
            yield
            if c < best:
                best, best_o = c, oc
        for gc in gen_cfgs:
            c = cost(gc, best_o)
            yield
            if c < best:
                best, best_g = c, gc
