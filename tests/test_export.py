"""--export verl|roll (docs/architecture.md, "Interfaces people use"): keys the frameworks read,
their placement rules checked, and everything the plan does that they cannot express listed. The key
sets and rules are the ones read in verl v0.7.0 and ROLL's main branch (see
costmodels/placement/export.py)."""

from __future__ import annotations

import re

from costmodels.placement.export import export_roll, export_verl, roll_rule_violations
from costmodels.placement.problem import PlacementPlan, PlacementProblem, TaskGroup, TaskPlacement
from costmodels.placement.space import tasklet_layout
from heuristics.placement.colocated import colocated_plan
from planner.io import load_cluster, load_workflow

#: every Hydra key the exporter may write, as found in verl v0.7.0's trainer configs
VERL_KEYS = {
    "trainer.nnodes",
    "trainer.n_gpus_per_node",
    "rollout.nnodes",
    "rollout.n_gpus_per_node",
    "actor_rollout_ref.rollout.name",
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "actor_rollout_ref.rollout.pipeline_model_parallel_size",
    "actor_rollout_ref.rollout.max_num_seqs",
    "reward_model.enable",
    "reward_model.enable_resource_pool",
    "reward_model.nnodes",
    "reward_model.n_gpus_per_node",
    "reward_model.rollout.tensor_model_parallel_size",
} | {
    f"{p}.{k}"
    for p in ("actor_rollout_ref.actor", "actor_rollout_ref.ref", "critic")
    for k in (
        "strategy",
        "megatron.tensor_model_parallel_size",
        "megatron.pipeline_model_parallel_size",
    )
}

CLUSTER = {
    "nodes": [
        {"name": "a", "gpu": "H800", "count": 4, "zone": "z"},
        {"name": "b", "gpu": "H800", "count": 4, "zone": "z"},
    ],
    "network": {"intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05}},
}


def _ppo():
    wf = {
        "algorithm": "ppo",
        "mode": "async",
        "models": {"actor": "Qwen3-4B", "critic": "Qwen3-4B", "reward": "Qwen3-4B"},
        "global_batch": 16,
        "responses_per_prompt": 4,
        "prompt_length": 256,
        "response_length": 256,
    }
    return PlacementProblem(load_cluster(CLUSTER), load_workflow(wf))


def _split(problem, gen_devs, rest_devs, critic_inference_tp=1):
    names = [t.name for t in problem.tasks]
    tasks = []
    for n in names:
        devs = gen_devs if n == "actor_generation" else rest_devs
        tp = critic_inference_tp if n == "critic_inference" else 1
        tasks.append(
            TaskPlacement(
                task=n,
                tp=tp,
                pp=1,
                dp=len(devs) // tp,
                devices=tasklet_layout(devs, tp, 1, len(devs) // tp),
                decode_batch=32 if n == "actor_generation" else None,
            )
        )
    return PlacementPlan(
        groups=[
            TaskGroup(tasks=["actor_generation"], devices=gen_devs),
            TaskGroup(tasks=names[1:], devices=rest_devs),
        ],
        tasks=tasks,
    )


def test_verl_keys_are_real_and_unique_and_no_role_is_lost():
    p = _ppo()
    devs = [d.id for d in p.topology.devices]
    plan = _split(p, devs[:4], devs[4:], critic_inference_tp=2)
    doc = export_verl(p, plan)
    assert set(doc["overrides"]) <= VERL_KEYS, set(doc["overrides"]) - VERL_KEYS
    assert not any(re.search(r"[() ]", k) for k in doc["overrides"])
    assert doc["entrypoint"] == "python -m recipe.one_step_off_policy.main_ppo"
    assert doc["resource_pools"] == {
        "trainer_pool": {"nnodes": 1, "n_gpus_per_node": 4},
        "rollout_pool": {"nnodes": 1, "n_gpus_per_node": 4},
    }
    assert (
        doc["overrides"]["critic.megatron.tensor_model_parallel_size"] == 1
    )  # the critic worker's (training) config
    assert any(
        "critic_inference TP2" in n for n in doc["not_expressible"]
    )  # its inference config is not dropped silently
    assert doc["overrides"]["actor_rollout_ref.rollout.max_num_seqs"] == 32


def test_verl_colocated_uses_main_ppo_and_notes_mixed_pools():
    cluster = load_cluster(
        {
            "nodes": [
                {"name": "a", "gpu": "A100-40GB", "count": 4, "zone": "z"},
                {"name": "l", "gpu": "L40S", "count": 2, "zone": "z"},
            ],
            "network": {"intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05}},
        }
    )
    p = PlacementProblem(cluster, load_workflow("grpo-sync-qwen3-4b"))
    doc = export_verl(p, colocated_plan(p, 2, 2, 1))
    assert doc["entrypoint"] == "python -m verl.trainer.main_ppo" and list(
        doc["resource_pools"]
    ) == ["global_pool"]
    notes = " ".join(doc["not_expressible"])
    assert "mixes GPU types" in notes and "uneven GPUs per node" in notes


def test_roll_workers_and_rules():
    p = _ppo()
    devs = [d.id for d in p.topology.devices]
    doc = export_roll(p, _split(p, devs[:4], devs[4:]))
    w = doc["workers"]
    assert set(w) == {"actor_infer", "actor_train", "reference", "critic", "reward_model"}
    assert (
        w["actor_infer"]["device_mapping"] == "list(range(0,4))"
        and w["actor_train"]["device_mapping"] == "list(range(4,8))"
    )
    assert (
        w["actor_infer"]["strategy_args"]["strategy_name"] == "vllm"
        and w["actor_train"]["strategy_args"]["strategy_name"] == "megatron_train"
    )
    for worker in w.values():  # ROLL's WorkerConfig: the mapping divides into num_gpus_per_worker
        n = len(
            eval(worker["device_mapping"], {"__builtins__": {}}, {"list": list, "range": range})
        )  # noqa: S307
        assert (
            n % worker["num_gpus_per_worker"] == 0
            and worker["world_size"] == n // worker["num_gpus_per_worker"]
        )
    assert doc["rule_violations"] == [] and doc["pipeline"]["async_generation_ratio"] >= 1.0


def test_roll_rules_mirror_the_framework():
    train, infer = {0, 1}, {0, 1, 2, 3}
    assert roll_rule_violations(train, train, train, None, 2, 0.0) == []  # co-located
    assert roll_rule_violations(train, {2, 3}, train, None, 2, 1.0) == []  # disjoint
    assert roll_rule_violations(train, infer, train, None, 2, 1.0) == []  # partial-GPU mode, async
    assert any(
        "async_generation_ratio" in v
        for v in roll_rule_violations(train, infer, train, None, 2, 0.0)
    )
    assert any("DP >= 2" in v for v in roll_rule_violations(train, infer, train, None, 1, 1.0))
    assert any(
        "overlap partly" in v for v in roll_rule_violations({0, 1}, {1, 2}, {0, 1}, None, 2, 1.0)
    )
    assert any("reference" in v for v in roll_rule_violations(train, {2, 3}, {2, 3}, None, 2, 1.0))
    assert any("critic" in v for v in roll_rule_violations(train, infer, train, {0}, 2, 1.0))
