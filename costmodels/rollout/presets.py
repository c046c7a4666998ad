"""Shipped rollout jobs: RollPacker Table 2's three settings (§6: P0 = 128, R0 = 8, H800, a
uniform mix of math, code and judged prompts; rollout TP 1/2/2; training (TP, PP, CP) = (2,1,1),
(2,2,2), (4,1,4), so a training replica is 2, 8 and 16 GPUs, costed as TP inside a node and PP over
nodes: CP splits each sequence over its GPUs as TP does). The epoch is 1 280 prompts: ten steps,
two periods of four short rounds and a long one at η = 1.25. Training runs at the efficiency fitted
to RollPacker Table 1 (``costmodels.rl_training.FITTED_MFU``: veRL's measured stage shares on the
14B job), the one whole-step measurement of these jobs' trainer."""

from __future__ import annotations

from typing import Any

from costmodels.problem import Preset
from costmodels.rl_training import FITTED_MFU

TABLE2 = {
    "rollout-7b-8k": ("Qwen2.5-7B", 16, 8192, 1, 2),
    "rollout-14b-16k": ("Qwen2.5-14B", 32, 16384, 2, 8),
    "rollout-32b-32k": ("Qwen2.5-32B", 64, 32768, 2, 16),
}


def table2_job(name: str, *, dataset_prompts: int = 1280, seed: int = 0) -> dict[str, Any]:
    model, gpus, max_response, tp, replica = TABLE2[name]
    return {
        "name": name,
        "description": (
            f"RollPacker Table 2: {model}, {max_response // 1024}k responses, {gpus} H800, "
            "P0=128, R0=8"
        ),
        "seed": seed,
        "workload": {
            "model": model,
            "gpu": "H800",
            "gpus": gpus,
            "tp": tp,
            "prompts_per_step": 128,
            "responses_per_prompt": 8,
            "max_response": max_response,
            "dataset_prompts": dataset_prompts,
            "training": {"replica_gpus": replica, "mfu": FITTED_MFU},
        },
    }


def rollout_presets() -> tuple[Preset, ...]:
    return tuple(
        Preset(
            name,
            "job",
            f"RollPacker Table 2: {m}/{L // 1024}k on {g} H800 (P0=128, R0=8, rollout TP {tp})",
            lambda name=name: table2_job(name),
        )
        for name, (m, g, L, tp, _) in TABLE2.items()
    )
