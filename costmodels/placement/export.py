"""Config snippets for RL frameworks from a placement plan (issue 4, item 7).

verl: ``resource_pool_spec`` (GPUs per node in each pool), the role-to-pool ``mapping`` and each
role's parallel sizes. ROLL: per-worker ``device_mapping`` (global GPU indices) and strategy
parallel sizes. Both frameworks give one parallel configuration to all replicas of a role and
split batches and layers evenly, so uneven batch shares, uneven layer splits and decode-batch
caps are listed under ``not_expressible`` rather than silently dropped.
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

VERL_ROLES = {
    ACTOR_GENERATION: "actor_rollout_ref.rollout",
    ACTOR_TRAINING: "actor_rollout_ref.actor",
    REFERENCE_INFERENCE: "actor_rollout_ref.ref",
    CRITIC_INFERENCE: "critic",
    CRITIC_TRAINING: "critic",
    REWARD_INFERENCE: "reward_model",
}
ROLL_WORKERS = {
    ACTOR_GENERATION: "actor_infer",
    ACTOR_TRAINING: "actor_train",
    REFERENCE_INFERENCE: "reference",
    CRITIC_INFERENCE: "critic",
    CRITIC_TRAINING: "critic",
    REWARD_INFERENCE: "reward",
}


def _caveats(plan: PlacementPlan) -> list[str]:
    out = []
    for t in plan.tasks:
        if t.batch_shares is not None and len(set(round(s, 6) for s in t.batch_shares)) > 1:
            out.append(f"{t.task}: uneven batch shares {[round(s, 3) for s in t.batch_shares]} (frameworks split evenly)")
        if t.layers_per_stage is not None and len(set(t.layers_per_stage)) > 1:
            out.append(f"{t.task}: uneven layer split {t.layers_per_stage} (set it by hand in Megatron's pipeline layout)")
        if t.decode_batch is not None:
            out.append(f"{t.task}: decode batch {t.decode_batch} -> set the engine's max_num_seqs")
    return out


def export_verl(problem: PlacementProblem, plan: PlacementPlan) -> dict[str, Any]:
    index = problem.topology.index_of()
    pools: dict[str, dict[str, Any]] = {}
    mapping: dict[str, str] = {}
    parallel: dict[str, dict[str, int]] = {}
    for gi, g in enumerate(plan.groups):
        name = f"pool_{gi}"
        per_node: dict[str, int] = {}
        for d in g.devices:
            node = problem.topology.devices[index[d]].node
            per_node[node] = per_node.get(node, 0) + 1
        pools[name] = {"nodes": list(per_node), "gpus_per_node": list(per_node.values())}
        for task in g.tasks:
            mapping[VERL_ROLES[task]] = name
    for t in plan.tasks:
        parallel[f"{VERL_ROLES[t.task]} ({t.task})"] = {"tensor_model_parallel_size": t.tp, "pipeline_model_parallel_size": t.pp, "data_parallel_size": t.dp}
    notes = _caveats(plan)
    if any(len({problem.topology.devices[index[d]].gpu.name for d in g.devices}) > 1 for g in plan.groups):
        notes.append("a resource pool mixes GPU types; verl treats pools as homogeneous")
    return {"framework": "verl", "resource_pool_spec": pools, "mapping": mapping, "parallel": parallel, "not_expressible": notes}


def export_roll(problem: PlacementProblem, plan: PlacementPlan) -> dict[str, Any]:
    index = problem.topology.index_of()
    workers: dict[str, Any] = {}
    for t in plan.tasks:
        workers[f"{ROLL_WORKERS[t.task]} ({t.task})"] = {
            "device_mapping": sorted(index[d] for d in t.all_devices()),
            "strategy_args": {"tensor_model_parallel_size": t.tp, "pipeline_model_parallel_size": t.pp},
            "world_size": len(t.all_devices()),
        }
    return {"framework": "roll", "workers": workers, "gpu_index_order": [d.id for d in problem.topology.devices], "not_expressible": _caveats(plan)}
