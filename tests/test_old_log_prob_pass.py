"""The actor's recompute of the old policy's log-probs (``old_log_prob_pass``): a forward pass
on actor training's own GPUs and layout, charged to actor training, costed as the inference pass
it is (``costmodels.workflow.OLD_LOG_PROB_PASS``)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from costmodels.placement.canned import qwen3_workflow
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.summary import placement_cost_table
from heuristics.placement.colocated import colocated_plan
from planner.io import build_problem, load_cluster, load_workflow
from tests.test_framework_exports import MIXED, H800_2x4
from tests.test_properties import WORKFLOWS, clusters

BATCH = {"global_batch": 48, "responses_per_prompt": 8, "micro_batch_size": 4}
LENGTHS = {"prompt_length": 1024, "response_length": 2048}
TAIL = {"distribution": "lognormal", "median": 300, "sigma": 0.9}


def _judged(cluster, alg, mode="sync", **fields):
    wf = {**qwen3_workflow(alg, mode, **BATCH, **LENGTHS), **fields}
    problem = build_problem("placement", {"cluster": cluster, "workflow": wf})
    plan = colocated_plan(problem, 2, 2, 1)
    return problem, plan, evaluate_placement(problem, plan).breakdown


@pytest.mark.parametrize("cluster", [H800_2x4, MIXED])
@pytest.mark.parametrize("lengths", [None, TAIL])
def test_the_pass_costs_what_the_reference_costs_on_the_same_layout(cluster, lengths):
    """GRPO's reference is the actor's model: on actor training's layout its forward pass is the
    old log-prob pass to the last bit (long tail and stragglers included), and actor training
    grows by exactly it; the synchronous step by exactly it too."""
    extra = {"response_lengths": lengths} if lengths else {}
    _, _, without = _judged(cluster, "grpo", **extra)
    _, _, with_pass = _judged(cluster, "grpo", old_log_prob_pass=True, **extra)
    ref = with_pass["tasks"]["reference_inference"]["time_s"]
    train = with_pass["tasks"]["actor_training"]
    assert train["log_prob_s"] == pytest.approx(ref, rel=1e-12)
    assert train["time_s"] == pytest.approx(
        without["tasks"]["actor_training"]["time_s"] + ref, rel=1e-12
    )
    assert with_pass["phases"]["old_log_prob_s"] == train["log_prob_s"]
    assert with_pass["iteration_time_s"] == pytest.approx(
        without["iteration_time_s"] + ref, rel=1e-12
    )
    assert "old_log_prob_s" not in without["phases"]
    assert "log_prob_s" not in without["tasks"]["actor_training"]


def test_only_the_actor_recomputes():
    """PPO's critic trains on values it already has: the pass is the actor's alone."""
    _, _, without = _judged(H800_2x4, "ppo")
    _, _, with_pass = _judged(H800_2x4, "ppo", old_log_prob_pass=True)
    for name in ("critic_training", "critic_inference", "reference_inference"):
        assert with_pass["tasks"][name] == without["tasks"][name]
    assert with_pass["tasks"]["actor_training"]["log_prob_s"] > 0


def test_a_dapo_step_without_a_reference_still_pays_the_recompute():
    """verl's DAPO (no KL) in main_ppo: no reference task, the trainer's recompute alone, at the
    cost of a reference pass on the same layout."""
    _, _, dapo = _judged(H800_2x4, "grpo", reference_pass=False, old_log_prob_pass=True)
    _, _, grpo = _judged(H800_2x4, "grpo")
    assert "reference_inference" not in dapo["tasks"]
    assert dapo["phases"]["inference_s"] == 0
    assert dapo["iteration_time_s"] == pytest.approx(grpo["iteration_time_s"], rel=1e-12)


def test_the_cost_table_and_summary_show_the_pass():
    problem, plan, breakdown = _judged(H800_2x4, "grpo", old_log_prob_pass=True)
    table = placement_cost_table(problem, plan, breakdown["iteration_time_s"], breakdown, "x")
    assert table.columns[-1] == "log-prob s"
    assert "old log-prob pass" in table.caption


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cluster=clusters(),
    workflow=WORKFLOWS,
    tp=st.sampled_from([1, 2, 4]),
    pp=st.sampled_from([1, 2]),
)
def test_the_pass_is_a_forward_pass_cheaper_than_training(cluster, workflow, tp, pp):
    """On any cluster and layout: the pass adds exactly its own time to actor training, at least
    its forward FLOPs over the group's peak (2 x params per token, below the real count), and
    less than the training passes it precedes (a forward against forward, backward and the
    recompute), and only the actor's training moves."""
    base = load_workflow(workflow)
    problem = PlacementProblem(load_cluster(cluster), base)
    devices = len(problem.topology.devices)
    assume(devices % (tp * pp) == 0)
    with_pass = PlacementProblem(
        problem.cluster, base.model_copy(update={"old_log_prob_pass": True})
    )
    plan = colocated_plan(problem, tp, tp, pp, decode_batch=64)
    without = evaluate_placement(problem, plan).breakdown["tasks"]
    judged = evaluate_placement(with_pass, plan).breakdown["tasks"]
    train, alone = judged["actor_training"], without["actor_training"]
    assert train["time_s"] == pytest.approx(alone["time_s"] + train["log_prob_s"], rel=1e-12)
    wf = with_pass.workflow
    peak = sum(d.gpu.tflops_bf16_dense * 1e12 for d in with_pass.topology.devices)
    tokens = wf.samples * (wf.prompt_length + wf.response_length)
    assert train["log_prob_s"] >= 2 * wf.model("actor").params_b * 1e9 * tokens / peak
    assert train["log_prob_s"] < alone["time_s"]
    for name, cost in judged.items():
        if name != "actor_training":
            assert cost == without[name]


def _user_workflow(alg="grpo", mode="sync", **fields):
    """A workflow as a user writes it: no ``old_log_prob_pass``."""
    wf = qwen3_workflow(alg, mode, **BATCH, **LENGTHS)
    wf.pop("old_log_prob_pass")
    return {**wf, **fields}


@pytest.mark.parametrize(
    ("target", "alg", "mode", "fields", "recompute"),
    [
        # verl, and any framework when none is named: main_ppo recomputes; the one-step-off
        # recipe and fully_async_policy train on the rollout's log-probs
        (None, "grpo", "sync", {}, True),
        (None, "grpo", "async", {}, False),
        (None, "grpo", "fully-async", {}, False),
        ("verl", "ppo", "sync", {}, True),
        ("verl", "grpo", "async", {}, False),
        # ROLL: several updates a step, or PPO's KL in the reward
        ("roll", "grpo", "sync", {}, False),
        ("roll", "grpo", "sync", {"mini_batch": 24}, True),
        ("roll", "ppo", "sync", {}, True),
        ("roll", "ppo", "sync", {"reference_pass": False}, False),
        # the user's word stands
        (None, "grpo", "sync", {"old_log_prob_pass": False}, False),
        ("roll", "grpo", "async", {"old_log_prob_pass": True}, True),
    ],
)
def test_an_unset_pass_is_what_the_target_framework_runs(target, alg, mode, fields, recompute):
    spec = {"cluster": H800_2x4, "workflow": _user_workflow(alg, mode, **fields)}
    if target:
        spec["target"] = {"framework": target}
    problem = build_problem("placement", spec)
    assert problem.workflow.old_log_prob_pass is recompute
    assert problem.to_inputs()["workflow"]["old_log_prob_pass"] is recompute


def test_presets_keep_hetrl_s_dag_and_verl_s_jobs_run_verl_s_passes():
    from costmodels.placement.presets import placement_presets
    from costmodels.placement.verl_export import OLD_LOG_PROB_NOTE, export_verl

    presets = {p.name: p for p in placement_presets() if p.kind == "workflow"}
    hetrl = build_problem("placement", {"cluster": "small-8", "workflow": "grpo-sync-qwen3-4b"})
    assert hetrl.workflow.old_log_prob_pass is False
    assert presets["grpo-sync-qwen3-4b"].build()["old_log_prob_pass"] is False
    verl = build_problem("placement", {"cluster": "h100-32", "workflow": "grpo-sync-qwen3-8b-verl"})
    assert verl.workflow.old_log_prob_pass is True and verl.workflow.reference_pass
    plan = colocated_plan(verl, 4, 4, 1)
    assert OLD_LOG_PROB_NOTE not in export_verl(verl, plan)["notes"]
    off = build_problem("placement", {"cluster": "h100-32", "workflow": "grpo-async-qwen3-8b-verl"})
    assert off.workflow.old_log_prob_pass is False


def test_a_plan_file_before_1_12_was_judged_without_the_recompute(tmp_path):
    """Before schema 1.12 no workflow recomputed the old log-probs: a file of then, whose
    workflow has no ``old_log_prob_pass``, reads back as judged (false), not as the framework
    default an unset field now takes, and validates."""
    import json

    from planner import solve
    from tests.conftest import run_cli

    problem = build_problem(
        "placement", {"cluster": H800_2x4, "workflow": _user_workflow(old_log_prob_pass=False)}
    )
    from planner.planfile import result_to_dict

    doc = result_to_dict(solve(problem, "verl"))
    doc["inputs"]["workflow"].pop("old_log_prob_pass")
    doc["schema_version"] = "1.11"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    proc = run_cli("validate", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "[judge moved]" not in proc.stdout
