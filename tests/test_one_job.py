"""One job, two judges (``benchmarks/one_job.py``): on the same lengths and plan, the rollout
and placement judges' generation agree; their training models do not (yet), and the benchmark
says by how much."""

from __future__ import annotations

import pytest

from benchmarks.one_job import run


def test_the_two_judges_agree_on_generation_and_report_their_training_gap():
    result = run()
    ratio = result["ratio_rollout_over_placement"]
    assert ratio["generation"] == pytest.approx(1.0, abs=0.10)
    # the training gap is the two models' constants; the benchmark publishes it
    assert ratio["log-prob + training"] > 2.0
    assert result["placement_judge"]["reward"] == 0.0 and result["rollout_judge"]["reward"] > 0
