"""One task's cost C^t under one placement (HetRL Appendix B.2-B.3), with its components; and
for generation "as many as fit", its dbs per replica and a lower bound on its time (what Level 4's
search, ``search.placement``, costs candidates with)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from costmodels.placement.decode_cost import GenerationCoster
from costmodels.placement.plan import TaskPlacement
from costmodels.placement.problem import PlacementProblem
from costmodels.replica_cost import TaskCoster
from costmodels.workflow import Task, TaskKind


def task_cost(
    problem: PlacementProblem,
    task: Task,
    tp_: TaskPlacement,
    mem: dict[int, dict[str, float]] | None = None,
) -> tuple[dict[str, Any], bool]:
    """One task's cost C^t with its components (HetRL B.2-B.3) and whether its rings are exact.
    ``mem`` (the plan's per-GPU memory) is needed only by generation without ``decode_batch``."""
    coster = (GenerationCoster if task.kind is TaskKind.GENERATION else TaskCoster)(
        problem, task, tp_, mem
    )
    return coster_cost(coster), coster.exact


def coster_cost(coster: TaskCoster) -> dict[str, Any]:
    """:func:`task_cost`'s components from a coster built for it (the search reads a
    generation coster's dbs before deciding to cost it: ``search.placement.candidates``)."""
    cost = coster.cost()
    scale = coster.problem.params.generation_scale
    if coster.task.kind is TaskKind.GENERATION and scale != 1.0:
        cost = {**cost, "time_s": cost["time_s"] * scale, "generation_scale": scale}
    return cost


def generation_floor(
    problem: PlacementProblem, task: Task, tp_: TaskPlacement, mem: dict[int, dict[str, float]]
) -> float:
    """A lower bound on generation's time under ``tp_`` with ``decode_batch`` None whenever its
    GPUs hold at least the residents of ``mem``: more residents leave room for fewer sequences
    (dbs <= the dbs ``mem`` allows), and :meth:`GenerationCoster.decode_floor` bounds every such
    dbs; prefill does not depend on dbs. Under ``decode_model="hetrl"`` the time is
    non-increasing in dbs, so the time at the largest dbs is the bound."""
    return coster_floor(GenerationCoster(problem, task, tp_, mem))


def coster_floor(coster: GenerationCoster) -> float:
    """:func:`generation_floor` from a generation coster built for it."""
    problem = coster.problem
    scale = problem.params.generation_scale  # task_cost's scale: the floor scales with the cost
    if not FloorKernel.applies(problem):
        return coster.cost()["time_s"] * scale
    cost = coster.cost(prefill_only=True)  # the decode model itself is what the floor replaces
    return _floor(coster, cost["prefill_times_s"], cost["decode_batch"])


def _floor(coster: GenerationCoster, prefill: list[float], dbs: Sequence[int]) -> float:
    """max over replicas of prefill + the decode floor at the replica's dbs, scaled."""
    wf = coster.problem.workflow
    worst = 0.0
    for i, replica in enumerate(coster.idx):
        samples = wf.samples * coster.shares[i]
        decode = (
            coster.decode_floor(replica, math.ceil(samples - 1e-9), dbs[i]) if samples > 0 else 0.0
        )
        worst = max(worst, prefill[i] + decode)
    return worst * coster.problem.params.generation_scale


class FloorKernel:
    """:func:`coster_floor` of one layout beside any resident set, its prefill taken once.

    Under the physical decode model prefill does not read the residents (its memo entries are
    keyed without dbs, ``TaskCoster.cost``), only the decode floor does, through each replica's
    dbs; so the coster and its prefill times are kept and each resident set costs its dbs and
    the (memoised) floors alone, the same numbers :func:`coster_floor` gives."""

    def __init__(self, coster: GenerationCoster):
        self.coster = coster
        self._prefill: list[float] | None = None

    @staticmethod
    def applies(problem: PlacementProblem) -> bool:
        """Whether the kernel's shortcut holds: HetRL's literal decode reads dbs in prefill."""
        return problem.params.decode_model != "hetrl"

    def dbs(self, mem: dict[int, dict[str, float]]) -> tuple[int, ...]:
        """Each replica's dbs beside the residents of ``mem``, which the next :meth:`floor`
        reads."""
        self.coster.reside(mem)
        return self.coster.replica_dbs()

    def floor(self) -> float:
        """:func:`coster_floor` beside the residents :meth:`dbs` last read."""
        if self._prefill is None:
            self._prefill = self.coster.cost(prefill_only=True)["prefill_times_s"]
        return _floor(self.coster, self._prefill, self.coster.replica_dbs())
