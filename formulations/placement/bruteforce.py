"""Brute-force enumeration of rlplan's placement space (``costmodels.placement.space``).

Every task grouping, every per-node GPU composition of every group, every task configuration:
each plan is built, validated and scored by the full cost model. It is the ground truth the exact
ILP is tested against on instances small enough to enumerate; ``max_plans`` refuses the rest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Annotated

from pydantic import Field

from costmodels.combinatorics import set_partitions
from costmodels.placement.frameworks import rules_of
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import (
    build_plan,
    compositions,
    is_heterogeneous,
    node_classes,
    placement_keeper,
    task_configs,
)
from costmodels.solving import Deadline, SolverOutput, Status


def allocate(
    classes: list[tuple[str, list[str]]], comps: list[tuple[int, ...]]
) -> list[list[str]] | None:
    """Concrete GPUs for groups with per-class counts ``comps`` (None if over capacity)."""
    used = [0] * len(classes)
    out = []
    for comp in comps:
        gpus = []
        for k, n in enumerate(comp):
            if used[k] + n > len(classes[k][1]):
                return None
            gpus.extend(classes[k][1][used[k] : used[k] + n])
            used[k] += n
        out.append(gpus)
    return out


def _partitions(problem: PlacementProblem) -> list[list[list[str]]]:
    """Every task grouping; with a framework target, those it runs (the validator rejects the
    rest anyway: this only spares building them)."""
    rules = rules_of(problem)
    return [
        part
        for part in set_partitions([t.name for t in problem.tasks])
        if rules is None or rules.admits_grouping(problem, part)
    ]


def count_plans(problem: PlacementProblem, stop_above: float = math.inf) -> int:
    """How many plans :func:`solve_placement_bruteforce` would enumerate; counting stops as soon
    as the count passes ``stop_above`` (a 64-GPU cluster has more compositions than a count
    could ever finish)."""
    classes = node_classes(problem)
    cap = [len(g) for _, g in classes]
    tasks = {t.name: t for t in problem.tasks}
    comps_count = math.prod(k + 1 for k in cap) - 1  # the one-group partition alone has this many
    if comps_count > stop_above:
        return comps_count
    total = 0
    for partition in _partitions(problem):
        for comps in itertools.product(list(compositions(cap)), repeat=len(partition)):
            groups = allocate(classes, list(comps))
            if groups is None:
                continue
            n = 1
            for names, gpus in zip(partition, groups, strict=True):
                het = is_heterogeneous(problem, gpus)
                for name in names:
                    n *= len(task_configs(problem, tasks[name], len(gpus), het))
            total += n
            if total > stop_above:
                return total
    return total


def placements(problem: PlacementProblem) -> Iterator[PlacementPlan]:
    """Every plan of the space, in enumeration order (task groupings, then per-node GPU
    compositions, then task configurations), built but not validated."""
    classes = node_classes(problem)
    cap = [len(g) for _, g in classes]
    tasks = {t.name: t for t in problem.tasks}
    for partition in _partitions(problem):
        for comps in itertools.product(list(compositions(cap)), repeat=len(partition)):
            groups = allocate(classes, list(comps))
            if groups is None:
                continue
            choices = []
            for names, gpus in zip(partition, groups, strict=True):
                het = is_heterogeneous(problem, gpus)
                for name in names:
                    choices.append(
                        [(name, c) for c in task_configs(problem, tasks[name], len(gpus), het)]
                    )
            for combo in itertools.product(*choices):
                yield build_plan(problem, list(zip(partition, groups, strict=True)), dict(combo))


def solve_placement_bruteforce(
    problem: PlacementProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    max_plans: Annotated[int, Field(ge=1, description="refuse spaces larger than this")] = 200_000,
) -> SolverOutput:
    """Enumerate the whole space; optimal by exhaustion."""
    del seed
    deadline = Deadline(time_limit)
    total = count_plans(problem, stop_above=max_plans)
    if total > max_plans:
        return SolverOutput(
            Status.NO_SOLUTION,
            message=f"more than {max_plans} plans (max_plans); brute force is for tiny instances",
        )
    keep = placement_keeper(problem, tol=1e-12)  # ties keep the first plan in enumeration order
    for plan in placements(problem):
        if deadline.expired():
            status = Status.FEASIBLE if keep.plan is not None else Status.NO_SOLUTION
            return SolverOutput(
                status,
                plan=keep.plan,
                objective=keep.best if keep.plan else None,
                message=f"time limit after {keep.offered} of {total} plans",
                stats={"plans": keep.offered, "valid": keep.offered - keep.rejected},
            )
        keep.offer(plan)
    stats = {"plans": keep.offered, "valid": keep.offered - keep.rejected}
    if keep.plan is None:
        return SolverOutput(
            Status.INFEASIBLE, message="no plan in the space fits in memory", stats=stats
        )
    return SolverOutput(
        Status.OPTIMAL,
        plan=keep.plan,
        objective=keep.best,
        bound=keep.best,
        message=f"exhaustive over {keep.offered} plans"
        + (
            f" that {problem.target.framework} runs (--target)"
            if problem.target.framework is not None
            else ""
        ),
        stats=stats,
    )
