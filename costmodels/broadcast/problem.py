"""Weight-sync broadcast over OCS circuits (OrchestrRL App. E): the problem, and the model its
schedules (``plan``), cost (``judge``) and validator (``check``) share.

Training PoDs hold the new weights as ``holders`` shards (shard i on holder i, weights_gb / H each).
Every rank of every generation PoD needs every shard. A schedule has two parts:

* Phase A (E.1): waves of inter-PoD point-to-point transfers (``Edge``: one shard from an endpoint
  that holds it to an endpoint in another PoD, over ``circuits`` parallel OCS-Core circuits).
  Within a wave, the circuits incident to PoD p (counted at both ends) must not exceed its
  boundary budget d_p. A wave lasts the OCS reconfiguration delay plus its slowest edge,
  max S / (c * B_link); T_A = sum over waves.
* Phase B (E.2): inside each generation PoD, each seed fans the shards it received out to the
  PoD's other ranks over the intra-PoD fabric (OCS-Agg / rack EPS) with a pipelined tree; seeds
  work in parallel on disjoint shard sets, so T_B = max over PoDs and seeds.

A naive one-to-all schedule is Phase A only, every rank fetched directly (each from a holder).
Endpoints are named ``POD/RANK`` (rank 0-based).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import ocs_devices
from costmodels.errors import SpecError, refuse_repeated_names
from costmodels.limits import (
    BROADCAST_RANK_BYTES,
    MAX_BROADCAST_RANKS,
    MAX_BYTES,
    MAX_LINK_GBPS,
    MIN_RATE,
    check_memory,
)

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class BroadcastPod(BaseModel):
    model_config = _STRICT

    name: str = Field(min_length=1, pattern=r"^[^/]+$")
    role: Literal["train", "gen"]
    ranks: int = Field(
        ge=1, le=1_000_000, description="endpoints (GPU NICs / servers) in the PoD (at most 10^6)"
    )
    budget: int = Field(
        ge=1,
        le=4096,
        description=(
            "d_p: concurrently active inter-PoD circuits incident to the PoD (at most 4 096)"
        ),
    )
    holders: int = Field(
        default=0,
        ge=0,
        le=65536,
        description="train PoDs: ranks holding one weight shard each (at most 65 536)",
    )


class BroadcastSpec(BaseModel):
    model_config = _STRICT

    name: str = ""
    description: str = ""
    weights_gb: float = Field(
        gt=0, le=MAX_BYTES / 1e9, description="model weights to disseminate, GB"
    )
    link_gbps: float = Field(
        ge=MIN_RATE, le=MAX_LINK_GBPS, description="OCS-Core circuit line rate, Gbit/s"
    )
    intra_gbps: float = Field(
        ge=MIN_RATE, le=MAX_LINK_GBPS, description="per-rank intra-PoD fan-out link rate, Gbit/s"
    )
    seeds_per_pod: int = Field(default=1, ge=1)
    chunks: int = Field(default=64, ge=1, description="pipelining chunks of the Phase B trees")
    ocs_device: str = "piezo"
    pods: list[BroadcastPod] = Field(min_length=2)

    def check(self) -> None:
        refuse_repeated_names((p.name for p in self.pods), "pods[{}].name", "duplicate PoD name")
        # every rank becomes endpoints, sets and lines of the plan's check: sized before work
        total = sum(p.ranks for p in self.pods)
        if total > MAX_BROADCAST_RANKS:
            raise SpecError(
                "pods.ranks",
                f"{total:,} in total",
                f"at most {MAX_BROADCAST_RANKS:,} ranks over all PoDs",
            )
        check_memory("pods.ranks", f"{total:,} in total", total, BROADCAST_RANK_BYTES, "ranks")
        for i, p in enumerate(self.pods):
            if p.holders > p.ranks:
                raise SpecError(
                    f"pods[{i}].holders", p.holders, f"more shard holders than ranks ({p.ranks})"
                )
            if p.role == "gen" and p.holders:
                raise SpecError(
                    f"pods[{i}].holders",
                    p.holders,
                    "generation PoDs hold no shards before the sync",
                )
            if p.role == "gen" and self.seeds_per_pod > p.ranks:
                raise SpecError(
                    "seeds_per_pod", self.seeds_per_pod, f"PoD {p.name} has only {p.ranks} ranks"
                )
        if not any(p.role == "train" and p.holders for p in self.pods):
            raise SpecError("pods", None, "needs a train PoD with holders >= 1")
        if not any(p.role == "gen" for p in self.pods):
            raise SpecError("pods", None, "needs at least one gen PoD")
        if self.ocs_device not in ocs_devices():
            raise SpecError(
                "ocs_device",
                self.ocs_device,
                f"unknown OCS technology; known: {', '.join(ocs_devices())}",
            )

    def holders(self) -> list[str]:
        """Shard i is held by the i-th entry (train PoDs in order, ranks 0.. holders-1)."""
        return [f"{p.name}/{r}" for p in self.pods if p.role == "train" for r in range(p.holders)]

    def shard_gb(self) -> float:
        return self.weights_gb / len(self.holders())

    def reconfig_s(self) -> float:
        return ocs_devices()[self.ocs_device].reconfig_delay_ms / 1e3


@dataclass(frozen=True, eq=False)
class BroadcastProblem:
    spec: BroadcastSpec
    kind: str = field(default="broadcast", init=False)

    def to_inputs(self) -> dict[str, Any]:
        return {"sync": self.spec.model_dump(mode="json")}


def pod_of(endpoint: str) -> str:
    return endpoint.split("/", 1)[0]
