"""The rollout problem (RollPacker, issue 15): one synchronous GRPO job, choose its rollout plan.

The problem file holds the workload (``costmodels.rollout.workload.RolloutWorkload``) and the seed
of the epoch the judge replays (the prompts' difficulties and every draw hang on it, so two plans
are compared on the same epoch). Simulated epochs are cached per plan's rollout knobs
(``RolloutPlan.rollout_key``): plans that differ only in reward or training knobs share one.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import get_gpu, get_model
from costmodels.errors import SpecError
from costmodels.rollout.workload import RolloutWorkload

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
CACHE_EPOCHS = 256


class JobSpec(BaseModel):
    """The ``job`` input: a workload and the epoch's seed."""

    model_config = _STRICT

    name: str = ""
    description: str = ""
    workload: RolloutWorkload
    seed: int = Field(default=0, ge=0, le=2**32 - 1, description="seed of the epoch the plans are judged on")

    def check(self) -> None:
        wl = self.workload
        for name, get in (("model", get_model), ("gpu", get_gpu)):
            try:
                get(getattr(wl, name))
            except SpecError as exc:
                raise SpecError(f"workload.{name}", getattr(wl, name), exc.reason) from None
        try:
            get_model(wl.reward.judge_worker.model)
        except SpecError as exc:
            raise SpecError("workload.reward.judge_worker.model", wl.reward.judge_worker.model, exc.reason) from None
        if wl.gpus % wl.gpus_per_node and wl.gpus > wl.gpus_per_node:
            raise SpecError("workload.gpus", wl.gpus, f"not whole servers of {wl.gpus_per_node} GPUs")
        if wl.training.replica_gpus > wl.gpus:
            raise SpecError("workload.training.replica_gpus", wl.training.replica_gpus, f"more than the job's {wl.gpus} GPUs")
        from costmodels.rollout.plan import rollout_tps

        if not rollout_tps(wl):
            raise SpecError("workload.max_response", wl.max_response,
                            f"{wl.model} on {wl.gpu} has no TP inside a {wl.gpus_per_node}-GPU server with KV room for a response this long")


@dataclass(frozen=True, eq=False)
class RolloutProblem:
    """Plan one job's rollout (module doc)."""

    job: JobSpec
    kind: str = field(default="rollout", init=False)

    @property
    def workload(self) -> RolloutWorkload:
        return self.job.workload

    @property
    def seed(self) -> int:
        return self.job.seed

    def epoch(self, plan: Any) -> Any:
        """The plan's simulated epoch, cached on its rollout knobs."""
        from costmodels.rollout.plan import simulate

        cache: OrderedDict[Any, Any] = self.__dict__.setdefault("_epochs", OrderedDict())
        key = plan.rollout_key()
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        epoch = simulate(self.workload, plan, self.seed)
        cache[key] = epoch
        if len(cache) > CACHE_EPOCHS:
            cache.popitem(last=False)
        return epoch

    def to_inputs(self) -> dict[str, Any]:
        return {"job": self.job.model_dump(mode="json")}
