"""The circuit-allocation problem (OrchestrRL App. D.1): a fabric's endpoints and ports, the
demand between them, and the demanded pairs an allocator may light circuits for. Plans are
``costmodels.circuits.plan``'s, their Eq. 7 cost ``costmodels.circuits.judge``'s, their validator
``costmodels.circuits.check``'s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict

from costmodels.circuits.fabric import DemandSpec, FabricSpec, Pair, pair_key

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


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
