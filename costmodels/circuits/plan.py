"""The shape of a circuit plan (OrchestrRL App. D): ``count`` full-duplex circuits lit between
endpoint pairs, and the per-pair counts allocators produce."""

from __future__ import annotations

from pydantic import BaseModel, Field

from costmodels.circuits.fabric import Pair, pair_key
from costmodels.circuits.problem import _STRICT


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


#: circuits per unordered pair, keyed by (a, b) with a < b: what allocators produce
Counts = dict[Pair, int]  # circuits per canonical pair


def plan_from_counts(counts: Counts) -> CircuitPlan:
    """A plan listing every pair with at least one circuit, sorted by endpoint names."""
    return CircuitPlan(
        circuits=[Circuit(a=a, b=b, count=n) for (a, b), n in sorted(counts.items()) if n > 0]
    )
