"""The best combination of one option per group (HetRL B.4 as ``costmodels.placement.judge``
reads it), shared by the ILP's incumbents and SHA-EA's exact Level 4 (§3.4, §3.5)."""

from __future__ import annotations

from typing import Any

from costmodels.placement.judge import StepShape
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import build_plan
from search.placement.options import GroupOption
from search.placement.pareto import pareto_pairs


def combine(
    options_per_group: list[list[GroupOption]], shape: StepShape, sync_s: float
) -> tuple[float, list[GroupOption]] | None:
    """Best choice of one option per group: iteration time (HetRL B.4 as ``cost`` reads it) and
    the options. ``sync_s`` is max_z (A_z + F_z) of C_sync, fixed by the groups' compositions
    (0 when synchronous generation shares its group with actor training: C_reshard)."""
    states: list[tuple[tuple[float, ...], list[GroupOption]]] = [((0.0, 0.0, 0.0, 0.0, 0.0), [])]
    for opts in options_per_group:
        if not opts:
            return None
        merged = []
        for (g, i, t, x, b), chosen in states:
            for o in opts:
                merged.append(
                    (
                        (g + o.gen, max(i, o.inf), max(t, o.trn), x + o.xfer, b + o.busy),
                        [*chosen, o],
                    )
                )
        states = pareto_pairs(merged)
    best = None
    for (g, i, t, x, b), chosen in states:
        total = shape.core(g, i, t, b) + x + sync_s
        if best is None or total < best[0]:
            best = (total, chosen)
    return best


def plan_of(
    problem: PlacementProblem, classes: list[tuple[str, list[str]]], chosen: list[GroupOption]
) -> PlacementPlan:
    """The plan of one option per group: each group takes the next GPUs of each class it uses,
    in order (the canonical layout its option was costed on; ``classes`` as
    ``costmodels.placement.space.node_classes`` gives them)."""
    used = [0] * len(classes)
    groups: list[tuple[list[str], list[str]]] = []
    configs: dict[str, Any] = {}
    for o in chosen:
        gpus = []
        for k, n in enumerate(o.comp):
            gpus.extend(classes[k][1][used[k] : used[k] + n])
            used[k] += n
        groups.append((list(o.tasks), gpus))
        configs.update(o.configs)
    return build_plan(problem, groups, configs)
