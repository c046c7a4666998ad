"""The shape of a co-scheduling plan (RollMux §4.1): disjoint co-execution groups covering every
job, each with its rollout and training nodes and each member's pinned rollout nodes
(``costmodels.cosched.group``'s module doc)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from costmodels.cosched.problem import _STRICT


class Member(BaseModel):
    """A job in a group and the group-local rollout nodes it is pinned to."""

    model_config = _STRICT

    name: str
    rollout: list[int] = Field(default_factory=list)


class Group(BaseModel):
    model_config = _STRICT

    rollout_nodes: int = Field(ge=0)
    train_nodes: int = Field(ge=1)
    colocated: bool = False
    jobs: list[Member] = Field(min_length=1)


class CoschedulePlan(BaseModel):
    """Disjoint co-execution groups covering every job (RollMux §4.1)."""

    model_config = _STRICT

    groups: list[Group] = Field(default_factory=list)
