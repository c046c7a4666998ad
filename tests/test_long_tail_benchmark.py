"""The long-tail benchmark's per-instance run on its smallest instance (small-8, GRPO sync)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.long_tail import run_instance
from costmodels.placement.check import check_placement
from costmodels.placement.judge import evaluate_placement


@pytest.mark.slow
def test_small8_grpo_sync_long_tail_instance() -> None:
    kept: dict[str, Any] = {}
    row = run_instance("small-8", "grpo-sync-qwen3-4b", keep=kept)
    assert row["dropped"] == "", row["dropped"]
    assert row["constant_status"] == row["long_tail_status"] == "optimal"
    for model in ("constant", "long_tail"):
        problem, result = kept[model]
        assert check_placement(problem, result.plan) == []
        assert evaluate_placement(problem, result.plan).objective == row[f"{model}_s"]
    assert kept["constant"][0].workflow.response_lengths.is_constant
    assert not kept["long_tail"][0].workflow.response_lengths.is_constant
    assert row["regret"] >= 1 - 1e-9
    # the constant plan judged with the tail, recomputed here
    misjudged = evaluate_placement(kept["long_tail"][0], kept["constant"][1].plan).objective
    assert abs(misjudged / row["long_tail_s"] - row["regret"]) < 1e-12
    # shorter mean responses: the long-tail optimum is no slower than HetRL's constant one
    assert row["long_tail_s"] <= row["constant_s"]
    assert row["long_tail_mean_response"] < row["cap"]
