"""Weight-sync broadcast over OCS circuits: problem, schedule, cost and validator (OrchestrRL App.
E).

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
from costmodels.limits import MAX_BYTES, MAX_LINK_GBPS
from costmodels.violations import Violation
from costmodels.weight_sync import pipelined_broadcast_s

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
        gt=0, le=MAX_LINK_GBPS, description="OCS-Core circuit line rate, Gbit/s"
    )
    intra_gbps: float = Field(
        gt=0, le=MAX_LINK_GBPS, description="per-rank intra-PoD fan-out link rate, Gbit/s"
    )
    seeds_per_pod: int = Field(default=1, ge=1)
    chunks: int = Field(default=64, ge=1, description="pipelining chunks of the Phase B trees")
    ocs_device: str = "piezo"
    pods: list[BroadcastPod] = Field(min_length=2)

    def check(self) -> None:
        refuse_repeated_names((p.name for p in self.pods), "pods[{}].name", "duplicate PoD name")
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


@dataclass(frozen=True, eq=False)
class BroadcastProblem:
    spec: BroadcastSpec
    kind: str = field(default="broadcast", init=False)

    def to_inputs(self) -> dict[str, Any]:
        return {"sync": self.spec.model_dump(mode="json")}


def pod_of(endpoint: str) -> str:
    return endpoint.split("/", 1)[0]


def edge_time_s(gb: float, circuits: int, link_gbps: float) -> float:
    return gb * 8 / (circuits * link_gbps)


def evaluate_broadcast(
    problem: BroadcastProblem, plan: BroadcastPlan
) -> tuple[float, dict[str, Any]]:
    s = problem.spec
    gb = s.shard_gb()
    waves = [
        s.reconfig_s() + max(edge_time_s(gb, e.circuits, s.link_gbps) for e in w.edges)
        for w in plan.phase_a
    ]
    ranks = {p.name: p.ranks for p in s.pods}
    phase_b = max(
        (
            pipelined_broadcast_s(
                gb * len(t.shards), ranks[pod_of(t.seed)] - 1, s.intra_gbps / 8, chunks=s.chunks
            )
            for t in plan.phase_b
            if t.shards
        ),
        default=0.0,
    )
    if plan.phase_b:
        phase_b += s.reconfig_s()  # OCS-Agg fan-out circuits are set up once, before Phase B
    total = sum(waves) + phase_b
    return total, {
        "total_s": total,
        "phase_a_s": sum(waves),
        "phase_b_s": phase_b,
        "waves": len(waves),
        "wave_s": waves,
        "inter_pod_edges": sum(len(w.edges) for w in plan.phase_a),
        "inter_pod_gb": gb * sum(len(w.edges) for w in plan.phase_a),
        "shard_gb": gb,
    }


def check_broadcast(problem: BroadcastProblem, plan: BroadcastPlan) -> list[Violation]:  # noqa: C901
    """Budgets per wave, sources that hold what they send, and every gen rank served."""
    s = problem.spec
    pods = {p.name: p for p in s.pods}
    out: list[Violation] = []
    held: dict[str, set[int]] = {h: {i} for i, h in enumerate(s.holders())}
    nshards = len(s.holders())

    def known(ep: str) -> bool:
        pod, _, rank = ep.partition("/")
        return pod in pods and rank.isdigit() and int(rank) < pods[pod].ranks

    for t, wave in enumerate(plan.phase_a):
        load: dict[str, int] = {}
        arrivals: list[tuple[str, int]] = []
        for e in wave.edges:
            where = f"wave {t}: {e.src} -> {e.dst} shard {e.shard}"
            if not (known(e.src) and known(e.dst)):
                out.append(Violation("endpoint", f"{where}: unknown endpoint"))
                continue
            if e.shard >= nshards:
                out.append(Violation("shard", f"{where}: there are only {nshards} shards"))
                continue
            if pod_of(e.src) == pod_of(e.dst):
                out.append(
                    Violation("inter-pod", f"{where}: Phase A edges cross PoDs (POD(u) != POD(v))")
                )
            if e.shard not in held.get(e.src, set()):
                out.append(
                    Violation(
                        "source",
                        f"{where}: the source does not hold the shard at the start of the wave",
                    )
                )
            for p in (pod_of(e.src), pod_of(e.dst)):
                load[p] = load.get(p, 0) + e.circuits
            arrivals.append((e.dst, e.shard))
        for p, n in sorted(load.items()):
            if n > pods[p].budget:
                out.append(
                    Violation(
                        "pod-budget",
                        f"wave {t}: PoD {p} has {n} active inter-PoD circuits, budget d_p = "
                        f"{pods[p].budget}",
                    )
                )
        for ep, shard in arrivals:
            held.setdefault(ep, set()).add(shard)
    served: dict[str, set[int]] = {ep: set(v) for ep, v in held.items()}
    for i, tree in enumerate(plan.phase_b):
        if not known(tree.seed):
            out.append(Violation("endpoint", f"phase_b[{i}]: unknown seed {tree.seed}"))
            continue
        missing = sorted(set(tree.shards) - held.get(tree.seed, set()))
        if missing:
            out.append(
                Violation(
                    "source",
                    f"phase_b[{i}]: seed {tree.seed} fans out shards {missing} it never received",
                )
            )
        pod = pod_of(tree.seed)
        for r in range(pods[pod].ranks):
            served.setdefault(f"{pod}/{r}", set()).update(tree.shards)
    for p in s.pods:
        if p.role != "gen":
            continue
        for r in range(p.ranks):
            lack = nshards - len(served.get(f"{p.name}/{r}", set()) & set(range(nshards)))
            if lack:
                out.append(
                    Violation(
                        "coverage", f"rank {p.name}/{r} never receives {lack} of {nshards} shards"
                    )
                )
                break  # one line per PoD is enough to act on
    return out
