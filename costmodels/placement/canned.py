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

#: every zone's network: 100 Gb/s, 50 µs
LAN = {"intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05}}


def small_cluster(
    nodes: list[tuple[str, str, int, str]], links: list[tuple[str, str, float, float]] = ()
) -> dict[str, Any]:
    """A cluster spec from ``(name, gpu, count, zone)`` nodes, each zone on :data:`LAN`, and
    ``(zone, zone, Gb/s, latency ms)`` links between zones."""
    network: dict[str, Any] = dict(LAN)
    if links:
        network["inter_zone"] = [
            {"zones": [x, y], "bandwidth_gbps": gbps, "latency_ms": ms} for x, y, gbps, ms in links
        ]
    return {
        "nodes": [
            {"name": name, "gpu": gpu, "count": count, "zone": zone}
            for name, gpu, count, zone in nodes
        ],
        "network": network,
    }


#: two A100-40GB and an L40S in one zone
ONE_ZONE = small_cluster([("a", "A100-40GB", 2, "z"), ("b", "L40S", 1, "z")])
#: two A100-40GB in the US and an L4 in Europe, 2 Gb/s and 40 ms apart
TWO_ZONES = small_cluster(
    [("a", "A100-40GB", 2, "us"), ("b", "L4", 1, "eu")], [("us", "eu", 2, 40)]
)


def qwen3_workflow(
    algorithm: str, mode: str, *, reward: bool = False, **fields: Any
) -> dict[str, Any]:
    """A workflow spec whose models are all Qwen3-1.7B: the actor, a critic for PPO and a reward
    model if ``reward``; ``fields`` sets the batch and lengths. HetRL's DAG: no old log-prob
    recompute unless ``fields`` asks for it."""
    models = {"actor": "Qwen3-1.7B"}
    if algorithm == "ppo":
        models["critic"] = "Qwen3-1.7B"
    if reward:
        models["reward"] = "Qwen3-1.7B"
    return {
        "algorithm": algorithm,
        "mode": mode,
        "models": models,
        "old_log_prob_pass": False,
        **fields,
    }


def small_workflow(
    algorithm: str = "grpo", mode: str = "sync", eta: float = 0.0, decode_batch_size: int = 32
) -> dict[str, Any]:
    """The canned instances' workflow: 16 prompts of 4 responses, 512 + 512 tokens."""
    return qwen3_workflow(
        algorithm,
        mode,
        global_batch=16,
        responses_per_prompt=4,
        prompt_length=512,
        response_length=512,
        decode_batch_size=decode_batch_size,
        eta=eta,
    )


def _problem(cluster: dict[str, Any], workflow: dict[str, Any]) -> PlacementProblem:
    c, w = ClusterSpec.model_validate(cluster), WorkflowSpec.model_validate(workflow)
    c.check()
    w.check()
    return PlacementProblem(c, w)


def canned_placements() -> list[Canned]:
    return [
        Canned(
            "one-zone-grpo-sync",
            lambda: _problem(ONE_ZONE, small_workflow()),
            reference="bruteforce",
        ),
        Canned(
            "two-zones-grpo-async",
            lambda: _problem(TWO_ZONES, small_workflow(mode="async", eta=0.3)),
            reference="bruteforce",
        ),
    ]
