"""The plan of OrchestrRL Eq. 1 (§4.1): Y and X, the new instances and the bin counts each runs;
and how a plan reads against its problem (x_jb as an array, each node's layout)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from costmodels.replan.layouts import Slot
from costmodels.replan.problem import _STRICT, CurrentInstance, ReplanProblem


class NewInstance(BaseModel):
    """An instance of the plan: TP ``tp`` on GPUs ``gpu .. gpu + tp - 1`` of ``node`` and the
    requests it runs as ``[bin upper bound, count]`` pairs."""

    model_config = _STRICT

    node: int = Field(ge=0)
    gpu: int = Field(ge=0)
    tp: int = Field(ge=1)
    bins: list[tuple[int, int]] = Field(default_factory=list)


class ReplanPlan(BaseModel):
    """Y and X of Eq. 1: the new instances and the bin counts each runs."""

    model_config = _STRICT

    instances: list[NewInstance] = Field(default_factory=list)


def to_plan(
    problem: ReplanProblem, chosen: Sequence[Slot | CurrentInstance], x: np.ndarray
) -> ReplanPlan:
    """The plan that runs ``x[j]`` (requests per bin) on instance ``chosen[j]``."""
    return ReplanPlan(
        instances=[
            NewInstance(
                node=s.node,
                gpu=s.gpu,
                tp=s.tp,
                bins=[(problem.bins[b].upper, int(x[j, b])) for b in np.flatnonzero(x[j])],
            )
            for j, s in enumerate(chosen)
        ]
    )


def current_plan(problem: ReplanProblem) -> ReplanPlan:
    """The current configuration and assignment, unchanged (Algorithm 1's C_cur)."""
    return to_plan(problem, problem.spec.instances, problem.resident)


def plan_counts(problem: ReplanProblem, plan: ReplanPlan) -> np.ndarray:
    """x_jb as an array (instances x bins); unknown bins raise KeyError."""
    index = {b.upper: i for i, b in enumerate(problem.bins)}
    x = np.zeros((len(plan.instances), len(problem.bins)), dtype=np.int64)
    for j, inst in enumerate(plan.instances):
        for u, c in inst.bins:
            x[j, index[u]] += c
    return x


def layout_choice(problem: ReplanProblem, plan: ReplanPlan) -> list[int | None]:
    """Each node's layout index in ``problem.layouts(node)``, None where its instances are none of
    them."""
    mine: dict[int, list[tuple[int, int]]] = {}
    for i in plan.instances:
        mine.setdefault(i.node, []).append((i.gpu, i.tp))
    out: list[int | None] = []
    for n in range(problem.spec.nodes):
        slots_n = tuple(sorted(mine.get(n, [])))
        out.append(
            next((k for k, lay in enumerate(problem.layouts(n)) if lay.slots == slots_n), None)
        )
    return out


def layout_names(problem: ReplanProblem, plan: ReplanPlan) -> list[str]:
    """Each node's layout name (``off``, ``keep``, ``tpT``) or ``invalid``."""
    return [
        problem.layouts(n)[k].name if k is not None else "invalid"
        for n, k in enumerate(layout_choice(problem, plan))
    ]
