"""The shape of a placement plan (HetRL §3.1).

A plan partitions the workflow's tasks into task groups (Level 1), gives each group a disjoint
set of GPUs (Levels 2-3), gives each task a parallel strategy (TP, PP, DP; Level 4) and maps
every tasklet l^t_{i,j,k} (replica i, stage j, TP rank k) to one GPU (Level 5):
``devices[i][j][k]`` is that GPU's id (``<node>:<index>``).

Optional load balancing (HetRL §4.2): ``batch_shares[i]`` is replica i's share of the task's
samples (uneven local batch sizes) and ``layers_per_stage[j]`` is stage j's layer count (uneven
layer split); absent means even.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from costmodels.placement.problem import _STRICT


class TaskPlacement(BaseModel):
    """One task's parallel strategy and tasklet-to-GPU map ``devices[dp][pp][tp]``."""

    model_config = _STRICT

    task: str
    tp: int = Field(ge=1)
    pp: int = Field(ge=1)
    dp: int = Field(ge=1)
    devices: list[list[list[str]]]
    layers_per_stage: list[int] | None = None
    batch_shares: list[float] | None = None
    decode_batch: int | None = Field(
        default=None,
        ge=1,
        description=(
            "generation only: sequences in flight per replica (dbs; with PP, spread over up to PP "
            "micro-batches); their KV cache counts as working memory. When absent, dbs is the "
            "workflow's limit capped by the memory left beside the resident models."
        ),
    )

    def all_devices(self) -> list[str]:
        return [d for replica in self.devices for stage in replica for d in stage]


class TaskGroup(BaseModel):
    """Tasks co-located on one GPU group (HetRL Level 1-3)."""

    model_config = _STRICT

    tasks: list[str] = Field(min_length=1)
    devices: list[str] = Field(min_length=1)


class PlacementPlan(BaseModel):
    model_config = _STRICT

    groups: list[TaskGroup] = Field(min_length=1)
    tasks: list[TaskPlacement] = Field(min_length=1)

    def task(self, name: str) -> TaskPlacement:
        """The placement of task ``name`` (``KeyError`` if the plan has none)."""
        return {t.task: t for t in reversed(self.tasks)}[name]  # the first, as listed

    def group_of(self) -> dict[str, int]:
        return {task: gi for gi, g in enumerate(self.groups) for task in g.tasks}
