"""The placement problem of HetRL §3.1 (Definition 1): place an RL workflow's tasks on a
heterogeneous cluster, under the cost model's parameters and, optionally, a framework target. Its
plans are ``costmodels.placement.plan``'s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from costmodels.cluster import ClusterSpec, Topology, build_topology
from costmodels.efficiency import Efficiency
from costmodels.workflow import Task, WorkflowSpec

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


class FrameworkTarget(BaseModel):
    """The framework the plan must run in (``--target``): every solver then searches only the
    plans it can run (``costmodels.placement.frameworks``). ``None``: rlplan's whole space."""

    model_config = _STRICT

    framework: Literal["verl", "roll"] | None = Field(
        default=None,
        description=(
            "verl or roll: restrict the placement space to plans that framework runs as planned"
        ),
    )


@dataclass(frozen=True, eq=False)
class PlacementProblem:
    """Place an RL workflow on a heterogeneous cluster (HetRL Definition 1)."""

    cluster: ClusterSpec
    workflow: WorkflowSpec
    params: CostParams = field(default_factory=CostParams)
    target: FrameworkTarget = field(default_factory=FrameworkTarget)
    kind: str = field(default="placement", init=False)
    topology: Topology = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "topology", build_topology(self.cluster))

    @property
    def tasks(self) -> tuple[Task, ...]:
        return self.workflow.tasks()

    def to_inputs(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster.model_dump(mode="json"),
            "workflow": self.workflow.model_dump(mode="json"),
            "params": self.params.model_dump(mode="json"),
            **(
                {"target": self.target.model_dump(mode="json")}
                if self.target.framework is not None
                else {}
            ),
        }
