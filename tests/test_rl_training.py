"""The one training model (``costmodels.rl_training``): the rollout and co-scheduling problems'
training stage is the placement judge's log-prob and training passes for the same job."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels.cluster import ClusterSpec
from costmodels.cost_params import CostParams
from costmodels.efficiency import Efficiency
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.plan import PlacementPlan, TaskGroup, TaskPlacement
from costmodels.placement.problem import PlacementProblem
from costmodels.response_lengths import ResponseLengths
from costmodels.rl_training import (
    INTER_NODE_GB_PER_S,
    INTER_NODE_LATENCY_MS,
    BatchShape,
    TrainingProfile,
    stage_seconds,
    training_replica,
)
from costmodels.workflow import ACTOR_GENERATION, WorkflowSpec

LOGNORMAL = ResponseLengths(distribution="lognormal", median=600, sigma=0.9)


def _grid(devices: list[str], tp: int, task: str) -> TaskPlacement:
    dp = len(devices) // tp
    return TaskPlacement(
        task=task, tp=tp, pp=1, dp=dp, devices=[[devices[i * tp : (i + 1) * tp]] for i in range(dp)]
    )


@pytest.mark.parametrize(("gpus", "replica"), [(8, 2), (16, 8)])
def test_the_stage_is_the_placement_judges_passes_on_the_same_job(gpus, replica):
    shape = BatchShape(512, 300, LOGNORMAL, 4096)
    log_prob, train = stage_seconds("Qwen2.5-7B", "H800", gpus, shape, 0.3, 8, replica)
    nodes = [{"name": f"n{k}", "gpu": "H800", "count": 8, "zone": "dc"} for k in range(gpus // 8)]
    network = {
        "intra_zone": {
            "bandwidth_gbps": INTER_NODE_GB_PER_S * 8,
            "latency_ms": INTER_NODE_LATENCY_MS,
        }
    }
    cluster = ClusterSpec.model_validate({"nodes": nodes, "network": network})
    wf = WorkflowSpec.model_validate(
        {
            "algorithm": "grpo",
            "mode": "sync",
            "models": {"actor": "Qwen2.5-7B"},
            "global_batch": 512,
            "responses_per_prompt": 1,
            "prompt_length": 300,
            "response_length": 4096,
            "response_lengths": LOGNORMAL.model_dump(),
            # the one pass before training: the reference's here, the recompute's there
            "old_log_prob_pass": False,
        }
    )
    problem = PlacementProblem(
        cluster, wf, CostParams(efficiency=Efficiency(training_mfu={"H800": 0.3}))
    )
    devices = [d.id for d in problem.topology.devices]
    tasks = [
        _grid(devices, 1 if t.name == ACTOR_GENERATION else replica, t.name) for t in problem.tasks
    ]
    plan = PlacementPlan(
        groups=[TaskGroup(tasks=[t.name for t in problem.tasks], devices=devices)], tasks=tasks
    )
    phases = evaluate_placement(problem, plan).breakdown["phases"]
    assert log_prob == pytest.approx(phases["inference_s"], rel=1e-12)
    assert train == pytest.approx(phases["training_s"], rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.floats(1e4, 1e8), st.floats(0.05, 0.9))
def test_passes_are_linear_in_tokens_and_faster_at_higher_efficiency(tokens, mfu):
    shape = BatchShape(256, 256, LOGNORMAL, 8192)
    slow, fast = TrainingProfile(mfu=mfu), TrainingProfile(mfu=min(1.0, mfu * 1.5))
    one = slow.compute_s("Qwen2.5-7B", "H800", 16, tokens, shape)
    two = slow.compute_s("Qwen2.5-7B", "H800", 16, 2 * tokens, shape)
    assert two == pytest.approx(2 * one, rel=1e-12)
    assert fast.compute_s("Qwen2.5-7B", "H800", 16, tokens, shape) < one


def test_a_default_replica_holds_the_training_state_and_bare_tokens_get_constant_sequences():
    # 7B fits two H800 per replica (6 B/param over the replica, 12 over every GPU, half of 80 GB)
    assert training_replica("Qwen2.5-7B", "H800", 16) == 2
    assert training_replica("Qwen2.5-32B", "H800", 32) == 8
    assert training_replica("Qwen2.5-72B", "H800", 4) == 4  # never more than the GPUs
    shape = BatchShape.of_tokens(1e6)
    assert shape.lengths.is_constant and shape.tokens == pytest.approx(488 * 2048)


def test_without_the_log_prob_pass_the_stage_is_the_training_pass_alone():
    """``log_prob_pass: false`` (one update a step, as RollPacker's artifact trains,
    ``costmodels.rl_training.log_prob_field``) drops the forward pass and nothing else: the
    stage is the training pass of the same job, and the default keeps both."""
    shape = BatchShape(512, 300, LOGNORMAL, 4096)
    log_prob, train = stage_seconds("Qwen2.5-7B", "H800", 16, shape, 0.3, 8, 2)
    tokens = 3 * shape.tokens
    both = TrainingProfile(mfu=0.3).compute_s("Qwen2.5-7B", "H800", 16, tokens, shape, 8, 2)
    alone = TrainingProfile(mfu=0.3, log_prob_pass=False).compute_s(
        "Qwen2.5-7B", "H800", 16, tokens, shape, 8, 2
    )
    assert log_prob > 0
    assert both == pytest.approx(3 * (log_prob + train), rel=1e-12)
    assert alone == pytest.approx(3 * train, rel=1e-12)
    no_pass = stage_seconds("Qwen2.5-7B", "H800", 16, shape, 0.3, 8, 2, log_prob_pass=False)
    assert no_pass == (0.0, pytest.approx(train, rel=1e-12))


def test_a_rollout_job_without_the_log_prob_pass_trains_faster_and_hashes_apart():
    from benchmarks.instances import rollout_problem
    from costmodels.rollout.judge import evaluate_rollout
    from costmodels.rollout.space import verl_plan

    base = rollout_problem("rollout-7b-8k", dataset_prompts=128)
    bare = rollout_problem("rollout-7b-8k", dataset_prompts=128, log_prob_pass=False)
    assert base.workload.training.log_prob_pass and not bare.workload.training.log_prob_pass
    assert hash(base.workload) != hash(bare.workload)
    _, with_pass = evaluate_rollout(base, verl_plan(base.workload))
    _, without = evaluate_rollout(bare, verl_plan(bare.workload))
    assert 0 < without["train_s"] < with_pass["train_s"]
    assert without["rollout_s"] == pytest.approx(with_pass["rollout_s"], rel=1e-12)
    # the summary says which training it judged
    from costmodels.rollout.summary import judge_line

    assert "no old log-prob pass" in judge_line(bare.workload)
    assert "log-prob" not in judge_line(base.workload)
