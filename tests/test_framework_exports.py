"""Exports run in the real frameworks: every verl export composes with hydra-core in struct mode
against verl's own config files (the release wheels, ``tests/framework_configs.py``) and passes
verl's validation rules, replicated here where they need torch to import (file and line cited);
every ROLL export loads strictly into ROLL's RLVR config fields (read from its source,
``tests/data/roll``) and passes ROLL's rules. ``--target verl|roll`` plans break none of them."""

from __future__ import annotations

from typing import Any

import pytest

from costmodels.placement.problem import PlacementPlan, PlacementProblem
from costmodels.placement.space import TaskConfig, build_plan
from costmodels.placement.verl_export import VERL_RELEASES, export_verl
from formulations.placement.ilp import solve_placement_ilp
from heuristics.placement.colocated import colocated_plan
from planner.io import build_problem
from tests.framework_configs import compose_verl

NET = {"intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05}}
H800_2x4 = {
    "nodes": [
        {"name": "a", "gpu": "H800", "count": 4, "zone": "z"},
        {"name": "b", "gpu": "H800", "count": 4, "zone": "z"},
    ],
    "network": NET,
}
MIXED = {
    "nodes": [
        {"name": "a", "gpu": "A100-80GB", "count": 4, "zone": "z"},
        {"name": "l", "gpu": "L40S", "count": 4, "zone": "z"},
    ],
    "network": NET,
}


def _workflow(alg: str, mode: str, reward: bool = False) -> dict[str, Any]:
    models = {"actor": "Qwen3-1.7B"}
    if alg == "ppo":
        models["critic"] = "Qwen3-1.7B"
    if reward:
        models["reward"] = "Qwen3-1.7B"
    return {
        "algorithm": alg,
        "mode": mode,
        "models": models,
        "global_batch": 48,
        "responses_per_prompt": 8,
        "prompt_length": 1024,
        "response_length": 2048,
        "micro_batch_size": 4,
    }


def _problem(cluster: dict, alg: str, mode: str, reward: bool = False, target: str | None = None):
    fields: dict[str, Any] = {"cluster": cluster, "workflow": _workflow(alg, mode, reward)}
    if target:
        fields["target"] = {"framework": target}
    return build_problem("placement", fields)


def _disaggregated(problem: PlacementProblem) -> PlacementPlan:
    """Generation on node a (TP2), everything else on node b (TP2 PP1), as one_step_off runs."""
    devs = [d.id for d in problem.topology.devices]
    gen, rest = devs[:4], devs[4:]
    names = [t.name for t in problem.tasks]
    configs = {n: TaskConfig(2, 1, 2) for n in names}
    return build_plan(problem, [(["actor_generation"], gen), (names[1:], rest)], configs)


def plans() -> dict[str, tuple[PlacementProblem, PlacementPlan]]:
    """The issue's four: co-located GRPO, co-located PPO with critic, reference and reward model,
    a disaggregated (one_step_off) plan, and a plan on a heterogeneous cluster."""
    grpo = _problem(H800_2x4, "grpo", "sync")
    ppo = _problem(H800_2x4, "ppo", "sync", reward=True)
    dis = _problem(H800_2x4, "grpo", "async")
    het = _problem(MIXED, "ppo", "async", target="verl")
    het_plan = solve_placement_ilp(het, time_limit=120).plan
    assert het_plan is not None
    return {
        "colocated-grpo": (grpo, colocated_plan(grpo, 2, 2, 1)),
        "colocated-ppo-critic-ref-reward": (ppo, colocated_plan(ppo, 2, 2, 1)),
        "disaggregated-one-step-off": (dis, _disaggregated(dis)),
        "heterogeneous": (het, het_plan),
    }


@pytest.fixture(scope="module")
def cases() -> dict[str, tuple[PlacementProblem, PlacementPlan]]:
    return plans()


def hydra_overrides(doc: dict[str, Any]) -> list[str]:
    """The export's overrides as the command line passes them."""
    out = []
    for k, v in doc["overrides"].items():
        out.append(f"{k}={'true' if v is True else 'false' if v is False else v}")
    return out


def _verl_critic_errors(cfg: Any, doc: dict[str, Any], n_gpus: int) -> list[str]:
    """verl/trainer/ppo/utils.py need_critic, and the critic's batch checks."""
    out = []
    a = cfg.actor_rollout_ref
    wants_critic = (
        cfg.critic.enable
        if cfg.critic.enable is not None
        else (cfg.algorithm.adv_estimator == "gae")
    )
    if wants_critic != ("critic.ppo_mini_batch_size" in doc["overrides"]):
        out.append("critic built iff the plan places one")
    if wants_critic:
        c = cfg.critic
        cmp_ = c.megatron.tensor_model_parallel_size * c.megatron.pipeline_model_parallel_size
        cdp = n_gpus // cmp_
        # verl/workers/megatron_workers.py:1045-1046 and verl/workers/config/critic.py:122
        if (c.ppo_mini_batch_size * a.rollout.n) % cdp or cfg.data.train_batch_size < (
            c.ppo_mini_batch_size
        ):
            out.append("critic mini-batch")
    return out


def verl_rule_errors(cfg: Any, doc: dict[str, Any]) -> list[str]:
    """verl's checks that run only inside its workers (they import torch), on a composed config.
    Line numbers are verl 0.7.0's; 0.9.1 keeps the same checks."""
    out = []
    a = cfg.actor_rollout_ref
    n_gpus = cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes
    mp = a.actor.megatron.tensor_model_parallel_size * a.actor.megatron.pipeline_model_parallel_size
    # verl/utils/config.py:95 and :110 (validate_config)
    if n_gpus % mp:
        out.append(f"n_gpus {n_gpus} not divisible by the actor's TP x PP {mp}")
    else:
        dp = n_gpus // mp
        samples = cfg.data.train_batch_size * a.rollout.n
        if samples % (dp * a.actor.ppo_micro_batch_size_per_gpu):
            out.append(f"{samples} samples not divisible by DP {dp} x micro-batch")
        # verl/workers/megatron_workers.py:334-335: mini-batch per DP rank, in micro-batches
        per_rank = a.actor.ppo_mini_batch_size * a.rollout.n // dp
        if per_rank < 1 or per_rank % a.actor.ppo_micro_batch_size_per_gpu:
            out.append(f"actor mini-batch per rank {per_rank} vs micro-batch")
    # verl/workers/config/actor.py:201
    if cfg.data.train_batch_size < a.actor.ppo_mini_batch_size:
        out.append("train_batch_size < ppo_mini_batch_size")
    # verl/utils/config.py:141 (check_mutually_exclusive): one of the two is set
    for sec in (a.rollout, a.ref):
        if sec.log_prob_micro_batch_size_per_gpu is None and sec.log_prob_micro_batch_size is None:
            out.append("log_prob micro-batch unset")
    # verl/workers/config/rollout.py:243 (RolloutConfig.__post_init__)
    if a.rollout.pipeline_model_parallel_size > 1 and a.rollout.name == "vllm":
        out.append("vLLM rollout with PP > 1")
    # verl/trainer/ppo/utils.py need_reference_policy / need_critic
    if not (cfg.algorithm.use_kl_in_reward or a.actor.use_kl_loss):
        out.append("no KL: verl would not build the placed reference")
    out += _verl_critic_errors(cfg, doc, n_gpus)
    # the reference runs with the actor's layout (verl/workers/megatron_workers.py:268)
    ref = a.ref.megatron
    if (ref.tensor_model_parallel_size, ref.pipeline_model_parallel_size) != (
        a.actor.megatron.tensor_model_parallel_size,
        a.actor.megatron.pipeline_model_parallel_size,
    ):
        out.append("reference layout differs from the actor's")
    if doc["config_name"].startswith("one_step_off"):
        # recipe/one_step_off_policy/ray_trainer.py:111 and :292 (v0.7.0)
        if a.hybrid_engine:
            out.append("one_step_off needs hybrid_engine=false")
        if a.rollout.mode != "async":
            out.append("one_step_off needs rollout.mode=async")
    return out


@pytest.mark.parametrize("version", list(VERL_RELEASES))
@pytest.mark.parametrize(
    "name",
    [
        "colocated-grpo",
        "colocated-ppo-critic-ref-reward",
        "disaggregated-one-step-off",
        "heterogeneous",
    ],
)
def test_verl_export_composes_and_carries_the_workflow(cases, name, version):
    problem, plan = cases[name]
    doc = export_verl(problem, plan, version)
    assert doc["command"].startswith(f"{doc['entrypoint']} --config-name {doc['config_name']} ")
    cfg = compose_verl(version, doc["config_name"], hydra_overrides(doc))
    wf = problem.workflow
    a = cfg.actor_rollout_ref
    assert cfg.algorithm.adv_estimator == ("gae" if wf.algorithm == "ppo" else "grpo")
    assert cfg.data.train_batch_size == wf.global_batch and a.rollout.n == wf.responses_per_prompt
    assert cfg.data.max_prompt_length == wf.prompt_length
    assert cfg.data.max_response_length == wf.response_length
    assert a.actor.strategy == "megatron"
    assert verl_rule_errors(cfg, doc) == []
    if name == "colocated-ppo-critic-ref-reward":
        rm = cfg.reward.reward_model if version == "0.9.1" else cfg.reward_model
        assert rm.enable and rm.rollout.name == "vllm"
    assert doc["rule_violations"] == []


def test_verl_export_names_what_verl_cannot_run():
    """A plan outside verl's space: reward model pipelined, reference apart from the actor."""
    problem = _problem(H800_2x4, "ppo", "sync", reward=True)
    devs = [d.id for d in problem.topology.devices]
    names = [t.name for t in problem.tasks]
    configs = {n: TaskConfig(2, 1, 2) for n in names}
    configs["reward_inference"] = TaskConfig(1, 2, 2)
    apart = ("reference_inference", "reward_inference")
    plan = build_plan(
        problem,
        [([n for n in names if n not in apart], devs[:4]), (list(apart), devs[4:])],
        configs,
    )
    doc = export_verl(problem, plan)
    text = " ".join(doc["not_expressible"])
    assert "cannot share a GPU group" in text and "pipeline parallelism" in text
    assert doc["rule_violations"] and all("verl-runnable" in v for v in doc["rule_violations"])
