"""Tiny re-planning states whose optimum the brute-force solver proves at test time (every layout
of every node, every split of every bin): two-GPU nodes, TP 1 or 2, a handful of requests."""

from __future__ import annotations

from typing import Any

from costmodels.problem import Canned
from costmodels.replan.problem import ReplanProblem, ReplanSpec


def tiny_state(
    requests: list[list[list[int]]],
    tps_now: list[int],
    *,
    nodes: int = 1,
    budget: int | None = None,
    delta: float | None = None,
    model: str = "Qwen2.5-7B",
    layouts: str = "uniform",
) -> ReplanProblem:
    """``requests[k]``: [remaining, context] pairs on current instance k; instances fill 2-GPU
    nodes in order with TPs ``tps_now``."""
    instances, node, gpu = [], 0, 0
    for tp, reqs in zip(tps_now, requests, strict=True):
        if gpu + tp > 2:
            node, gpu = node + 1, 0
        instances.append({"node": node, "gpu": gpu, "tp": tp, "requests": reqs})
        gpu += tp
    spec: dict[str, Any] = {
        "model": model,
        "gpu": "H800",
        "nodes": nodes,
        "gpus_per_node": 2,
        "tps": [1, 2],
        "instances": instances,
        "gpu_budget": budget,
        "kv_delta": delta,
        "layouts": layouts,
    }
    s = ReplanSpec.model_validate(spec)
    s.check()
    return ReplanProblem(s)


def random_tiny_state(seed: int, most_requests: int = 2, layouts: str = "uniform") -> ReplanProblem:
    """A random :func:`tiny_state` for property tests: one node running TP1 + TP1 or TP2, each
    instance holding 1..``most_requests`` requests of up to 6 000 remaining tokens and 3 000 of
    context (``numpy`` generator seeded with ``seed``)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tps = [1, 1] if rng.random() < 0.5 else [2]
    reqs = [
        [
            [int(rng.integers(1, 6000)), int(rng.integers(0, 3000))]
            for _ in range(int(rng.integers(1, most_requests + 1)))
        ]
        for _ in tps
    ]
    return tiny_state(reqs, tps, delta=None, layouts=layouts)


def canned_replans() -> list[Canned]:
    ref = "bruteforce"
    return [
        Canned(
            "two-tp1-imbalanced",
            lambda: tiny_state([[[3000, 500], [200, 300]], [[100, 200]]], [1, 1]),
            reference=ref,
        ),
        Canned(
            "one-long-tail",
            lambda: tiny_state([[[7000, 2000]], [[300, 100]]], [1, 1]),
            reference=ref,
        ),
        Canned(
            "two-nodes-budget",
            lambda: tiny_state([[[2000, 100], [600, 100]], [[900, 50]]], [2, 2], nodes=2, budget=2),
            reference=ref,
        ),
        Canned(
            "mixed-odd-budget",
            lambda: tiny_state(
                [[[2000, 100], [600, 100]], [[900, 50], [700, 80]]],
                [2, 2],
                nodes=2,
                budget=3,
                layouts="mixed",
            ),
            reference=ref,
        ),
    ]
