"""Framework configs from a placement plan: verl (release v0.7.0) and ROLL (main, Aug 2026).

Both are checked against the frameworks' own source (read, not imported: neither is a dependency).
What a plan does that a framework cannot express is listed under ``not_expressible``, never
silently dropped.

**verl v0.7.0** (Hydra overrides, ``ppo_megatron_trainer.yaml``). ``verl.trainer.main_ppo`` puts
actor, rollout, reference and critic in one ``global_pool`` of ``[trainer.n_gpus_per_node] *
trainer.nnodes`` GPUs (``TaskRunner.init_resource_pool_mgr``); only the reward model may get its
own ``reward_pool`` (``reward_model.enable_resource_pool``, ``reward_model.nnodes``,
``reward_model.n_gpus_per_node``). Generation apart from training needs the
``recipe/one_step_off_policy`` entry point (``trainer_pool`` for actor/ref/critic,
``rollout_pool`` from ``rollout.nnodes`` / ``rollout.n_gpus_per_node``), which is one-step
off-policy: async only. Parallel sizes: ``actor_rollout_ref.rollout.tensor_model_parallel_size``,
``.pipeline_model_parallel_size`` and ``.max_num_seqs``; Megatron's
``<role>.megatron.tensor_model_parallel_size`` / ``.pipeline_model_parallel_size`` for
``actor_rollout_ref.actor``, ``actor_rollout_ref.ref`` and ``critic``; the reward model is served
by ``reward_model.rollout.tensor_model_parallel_size``. (Keys moved between releases: v0.4 had
the pools hard-wired and no ``reward_model.enable_resource_pool``; v0.7 added the reward loop.)
Critic inference and training are one worker: one parallel configuration.

**ROLL** (``roll/configs/worker_config.py``, ``roll/pipeline/rlvr/rlvr_config.py``,
``roll/pipeline/agentic/agentic_pipeline.py``, ``roll/distributed/scheduler/resource_manager.py``):
each worker has a ``device_mapping`` (a Python expression of global GPU ranks, rank = node rank x
``num_gpus_per_node`` + local index, so every node must have ``num_gpus_per_node`` GPUs),
``strategy_args.strategy_name`` and ``strategy_config``; ``num_gpus_per_worker`` is TP x PP for
vLLM inference and 1 for Megatron, and ``len(device_mapping)`` must divide by it. Placement rules
we check: actor_train and actor_infer disjoint (async), or actor_train a strict subset of
actor_infer (partial-GPU mode: needs ``async_generation_ratio`` > 0 and actor_infer DP >= 2, critic
inside actor_infer but off actor_train), or identical (co-located); reference on exactly the
actor_train devices; ``async_generation_ratio >= 1`` for the async RLVR pipeline. Contiguous ranges
are written as ``list(range(a,b))``.
"""

from __future__ import annotations

from typing import Any

from costmodels.placement.problem import PlacementPlan, PlacementProblem
from costmodels.workflow import (
    ACTOR_GENERATION,
    ACTOR_TRAINING,
    CRITIC_INFERENCE,
    CRITIC_TRAINING,
    REFERENCE_INFERENCE,
    REWARD_INFERENCE,
)

VERL_RELEASE = "v0.7.0"
ROLL_REVISION = "alibaba/ROLL main @ 8eb27cc (2026-08-19)"

#: verl's Megatron parallel-size keys per task (critic inference runs on the critic worker)
VERL_MEGATRON = {
    ACTOR_TRAINING: "actor_rollout_ref.actor",
    REFERENCE_INFERENCE: "actor_rollout_ref.ref",
    CRITIC_TRAINING: "critic",
}


def _balance_notes(plan: PlacementPlan) -> list[str]:
    out = []
    for t in plan.tasks:
        if t.batch_shares is not None and len({round(s, 6) for s in t.batch_shares}) > 1:
            out.append(
                f"{t.task}: uneven batch shares {[round(s, 3) for s in t.batch_shares]} (both "
                "frameworks split evenly)"
            )
        if t.layers_per_stage is not None and len(set(t.layers_per_stage)) > 1:
            out.append(
                f"{t.task}: uneven layer split {t.layers_per_stage} (set Megatron's pipeline "
                "layout by hand)"
            )
    return out


def _node_counts(problem: PlacementProblem, devices: list[str]) -> dict[str, int]:
    index = problem.topology.index_of()
    out: dict[str, int] = {}
    for d in devices:
        node = problem.topology.devices[index[d]].node
        out[node] = out.get(node, 0) + 1
    return out


def _pool(
    problem: PlacementProblem, devices: list[str], what: str, notes: list[str]
) -> tuple[int, int]:
    """(nnodes, n_gpus_per_node) of a verl pool, noting what it cannot say."""
    counts = _node_counts(problem, devices)
    index = problem.topology.index_of()
    types = {problem.topology.devices[index[d]].gpu.name for d in devices}
    if len(set(counts.values())) > 1:
        notes.append(
            f"{what}: uneven GPUs per node {counts}; a verl pool is [n_gpus_per_node] * nnodes"
        )
    if len(types) > 1:
        notes.append(
            f"{what}: mixes GPU types {sorted(types)}; verl schedules a pool as homogeneous"
        )
    return len(counts), max(counts.values())


def export_verl(problem: PlacementProblem, plan: PlacementPlan) -> dict[str, Any]:
    """Hydra overrides for verl v0.7.0 (module doc) and what they cannot express."""
    notes = _balance_notes(plan)
    groups = plan.group_of()
    names = {t.name for t in problem.tasks}
    gen = plan.task(ACTOR_GENERATION)
    trainer_side = [n for n in names if n not in (ACTOR_GENERATION, REWARD_INFERENCE)]
    train_groups = {groups[n] for n in trainer_side}
    if len(train_groups) > 1:
        notes.append(
            "actor, reference and critic are in different GPU groups; verl runs them in one pool "
            "(trainer/global pool)"
        )
    train_group = groups[ACTOR_TRAINING]
    disaggregated = groups[ACTOR_GENERATION] != train_group
    overrides: dict[str, Any] = {}
    pools: dict[str, dict[str, int]] = {}
    trainer_devices = plan.groups[train_group].devices
    nnodes, per_node = _pool(problem, trainer_devices, "trainer pool", notes)
    overrides["trainer.nnodes"], overrides["trainer.n_gpus_per_node"] = nnodes, per_node
    if disaggregated:
        entry = "python -m recipe.one_step_off_policy.main_ppo"
        if problem.workflow.mode == "sync":
            notes.append(
                "generation apart from training: verl's only entry point for that "
                "(one_step_off_policy) is one-step off-policy, not synchronous"
            )
        r_nodes, r_per = _pool(
            problem, plan.groups[groups[ACTOR_GENERATION]].devices, "rollout pool", notes
        )
        overrides["rollout.nnodes"], overrides["rollout.n_gpus_per_node"] = r_nodes, r_per
        pools = {
            "trainer_pool": {"nnodes": nnodes, "n_gpus_per_node": per_node},
            "rollout_pool": {"nnodes": r_nodes, "n_gpus_per_node": r_per},
        }
    else:
        entry = "python -m verl.trainer.main_ppo"
        pools = {"global_pool": {"nnodes": nnodes, "n_gpus_per_node": per_node}}
    overrides["actor_rollout_ref.rollout.name"] = "vllm"
    overrides["actor_rollout_ref.rollout.tensor_model_parallel_size"] = gen.tp
    overrides["actor_rollout_ref.rollout.pipeline_model_parallel_size"] = gen.pp
    if gen.decode_batch is not None:
        overrides["actor_rollout_ref.rollout.max_num_seqs"] = gen.decode_batch
    else:
        overrides["actor_rollout_ref.rollout.max_num_seqs"] = problem.workflow.decode_batch_size
    for task, prefix in VERL_MEGATRON.items():
        if task in names:
            t = plan.task(task)
            overrides[f"{prefix}.strategy"] = "megatron"
            overrides[f"{prefix}.megatron.tensor_model_parallel_size"] = t.tp
            overrides[f"{prefix}.megatron.pipeline_model_parallel_size"] = t.pp
    if CRITIC_INFERENCE in names:
        ci, ct = plan.task(CRITIC_INFERENCE), plan.task(CRITIC_TRAINING)
        if (ci.tp, ci.pp, ci.dp) != (ct.tp, ct.pp, ct.dp) or groups[CRITIC_INFERENCE] != groups[
            CRITIC_TRAINING
        ]:
            notes.append(
                f"critic_inference TP{ci.tp} PP{ci.pp} DP{ci.dp} in group "
                f"{groups[CRITIC_INFERENCE]}: verl computes values"
                f" with the critic worker (TP{ct.tp} PP{ct.pp} DP{ct.dp}, group "
                f"{groups[CRITIC_TRAINING]})"
            )
    if REWARD_INFERENCE in names:
        rw = plan.task(REWARD_INFERENCE)
        overrides["reward_model.enable"] = True
        overrides["reward_model.rollout.tensor_model_parallel_size"] = rw.tp
        if rw.pp > 1:
            notes.append(
                f"reward_inference PP{rw.pp}: verl's reward loop serves the reward model with TP "
                "only"
            )
        if groups[REWARD_INFERENCE] != train_group:
            rn, rp = _pool(
                problem, plan.groups[groups[REWARD_INFERENCE]].devices, "reward pool", notes
            )
            overrides["reward_model.enable_resource_pool"] = True
            overrides["reward_model.nnodes"], overrides["reward_model.n_gpus_per_node"] = rn, rp
            pools["reward_pool"] = {"nnodes": rn, "n_gpus_per_node": rp}
    return {
        "framework": "verl",
        "release": VERL_RELEASE,
        "entrypoint": entry,
        "resource_pools": pools,
        "overrides": overrides,
        "not_expressible": notes,
    }


def roll_ranks(problem: PlacementProblem, per_node: int) -> dict[str, int]:
    """ROLL's global rank of every GPU: node rank x num_gpus_per_node + local index."""
    order: dict[str, int] = {}
    for d in problem.topology.devices:
        order.setdefault(d.node, len(order))
    return {d.id: order[d.node] * per_node + d.local_index for d in problem.topology.devices}


def _mapping_expr(ranks: list[int]) -> str:
    if ranks == list(range(ranks[0], ranks[0] + len(ranks))):
        return f"list(range({ranks[0]},{ranks[0] + len(ranks)}))"
    return "[" + ",".join(str(r) for r in ranks) + "]"


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


def export_roll(problem: PlacementProblem, plan: PlacementPlan) -> dict[str, Any]:
    """ROLL worker configs (module doc) and what they cannot express."""
    notes = _balance_notes(plan)
    counts = _node_counts(problem, [d.id for d in problem.topology.devices])
    per_node = max(counts.values())
    if len(set(counts.values())) > 1:
        notes.append(
            f"nodes hold different GPU counts {counts}; ROLL maps rank r to node r // "
            "num_gpus_per_node, so ranks of the smaller nodes' missing GPUs must stay unused"
        )
    names = {t.name for t in problem.tasks}
    wf = problem.workflow
    async_ratio = 1.0 if wf.mode == "async" else 0.0
    workers: dict[str, Any] = {}
    rank_of = roll_ranks(problem, per_node)
    ranks = {
        t.task: [rank_of[d] for d in t.all_devices()] for t in plan.tasks
    }  # tasklet order, TP innermost
    gen = plan.task(ACTOR_GENERATION)
    workers["actor_infer"] = {
        "device_mapping": _mapping_expr(ranks[ACTOR_GENERATION]),
        "num_gpus_per_worker": gen.tp * gen.pp,
        "world_size": len(ranks[ACTOR_GENERATION]) // (gen.tp * gen.pp),
        "strategy_args": {
            "strategy_name": "vllm",
            "strategy_config": {
                "tensor_parallel_size": gen.tp,
                "pipeline_parallel_size": gen.pp,
                "max_num_seqs": gen.decode_batch or wf.decode_batch_size,
            },
        },
    }
    roles = {
        ACTOR_TRAINING: ("actor_train", "megatron_train"),
        REFERENCE_INFERENCE: ("reference", "megatron_infer"),
        CRITIC_TRAINING: ("critic", "megatron_train"),
        REWARD_INFERENCE: ("reward_model", "vllm"),
    }
    for task, (worker, strategy) in roles.items():
        if task not in names:
            continue
        t = plan.task(task)
        if strategy == "vllm":
            config = {"tensor_parallel_size": t.tp, "pipeline_parallel_size": t.pp}
            per_worker = t.tp * t.pp
        else:
            config = {"tensor_model_parallel_size": t.tp, "pipeline_model_parallel_size": t.pp}
            per_worker = 1
        # WorkerConfig.__post_init__: world_size = len(device_mapping) // num_gpus_per_worker, exact
        workers[worker] = {
            "device_mapping": _mapping_expr(ranks[task]),
            "num_gpus_per_worker": per_worker,
            "world_size": len(ranks[task]) // per_worker,
            "strategy_args": {"strategy_name": strategy, "strategy_config": config},
        }
    for task, r in ranks.items():
        if sorted(r) != list(range(min(r), min(r) + len(r))):
            notes.append(
                f"{task}: GPUs {sorted(r)} are not one contiguous range (ROLL accepts the list; "
                "its docs and examples use ranges)"
            )
    if CRITIC_INFERENCE in names and set(ranks[CRITIC_INFERENCE]) != set(ranks[CRITIC_TRAINING]):
        notes.append(
            "critic_inference on other GPUs than critic_training: ROLL's critic worker does both"
        )
    violations = roll_rule_violations(
        set(ranks[ACTOR_TRAINING]),
        set(ranks[ACTOR_GENERATION]),
        set(ranks[REFERENCE_INFERENCE]) if REFERENCE_INFERENCE in names else None,
        set(ranks[CRITIC_TRAINING]) if CRITIC_TRAINING in names else None,
        gen.dp,
        async_ratio,
    )
    pipeline: dict[str, Any] = {"num_gpus_per_node": per_node}
    if wf.mode == "async":
        pipeline["async_pipeline"] = True
        pipeline["async_generation_ratio"] = async_ratio  # RLVR: async_generation_ratio >= 1.0
    return {
        "framework": "roll",
        "revision": ROLL_REVISION,
        "pipeline": pipeline,
        "workers": workers,
        "gpu_ranks": rank_of,
        "rule_violations": violations,
        "not_expressible": notes + violations,
    }
