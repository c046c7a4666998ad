"""Exports run in the real frameworks: every verl export composes with hydra-core in struct mode
against verl's own config files (the release wheels, ``tests/framework_configs.py``) and passes
verl's validation rules, replicated here where they need torch to import (file and line cited);
every ROLL export loads strictly into ROLL's RLVR config fields (read from its source,
``tests/data/roll``) and passes ROLL's rules. ``--target verl|roll`` plans break none of them."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from costmodels.placement.canned import qwen3_workflow, small_cluster
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.roll_export import export_roll, roll_rule_violations
from costmodels.placement.space import TaskConfig, build_plan
from costmodels.placement.verl_export import (
    FULLY_ASYNC_LOG_PROB_NOTE,
    OLD_LOG_PROB_NOTE,
    VERL_RELEASES,
    export_verl,
)
from formulations.placement.ilp import solve_placement_ilp
from heuristics.placement.colocated import colocated_plan
from planner import solve
from planner.io import build_problem
from planner.planning import export_text
from tests.conftest import run_cli, run_cli_pty
from tests.framework_configs import compose_verl, roll_fields, strict_roll_errors

H800_2x4 = small_cluster([("a", "H800", 4, "z"), ("b", "H800", 4, "z")])
MIXED = small_cluster([("a", "A100-80GB", 4, "z"), ("l", "L40S", 4, "z")])


#: the exported workflows' batch: 48 prompts of 8 responses, 1024 + 2048 tokens, micro-batches of 4
BATCH = {"global_batch": 48, "responses_per_prompt": 8, "micro_batch_size": 4}
LENGTHS = {"prompt_length": 1024, "response_length": 2048}


def _workflow(alg: str, mode: str, reward: bool = False) -> dict[str, Any]:
    return qwen3_workflow(alg, mode, reward=reward, **BATCH, **LENGTHS)


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


#: the four plans of :func:`plans`
CASE_NAMES = [
    "colocated-grpo",
    "colocated-ppo-critic-ref-reward",
    "disaggregated-one-step-off",
    "heterogeneous",
]


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
@pytest.mark.parametrize("name", CASE_NAMES)
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


@pytest.mark.parametrize("name", CASE_NAMES)
def test_roll_export_loads_strictly_and_carries_the_workflow(cases, name):
    problem, plan = cases[name]
    doc = export_roll(problem, plan)
    config = doc["document"]
    assert strict_roll_errors(config, roll_fields()) == []
    wf = problem.workflow
    assert config["adv_estimator"] == ("gae" if wf.algorithm == "ppo" else "grpo")
    assert config["enable_reference"] and config["rollout_batch_size"] == wf.global_batch
    assert config["num_return_sequences_in_group"] == wf.responses_per_prompt
    assert (config["prompt_length"], config["response_length"]) == (
        wf.prompt_length,
        wf.response_length,
    )
    assert roll_rule_errors(config) == [] or doc["rule_violations"]
    # the file is the document under its comments: YAML reads back the config alone
    text = export_text(doc)
    assert yaml.safe_load(text) == config and text.startswith("# ROLL RLVR pipeline config")


def roll_rule_errors(config: dict[str, Any]) -> list[str]:
    """ROLL's rules that run in its config's __post_init__ (they import torch there), on an
    export: roll/configs/worker_config.py:283-287 (vLLM workers take TP x PP GPUs each, so the
    mapping divides by it), roll/configs/base_config.py:368-380 (rollout_batch_size divisible by
    actor_train's Megatron DP), roll/pipeline/rlvr/rlvr_config.py:222 (async ratio >= 1), and the
    placement rules of roll_rule_violations."""
    out = []
    for worker in ("actor_infer", "actor_train", "reference", "critic", "reward_model"):
        w = config.get(worker)
        if w is None:
            continue
        sc = w["strategy_args"]["strategy_config"]
        if w["strategy_args"]["strategy_name"] == "vllm":
            per = sc["tensor_parallel_size"] * sc["pipeline_parallel_size"]
            if len(w["device_mapping"]) % per:
                out.append(f"{worker}: mapping not divisible by TP x PP")
    t = config["actor_train"]
    sc = t["strategy_args"]["strategy_config"]
    dp = len(t["device_mapping"]) // (
        sc["tensor_model_parallel_size"] * sc["pipeline_model_parallel_size"]
    )
    if dp > 1 and config["rollout_batch_size"] % dp:
        out.append("rollout_batch_size not divisible by actor_train DP")
    ratio = config["async_generation_ratio"]
    if 0 < ratio < 1:
        out.append("async_generation_ratio must be >= 1")
    infer = config["actor_infer"]
    out += roll_rule_violations(
        set(t["device_mapping"]),
        set(infer["device_mapping"]),
        set(config["reference"]["device_mapping"]),
        set(config["critic"]["device_mapping"]) if "critic" in config else None,
        len(infer["device_mapping"])
        // (
            infer["strategy_args"]["strategy_config"]["tensor_parallel_size"]
            * infer["strategy_args"]["strategy_config"]["pipeline_parallel_size"]
        ),
        ratio,
    )
    return out


def test_roll_rules_mirror_the_framework():
    train, infer = {0, 1}, {0, 1, 2, 3}
    assert roll_rule_violations(train, train, train, None, 2, 0.0) == []  # co-located, sync
    assert any("colocating" in v for v in roll_rule_violations(train, train, train, None, 2, 1.0))
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


@pytest.mark.parametrize("framework", ["verl", "roll"])
@pytest.mark.parametrize(
    "alg,mode,cluster",
    [("grpo", "async", H800_2x4), ("ppo", "sync", MIXED), ("ppo", "async", MIXED)],
)
def test_target_plans_break_no_framework_rule(framework, alg, mode, cluster):
    """The exact optimum under --target is valid, exports without a rule violation, and composes
    (verl) or loads strictly (ROLL); it never beats the unrestricted optimum."""
    problem = _problem(cluster, alg, mode, target=framework)
    r = solve(problem, "ilp")
    assert r.success and r.status.value == "optimal", r.message
    free = solve(_problem(cluster, alg, mode), "ilp")
    assert r.objective >= free.objective * (1 - 1e-9)
    if framework == "verl":
        doc = export_verl(problem, r.plan)
        assert (
            doc["rule_violations"] == []
            and doc["not_expressible"] == []
            or all(
                "heterogeneous cluster" in n or "mixes GPU types" in n
                for n in doc["not_expressible"]
            )
        )
        cfg = compose_verl("0.9.1", doc["config_name"], hydra_overrides(doc))
        assert verl_rule_errors(cfg, doc) == []
    else:
        doc = export_roll(problem, r.plan)
        assert doc["rule_violations"] == []
        assert strict_roll_errors(doc["document"], roll_fields()) == []
        assert roll_rule_errors(doc["document"]) == []


def test_rollout_export_needs_the_fork_for_what_only_the_fork_has():
    """The RollPacker export loads strictly into the fork's RLVRConfig; upstream ROLL would drop
    exactly the keys it names as needing the fork."""
    from costmodels.rollout.summary import ROLLPACKER_ONLY_KEYS
    from costmodels.rollout.summary import export_roll as rollout_export
    from tests.test_rollout_cli import TINY

    problem = build_problem("rollout", {"job": TINY})
    r = solve(problem, "search")
    assert r.success, r.message
    doc = rollout_export(problem, r.plan)
    assert strict_roll_errors(doc["document"], roll_fields("rollpacker_config_fields")) == []
    upstream = strict_roll_errors(doc["document"], roll_fields())
    assert sorted(e.split(":")[0] for e in upstream) == doc["needs_rollpacker_fork"]
    assert set(doc["needs_rollpacker_fork"]) <= ROLLPACKER_ONLY_KEYS
    # the old log-prob pass: the note says how the fork runs it and what the judge charged
    assert any("which the fork's async launcher skips" in n for n in doc["notes"])
    training = {**TINY["workload"]["training"], "log_prob_pass": False}
    job = {**TINY, "workload": {**TINY["workload"], "training": training}}
    bare = build_problem("rollout", {"job": job})
    notes = rollout_export(bare, r.plan)["notes"]
    assert any("with SKIP_OLD_LOG_PROBS=True" in n for n in notes)


def test_plan_target_through_the_cli_as_a_user_runs_it(tmp_path):
    """``rlplan plan --target verl --export verl`` on a terminal and without: the restriction's
    cost under the summary and in the plan file, which validates with the target's rules."""
    problem = tmp_path / "prob.yaml"
    problem.write_text(
        yaml.safe_dump(
            {"problem": "placement", "cluster": MIXED, "workflow": _workflow("grpo", "async")}
        )
    )
    out = tmp_path / "plan.json"
    args = ["plan", str(problem), "--solver", "ilp", "--target", "verl", "--export", "verl"]
    code, text = run_cli_pty(*args, "-o", str(out))
    assert code == 0 and "--target verl:" in text and "against the best plan" in text
    r = run_cli(*args, "-o", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["inputs"]["target"] == {"framework": "verl"}
    cost = doc["target_cost"]
    assert cost["framework"] == "verl" and cost["ratio"] >= 1 - 1e-9
    export = yaml.safe_load((tmp_path / "plan.verl.yaml").read_text())
    assert export["rule_violations"] == [] and export["command"].startswith("python -m verl")
    assert run_cli("validate", str(out)).returncode == 0
    # the same plan against ROLL's rules: co-located async plans are refused there
    doc["inputs"]["target"] = {"framework": "roll"}
    out.write_text(json.dumps(doc))
    v = run_cli("validate", str(out))
    colocated = len(doc["plan"]["groups"]) == 1
    assert (v.returncode != 0) == colocated and (
        not colocated or "roll-runnable" in v.stdout + v.stderr
    )


@pytest.mark.parametrize("version", list(VERL_RELEASES))
@pytest.mark.parametrize(
    "knobs", [{"staleness": 0.5}, {"staleness": 0.0, "partial_rollout": False}]
)
def test_verl_export_runs_a_fully_async_plan_with_its_knobs(version, knobs):
    """A fully-async workflow exports to fully_async_policy: its Megatron config composes, the
    fields its rollouter and trainer assert are set, and one rlplan step (global_batch prompts)
    is one weight sync: require_batches x ppo_mini_batch_size x trigger_parameter_sync_step."""
    wf = {
        **_workflow("grpo", "fully-async", False),
        "mini_batch": 4,
        "fully_async": {**knobs, "updates_per_sync": 2},
    }
    problem = build_problem("placement", {"cluster": H800_2x4, "workflow": wf})
    doc = export_verl(problem, _disaggregated(problem), version)
    assert doc["config_name"] == "fully_async_ppo_megatron_trainer"
    assert "fully_async_policy" in doc["entrypoint"] and doc["not_expressible"] == []
    cfg = compose_verl(version, doc["config_name"], hydra_overrides(doc))
    a, t = cfg.actor_rollout_ref, cfg.async_training
    # fully_async_rollouter.py / fully_async_trainer.py asserts (v0.7.0 :73-77, 0.9.1 :350-355)
    assert cfg.data.train_batch_size == 0 and cfg.data.gen_batch_size == 1
    assert not a.hybrid_engine and a.rollout.mode == "async" and a.rollout.calculate_log_probs
    assert t.staleness_threshold == knobs["staleness"]
    assert t.partial_rollout == knobs.get("partial_rollout", True)
    assert t.trigger_parameter_sync_step == 2
    per_sync = a.actor.ppo_mini_batch_size * t.require_batches * t.trigger_parameter_sync_step
    assert per_sync == problem.workflow.global_batch
    assert (cfg.rollout.nnodes, cfg.rollout.n_gpus_per_node) == (1, 4)
    assert (cfg.trainer.nnodes, cfg.trainer.n_gpus_per_node) == (1, 4)
    assert "rollout.total_rollout_steps" in doc["set_before_running"]


@pytest.mark.parametrize(
    ("staleness", "ratio", "note"),
    [(0.5, 1.0, "at least one step"), (0.0, 0.0, "synchronously"), (2.0, 2.0, None)],
)
def test_roll_runs_a_fully_async_plan_at_a_ratio_it_accepts(staleness, ratio, note):
    """ROLL's async pipeline asserts async_generation_ratio >= 1 (rlvr_config.py:222): a
    staleness below one step exports one step ahead and says so; staleness 0 runs synchronously
    (ROLL has no stream off-policy mode); a whole one is the ratio. The export still loads
    strictly and breaks none of ROLL's rules."""
    wf = {**_workflow("grpo", "fully-async", False), "fully_async": {"staleness": staleness}}
    problem = build_problem("placement", {"cluster": H800_2x4, "workflow": wf})
    doc = export_roll(problem, _disaggregated(problem))
    config = doc["document"]
    assert config["async_generation_ratio"] == ratio
    assert roll_rule_errors(config) == [] and strict_roll_errors(config, roll_fields()) == []
    said = [n for n in doc["not_expressible"] if f"staleness {staleness:g}" in n]
    assert (note is None and said == []) or (note is not None and note in said[0])


@pytest.mark.parametrize("mini_batch", [None, 12, 24])
def test_roll_takes_one_optimizer_step_per_mini_batch(mini_batch):
    """ROLL steps its optimizer once per per_device_train_batch_size x
    gradient_accumulation_steps x DP samples: the export sets them to one mini-batch's samples,
    so ROLL runs the optimizer steps the judge prices (WorkflowSpec.optimizer_steps), as the verl
    export's ppo_mini_batch_size does."""
    wf = {**_workflow("grpo", "sync", False), "mini_batch": mini_batch}
    problem = build_problem("placement", {"cluster": H800_2x4, "workflow": wf})
    plan = _disaggregated(problem)
    args = export_roll(problem, plan)["document"]["actor_train"]["training_args"]
    dp = plan.task("actor_training").dp
    per_step = args["per_device_train_batch_size"] * args["gradient_accumulation_steps"] * dp
    w = problem.workflow
    assert per_step == w.samples // w.optimizer_steps
    assert w.optimizer_steps == (1 if mini_batch is None else w.global_batch // mini_batch)


@pytest.mark.parametrize("version", list(VERL_RELEASES))
def test_a_fully_async_plan_without_the_reference_pass_exports_no_kl(version):
    """DAPO under fully_async_policy (``reference_pass: false``): verl builds no reference (no KL
    loss, no in-reward KL: ``need_reference_policy`` is false), trains on the rollout's
    log-probs, and the config still composes; ROLL gets ``enable_reference: false``."""
    wf = {**_workflow("grpo", "fully-async", False), "reference_pass": False}
    problem = build_problem("placement", {"cluster": H800_2x4, "workflow": wf})
    assert "reference_inference" not in {t.name for t in problem.tasks}
    plan = _disaggregated(problem)
    doc = export_verl(problem, plan, version)
    assert doc["not_expressible"] == []
    assert not any(k.startswith("actor_rollout_ref.ref.") for k in doc["overrides"])
    cfg = compose_verl(version, doc["config_name"], hydra_overrides(doc))
    assert not cfg.actor_rollout_ref.actor.use_kl_loss and not cfg.algorithm.use_kl_in_reward
    assert cfg.actor_rollout_ref.rollout.calculate_log_probs
    roll = export_roll(problem, plan)["document"]
    assert roll["enable_reference"] is False and roll["use_kl_loss"] is False
    assert "reference" not in roll


@pytest.mark.parametrize("version", list(VERL_RELEASES))
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_plan_without_the_reference_pass_runs_no_forward_pass_before_training(version, mode):
    """``reference_pass: false`` in a synchronous or one-step-off workflow: the judge charges no
    pass before training, so verl runs in bypass mode (the rollout's log-probs as the old
    policy's, no ``old_log_prob`` pass) with no KL, and the config composes; ROLL is told not to
    recompute them (``force_disable_old_logprobs_recompute``)."""
    wf = {**_workflow("grpo", mode, False), "reference_pass": False}
    problem = build_problem("placement", {"cluster": H800_2x4, "workflow": wf})
    plan = _disaggregated(problem) if mode == "async" else colocated_plan(problem, 2, 2, 1)
    doc = export_verl(problem, plan, version)
    cfg = compose_verl(version, doc["config_name"], hydra_overrides(doc))
    assert cfg.algorithm.rollout_correction.bypass_mode
    assert cfg.actor_rollout_ref.rollout.calculate_log_probs
    assert not cfg.actor_rollout_ref.actor.use_kl_loss and not cfg.algorithm.use_kl_in_reward
    roll = export_roll(problem, plan)["document"]
    assert roll["force_disable_old_logprobs_recompute"] is True
    assert strict_roll_errors(roll, roll_fields()) == []
    # with the pass, nothing of the kind is set
    with_pass = build_problem(
        "placement", {"cluster": H800_2x4, "workflow": _workflow("grpo", mode, False)}
    )
    plan = _disaggregated(with_pass) if mode == "async" else colocated_plan(with_pass, 2, 2, 1)
    doc = export_verl(with_pass, plan, version)
    assert "algorithm.rollout_correction.bypass_mode" not in doc["overrides"]
    assert export_roll(with_pass, plan)["document"]["force_disable_old_logprobs_recompute"] is False
    # main_ppo then recomputes the old log-probs beside the reference's, which the judge does not
    # charge, and the export says so; one_step_off's recipe config is in bypass mode already
    cfg = compose_verl(version, doc["config_name"], hydra_overrides(doc))
    assert cfg.algorithm.rollout_correction.bypass_mode == (mode == "async")
    assert (OLD_LOG_PROB_NOTE in doc["notes"]) == (mode == "sync")
    # ROLL recomputes them only when a step makes several updates
    several = {**_workflow("grpo", mode, False), "mini_batch": BATCH["global_batch"] // 2}
    several_p = build_problem("placement", {"cluster": H800_2x4, "workflow": several})
    assert not any(c.startswith("old log-probs") for c in export_roll(with_pass, plan)["comments"])
    plan = _disaggregated(several_p) if mode == "async" else colocated_plan(several_p, 2, 2, 1)
    comments = export_roll(several_p, plan)["comments"]
    assert any(c.startswith("old log-probs: 2 optimizer updates") for c in comments)


@pytest.mark.parametrize("version", list(VERL_RELEASES))
@pytest.mark.parametrize("mode", ["sync", "async", "fully-async"])
@pytest.mark.parametrize("reference", [True, False])
def test_a_plan_with_the_old_log_prob_pass_makes_the_trainer_recompute_them(
    version, mode, reference
):
    """``old_log_prob_pass: true``: the judge charges the actor's recompute of the old
    log-probs, so verl runs it (bypass mode off, fully_async_policy not on the rollout's
    log-probs) beside the reference's when there is one, with no note of a pass beyond the
    judged ones; the config composes. ROLL is told to recompute them, strictly loaded."""
    wf = {
        **_workflow("grpo", mode, False),
        "reference_pass": reference,
        "old_log_prob_pass": True,
    }
    problem = build_problem("placement", {"cluster": H800_2x4, "workflow": wf})
    plan = _disaggregated(problem) if mode != "sync" else colocated_plan(problem, 2, 2, 1)
    doc = export_verl(problem, plan, version)
    assert doc["not_expressible"] == []
    cfg = compose_verl(version, doc["config_name"], hydra_overrides(doc))
    assert not cfg.algorithm.rollout_correction.bypass_mode
    assert bool(cfg.actor_rollout_ref.actor.use_kl_loss) == reference
    assert OLD_LOG_PROB_NOTE not in doc["notes"]
    if mode == "fully-async":
        key = VERL_RELEASES[version].rollout_log_probs_key
        assert doc["overrides"][key] is False
        assert FULLY_ASYNC_LOG_PROB_NOTE in doc["notes"]
    roll = export_roll(problem, plan)
    assert roll["document"]["enable_old_logprobs_recompute"] is True
    assert roll["document"]["force_disable_old_logprobs_recompute"] is False
    assert strict_roll_errors(roll["document"], roll_fields()) == []
    assert not any(c.startswith("old log-probs") for c in roll["comments"])


def test_roll_export_says_when_ppo_recomputes_the_old_log_probs():
    """PPO with its reference pass puts KL in the reward (``init_kl_coef`` > 0), for which ROLL
    recomputes the old log-probs whatever the updates (``set_old_logprobs_status``): one pass
    more than judged without ``old_log_prob_pass``, which the export says; with it, none."""
    for old, said in ((False, True), (True, False)):
        wf = {**_workflow("ppo", "sync", False), "old_log_prob_pass": old}
        problem = build_problem("placement", {"cluster": H800_2x4, "workflow": wf})
        comments = export_roll(problem, colocated_plan(problem, 2, 2, 1))["comments"]
        assert any("PPO's KL penalty in the reward" in c for c in comments) == said


def test_an_uneven_split_does_not_hide_a_shape_verl_cannot_serve():
    """A reward model pipelined (PP2) and split unevenly breaks two of verl's rules: both are
    listed, so the export never writes the PP away silently."""
    from costmodels.placement.frameworks import FrameworkRules

    problem = _problem(H800_2x4, "ppo", "sync", reward=True)
    devs = [d.id for d in problem.topology.devices]
    configs = {t.name: TaskConfig(2, 1, 4) for t in problem.tasks}
    configs["reward_inference"] = TaskConfig(1, 2, 4)
    plan = build_plan(problem, [([t.name for t in problem.tasks], devs)], configs)
    tasks = [
        t.model_copy(update={"batch_shares": [0.4, 0.2, 0.2, 0.2]})
        if t.task == "reward_inference"
        else t
        for t in plan.tasks
    ]
    uneven = plan.model_copy(update={"tasks": tasks})
    said = " ".join(v.message for v in FrameworkRules("verl").violations(problem, uneven))
    assert "reward_inference: uneven batch" in said and "not servable" in said
