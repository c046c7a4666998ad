"""The rollout problem (RollPacker §3-§4): one synchronous GRPO job, choose its rollout plan.

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
from costmodels.limits import REQUEST_BYTES, check_memory
from costmodels.rollout.workload import RolloutWorkload

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
CACHE_EPOCHS = 256


class JobSpec(BaseModel):
    """The ``job`` input: a workload and the epoch's seed."""

    model_config = _STRICT

    name: str = ""
    description: str = ""
    workload: RolloutWorkload
    seed: int = Field(
        default=0, ge=0, le=2**32 - 1, description="seed of the epoch the plans are judged on"
    )

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
            raise SpecError(
                "workload.reward.judge_worker.model", wl.reward.judge_worker.model, exc.reason
            ) from None
        if wl.gpus % wl.gpus_per_node and wl.gpus > wl.gpus_per_node:
            raise SpecError(
                "workload.gpus", wl.gpus, f"not whole servers of {wl.gpus_per_node} GPUs"
            )
        if wl.training.replica_gpus > wl.gpus:
            raise SpecError(
                "workload.training.replica_gpus",
                wl.training.replica_gpus,
                f"more than the job's {wl.gpus} GPUs",
            )
        if wl.lengths.median > wl.max_response:
            raise SpecError(
                "workload.lengths.median",
                wl.lengths.median,
                f"above max_response ({wl.max_response} tokens): the median response cannot be "
                "longer than the cap every response is cut at",
            )
        sandbox = wl.reward.sandbox_worker
        if sandbox.min_timeout_s > sandbox.max_timeout_s:
            raise SpecError(
                "workload.reward.sandbox_worker.min_timeout_s",
                sandbox.min_timeout_s,
                f"T_min above T_max ({sandbox.max_timeout_s:g} s): the adaptive timeout "
                "min(max(T_min, λ a), T_max) would be T_max always",
            )
        # a speculative round launches up to eta_P x eta_R (4 x 4, RolloutPlan's caps) times the
        # step's responses, each a request the simulator holds
        check_memory(
            "workload.prompts_per_step",
            wl.prompts_per_step,
            16 * wl.prompts_per_step * wl.responses_per_prompt,
            REQUEST_BYTES,
            "requests in the largest speculative round",
        )
        from costmodels.rollout.replay import rollout_tps

        allowed = rollout_tps(wl)
        if not allowed:
            raise SpecError(
                "workload.max_response",
                wl.max_response,
                f"{wl.model} on {wl.gpu} has no TP inside a {wl.gpus_per_node}-GPU server with KV "
                "room for a response this long",
            )
        if wl.tp not in allowed:
            raise SpecError(
                "workload.tp",
                wl.tp,
                f"TP is one of {', '.join(map(str, allowed))} for {wl.model} on {wl.gpus} x "
                f"{wl.gpu}: "
                f"inside a {wl.gpus_per_node}-GPU server, splitting the heads and the GPUs, with "
                "KV room for a longest response",
            )


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
        from costmodels.rollout.replay import simulate

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
