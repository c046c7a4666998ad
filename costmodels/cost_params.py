"""The knobs of the per-strategy cost model (HetRL Appendix B as ``costmodels.placement.judge``
departs from it): shared by every problem whose step has training and log-prob passes, which
``costmodels.replica_cost`` costs (placement's judge, the rollout and co-scheduling problems'
training stage, ``costmodels.rl_training``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from costmodels.efficiency import Efficiency

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class CostParams(BaseModel):
    """Knobs of the analytic cost model; they travel with a plan so it can be re-checked.

    Peaks are derated by the project's one :class:`~costmodels.efficiency.Efficiency` (the same
    defaults as ``rlplan estimate`` and the generation simulator). Memory follows Megatron's
    mixed-precision Adam with the distributed optimizer: BF16 weights (2 B/param), FP32 gradients
    (4 B/param, also what the DP all-reduce sends) and FP32 master weights + Adam moments
    (12 B/param) sharded over DP. ``decode_model="hetrl"`` and ``group_aware_overlap=False``
    reproduce HetRL Appendix B's literal terms (see ``costmodels.placement.judge``).
    """

    model_config = _STRICT

    efficiency: Efficiency = Field(default_factory=Efficiency)
    memory_reserve_gb: float = Field(
        default=1.0, ge=0, description="per-GPU memory kept for the runtime"
    )
    grad_bytes_per_param: float = Field(default=4.0, ge=0)
    optimizer_bytes_per_param: float = Field(default=12.0, ge=0)
    distributed_optimizer: bool = True
    group_aware_overlap: bool = Field(
        default=True,
        description=(
            "tasks on disjoint GPU groups run fully in parallel and tasks sharing GPUs add up (eta "
            "within a group); false: HetRL's literal global eta and async max(generation, training)"
        ),
    )
    decode_model: Literal["physical", "hetrl"] = Field(
        default="physical",
        description=(
            "physical: the project's decode step (weights + KV reads, compute roofline, pipelined "
            "micro-batches); hetrl: Appendix B.2's weights-only term, to reproduce the paper"
        ),
    )
    share_prompt_prefill: bool = Field(
        default=True,
        description=(
            "responses of one prompt share its prefill (prefix KV), as GRPO/PPO groups do in vLLM"
        ),
    )
    generation_scale: float = Field(
        default=1.0,
        gt=0,
        le=10,
        description=(
            "generation's time multiplied by this: what rollout knobs do to it, as a job plan's "
            "joint search sets it (costmodels.job); 1: the judge's generation as it is"
        ),
    )
