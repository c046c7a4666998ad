"""The HetRL analytic cost model of a placement plan (HetRL §3.3, Appendix B.2-B.4).

``evaluate_placement(problem, plan)`` returns the predicted iteration time in seconds and a
breakdown per task and per component. It assumes the plan is structurally valid
(``check_placement`` in ``costmodels.placement.check`` says so); the planner always validates
first.

Readings of the paper where its text is garbled or silent (a systems engineer's choice each):

* Ψ^gen and Ψ^inf take, per replica, ``max_j(C_comp + C_tp) + max_j C_pp (+ max_j C_hbm)``;
  Ψ^train is ``max_i(max_j(C_comp + C_tp + C_pp) + C_bubble(i)) + C_dp`` (B.3).
* Synchronous GRPO trains the actor, so its last term is C^5 (the paper prints C^6).
* Decoding pays per-step latency that B.2 leaves out: each decode step of a TP group runs two
  all-reduces per layer, and each PP boundary one hop; we add ``steps x hops x alpha``. Without it
  a cross-region TP group would look as cheap as an NVLink one.
* Decode steps are counted in whole batches, ``ceil(S_i / dbs)``, and the decode batch dbs is the
  serving engine's limit capped by how many sequences' KV cache fit next to the resident models.
* Φ applies η among tasks that share a GPU group; tasks on disjoint groups overlap fully
  (``CostParams.group_aware_overlap``; off gives the paper's global η).
* Weight transfer: synchronous plans whose generation shares GPUs with actor training pay
  C_reshard (an all-gather inside each training replica); otherwise (async, or disjoint groups)
  they pay C_sync = all-gather + broadcast + point-to-point (B.2 "Synchronization").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from costmodels import comm
from costmodels.memory import GB, kv_capacity_sequences, tasklet_memory
from costmodels.placement.problem import PlacementPlan, PlacementProblem, TaskPlacement
from costmodels.transformer import (
    BYTES_BF16,
    layer_forward_flops,
    lm_head_forward_flops,
    stage_params,
    total_params,
)
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING, Task, TaskKind


@dataclass(frozen=True)
class Evaluation:
    """The cost model's verdict: objective (seconds per iteration) and its breakdown."""

    objective: float
    breakdown: dict[str, Any]


def layer_split(layers: int, pp: int, given: list[int] | None = None) -> list[int]:
    """Layers per pipeline stage: the plan's split, or as even as possible (earlier stages get
    the remainder)."""
    if given is not None:
        return list(given)
    base, extra = divmod(layers, pp)
    return [base + (1 if j < extra else 0) for j in range(pp)]


def batch_shares(dp: int, given: list[float] | None = None) -> list[float]:
    if given is not None:
        total = sum(given)
        return [s / total for s in given]
    return [1.0 / dp] * dp


def phi(costs: list[float], eta: float) -> float:
    """Φ of HetRL §3.3: η·max + (1-η)·sum over tasks without mutual dependencies."""
    if not costs:
        return 0.0
    return eta * max(costs) + (1 - eta) * sum(costs)


def task_memory(problem: PlacementProblem, task: Task, tp_: TaskPlacement) -> dict[int, tuple[float, float]]:
    """(model GB, working GB) of each GPU's tasklet of one task (HetRL C3 terms).

    A generation task with an explicit ``decode_batch`` holds the KV cache of that many sequences
    (or of its replica's samples, if fewer) as working memory.
    """
    wf = problem.workflow
    index = problem.topology.index_of()
    m = wf.model(task.role)
    split = layer_split(m.layers, tp_.pp, tp_.layers_per_stage)
    shares = batch_shares(tp_.dp, tp_.batch_shares)
    seq = wf.prompt_length + wf.response_length
    out: dict[int, tuple[float, float]] = {}
    for i, replica in enumerate(tp_.devices):
        samples = wf.samples * shares[i]
        nm = samples / wf.micro_batch_size
        for j, stage in enumerate(replica):
            mem = tasklet_memory(
                task.kind, m, stage_layers=split[j], first=j == 0, last=j == tp_.pp - 1,
                tp=tp_.tp, pp=tp_.pp, dp=tp_.dp, seq=seq, mbs=wf.micro_batch_size, micro_batches=nm,
                recompute=wf.recompute, grad_bytes=problem.params.grad_bytes_per_param,
                optimizer_bytes=problem.params.optimizer_bytes_per_param,
                distributed_optimizer=problem.params.distributed_optimizer,
            )
            working = mem.working_gb
            if task.kind is TaskKind.GENERATION and tp_.decode_batch is not None:
                working *= max(1, min(tp_.decode_batch, math.ceil(samples)))
            for dev in stage:
                out[index[dev]] = (mem.model_gb, working)
    return out


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
        slot["capacity_gb"] = problem.topology.devices[d].gpu.memory_gb - problem.params.memory_reserve_gb
    return out


class _TaskCoster:
    """Component costs of one task under one placement (HetRL Appendix B.2)."""

    def __init__(self, problem: PlacementProblem, task: Task, tp_: TaskPlacement, mem: dict[int, dict[str, float]] | None):
        self.problem, self.task, self.tp_ = problem, task, tp_
        self.wf = problem.workflow
        self.topo = problem.topology
        self.m = self.wf.model(task.role)
        index = self.topo.index_of()
        self.idx = [[[index[d] for d in stage] for stage in replica] for replica in tp_.devices]
        self.split = layer_split(self.m.layers, tp_.pp, tp_.layers_per_stage)
        self.shares = batch_shares(tp_.dp, tp_.batch_shares)
        self.mem = mem
        self.exact = True

    def _ring(self, devices: list[int], volume_gb: float) -> float:
        r = comm.bottleneck_ring(self.topo, devices, volume_gb)
        self.exact = self.exact and r.exact
        return r.seconds

    def cost(self) -> dict[str, Any]:
        kind = self.task.kind
        wf, m, tp, pp = self.wf, self.m, self.tp_.tp, self.tp_.pp
        seq = wf.prompt_length + wf.response_length
        seq_comp = wf.prompt_length if kind is TaskKind.GENERATION else seq
        train = kind is TaskKind.TRAINING
        comp_mult = (4 if wf.recompute else 3) if train else 1
        tp_mult = (6 if wf.recompute else 4) if train else 2
        pp_mult = 2 if train else 1
        layer_flops = layer_forward_flops(m, seq_comp)
        head_flops = lm_head_forward_flops(m, seq_comp)
        cv_tp = BYTES_BF16 * wf.micro_batch_size * seq * m.hidden * 2 * (tp - 1) / tp / GB
        cv_pp = BYTES_BF16 * wf.micro_batch_size * seq * m.hidden / GB
        eff = self.problem.params.compute_efficiency
        per_replica = []
        totals = {"comp_s": 0.0, "tp_s": 0.0, "pp_s": 0.0, "bubble_s": 0.0, "hbm_s": 0.0}
        decode_batches = []
        for i, replica in enumerate(self.idx):
            samples = wf.samples * self.shares[i]
            nm = samples / wf.micro_batch_size
            steps = 0.0
            if kind is TaskKind.GENERATION:
                dbs = self._decode_batch(replica)
                decode_batches.append(dbs)
                steps = wf.response_length * math.ceil(samples / dbs) if samples > 0 else 0.0
            comp, tpc, ppc, hbm = [], [], [], []
            for j, stage in enumerate(replica):
                last = j == pp - 1
                flops = samples * (self.split[j] * layer_flops + (head_flops if last else 0.0))
                comp.append(max(comp_mult * flops / (self.topo.devices[d].gpu.tflops_bf16_dense * 1e12 * eff * tp) for d in stage))
                t = 0.0
                if tp > 1:
                    t = tp_mult * nm * self.split[j] * self._ring(stage, cv_tp)
                    if steps:
                        t += steps * 2 * self.split[j] * comm.ring_latency(self.topo, stage)
                tpc.append(t)
                p = 0.0
                if not last:
                    p = pp_mult * nm * comm.best_pair(self.topo, stage, replica[j + 1], cv_pp)
                    if steps:
                        p += steps * comm.best_pair(self.topo, stage, replica[j + 1], 0.0)
                ppc.append(p)
                if steps:
                    weights = BYTES_BF16 * stage_params(m, self.split[j], j == 0, last) / tp / GB
                    hbm_eff = self.problem.params.hbm_efficiency
                    hbm.append(max(steps * weights / (self.topo.devices[d].gpu.hbm_gb_per_s * hbm_eff) for d in stage))
                else:
                    hbm.append(0.0)
            if train:
                core = max(c + t + p for c, t, p in zip(comp, tpc, ppc, strict=True))
                bubble = sum(comp[j] + tpc[j] + ppc[j] for j in range(1, pp)) / nm if nm > 0 else 0.0
                total = core + bubble
            else:
                bubble = 0.0
                total = max(c + t for c, t in zip(comp, tpc, strict=True)) + max(ppc) + max(hbm)
            per_replica.append(total)
            totals["comp_s"] = max(totals["comp_s"], max(comp))
            totals["tp_s"] = max(totals["tp_s"], max(tpc))
            totals["pp_s"] = max(totals["pp_s"], max(ppc))
            totals["bubble_s"] = max(totals["bubble_s"], bubble)
            totals["hbm_s"] = max(totals["hbm_s"], max(hbm))
        dp_s = self._dp_cost() if train else 0.0
        out: dict[str, Any] = {"time_s": max(per_replica) + dp_s, **totals, "dp_s": dp_s}
        out["replica_times_s"] = per_replica
        if decode_batches:
            out["decode_batch"] = decode_batches
        return out

    def _decode_batch(self, replica: list[list[int]]) -> int:
        """dbs of B.2: the plan's ``decode_batch``, or the workflow's limit capped by the KV cache
        that fits beside the resident models on each GPU."""
        if self.tp_.decode_batch is not None:
            return self.tp_.decode_batch
        if self.mem is None:
            raise ValueError("a generation task without decode_batch needs the plan's memory map")
        wf, m = self.wf, self.m
        seq = wf.prompt_length + wf.response_length
        cap = wf.decode_batch_size
        for j, stage in enumerate(replica):
            for d in stage:
                slot = self.mem[d]
                free = slot["capacity_gb"] - slot["model_gb"]
                cap = min(cap, kv_capacity_sequences(free, m, self.split[j], self.tp_.tp, seq))
        return max(cap, 1)

    def _dp_cost(self) -> float:
        dp, tp = self.tp_.dp, self.tp_.tp
        if dp == 1:
            return 0.0
        worst = 0.0
        for j in range(self.tp_.pp):
            params = stage_params(self.m, self.split[j], j == 0, j == self.tp_.pp - 1) / tp
            cv = BYTES_BF16 * params * 2 * (dp - 1) / dp / GB
            for k in range(tp):
                devices = [self.idx[i][j][k] for i in range(dp)]
                worst = max(worst, self._ring(devices, cv))
        return worst


def task_cost(problem: PlacementProblem, task: Task, tp_: TaskPlacement, mem: dict[int, dict[str, float]] | None = None) -> tuple[dict[str, Any], bool]:
    """One task's cost C^t with its components (HetRL B.2-B.3) and whether its rings are exact.
    ``mem`` (the plan's per-GPU memory) is needed only by generation without ``decode_batch``."""
    coster = _TaskCoster(problem, task, tp_, mem)
    return coster.cost(), coster.exact


def _replica_devices(idx: list[list[list[int]]], i: int) -> list[int]:
    return [d for stage in idx[i] for d in stage]


@dataclass(frozen=True)
class TransferParts:
    """Pieces of C_reshard / C_sync (HetRL B.2): all-gather per training replica, broadcast per
    generation replica, and the best training-to-generation point-to-point copy."""

    allgather_s: tuple[float, ...]
    broadcast_s: tuple[float, ...]
    p2p_s: float
    exact: bool


def full_weights_gb(problem: PlacementProblem) -> float:
    return BYTES_BF16 * total_params(problem.workflow.model("actor")) / GB


def replica_allgather(problem: PlacementProblem, tp_: TaskPlacement) -> tuple[list[float], bool]:
    """All-gather of the full actor weights inside each replica of ``tp_`` (B.2 resharding)."""
    topo = problem.topology
    index = topo.index_of()
    full = full_weights_gb(problem)
    out, exact = [], True
    for replica in tp_.devices:
        devs = [index[d] for stage in replica for d in stage]
        n = len(devs)
        r = comm.bottleneck_ring(topo, devs, full * (n - 1) / n)
        out.append(r.seconds)
        exact = exact and r.exact
    return out, exact


def transfer_parts(problem: PlacementProblem, train: TaskPlacement, gen: TaskPlacement) -> TransferParts:
    index = problem.topology.index_of()
    ag, e1 = replica_allgather(problem, train)
    bc, e2 = replica_allgather(problem, gen)
    p2p = comm.best_pair(problem.topology, [index[d] for d in train.all_devices()], [index[d] for d in gen.all_devices()], full_weights_gb(problem))
    return TransferParts(tuple(ag), tuple(bc), p2p, e1 and e2)


def weight_transfer(problem: PlacementProblem, plan: PlacementPlan) -> tuple[str, float, bool]:
    """C_reshard or C_sync of HetRL B.2, whichever the plan's layout needs (see module doc)."""
    train = plan.task(ACTOR_TRAINING)
    gen = plan.task(ACTOR_GENERATION)
    groups = plan.group_of()
    if problem.workflow.mode == "sync" and groups[ACTOR_GENERATION] == groups[ACTOR_TRAINING]:
        ag, exact = replica_allgather(problem, train)
        return "reshard", max(ag), exact
    parts = transfer_parts(problem, train, gen)
    return "sync", min(parts.allgather_s) + max(parts.broadcast_s) + parts.p2p_s, parts.exact


def evaluate_placement(problem: PlacementProblem, plan: PlacementPlan) -> Evaluation:
    """Predicted seconds per iteration of ``plan`` (HetRL Appendix B.4) and its breakdown."""
    wf = problem.workflow
    mem = device_memory(problem, plan)
    groups = plan.group_of()
    task_costs: dict[str, dict[str, Any]] = {}
    exact = True
    for task in problem.tasks:
        task_costs[task.name], task_exact = task_cost(problem, task, plan.task(task.name), mem)
        exact = exact and task_exact

    def stage_cost(kind: TaskKind) -> float:
        names = [t.name for t in problem.tasks if t.kind is kind]
        if not problem.params.group_aware_overlap:
            return phi([task_costs[n]["time_s"] for n in names], wf.eta)
        by_group: dict[int, list[float]] = {}
        for n in names:
            by_group.setdefault(groups[n], []).append(task_costs[n]["time_s"])
        return max((phi(v, wf.eta) for v in by_group.values()), default=0.0)

    gen = task_costs[ACTOR_GENERATION]["time_s"]
    inf = stage_cost(TaskKind.INFERENCE)
    trn = stage_cost(TaskKind.TRAINING)
    transfer_kind, transfer, transfer_exact = weight_transfer(problem, plan)
    exact = exact and transfer_exact
    if wf.mode == "sync":
        total = gen + inf + trn + transfer
    else:
        total = max(gen, inf + trn) + transfer
    peak = max(((s["model_gb"] + s["working_gb"]) / s["capacity_gb"], d) for d, s in mem.items())
    breakdown = {
        "iteration_time_s": total,
        "throughput_samples_per_s": wf.samples / total if total > 0 else math.inf,
        "throughput_tokens_per_s": wf.samples * (wf.prompt_length + wf.response_length) / total if total > 0 else math.inf,
        "phases": {"generation_s": gen, "inference_s": inf, "training_s": trn, "weight_transfer_s": transfer, "weight_transfer": transfer_kind},
        "tasks": task_costs,
        "memory": {"peak_utilization": peak[0], "tightest_device": problem.topology.devices[peak[1]].id},
        "ring_exact": exact,
    }
    return Evaluation(total, breakdown)
