"""Shipped weight-sync broadcast example (OrchestrRL App. E)."""

from __future__ import annotations

from typing import Any

from costmodels.problem import Preset


def weight_sync_example() -> dict[str, Any]:
    pods = [
        {"name": f"train{i}", "role": "train", "ranks": 32, "budget": 8, "holders": 8}
        for i in range(2)
    ]
    pods += [{"name": f"gen{i}", "role": "gen", "ranks": 32, "budget": 4} for i in range(6)]
    return {
        "name": "weight-sync-example",
        "description": (
            "Qwen2.5-32B (64 GB BF16) from 2 train PoDs (16 shard holders) to 6 gen PoDs x 32 ranks"
        ),
        "weights_gb": 64.0,
        "link_gbps": 400,
        "intra_gbps": 400,
        "seeds_per_pod": 2,
        "ocs_device": "piezo",
        "pods": pods,
    }


def broadcast_presets() -> tuple[Preset, ...]:
    return (
        Preset(
            "weight-sync-example",
            "sync",
            "weight-sync broadcast: 64 GB from 2 train PoDs to 6 gen PoDs of 32 ranks",
            weight_sync_example,
        ),
        Preset(
            "broadcast-example",
            "problem",
            "broadcast: the weight-sync-example schedule",
            lambda: {"problem": "broadcast", "sync": "weight-sync-example"},
        ),
    )
