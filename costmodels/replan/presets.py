"""Shipped re-planning states: a generation pool mid-step (OrchestrRL §4.1, Appendix F)."""

from __future__ import annotations

from typing import Any

from costmodels.generation.request_traces import synthetic_trace
from costmodels.problem import Preset


def synthetic_state(
    model: str,
    gpu: str,
    nodes: int,
    tp: int,
    per_gpu: int,
    progress: int,
    *,
    max_len: int = 16384,
    responses: int = 16,
    seed: int = 0,
    gpus_per_node: int = 8,
    name: str = "",
) -> dict[str, Any]:
    """A pool of ``nodes`` nodes running uniform TP ``tp``, ``per_gpu`` requests per GPU at the
    start of the step (group-aware synthetic lengths, ``costmodels.generation.request_traces``),
    observed
    after ``progress`` decode steps: requests shorter than that are done, the others have
    generated ``progress`` tokens (cached with their prompt). Requests go round-robin."""
    total = nodes * gpus_per_node * per_gpu
    reqs = synthetic_trace(max(1, total // responses), responses, max_len, seed=seed)[:total]
    per_node = gpus_per_node // tp
    instances = [
        {"node": n, "gpu": k * tp, "tp": tp, "requests": []}
        for n in range(nodes)
        for k in range(per_node)
    ]
    live = [r for r in reqs if r.output > progress]
    for i, r in enumerate(live):
        instances[i % len(instances)]["requests"].append([r.output - progress, r.prompt + progress])
    return {
        "name": name,
        "description": f"{model} on {nodes} x {gpus_per_node} {gpu}, {len(instances)} x TP{tp}, "
        f"{total} requests ({per_gpu}/GPU, max {max_len}) after {progress} decode steps: "
        f"{len(live)} pending",
        "model": model,
        "gpu": gpu,
        "nodes": nodes,
        "gpus_per_node": gpus_per_node,
        "instances": instances,
    }


def replan_64() -> dict[str, Any]:
    return synthetic_state("Qwen2.5-14B", "H800", 8, 2, 16, 768, name="replan-64")


def replan_1024() -> dict[str, Any]:
    return synthetic_state("Qwen2-57B-A14B", "H800", 128, 4, 16, 0, name="replan-1024")


def replan_tail() -> dict[str, Any]:
    return synthetic_state("Qwen2.5-14B", "H800", 2, 2, 32, 2048, name="replan-tail")


def replan_mixed() -> dict[str, Any]:
    """One 8-GPU node running three TP2 instances (two GPUs idle) with a 6-GPU budget, 1 024
    decode steps into the step: mixed layouts allowed, and the optimum is TP4 + TP2."""
    state = synthetic_state("Qwen2.5-14B", "H800", 1, 2, 16, 1024, name="replan-mixed")
    moved = [r for i in state["instances"] if i["gpu"] == 6 for r in i["requests"]]
    state["instances"] = [i for i in state["instances"] if i["gpu"] != 6]
    for k, r in enumerate(moved):
        state["instances"][k % 3]["requests"].append(r)
    pending = sum(len(i["requests"]) for i in state["instances"])
    state["description"] = (
        f"Qwen2.5-14B on 1 x 8 H800, 3 x TP2 (2 GPUs idle), 6-GPU budget, {pending} pending "
        "requests; mixed layouts"
    )
    return {**state, "gpu_budget": 6, "tps": [2, 4, 8], "layouts": "mixed"}


def replan_presets() -> tuple[Preset, ...]:
    return (
        Preset(
            "replan-64",
            "state",
            "Qwen2.5-14B on 64 H800 (32 x TP2), 1024 requests after 768 decode steps",
            replan_64,
        ),
        Preset(
            "replan-mixed",
            "state",
            "Qwen2.5-14B on one 8-GPU H800 node, 3 x TP2 under a 6-GPU budget: mixed TP layouts",
            replan_mixed,
        ),
        Preset(
            "replan-tail",
            "state",
            "Qwen2.5-14B on 16 H800 (8 x TP2), the tail after 2048 decode steps",
            replan_tail,
        ),
        Preset(
            "replan-1024",
            "state",
            "Qwen2-57B-A14B on 1024 H800 (256 x TP4), 16 requests per GPU at the start of a step "
            "(OrchestrRL App. F)",
            replan_1024,
        ),
        Preset(
            "replan-example",
            "problem",
            "replan: the replan-64 state",
            lambda: {"problem": "replan", "state": "replan-64"},
        ),
    )
