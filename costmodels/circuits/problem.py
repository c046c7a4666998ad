"""Circuit-allocation problem, plans, the Eq. 7 cost and the plan validator (OrchestrRL App. D).

A plan lights ``count`` full-duplex circuits between endpoint pairs. The pair completion-time
proxy of Eq. 7 is ``max(D(u->v), D(v->u)) / (c_uv * B_link)``; the plan's objective is the
bottleneck over demanded pairs that have circuits, in seconds (bytes * 8 / (count * Gbps * 1e9)).
Demanded pairs left without circuits have an infinite pair time; the breakdown reports their
number and volume (the first key of the exact model's lexicographic objective).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from costmodels.circuits.fabric import DemandSpec, FabricSpec, Pair, pair_key
from costmodels.violations import Violation

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Circuit(BaseModel):
    model_config = _STRICT

    a: str
    b: str
    count: int = Field(ge=1)


class CircuitPlan(BaseModel):
    model_config = _STRICT

    circuits: list[Circuit] = Field(default_factory=list)

    def counts(self) -> dict[Pair, int]:
        out: dict[Pair, int] = {}
        for c in self.circuits:
            key = pair_key(c.a, c.b)
            out[key] = out.get(key, 0) + c.count
        return out


@dataclass(frozen=True, eq=False)
class CircuitProblem:
    """Allocate OCS circuits on ``fabric`` for ``demand`` (Appendix D.1)."""

    fabric: FabricSpec
    demand: DemandSpec
    kind: str = field(default="circuits", init=False)

    def to_inputs(self) -> dict[str, Any]:
        return {
            "fabric": self.fabric.model_dump(mode="json"),
            "demand": self.demand.model_dump(mode="json"),
        }

    def pair_demand(self) -> dict[Pair, float]:
        """max(D(u->v), D(v->u)) in bytes per unordered demanded pair."""
        out: dict[Pair, float] = {}
        for (u, v), b in self.demand.matrix().items():
            if b <= 0:
                continue
            key = pair_key(u, v)
            out[key] = max(out.get(key, 0.0), b)
        return out


@dataclass(frozen=True)
class DemandedPair:
    """An eligible unordered pair with demand: ``a < b`` by name, ``demand`` = max(D(a->b), D(b->a))
    in bytes, ``cap`` = min(deg(a), deg(b)), the most circuits it could ever get."""

    a: str
    b: str
    demand: float
    cap: int


def demanded_pairs(problem: CircuitProblem) -> list[DemandedPair]:
    """The candidate set of Algorithm 3 line 8 before port checks, sorted by (a, b).

    Built from the sparse demand (and its reverses), never from all |V|^2 pairs (App. D.1)."""
    deg = problem.fabric.degrees()
    eligible = problem.fabric.eligibility()
    out = []
    for pair, d in problem.pair_demand().items():
        a, b = pair
        if eligible(a, b):
            out.append(DemandedPair(a, b, d, min(deg[a], deg[b])))
    out.sort(key=lambda p: (p.a, p.b))
    return out


#: circuits per unordered pair, keyed by (a, b) with a < b: what allocators produce
Counts = dict[Pair, int]  # circuits per canonical pair


def plan_from_counts(counts: Counts) -> CircuitPlan:
    """A plan listing every pair with at least one circuit, sorted by endpoint names."""
    return CircuitPlan(
        circuits=[Circuit(a=a, b=b, count=n) for (a, b), n in sorted(counts.items()) if n > 0]
    )


def pair_time_s(bytes_: float, count: int, link_gbps: float) -> float:
    """Eq. 7 for one pair: seconds to move ``bytes_`` over ``count`` circuits."""
    if bytes_ <= 0:
        return 0.0
    if count <= 0:
        return float("inf")
    return bytes_ * 8 / (count * link_gbps * 1e9)


def evaluate_circuits(problem: CircuitProblem, plan: CircuitPlan) -> tuple[float, dict[str, Any]]:
    counts = plan.counts()
    link = problem.fabric.link_gbps
    worst, uncovered_pairs, uncovered_bytes = 0.0, 0, 0.0
    worst_pair: list[str] | None = None
    for pair, b in problem.pair_demand().items():
        c = counts.get(pair, 0)
        if c == 0:
            uncovered_pairs += 1
            uncovered_bytes += b
            continue
        t = pair_time_s(b, c, link)
        if t > worst:
            worst, worst_pair = t, list(pair)
    used: dict[str, int] = {}
    for pair, c in counts.items():
        for v in pair:
            used[v] = used.get(v, 0) + c
    breakdown = {
        "bottleneck_s": worst,
        "bottleneck_pair": worst_pair,
        "uncovered_pairs": uncovered_pairs,
        "uncovered_gb": uncovered_bytes / 1e9,
        "circuits": sum(counts.values()),
        "ports_used": sum(used.values()),
    }
    return worst, breakdown


def check_circuits(problem: CircuitProblem, plan: CircuitPlan) -> list[Violation]:
    fabric = problem.fabric
    deg = fabric.degrees()
    eligible = fabric.eligibility()
    out: list[Violation] = []
    seen: set[Pair] = set()
    used: dict[str, int] = {}
    for i, c in enumerate(plan.circuits):
        for v in (c.a, c.b):
            if v not in deg:
                out.append(Violation("endpoint", f"circuits[{i}]: unknown endpoint {v!r}"))
        if c.a == c.b:
            out.append(
                Violation(
                    "endpoint",
                    f"circuits[{i}]: a circuit joins two different endpoints, got {c.a!r} twice",
                )
            )
            continue
        pair = pair_key(c.a, c.b)
        if pair in seen:
            out.append(Violation("duplicate", f"circuits[{i}]: pair {c.a}-{c.b} listed twice"))
        seen.add(pair)
        if c.a in deg and c.b in deg and not eligible(c.a, c.b):
            out.append(
                Violation(
                    "eligibility", f"circuits[{i}]: pair {c.a}-{c.b} is not eligible in this fabric"
                )
            )
        for v in (c.a, c.b):
            used[v] = used.get(v, 0) + c.count
    for v, n in sorted(used.items()):
        if v in deg and n > deg[v]:
            out.append(
                Violation(
                    "port-budget",
                    f"endpoint {v} uses {n} ports but has {deg[v]} allocatable (Eq. 6)",
                )
            )
    return out
