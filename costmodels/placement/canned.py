"""Canned placement instances for the contract test: heterogeneous clusters of 2-3 GPUs whose
whole placement space brute force enumerates in about a second, so the optimum is proven at test
time by the
``bruteforce`` solver (an enumeration independent of the ILP)."""

from __future__ import annotations

from typing import Any

from costmodels.cluster import ClusterSpec
from costmodels.placement.problem import PlacementProblem
from costmodels.problem import Canned
from costmodels.workflow import WorkflowSpec

_LAN = {"intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05}}


def _workflow(algorithm: str = "grpo", mode: str = "sync", eta: float = 0.0) -> dict[str, Any]:
    models = {"actor": "Qwen3-1.7B"}
    if algorithm == "ppo":
        models["critic"] = "Qwen3-1.7B"
    return {
        "algorithm": algorithm,
        "mode": mode,
        "models": models,
        "global_batch": 16,
        "responses_per_prompt": 4,
        "prompt_length": 512,
        "response_length": 512,
        "decode_batch_size": 32,
        "eta": eta,
    }


def _problem(cluster: dict[str, Any], workflow: dict[str, Any]) -> PlacementProblem:
    c, w = ClusterSpec.model_validate(cluster), WorkflowSpec.model_validate(workflow)
    c.check()
    w.check()
    return PlacementProblem(c, w)


def canned_placements() -> list[Canned]:
    one_zone = {
        "nodes": [
            {"name": "a", "gpu": "A100-40GB", "count": 2, "zone": "z"},
            {"name": "b", "gpu": "L40S", "count": 1, "zone": "z"},
        ],
        "network": _LAN,
    }
    two_zones = {
        "nodes": [
            {"name": "a", "gpu": "A100-40GB", "count": 2, "zone": "us"},
            {"name": "b", "gpu": "L4", "count": 1, "zone": "eu"},
        ],
        "network": {
            **_LAN,
            "inter_zone": [{"zones": ["us", "eu"], "bandwidth_gbps": 2, "latency_ms": 40}],
        },
    }
    return [
        Canned(
            "one-zone-grpo-sync", lambda: _problem(one_zone, _workflow()), reference="bruteforce"
        ),
        Canned(
            "two-zones-grpo-async",
            lambda: _problem(two_zones, _workflow(mode="async", eta=0.3)),
            reference="bruteforce",
        ),
    ]
