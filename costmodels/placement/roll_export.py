"""A ROLL run of a placement plan: a top-level RLVR pipeline YAML, and what ROLL cannot run.

ROLL loads a pipeline config with non-strict dacite, so a key that is not a config field is
dropped without a word; the export therefore writes only fields of ``RLVRConfig``
(``roll/pipeline/rlvr/rlvr_config.py``) and the worker configs it holds, at the top level, and
``tests/test_framework_exports.py`` loads every export strictly into that field set (read from
ROLL's source, ``tests/data/roll``). Revision: :data:`ROLL_REVISION`.

* **The workflow.** ``adv_estimator`` (``grpo``, or ``gae`` for PPO: ROLL's default is ``gae``,
  which builds a critic); ``use_kl_loss`` for GRPO and ``init_kl_coef`` for PPO, with
  ``enable_reference`` (``base_config.py`` ``PPOConfig.__post_init__`` turns the reference on
  for either); ``rollout_batch_size`` prompts of ``num_return_sequences_in_group`` responses;
  ``prompt_length`` and ``response_length`` (``sequence_length`` is derived);
  ``async_generation_ratio`` 1 for an async workflow, a fully-async one's staleness (at least
  1), 0 otherwise (``async_pipeline`` is a read-only property of it; the async RLVR pipeline
  asserts a ratio >= 1).
* **Batches.** ``base_config.py`` validates ``rollout_batch_size`` divisible by actor_train's
  Megatron DP (``utils/config_utils.py`` ``validate_megatron_batch_size``); each training worker
  takes ``per_device_train_batch_size`` x ``gradient_accumulation_steps`` samples per DP rank and
  optimizer step, set so that a step covers one mini-batch (``mini_batch`` prompts' samples; the
  whole iteration without one, HetRL Appendix B.3's one update per iteration), the optimizer
  steps the judge prices.
* **Placement.** Each worker's ``device_mapping`` is a list of global GPU ranks (rank = node rank
  x ``num_gpus_per_node`` + local index); ``WorkerConfig.__post_init__`` sets vLLM's
  ``num_gpus_per_worker`` to TP x PP and Megatron's to 1, and ``world_size`` to
  ``len(device_mapping) // num_gpus_per_worker``. Rules (:func:`roll_rule_violations`):
  actor_train and actor_infer identical (co-located: ``agentic_pipeline.py`` asserts
  ``async_generation_ratio == 0`` there, and RLVR warns that sharing inference GPUs costs
  performance), disjoint, or train strictly inside infer (partial-GPU mode: async, infer DP >= 2,
  critic in infer and off train); the reference on exactly actor_train's GPUs.
* **Heterogeneous clusters.** ROLL orders nodes itself (``distributed/scheduler/
  resource_manager.py``: by GPU node rank from Ray, or ``NODE_RANK``), not by the plan's node
  names, so which GPU type backs a rank is not controlled; the export says so.
"""

from __future__ import annotations

from typing import Any

from costmodels.placement.export_common import balance_notes, node_counts
from costmodels.placement.frameworks import FrameworkRules
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.verl_export import largest_divisor_at_most
from costmodels.workflow import (
    ACTOR_GENERATION,
    ACTOR_TRAINING,
    CRITIC_INFERENCE,
    CRITIC_TRAINING,
    REFERENCE_INFERENCE,
    REWARD_INFERENCE,
    WorkflowSpec,
    recompute_by_default,
)

ROLL_REVISION = "alibaba/ROLL main @ 8eb27cc2 (2026-08-19)"

#: rlplan task -> (ROLL worker field of RLVRConfig, strategy)
ROLL_WORKERS = {
    ACTOR_GENERATION: ("actor_infer", "vllm"),
    ACTOR_TRAINING: ("actor_train", "megatron_train"),
    REFERENCE_INFERENCE: ("reference", "megatron_infer"),
    CRITIC_TRAINING: ("critic", "megatron_train"),
    REWARD_INFERENCE: ("reward_model", "vllm"),
}


def roll_ranks(problem: PlacementProblem, per_node: int) -> dict[str, int]:
    """ROLL's global rank of every GPU: node rank x num_gpus_per_node + local index."""
    order: dict[str, int] = {}
    for d in problem.topology.devices:
        order.setdefault(d.node, len(order))
    return {d.id: order[d.node] * per_node + d.local_index for d in problem.topology.devices}


def roll_rule_violations(
    train: set[int],
    infer: set[int],
    reference: set[int] | None,
    critic: set[int] | None,
    infer_dp: int,
    async_ratio: float,
) -> list[str]:
    """ROLL's placement rules (module doc) on global-rank sets; [] when it accepts them."""
    out = []
    if train == infer:
        mode = "co-located"
        if async_ratio > 0:
            out.append(
                "actor_train and actor_infer co-located in an async pipeline: ROLL's colocating "
                "mode only supports sync/on-policy training"
            )
    elif train.isdisjoint(infer):
        mode = "disjoint"
    elif train < infer:
        mode = "partial"
        if infer_dp < 2:
            out.append(
                "actor_train inside actor_infer (partial-GPU mode) needs actor_infer DP >= 2, "
                f"got {infer_dp}"
            )
        if async_ratio <= 0:
            out.append(
                "actor_train inside actor_infer (partial-GPU mode) needs async_generation_ratio > "
                "0 (a synchronous workflow has none)"
            )
        if critic is not None and not (critic <= infer and critic.isdisjoint(train)):
            out.append("partial-GPU mode needs the critic inside actor_infer and off actor_train")
    else:
        mode = "overlap"
        out.append(
            "actor_train and actor_infer overlap partly: ROLL accepts disjoint, train inside "
            "infer, or identical"
        )
    if reference is not None and reference != train:
        out.append(f"reference must sit on exactly the actor_train devices (mode {mode})")
    return out


def _strategy(strategy: str, tp: int, pp: int, dbs: int | None) -> dict[str, Any]:
    if strategy == "vllm":
        config: dict[str, Any] = {"tensor_parallel_size": tp, "pipeline_parallel_size": pp}
        if dbs is not None:
            config["max_num_seqs"] = dbs
        return {"strategy_name": strategy, "strategy_config": config}
    return {
        "strategy_name": strategy,
        "strategy_config": {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp},
    }


def _training_args(problem: PlacementProblem, dp: int, what: str, notes: list[str]) -> dict:
    """Micro-batch and accumulation so that one optimizer step takes one mini-batch's samples:
    ROLL splits the iteration's samples into batches of per_device_train_batch_size x
    gradient_accumulation_steps x DP, one optimizer step each, so the run takes the judge's
    ``WorkflowSpec.optimizer_steps`` (``mini_batch``; verl's ``ppo_mini_batch_size``)."""
    wf = problem.workflow
    samples = wf.samples // wf.optimizer_steps
    if samples % dp:
        notes.append(f"{what}: DP{dp} does not divide the {samples} samples of an optimizer step")
    per_rank = max(1, samples // dp)
    micro = largest_divisor_at_most(per_rank, wf.micro_batch_size)
    return {"per_device_train_batch_size": micro, "gradient_accumulation_steps": per_rank // micro}


def export_roll(problem: PlacementProblem, plan: PlacementPlan) -> dict[str, Any]:
    """ROLL's RLVR pipeline config for ``plan`` (module doc). ``document`` is the YAML ROLL
    loads (every key a field of ``RLVRConfig`` or of a worker config it holds); ``comments`` head
    the file (what to set, the GPU ranks, what ROLL cannot run); the rest is for callers."""
    notes = balance_notes(plan)
    counts = node_counts(problem, [d.id for d in problem.topology.devices])
    per_node = max(counts.values())
    notes += _cluster_notes(problem, counts) + _async_notes(problem.workflow)
    names = {t.name for t in problem.tasks}
    wf = problem.workflow
    ppo = wf.algorithm == "ppo"
    rank_of = roll_ranks(problem, per_node)
    ranks = {t.task: [rank_of[d] for d in t.all_devices()] for t in plan.tasks}
    config = _pipeline_config(wf, per_node)
    _add_workers(config, problem, plan, ranks, notes)
    if CRITIC_INFERENCE in names:
        ci, ct = plan.task(CRITIC_INFERENCE), plan.task(CRITIC_TRAINING)
        if set(ranks[CRITIC_INFERENCE]) != set(ranks[CRITIC_TRAINING]) or (ci.tp, ci.pp) != (
            ct.tp,
            ct.pp,
        ):
            notes.append(
                f"critic_inference TP{ci.tp} PP{ci.pp} on its own GPUs: ROLL's critic worker "
                f"computes values with its training layout (TP{ct.tp} PP{ct.pp})"
            )
    violations = _violations(problem, plan, ranks, config["async_generation_ratio"])
    must_set = {
        "pretrain": f"path of {wf.model('actor').name}",
        **({"reward_pretrain": f"path of {wf.model('critic').name}"} if ppo else {}),
        **(
            {"reward_model.model_args.model_name_or_path": "path of the reward model"}
            if REWARD_INFERENCE in names
            else {}
        ),
        "rewards": "your rule-based reward workers (math, code, ...)",
    }
    comments = [
        f"ROLL RLVR pipeline config from an rlplan placement plan ({ROLL_REVISION});",
        "every key is a field of RLVRConfig or of a worker config it holds.",
        "Set before running: " + "; ".join(f"{k}: {v}" for k, v in must_set.items()),
        "GPU ranks (node rank x num_gpus_per_node + local index): "
        + ", ".join(f"{d}={r}" for d, r in rank_of.items()),
    ]
    why = _recompute_reason(wf)
    if why:
        comments.append(
            f"old log-probs: {why}, so ROLL recomputes them beside the reference's, one more "
            "forward pass over the batch than the plan was judged with (old_log_prob_pass: true "
            "judges it; force_disable_old_logprobs_recompute: true runs it as judged)"
        )
    comments += [f"NOT EXPRESSIBLE: {n}" for n in notes + violations]
    return {
        "framework": "roll",
        "revision": ROLL_REVISION,
        "document": config,
        "comments": comments,
        "gpu_ranks": rank_of,
        "set_before_running": must_set,
        "rule_violations": violations,
        "not_expressible": notes + violations,
    }


def _cluster_notes(problem: PlacementProblem, counts: dict[str, int]) -> list[str]:
    """What ROLL's rank-to-node mapping cannot express: nodes of different GPU counts, and GPU
    types whose nodes ROLL may number in another order."""
    notes = []
    if len(set(counts.values())) > 1:
        notes.append(
            f"nodes hold different GPU counts {counts}; ROLL maps rank r to node r // "
            "num_gpus_per_node, so ranks of the smaller nodes' missing GPUs must stay unused"
        )
    if len({d.gpu.name for d in problem.topology.devices}) > 1:
        notes.append(
            "heterogeneous cluster: ROLL numbers nodes itself (by Ray's GPU node order or "
            "NODE_RANK), not by this plan's node order, so start the nodes in the order of "
            "GPU ranks above or the GPU types behind each rank differ from the plan"
        )
    return notes


def _async_ratio(wf: WorkflowSpec) -> float:
    """ROLL's ``async_generation_ratio``: how many steps rollout may run ahead of training
    (0 synchronous, 1 one step off); a fully-async workflow's staleness, at least 1, because
    ROLL's async pipeline asserts a ratio >= 1 (``RLVRConfig.__post_init__``; the export notes
    the rounding, :func:`_async_notes`). ROLL has no streaming pipeline that drains before each
    sync, so staleness 0 exports as synchronous."""
    if wf.mode == "async":
        return 1.0
    if wf.mode == "fully-async" and wf.asynchrony.staleness > 0:
        return max(1.0, wf.asynchrony.staleness)
    return 0.0


def _recompute_reason(wf: WorkflowSpec) -> str:
    """Why ROLL recomputes the old policy's log-probs by itself when the plan was judged
    without that pass beside the reference's ("": it does not): RLVRConfig's
    set_old_logprobs_status turns the recompute on for several backward steps a step (here
    optimizer updates) and for a KL penalty in the reward (PPO's ``init_kl_coef``)."""
    if not wf.reference_pass or wf.old_log_prob_pass or not recompute_by_default(wf, "roll"):
        return ""
    if wf.optimizer_steps > 1:
        return f"{wf.optimizer_steps} optimizer updates a step"
    return "PPO's KL penalty in the reward (init_kl_coef > 0)"


def _async_notes(wf: WorkflowSpec) -> list[str]:
    """What ROLL's async ratio cannot say of the workflow's asynchrony."""
    staleness = wf.asynchrony.staleness if wf.mode == "fully-async" else None
    if staleness is not None and 0 < staleness < 1:
        return [
            f"staleness {staleness:g}: ROLL's async pipeline runs rollout at least one step "
            "ahead (async_generation_ratio >= 1), so the export runs it one step ahead"
        ]
    if staleness == 0:
        return ["staleness 0 (verl's stream off-policy mode): ROLL runs it synchronously"]
    return []


def _pipeline_config(wf: WorkflowSpec, per_node: int) -> dict[str, Any]:
    """The pipeline's own keys: model, algorithm, batch and lengths, async ratio."""
    ppo = wf.algorithm == "ppo"
    config: dict[str, Any] = {
        "num_gpus_per_node": per_node,
        "pretrain": wf.model("actor").name,
        "adv_estimator": "gae" if ppo else "grpo",
        # the reference pass (the default) is the KL term's: PPO's in the reward, GRPO's loss
        "enable_reference": wf.reference_pass,
        "use_kl_loss": not ppo and wf.reference_pass,
        "init_kl_coef": 0.2 if ppo and wf.reference_pass else 0.0,
        # the old log-prob pass, as judged: recomputed (a user's enable_old_logprobs_recompute
        # stands: set_old_logprobs_status only turns it on), or, with no pass before training
        # at all, never (the training forward's own log-probs stand for the old policy's,
        # ActorWorker.get_old_log_probs_with_cache); by itself ROLL recomputes them when a
        # step makes several updates or PPO puts KL in the reward (set_old_logprobs_status)
        "enable_old_logprobs_recompute": wf.old_log_prob_pass,
        "force_disable_old_logprobs_recompute": not (wf.reference_pass or wf.old_log_prob_pass),
        "rollout_batch_size": wf.global_batch,
        "num_return_sequences_in_group": wf.responses_per_prompt,
        "prompt_length": wf.prompt_length,
        "response_length": wf.response_length,
        "ppo_epochs": 1,
        "async_generation_ratio": _async_ratio(wf),
    }
    if ppo:
        config["reward_pretrain"] = wf.model("critic").name
    return config


def _add_workers(
    config: dict[str, Any],
    problem: PlacementProblem,
    plan: PlacementPlan,
    ranks: dict[str, list[int]],
    notes: list[str],
) -> None:
    """One worker config per task ROLL runs: its GPU ranks and strategy (training arguments for
    Megatron training, the model for the reward worker)."""
    names = {t.name for t in problem.tasks}
    wf = problem.workflow
    for task, (worker, strategy) in ROLL_WORKERS.items():
        if task not in names:
            continue
        t = plan.task(task)
        dbs = (t.decode_batch or wf.decode_batch_size) if task == ACTOR_GENERATION else None
        w: dict[str, Any] = {
            "device_mapping": sorted(ranks[task]),
            "strategy_args": _strategy(strategy, t.tp, t.pp, dbs),
        }
        if strategy == "megatron_train":
            w["training_args"] = _training_args(problem, t.dp, task, notes)
        if task == REWARD_INFERENCE:
            w["model_args"] = {"model_name_or_path": wf.model("reward").name}
        config[worker] = w


def _violations(
    problem: PlacementProblem,
    plan: PlacementPlan,
    ranks: dict[str, list[int]],
    async_ratio: float,
) -> list[str]:
    """ROLL's own placement rules, its batch-size check and the framework rules of
    ``costmodels.placement.frameworks`` (each once)."""
    names = {t.name for t in problem.tasks}
    wf = problem.workflow
    violations = roll_rule_violations(
        set(ranks[ACTOR_TRAINING]),
        set(ranks[ACTOR_GENERATION]),
        set(ranks[REFERENCE_INFERENCE]) if REFERENCE_INFERENCE in names else None,
        set(ranks[CRITIC_TRAINING]) if CRITIC_TRAINING in names else None,
        plan.task(ACTOR_GENERATION).dp,
        async_ratio,
    )
    actor_dp = plan.task(ACTOR_TRAINING).dp
    if actor_dp > 1 and wf.global_batch % actor_dp:
        violations.append(
            f"rollout_batch_size {wf.global_batch} is not divisible by actor_train's DP "
            f"{actor_dp} (ROLL's validate_megatron_batch_size)"
        )
    rules = [str(v) for v in FrameworkRules("roll").violations(problem, plan)]
    violations += [v for v in rules if v not in violations]
    return violations
