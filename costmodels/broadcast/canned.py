"""Canned weight-sync instances. No exact broadcast model exists yet, so each carries a physical
floor instead of an optimum: every generation PoD must take in the whole model (W GB) over at
most d_p inter-PoD circuits per wave, and every wave pays one OCS reconfiguration, so no schedule
beats reconfig + 8 W / (d_p * link_gbps) seconds for the PoD with the smallest budget."""

from __future__ import annotations

from typing import Any

from costmodels.broadcast.problem import BroadcastProblem, BroadcastSpec
from costmodels.problem import Canned


def _problem(spec: dict[str, Any]) -> BroadcastProblem:
    s = BroadcastSpec.model_validate(spec)
    s.check()
    return BroadcastProblem(s)


def _floor(spec: dict[str, Any]) -> float:
    s = BroadcastSpec.model_validate(spec)
    d = min(p.budget for p in s.pods if p.role == "gen")
    return s.reconfig_s() + s.weights_gb * 8 / (d * s.link_gbps)


#: two generation PoDs of four ranks, 8 GB of weights: small enough for the smoke suite
TINY_SYNC: dict[str, Any] = {
    "weights_gb": 8,
    "link_gbps": 400,
    "intra_gbps": 400,
    "seeds_per_pod": 1,
    "pods": [
        {"name": "tr", "role": "train", "ranks": 4, "budget": 2, "holders": 2},
        {"name": "g0", "role": "gen", "ranks": 4, "budget": 2},
        {"name": "g1", "role": "gen", "ranks": 4, "budget": 2},
    ],
}

#: four generation PoDs of eight ranks, 16 GB of weights, two seeds a PoD
FOUR_POD_SYNC: dict[str, Any] = {
    "weights_gb": 16,
    "link_gbps": 400,
    "intra_gbps": 400,
    "seeds_per_pod": 2,
    "pods": [
        {"name": "tr", "role": "train", "ranks": 8, "budget": 4, "holders": 4},
        *({"name": f"g{i}", "role": "gen", "ranks": 8, "budget": 2} for i in range(4)),
    ],
}


def canned_broadcasts() -> list[Canned]:
    return [
        Canned("tiny-2-pods", lambda: _problem(TINY_SYNC), lower_bound=_floor(TINY_SYNC)),
        Canned("four-pods", lambda: _problem(FOUR_POD_SYNC), lower_bound=_floor(FOUR_POD_SYNC)),
    ]
