"""A data-parallel pass waits for its slowest rank (``costmodels.straggler``), and a
fully-async workflow may train on the rollout's log-probs (``reference_pass: false``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels.catalog import get_model
from costmodels.placement.canned import ONE_ZONE, small_workflow
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.space import TaskConfig, build_plan
from costmodels.response_lengths import ResponseLengths
from costmodels.straggler import (
    _sequence_flops,
    expected_max_normal,
    straggler_factor,
)
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING, REFERENCE_INFERENCE
from planner import solve
from planner.io import build_problem

MODEL = get_model("Qwen2.5-7B", {})
TAIL = ResponseLengths(distribution="lognormal", median=539, sigma=0.93)
CAP, PROMPT = 28_672, 256


def _factor(per_pass: int, ranks: int, balanced: bool = False, lengths=TAIL) -> float:
    return straggler_factor(
        MODEL, lengths, PROMPT, CAP, per_pass / ranks, ranks, per_pass, balanced
    )


def test_blom_is_the_expected_maximum_of_normals():
    rng = np.random.default_rng(0)
    for r in (2, 8, 64):
        drawn = rng.standard_normal((20_000, r)).max(axis=1).mean()
        assert expected_max_normal(r) == pytest.approx(drawn, abs=0.02)
    assert expected_max_normal(1) == 0.0


def test_constant_lengths_and_one_rank_never_wait():
    constant = ResponseLengths()
    assert _factor(512, 64, lengths=constant) == 1.0
    assert _factor(512, 1) == 1.0
    assert _factor(8192, 1, balanced=True) == 1.0


@pytest.mark.parametrize("ranks", [8, 32, 128])
def test_the_factor_is_the_expected_slowest_rank_of_random_mini_batches(ranks):
    """Against draws: a 512-sequence mini-batch dealt at random over the ranks, the slowest
    rank's work over the mean rank's; the normal approximation is within 12%."""
    rng = np.random.default_rng(ranks)
    mu = _sequence_flops(MODEL, PROMPT + TAIL.sample(256, CAP).astype(float)).mean()
    slowest = []
    for _ in range(300):
        lengths = np.minimum(np.round(539 * np.exp(0.93 * rng.standard_normal(512))), CAP)
        w = _sequence_flops(MODEL, PROMPT + lengths)
        rng.shuffle(w)
        slowest.append(w.reshape(ranks, -1).sum(axis=1).max())
    drawn = float(np.mean(slowest)) / (512 / ranks * mu)
    assert _factor(512, ranks) == pytest.approx(drawn, rel=0.12)


@settings(max_examples=30, deadline=None)
@given(a=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256]), b=st.integers(0, 3))
def test_more_ranks_wait_longer_and_balancing_helps(a, b):
    more = a * 2**b
    assert _factor(512, more) >= _factor(512, a) * (1 - 1e-12)
    assert 1.0 <= _factor(512, a, balanced=True) <= _factor(512, a) * (1 + 1e-12)


def _tail_problem(**extra):
    wf = {
        **small_workflow(mode=extra.pop("mode", "sync")),
        "response_lengths": {"distribution": "lognormal", "median": 120, "sigma": 0.9},
        **extra,
    }
    return build_problem("placement", {"cluster": ONE_ZONE, "workflow": wf})


def _colocated(problem, dp: int):
    devs = [d.id for d in problem.topology.devices][:dp]
    configs = {t.name: TaskConfig(1, 1, dp) for t in problem.tasks}
    return build_plan(problem, [([t.name for t in problem.tasks], devs)], configs)


def test_the_judge_charges_training_its_slowest_rank():
    p = _tail_problem()
    tasks = evaluate_placement(p, _colocated(p, 2)).breakdown["tasks"]
    train = tasks[ACTOR_TRAINING]
    assert train["straggler_s"] > 0
    assert train["time_s"] == pytest.approx(max(train["replica_times_s"]) + train["dp_s"])
    # HetRL's constant lengths: no spread, no term, the literal model's breakdown
    flat = build_problem(
        "placement", {"cluster": ONE_ZONE, "workflow": small_workflow(mode="sync")}
    )
    assert (
        "straggler_s"
        not in evaluate_placement(flat, _colocated(flat, 2)).breakdown["tasks"][ACTOR_TRAINING]
    )


def test_without_the_reference_pass_grpo_trains_on_generation_output():
    p = _tail_problem(mode="fully-async", reference_pass=False)
    names = [t.name for t in p.tasks]
    assert names == [ACTOR_GENERATION, ACTOR_TRAINING]
    assert p.tasks[1].depends_on == (ACTOR_GENERATION,)
    with_ref = _tail_problem(mode="fully-async")
    assert REFERENCE_INFERENCE in {t.name for t in with_ref.tasks}
    fast = solve(p, "ilp", seed=0)
    slow = solve(with_ref, "ilp", seed=0)
    assert fast.status.value == slow.status.value == "optimal"
    assert fast.objective <= slow.objective  # the old optimum minus its pass is still a plan
    phases = evaluate_placement(p, fast.plan).breakdown["phases"]
    assert phases["inference_s"] == 0.0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_mode_may_train_on_the_rollouts_log_probs(mode):
    """Without the pass a synchronous or one-step-off trainer takes the rollout's log-probs as
    the old policy's (verl's bypass mode, ROLL's force_disable_old_logprobs_recompute: the
    exports set them): no reference task, and inference costs nothing."""
    p = _tail_problem(mode=mode, reference_pass=False)
    assert "reference_inference" not in {t.name for t in p.tasks}
    out = solve(p, "ilp", seed=0)
    assert out.status.value == "optimal"
    assert evaluate_placement(p, out.plan).breakdown["phases"]["inference_s"] == 0.0
