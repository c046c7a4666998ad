"""Per-GPU memory of a placement (HetRL constraint C3, Appendix B.1): each tasklet's model and
working memory, the least any placement of a task holds, and the plan's per-GPU sums."""

from __future__ import annotations

import math

from costmodels.layout import batch_shares, layer_split
from costmodels.memory import GB, micro_batches_in_flight, tasklet_memory, training_model_gb
from costmodels.placement.plan import PlacementPlan, TaskPlacement
from costmodels.placement.problem import PlacementProblem
from costmodels.transformer import (
    BYTES_BF16,
    stage_params,
)
from costmodels.workflow import Task, TaskKind


def task_memory(
    problem: PlacementProblem, task: Task, tp_: TaskPlacement
) -> dict[int, tuple[float, float]]:
    """(model GB, working GB) of each GPU's tasklet of one task (HetRL C3 terms).

    A generation task with an explicit ``decode_batch`` holds the KV cache of that many sequences
    (or of its replica's samples, if fewer) as working memory.
    """
    index = problem.topology.index_of()
    out: dict[int, tuple[float, float]] = {}
    rows = tasklet_rows(problem, task, tp_)
    for replica, per_stage in zip(tp_.devices, rows, strict=True):
        for stage, mem in zip(replica, per_stage, strict=True):
            for dev in stage:
                out[index[dev]] = mem
    return out


def tasklet_rows_key(problem: PlacementProblem, task: Task, tp_: TaskPlacement) -> tuple:
    """What :func:`tasklet_rows` reads of ``task`` and ``tp_`` (the problem fixed), hashable: the
    kind, the model, TP, PP, DP and the layer split, and the replicas' batch shares only where
    they matter: an explicit dbs (its KV scales with the replica's samples) or a training
    replica with fewer micro-batches than stages (:func:`micro_batches_in_flight`)."""
    wf = problem.workflow
    shares = tp_.batch_shares
    explicit = task.kind is TaskKind.GENERATION and tp_.decode_batch is not None
    if shares is not None and not explicit:
        if task.kind is not TaskKind.TRAINING:
            shares = None
        elif wf.samples * (min(shares) / sum(shares)) / wf.micro_batch_size >= tp_.pp:
            shares = None  # every replica has a stage's worth of micro-batches in flight
    return (
        task.kind,
        wf.model(task.role).name,
        tp_.tp,
        tp_.pp,
        tp_.dp,
        None if tp_.layers_per_stage is None else tuple(tp_.layers_per_stage),
        None if shares is None else tuple(shares),
        tp_.decode_batch,
    )


def tasklet_rows(
    problem: PlacementProblem, task: Task, tp_: TaskPlacement
) -> list[list[tuple[float, float]]]:
    """(model GB, working GB) of each tasklet of one task per replica and stage, the same on
    every GPU of the stage's TP group (:func:`task_memory` spreads them over the GPUs; a search
    whose layouts fill its GPUs in order reads them per position)."""
    wf = problem.workflow
    m = wf.model(task.role)
    split = layer_split(m.layers, tp_.pp, tp_.layers_per_stage)
    shares = batch_shares(tp_.dp, tp_.batch_shares)
    seq = wf.prompt_length + wf.response_length
    params = problem.params
    explicit = task.kind is TaskKind.GENERATION and tp_.decode_batch is not None
    training = task.kind is TaskKind.TRAINING
    out: list[list[tuple[float, float]]] = []
    # a tasklet's memory reads its stage and, in training, how many of its replica's
    # micro-batches are in flight, nothing else that varies here (an explicit dbs scales
    # generation's working memory by the replica's samples below): replicas that agree on
    # those repeat each stage's
    seen: dict[tuple[int, float], list[tuple[float, float]]] = {}
    for i in range(tp_.dp):
        samples = wf.samples * shares[i]
        nm = samples / wf.micro_batch_size
        flight = float(micro_batches_in_flight(tp_.pp, nm)) if training else 1.0
        scale = max(1, min(tp_.decode_batch, math.ceil(samples))) if explicit else 1
        stages = seen.get((scale, flight))
        if stages is None:
            stages = []
            for j in range(tp_.pp):
                mem = tasklet_memory(
                    task.kind,
                    m,
                    stage_layers=split[j],
                    first=j == 0,
                    last=j == tp_.pp - 1,
                    tp=tp_.tp,
                    pp=tp_.pp,
                    dp=tp_.dp,
                    seq=seq,
                    mbs=wf.micro_batch_size,
                    micro_batches=flight,
                    recompute=wf.recompute,
                    grad_bytes=params.grad_bytes_per_param,
                    optimizer_bytes=params.optimizer_bytes_per_param,
                    distributed_optimizer=params.distributed_optimizer,
                )
                working = mem.working_gb
                if explicit:
                    working *= scale
                stages.append((mem.model_gb, working))
            seen[(scale, flight)] = stages
        out.append(stages)
    return out


def memory_floor_gb(problem: PlacementProblem, task: Task) -> float:
    """The least model memory (GB, summed over GPUs) any placement of ``task`` holds: one
    replica's weights (stage shards add up to the whole model, whatever TP and PP), and for
    training its gradients and optimizer states too; more DP replicas only add copies (the
    distributed optimizer shards one copy of the optimizer states over them). Working memory
    comes on top, so ``sum_t floor_t > sum_g capacity_g`` proves that no plan fits (C3)."""
    m = problem.workflow.model(task.role)
    params = stage_params(m, m.layers, True, True)
    if task.kind is TaskKind.TRAINING:
        pr = problem.params
        return training_model_gb(
            params,
            1,
            pr.grad_bytes_per_param,
            pr.optimizer_bytes_per_param,
            pr.distributed_optimizer,
        )
    return params * BYTES_BF16 / GB


def device_memory(problem: PlacementProblem, plan: PlacementPlan) -> dict[int, dict[str, float]]:
    """Per-GPU resident (model) memory sum and largest working memory, GB (constraint C3)."""
    tasks = {t.name: t for t in problem.tasks}
    out: dict[int, dict[str, float]] = {}
    for tp_ in plan.tasks:
        for d, (model, working) in task_memory(problem, tasks[tp_.task], tp_).items():
            slot = out.setdefault(d, {"model_gb": 0.0, "working_gb": 0.0})
            slot["model_gb"] += model
            slot["working_gb"] = max(slot["working_gb"], working)
    for d, slot in out.items():
        slot["capacity_gb"] = (
            problem.topology.devices[d].gpu.memory_gb - problem.params.memory_reserve_gb
        )
    return out


def memory_need_and_capacity(problem: PlacementProblem) -> tuple[float, float]:
    """(the tasks' least model memory, the cluster's usable memory), GB: no plan fits when the
    first exceeds the second (C3)."""
    need = sum(memory_floor_gb(problem, t) for t in problem.tasks)
    reserve = problem.params.memory_reserve_gb
    return need, sum(d.gpu.memory_gb - reserve for d in problem.topology.devices)


def memory_shortfall(problem: PlacementProblem) -> str | None:
    """Why no placement of ``problem`` can exist, when its tasks' least model memory
    (:func:`memory_floor_gb`, summed) exceeds the cluster's (C3), with how many GPUs of each of
    the cluster's types would hold it: ``ceil(need / (memory - reserve))``, working memory still
    on top. None when the memory floor fits."""
    need, have = memory_need_and_capacity(problem)
    if need <= have + 1e-9:
        return None
    reserve = problem.params.memory_reserve_gb
    types = {d.gpu.name: d.gpu.memory_gb - reserve for d in problem.topology.devices}
    enough = " or ".join(
        f"{math.ceil(need / per_gpu)} x {name}" for name, per_gpu in sorted(types.items())
    )
    return (
        f"the tasks' model memory alone needs {need:.1f} GB and the cluster has {have:.1f} GB: "
        f"no placement fits; at least {enough} would hold the weights, gradients and optimizer "
        "states (working memory comes on top)"
    )
