"""Level 4's records (HetRL §3.4, §3.5): a task's candidate configuration on a GPU group, a
partial combination of co-located tasks' candidates, and a group option, the Pareto-optimal way
to run a task subset on a composition (``search.placement.group_options``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from costmodels.placement.judge import phi
from costmodels.placement.space import TaskConfig
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING, TaskKind


@dataclass
class Candidate:
    cfg: TaskConfig
    time: float
    model: np.ndarray
    working: np.ndarray
    ag_min: float = 0.0
    ag_max: float = 0.0
    #: generation with dbs "as many as fit": its time depends on the group's other residents, so
    #: it is costed when merged (last) into a combination, never compared on its own
    deferred: bool = False


@dataclass
class GroupOption:
    """One way to run a task subset on a composition. ``busy`` is what keeps generation's GPUs
    busy (generation plus the group's inference and training phases; 0 without generation);
    ``xfer`` the group's own weight-transfer share (C_reshard, or the training all-gather of
    C_sync); ``fanout`` F_z per zone of the group's generation GPUs (C_sync; none for C_reshard).
    ``joint``, on a relaxed option of a group without generation only: a lower bound on the
    group's inference + training phases together (``GroupOptions.bound_option``), which the
    separate bounds on each may miss; 0 says nothing."""

    tasks: tuple[str, ...]
    comp: tuple[int, ...]
    configs: dict[str, TaskConfig]
    gen: float
    inf: float
    trn: float
    xfer: float
    busy: float = 0.0
    fanout: dict[str, float] | None = None
    joint: float = 0.0


@dataclass
class CandidateTable:
    """A task's candidates on one composition as arrays (rows: candidates; model and working
    per GPU of the composition); ``time`` is a deferred candidate's floor alone."""

    cands: list[Candidate]
    time: np.ndarray
    model: np.ndarray
    working: np.ndarray
    ag_min: np.ndarray
    ag_max: np.ndarray
    deferred: np.ndarray


@dataclass
class Partial:
    """A partial combination of task configurations on one composition."""

    key: tuple[float, ...]  # gen, inf_max, inf_sum, trn_max, trn_sum, ag_min, ag_max
    model: np.ndarray
    working: np.ndarray
    configs: dict[str, TaskConfig]

    @staticmethod
    def empty(n: int) -> Partial:
        return Partial((0.0,) * 7, np.zeros(n), np.zeros(n), {})

    def add(self, name: str, kind: TaskKind, c: Candidate) -> Partial:
        return Partial(
            added_key(self.key, name, kind, c),
            self.model + c.model,
            np.maximum(self.working, c.working),
            {**self.configs, name: c.cfg},
        )

    def with_key(self, key: tuple[float, ...]) -> Partial:
        """This combination with its metrics replaced by ``key``, for a bound test before the
        combination it stands for is built (its memory is not added: the test reads phases
        only)."""
        return Partial(key, self.model, self.working, self.configs)

    def with_generation(self, time: float) -> Partial:
        """This combination's phases with generation at ``time``, for a bound test before a
        generation candidate is costed (:meth:`with_key`)."""
        return self.with_key((time, *self.key[1:]))

    def phases(self, eta: float) -> tuple[float, float, float]:
        """(generation, Φ_η inference, Φ_η training) of the combination so far."""
        gen, imax, isum, tmax, tsum, *_ = self.key
        return gen, eta * imax + (1 - eta) * isum, eta * tmax + (1 - eta) * tsum

    def option(
        self, subset: tuple[str, ...], comp: tuple[int, ...], wf: Any, fanout: dict[str, float]
    ) -> GroupOption:
        """The group option of this combination (``fanout``: F_z of the group's GPUs)."""
        *_, agn, agx = self.key
        gen, inf, trn = self.phases(wf.eta)
        has_gen, has_train = ACTOR_GENERATION in subset, ACTOR_TRAINING in subset
        if has_gen and has_train and not wf.overlaps:
            xfer, fan = agx, None  # C_reshard
        elif has_train:
            xfer, fan = agn, (fanout if has_gen else None)
        else:
            xfer, fan = 0.0, (fanout if has_gen else None)
        busy = gen + inf + trn if has_gen else 0.0
        return GroupOption(subset, comp, dict(self.configs), gen, inf, trn, xfer, busy, fan)


def added_key(key: tuple[float, ...], name: str, kind: TaskKind, c: Candidate) -> tuple[float, ...]:
    """The metrics (:attr:`Partial.key`) of a combination of metrics ``key`` once task ``name``
    of ``kind`` joins it as candidate ``c``: generation's time, inference's and training's
    largest and sum, and the actor's all-gather range."""
    gen, imax, isum, tmax, tsum, agn, agx = key
    if kind is TaskKind.GENERATION:
        gen = c.time
    elif kind is TaskKind.INFERENCE:
        imax, isum = max(imax, c.time), isum + c.time
    else:
        tmax, tsum = max(tmax, c.time), tsum + c.time
    if name == ACTOR_TRAINING:
        agn, agx = c.ag_min, c.ag_max
    return (gen, imax, isum, tmax, tsum, agn, agx)


def group_phases(
    kinds: list[TaskKind], times: list[float], eta: float
) -> tuple[float, float, float]:
    """(generation, Φ_η inference, Φ_η training) of co-located tasks of these kinds and times."""
    gen = sum(x for x, k in zip(times, kinds, strict=True) if k is TaskKind.GENERATION)
    inf = phi([x for x, k in zip(times, kinds, strict=True) if k is TaskKind.INFERENCE], eta)
    trn = phi([x for x, k in zip(times, kinds, strict=True) if k is TaskKind.TRAINING], eta)
    return gen, inf, trn
