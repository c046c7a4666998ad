"""The shape of a weight-sync broadcast schedule (OrchestrRL App. E;
``costmodels.broadcast.problem``'s module doc): Phase A's waves of inter-PoD edges, Phase B's
intra-PoD fan-out trees."""

from __future__ import annotations

from pydantic import BaseModel, Field

from costmodels.broadcast.problem import _STRICT


class Edge(BaseModel):
    model_config = _STRICT

    src: str
    dst: str
    shard: int = Field(ge=0)
    circuits: int = Field(ge=1)


class Wave(BaseModel):
    model_config = _STRICT

    edges: list[Edge] = Field(min_length=1)


class FanoutTree(BaseModel):
    """Phase B: ``seed`` sends ``shards`` to every other rank of its PoD."""

    model_config = _STRICT

    seed: str
    shards: list[int]


class BroadcastPlan(BaseModel):
    model_config = _STRICT

    phase_a: list[Wave] = Field(default_factory=list)
    phase_b: list[FanoutTree] = Field(default_factory=list)
