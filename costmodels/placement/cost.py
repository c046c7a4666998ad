"""The analytic cost model of a placement plan (HetRL §3.3, Appendix B.2-B.4), physically sound.

``evaluate_placement(problem, plan)`` returns the predicted iteration time in seconds and a
breakdown per task and per component. It assumes the plan is structurally valid
(``check_placement`` in ``costmodels.placement.check`` says so); the planner always validates
first. Notation: replica i of DP, stage j of PP, TP degree tp, S_i the replica's sequences, P and
R prompt and response lengths, W the actor's BF16 weights; every peak is derated by the one
:class:`~costmodels.efficiency.Efficiency` (printed in every breakdown).

Term by term, where we follow Appendix B literally and where we depart (and why):

* **Training and inference compute, TP, PP, bubble** (B.2 C_comp, C_tp, C_pp, C_bubble): literal
  (forward FLOPs per layer 2*4*s*h^2 + 2*2*s^2*h + 2*3*s*h*h2 with the real GQA width;
  3x / 4x for backward / recomputation; TP all-reduce volume 2 (tp-1)/tp * b*s*h; one PP hop per
  micro-batch and direction), derated by ``compute`` efficiency (the paper: peak).
* **DP gradient all-reduce** (B.2 C_dp): the paper's ring, with the gradient bytes the memory
  model holds (FP32, ``grad_bytes_per_param``), not BF16: the same gradients in both.
* Ψ^gen and Ψ^inf take, per replica, ``max_j(C_comp + C_tp) + max_j C_pp`` (+ decode);
  Ψ^train is ``max_i(max_j(C_comp + C_tp + C_pp) + C_bubble(i)) + C_dp`` (B.3). Synchronous GRPO
  trains the actor, so its last term is C^5 (the paper prints C^6).
* **Prefill** (generation's C_comp): the prompt's forward pass, with TP/PP volumes over the prompt
  only (the paper's s = P + R is the training sequence); with ``share_prompt_prefill`` the
  responses of one prompt share its prefill, as vLLM's prefix cache does for GRPO/PPO groups.
* **Decode** — departs (``decode_model="physical"``, the default). B.2 charges each step the
  stage's weights over HBM bandwidth only: no KV-cache reads, no compute roofline, so a step costs
  the same at 1k and 16k context and throughput grows without bound with the batch. We cost every
  step with the project's one decode-step model (``costmodels.decode.decode_step_time``: weights +
  KV read, compute roofline, 2 (tp-1) ring hops per all-reduce on the group's real links) plus the
  engine's per-step overhead. The dbs sequences in flight per replica are spread over
  m = min(PP, dbs) micro-batches of b = ceil(dbs/m); a token round costs

      max(m * max_j t_j(b), sum_j t_j(b) + sum_j hop_j(b)) + overhead(dbs)

  so m < PP is costed as the under-filled pipeline it is (the paper's formula assumes it full).
  Contexts grow from P to P + R; each wave is integrated over its R steps by the midpoint rule
  on :data:`DECODE_SEGMENTS` segments (exact for the linear memory term). Sequences run in waves of
  dbs, the last one partial. ``decode_model="hetrl"`` keeps the paper's literal term (steps x
  weights / HBM, ``ceil(S_i / dbs)`` full batches, plus our per-step TP/PP latency).
* dbs is the plan's ``decode_batch``, or the workflow's limit capped by how many sequences' KV
  cache fit next to the resident models; the KV of every sequence in flight is working memory.
* **Overlap** (B.4 and Φ) — departs with ``group_aware_overlap`` (default): Φ applies η among
  tasks that share a GPU group, tasks on disjoint groups overlap fully; in async mode generation
  overlaps training only across disjoint GPUs: the period is
  ``max(generation + Φ(inference and training tasks in generation's group), inference + training)``,
  where the paper's ``max(generation, inference + training)`` would hide work that runs on the same
  devices. Off: the paper's global η and literal async max.
* **Weight transfer** (B.2 C_reshard / C_sync) — departs for C_sync. Synchronous plans whose
  generation shares its group with actor training pay C_reshard (all-gather inside each training
  replica, the slowest). Otherwise the paper charges one best-pair copy whatever the receivers;
  we charge the fastest training replica's all-gather plus, for every zone z holding generation
  GPUs, the arrival of the weights there and the fan-out inside it:

      C_sync = min_i AG_i + max_z (A_z + F_z)
      A_z = min over training GPU s, generation GPU r in z of route(s, r, W)   (0 if co-located)
      F_z = (n_z - 2 + K) * ring_z(W / K)   for n_z >= 2 generation GPUs in z, else 0

  ``route`` is the best pipelined path over the topology (``costmodels.comm.route_time``: relays
  through other zones allowed, so a slow direct link is avoided when a detour is faster), F_z a
  K-chunk pipelined chain broadcast (``costmodels.weight_sync``) over z's generation GPUs whose hop
  is their bottleneck ring edge. Every generation GPU receives W (HetRL's broadcast-then-reshard).
  Zones are fed in parallel (links are per zone pair).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from costmodels import comm
from costmodels.decode import decode_step_time
from costmodels.memory import GB, kv_capacity_sequences, tasklet_memory, training_model_gb
from costmodels.placement.problem import PlacementPlan, PlacementProblem, TaskPlacement
from costmodels.transformer import (
    BYTES_BF16,
    attention_params,
    kv_bytes_per_token,
    layer_forward_flops,
    lm_head_forward_flops,
    mlp_params,
    stage_params,
    total_params,
    weights_read_gb,
)
from costmodels.weight_sync import pipelined_broadcast_s
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING, Task, TaskKind

#: segments of the midpoint rule over a decode wave's steps (context grows linearly)
DECODE_SEGMENTS = 4
#: chunks of the pipelined weight broadcast inside a zone
BROADCAST_CHUNKS = 64


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


def task_memory(
    problem: PlacementProblem, task: Task, tp_: TaskPlacement
) -> dict[int, tuple[float, float]]:
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
                micro_batches=nm,
                recompute=wf.recompute,
                grad_bytes=problem.params.grad_bytes_per_param,
                optimizer_bytes=problem.params.optimizer_bytes_per_param,
                distributed_optimizer=problem.params.distributed_optimizer,
            )
            working = mem.working_gb
            if task.kind is TaskKind.GENERATION and tp_.decode_batch is not None:
                working *= max(1, min(tp_.decode_batch, math.ceil(samples)))
            for dev in stage:
                out[index[dev]] = (mem.model_gb, working)
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


#: memoise replica costs on their node-class signature (:meth:`_TaskCoster._replica_key`); tests
#: switch it off to check that it never changes a value
REPLICA_MEMO = True
# : its size cap (an entry holds a replica's signature and costs: ~1 KB; bounded memory at 1 024
# GPUs)
REPLICA_MEMO_ENTRIES = 50_000


def _node_classes(topo: Any) -> list[int]:
    """Per device: its node's class (GPU type, zone, region, intra-node alpha and beta, read off
    the topology's own matrices), numbered."""
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    for d in topo.devices:
        if d.node not in first:
            first[d.node] = d.index
        elif d.node not in second:
            second[d.node] = d.index
    ids: dict[tuple[Any, ...], int] = {}
    out = []
    for d in topo.devices:
        a, b = first[d.node], second.get(d.node)
        link = (
            (float(topo.latency_s[a, b]), float(topo.bandwidth_gbs[a, b]))
            if b is not None
            else None
        )
        out.append(ids.setdefault((d.gpu.name, d.zone, d.region, link), len(ids)))
    return out


class _TaskCoster:
    """Component costs of one task under one placement (HetRL Appendix B.2)."""

    def __init__(
        self,
        problem: PlacementProblem,
        task: Task,
        tp_: TaskPlacement,
        mem: dict[int, dict[str, float]] | None,
    ):
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

    def _gpus(self, stage: list[int]) -> list[Any]:
        """Distinct GPU types of a stage (a mixed TP group runs at its slowest member's pace)."""
        seen: dict[str, Any] = {}
        for d in stage:
            g = self.topo.devices[d].gpu
            seen.setdefault(g.name, g)
        return list(seen.values())

    def cost(self) -> dict[str, Any]:
        kind = self.task.kind
        wf, m, tp = self.wf, self.m, self.tp_.tp
        params = self.problem.params
        gen = kind is TaskKind.GENERATION
        seq = wf.prompt_length + wf.response_length
        seq_comp = (
            wf.prompt_length if gen else seq
        )  # prefill covers the prompt; training the whole sequence
        train = kind is TaskKind.TRAINING
        comp_mult = (4 if wf.recompute else 3) if train else 1
        tp_mult = (6 if wf.recompute else 4) if train else 2
        pp_mult = 2 if train else 1
        layer_flops = layer_forward_flops(m, seq_comp)
        head_flops = lm_head_forward_flops(m, seq_comp)
        cv_tp = BYTES_BF16 * wf.micro_batch_size * seq_comp * m.hidden * 2 * (tp - 1) / tp / GB
        cv_pp = BYTES_BF16 * wf.micro_batch_size * seq_comp * m.hidden / GB
        literal = params.decode_model == "hetrl"
        per_replica, prefill = [], []
        totals = {"comp_s": 0.0, "tp_s": 0.0, "pp_s": 0.0, "bubble_s": 0.0, "decode_s": 0.0}
        decode_detail: dict[str, float] = {}
        decode_batches = []
        consts = (
            gen,
            train,
            literal,
            comp_mult,
            tp_mult,
            pp_mult,
            layer_flops,
            head_flops,
            cv_tp,
            cv_pp,
        )
        cache = (
            self.topo.memo.setdefault("replica", {})
            if REPLICA_MEMO and not self.topo.explicit_matrix
            else None
        )
        if cache is not None:
            # everything else a replica's cost reads: the parameters and workflow (by identity;
            # the entry keeps them alive, so an id is never reused for another) and the constants
            contexts = self.topo.memo.setdefault("replica_context", {})
            entry = contexts.setdefault((id(params), id(wf)), (params, wf, len(contexts)))
            context = (entry[2], consts)
        for i, replica in enumerate(self.idx):
            key = (context, *self._replica_key(i, replica)) if cache is not None else None
            hit = cache.get(key) if cache is not None else None
            if hit is None:
                before, self.exact = self.exact, True
                hit = (*self._replica(i, replica, consts), self.exact)
                self.exact = before
                if cache is not None and len(cache) < REPLICA_MEMO_ENTRIES:
                    cache[key] = hit
            total, pre, comp_s, tp_s, pp_s, bubble, decode, detail, dbs, exact = hit
            self.exact = self.exact and exact
            if gen:
                decode_batches.append(dbs)
            for k, v in detail.items():
                decode_detail[k] = max(decode_detail.get(k, 0.0), v)
            per_replica.append(total)
            prefill.append(pre)
            for name, v in (
                ("comp_s", comp_s),
                ("tp_s", tp_s),
                ("pp_s", pp_s),
                ("bubble_s", bubble),
                ("decode_s", decode),
            ):
                totals[name] = max(totals[name], v)
        dp_s = self._dp_cost() if train else 0.0
        out: dict[str, Any] = {"time_s": max(per_replica) + dp_s, **totals, "dp_s": dp_s}
        out["replica_times_s"] = per_replica
        out["prefill_times_s"] = prefill
        if decode_batches:
            out["decode_batch"] = decode_batches
        if decode_detail:
            out["decode"] = decode_detail
        return out

    def _replica(
        self, i: int, replica: list[list[int]], consts: tuple[Any, ...]
    ) -> tuple[Any, ...]:
        """One replica's (time, time without decode, comp, TP, PP, bubble, decode, decode detail,
        dbs)."""
        gen, train, literal, comp_mult, tp_mult, pp_mult, layer_flops, head_flops, cv_tp, cv_pp = (
            consts
        )
        wf, m, tp, pp = self.wf, self.m, self.tp_.tp, self.tp_.pp
        params = self.problem.params
        eff = params.efficiency
        detail: dict[str, float] = {}
        samples = wf.samples * self.shares[i]
        # prefill: one forward pass per prompt when the responses of a prompt share it
        forward = (
            samples / wf.responses_per_prompt if gen and params.share_prompt_prefill else samples
        )
        nm = forward / wf.micro_batch_size
        steps = 0.0
        dbs = 0
        if gen:
            dbs = self._decode_batch(replica)
            if literal:
                steps = wf.response_length * math.ceil(samples / dbs) if samples > 0 else 0.0
        comp, tpc, ppc, hbm = [], [], [], []
        for j, stage in enumerate(replica):
            last = j == pp - 1
            flops = forward * (self.split[j] * layer_flops + (head_flops if last else 0.0))
            comp.append(max(comp_mult * flops / (eff.flops(g) * tp) for g in self._gpus(stage)))
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
                hbm.append(max(steps * weights / eff.hbm_gbs(g) for g in self._gpus(stage)))
            else:
                hbm.append(0.0)
        decode = max(hbm) if literal else 0.0
        if gen and not literal and samples > 0:
            detail = self._decode_physical(replica, math.ceil(samples - 1e-9), dbs)
            decode = detail["decode_s"]
        if train:
            core = max(c + t + p for c, t, p in zip(comp, tpc, ppc, strict=True))
            bubble = sum(comp[j] + tpc[j] + ppc[j] for j in range(1, pp)) / nm if nm > 0 else 0.0
            total = core + bubble
        else:
            bubble = 0.0
            total = max(c + t for c, t in zip(comp, tpc, strict=True)) + max(ppc) + decode
        return total, total - decode, max(comp), max(tpc), max(ppc), bubble, decode, detail, dbs

    def _replica_key(self, i: int, replica: list[list[int]]) -> tuple[Any, ...]:
        """What a replica's cost depends on, up to renaming nodes: on a hierarchical network a
        link is fixed by whether its ends share a node (that node's intra-node link) or a zone
        (the zone's link, or the zone pair's), so replicas whose GPUs sit on nodes of the same
        class (GPU type, zone, intra-node link) in the same pattern cost the same. Generation
        "as many as fit" also reads each GPU's resident memory."""
        classes = self.topo.memo.get("node_class")
        if classes is None:
            classes = self.topo.memo["node_class"] = _node_classes(self.topo)
        devices = self.topo.devices
        local: dict[str, int] = {}
        stages = []
        for stage in replica:  # a stage is costed as a set of GPUs: (local node, class) -> count
            counts: dict[tuple[int, int], int] = {}
            for d in stage:
                k = (local.setdefault(devices[d].node, len(local)), classes[d])
                counts[k] = counts.get(k, 0) + 1
            stages.append(tuple(sorted(counts.items())))
        mem = None
        if (
            self.task.kind is TaskKind.GENERATION
            and self.tp_.decode_batch is None
            and self.mem is not None
        ):
            mem = tuple(
                x
                for stage in replica
                for d in stage
                for x in (self.mem[d]["model_gb"], self.mem[d]["capacity_gb"])
            )
        return (
            self.task.name,
            self.m.name,
            self.tp_.tp,
            tuple(self.split),
            self.shares[i],
            self.tp_.decode_batch,
            tuple(stages),
            mem,
        )

    def _round_time(
        self,
        replica: list[list[int]],
        b: int,
        micro: int,
        context: float,
        ar: list[float],
        hops: list[float],
    ) -> dict[str, float]:
        """One token round of ``micro`` micro-batches of ``b`` sequences, each holding
        ``context`` tokens: every micro-batch passes every stage once (module doc)."""
        m, tp, eff = self.m, self.tp_.tp, self.problem.params.efficiency
        pp = len(replica)
        stage_t, mem, cmp_, com = [], 0.0, 0.0, 0.0
        for j, stage in enumerate(replica):
            worst = None
            for g in self._gpus(stage):
                r = decode_step_time(
                    m,
                    g,
                    tp=tp,
                    stage_layers=self.split[j],
                    first=j == 0,
                    last=j == pp - 1,
                    batch=b,
                    context_tokens=b * context,
                    efficiency=eff,
                    allreduce_s=lambda _v, j=j: ar[j],
                )
                if worst is None or r["step_s"] > worst["step_s"]:
                    worst = r
            assert worst is not None
            stage_t.append(worst["step_s"])
            mem, cmp_, com = (
                mem + worst["memory_s"],
                cmp_ + worst["compute_s"],
                com + worst["comm_s"],
            )
        chain = sum(stage_t) + sum(hops)
        full = micro * max(stage_t)
        overhead = eff.step_overhead_s(b * micro, m.layers)
        return {
            "round_s": max(full, chain) + overhead,
            "memory_s": mem,
            "compute_s": cmp_,
            "comm_s": com,
            "pipeline_s": max(full, chain) - sum(stage_t),
            "overhead_s": overhead,
        }

    def _decode_physical(
        self, replica: list[list[int]], sequences: int, dbs: int
    ) -> dict[str, float]:
        """Decode time of one replica's ``sequences`` with ``dbs`` in flight (module doc).

        Memoised per topology on what the result depends on: the stages' GPU types and layers,
        the TP ring and PP hop times, and the workload (DP replicas on identical nodes repeat)."""
        wf, m, tp = self.wf, self.m, self.tp_.tp
        pp = len(replica)
        micro = min(pp, dbs)
        widths = sorted({dbs, sequences % dbs} - {0})
        rings = {}
        for width in widths:
            b = math.ceil(width / min(pp, width))
            hidden_gb = b * m.hidden * BYTES_BF16 / GB
            # 2 (tp-1) ring steps of volume / tp, each at the ring's slowest edge (D4)
            ar = tuple(
                2 * (tp - 1) * self._ring(stage, hidden_gb / tp) if tp > 1 else 0.0
                for stage in replica
            )
            hops = tuple(
                comm.best_pair(self.topo, replica[j], replica[j + 1], hidden_gb)
                for j in range(pp - 1)
            )
            rings[width] = (ar, hops)
        key = (
            m.name,
            tp,
            tuple(tuple(g.name for g in self._gpus(stage)) for stage in replica),
            tuple(self.split),
            sequences,
            dbs,
            tuple(sorted(rings.items())),
            wf.prompt_length,
            wf.response_length,
        )  # one topology per problem: params fixed
        cache = self.topo.memo.setdefault("decode", {})
        hit = cache.get(key)
        if hit is not None:
            return dict(hit)
        waves = [dbs] * (sequences // dbs) + ([sequences % dbs] if sequences % dbs else [])
        out = {
            "decode_s": 0.0,
            "memory_s": 0.0,
            "compute_s": 0.0,
            "comm_s": 0.0,
            "pipeline_s": 0.0,
            "overhead_s": 0.0,
            "steps": 0.0,
        }
        seg = wf.response_length / DECODE_SEGMENTS
        for width in widths:
            count = waves.count(width)
            micro_w = min(pp, width)
            b = math.ceil(width / micro_w)
            ar, hops = rings[width]
            for k in range(DECODE_SEGMENTS):
                ctx = wf.prompt_length + (k + 0.5) * seg
                # a round depends on the wave's shape, not on how many waves: (S, dbs) pairs that
                # share a width share their rounds
                round_key = ("round", key[:4], b, micro_w, ctx, ar, hops)
                r = cache.get(round_key)
                if r is None:
                    r = self._round_time(replica, b, micro_w, ctx, list(ar), list(hops))
                    if len(cache) < comm.MEMO_ENTRIES:
                        cache[round_key] = r
                out["decode_s"] += count * seg * r["round_s"]
                for name in ("memory_s", "compute_s", "comm_s", "pipeline_s", "overhead_s"):
                    out[name] += count * seg * r[name]
            out["steps"] += count * wf.response_length
        out["micro_batches"] = float(micro)
        if len(cache) < comm.MEMO_ENTRIES:
            cache[key] = dict(out)
        return out

    def decode_floor(self, replica: list[list[int]], sequences: int, max_dbs: int) -> float:
        """A lower bound on :meth:`_decode_physical` for every dbs <= ``max_dbs``.

        The decode time is not monotone in dbs (the last wave's width and ceil(w/m) round), so
        the time at ``max_dbs`` bounds nothing. Every term below is. With n = R ceil(S/max_dbs)
        <= the token rounds of any dbs <= max_dbs, sum_k seg ctx_k = R P + R^2/2 (the midpoint
        rule's contexts), a wave of width w on m micro-batches of b (m b >= w, m >= 1), stage j's
        slowest GPU (HBM h_j, FLOP rate F_j), its weight shard W_j (at batch 1, the fewest MoE
        experts) and per-token KV k_j:

            round >= chain >= sum_j (W_j / h_j + c_j + hop_j)                        (per round)
            round >= m t_j(b) >= (W_j + w ctx k_j) / h_j + c_j,  (2 a_j w + 4 w ctx H L_j) / (tp
            F_j) + c_j
            overhead(b m) >= step_ms + w seq_us

        where c_j = 2 L_j 2 (tp-1) ring_j(0) is the TP all-reduces' latency and hop_j the PP hop's;
        summed over the rounds of every wave (sum of widths = S), the max of sums being at most
        the sum of maxima. A GPU with a fitted profile (``costmodels.profiles``) streams weights at
        h e_w[tp] and KV at h e_kv, computes at F e_c, and its c_j is its per-layer floor and
        all-reduce latencies, L_j c0 + (2 L_j + first) a[tp]; its step adds the KV read to both
        sides of the max. The bound is taken per GPU and the stage's is the largest: a stage
        waits for its slowest GPU, so any one GPU's bound bounds it."""
        wf, m, tp = self.wf, self.m, self.tp_.tp
        eff = self.problem.params.efficiency
        pp = len(replica)
        rounds = wf.response_length * math.ceil(sequences / max_dbs)
        ctx_sum = wf.response_length * wf.prompt_length + wf.response_length**2 / 2
        chain, worst = 0.0, 0.0
        for j, stage in enumerate(replica):
            last = j == pp - 1
            L = self.split[j]
            w = weights_read_gb(m, L, j == 0, last, tp, 1)
            kv = kv_bytes_per_token(m, L, tp) / GB
            active = L * (attention_params(m) + mlp_params(m, active=True)) + (
                m.vocab * m.hidden if last else 0
            )
            flops_total = (
                2 * active * sequences * wf.response_length + 4 * sequences * ctx_sum * m.hidden * L
            )
            # t_j adds the TP all-reduces of the step: 2 L_j of 2 (tp-1) ring steps,
            # each at least a hop
            ring = 2 * L * 2 * (tp - 1) * self._ring(stage, 0.0) if tp > 1 else 0.0
            hop = comm.best_pair(self.topo, stage, replica[j + 1], 0.0) if not last else 0.0
            stage_chain, stage_worst = 0.0, 0.0
            for g in self._gpus(stage):
                prof = eff.profile_for(g, tp)
                if prof is None:
                    stream_s, kv_s = w / eff.hbm_gbs(g), sequences * ctx_sum * kv / eff.hbm_gbs(g)
                    memory, compute = rounds * stream_s + kv_s, flops_total / (tp * eff.flops(g))
                    fixed = ring
                else:  # the profile's shard leaves out the embedding (a lookup)
                    stream_s = weights_read_gb(m, L, False, last, tp, 1) / (
                        g.hbm_gb_per_s * prof.weight_efficiency[tp]
                    )
                    kv_s = sequences * ctx_sum * kv / (g.hbm_gb_per_s * prof.kv_efficiency)
                    memory = rounds * stream_s + kv_s
                    compute = (
                        flops_total / (tp * g.tflops_bf16_dense * 1e12 * prof.gemm_efficiency)
                        + kv_s
                    )
                    latency = (
                        (2 * L + (1 if j == 0 else 0)) * prof.allreduce[tp].latency_us
                        if tp > 1
                        else 0.0
                    )
                    fixed = (L * prof.layer_floor_us + latency) * 1e-6
                stage_chain = max(stage_chain, stream_s + fixed)
                stage_worst = max(stage_worst, memory + rounds * fixed, compute + rounds * fixed)
            chain += rounds * (stage_chain + hop)
            worst = max(worst, stage_worst)
        overhead = (
            rounds * eff.step_overhead_s(0, m.layers)
            + sequences * wf.response_length * eff.decode_sequence_overhead_us / 1e6
        )
        return max(chain, worst) + overhead

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
            cv = self.problem.params.grad_bytes_per_param * params * 2 * (dp - 1) / dp / GB
            for k in range(tp):
                devices = [self.idx[i][j][k] for i in range(dp)]
                worst = max(worst, self._ring(devices, cv))
        return worst


def task_cost(
    problem: PlacementProblem,
    task: Task,
    tp_: TaskPlacement,
    mem: dict[int, dict[str, float]] | None = None,
) -> tuple[dict[str, Any], bool]:
    """One task's cost C^t with its components (HetRL B.2-B.3) and whether its rings are exact.
    ``mem`` (the plan's per-GPU memory) is needed only by generation without ``decode_batch``."""
    coster = _TaskCoster(problem, task, tp_, mem)
    return coster.cost(), coster.exact


def generation_floor(
    problem: PlacementProblem, task: Task, tp_: TaskPlacement, mem: dict[int, dict[str, float]]
) -> float:
    """A lower bound on generation's time under ``tp_`` with ``decode_batch`` None whenever its
    GPUs hold at least the residents of ``mem``: more residents leave room for fewer sequences
    (dbs <= the dbs ``mem`` allows), and :meth:`_TaskCoster.decode_floor` bounds every such dbs;
    prefill does not depend on dbs. Under ``decode_model="hetrl"`` the time is non-increasing in
    dbs, so the time at the largest dbs is the bound."""
    coster = _TaskCoster(problem, task, tp_, mem)
    cost = coster.cost()
    if problem.params.decode_model == "hetrl":
        return cost["time_s"]
    wf = problem.workflow
    worst = 0.0
    for i, replica in enumerate(coster.idx):
        samples = wf.samples * coster.shares[i]
        decode = (
            coster.decode_floor(replica, math.ceil(samples - 1e-9), cost["decode_batch"][i])
            if samples > 0
            else 0.0
        )
        worst = max(worst, cost["prefill_times_s"][i] + decode)
    return worst


def decode_batches(
    problem: PlacementProblem, task: Task, tp_: TaskPlacement, mem: dict[int, dict[str, float]]
) -> tuple[int, ...]:
    """dbs of every replica of a generation task (cheap: memory arithmetic, no costing)."""
    coster = _TaskCoster(problem, task, tp_, mem)
    return tuple(coster._decode_batch(replica) for replica in coster.idx)


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


def zone_fanout(problem: PlacementProblem, receivers: list[int]) -> float:
    """F_z: pipelined chain broadcast of the full weights from one GPU of the zone to the others
    (module doc); ``receivers`` are the zone's generation GPUs (topology indices)."""
    n = len(receivers)
    if n < 2:
        return 0.0
    full = full_weights_gb(problem)
    # a chunk hop at the chain's slowest edge (alpha + W / K / beta), as the pipelined chain's
    # per-hop latency with the transfer already in it
    hop = comm.bottleneck_ring(problem.topology, receivers, full / BROADCAST_CHUNKS).seconds
    return pipelined_broadcast_s(full, n - 1, math.inf, hop, BROADCAST_CHUNKS)


def gen_zones(problem: PlacementProblem, gen_devices: list[int]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for d in gen_devices:
        out.setdefault(problem.topology.devices[d].zone, []).append(d)
    return out


def sync_arrivals(
    problem: PlacementProblem, train_devices: list[int], gen_devices: list[int], together: bool
) -> dict[str, dict[str, float]]:
    """A_z and F_z of every zone holding generation GPUs (module doc)."""
    full = full_weights_gb(problem)
    topo = problem.topology
    out = {}
    for z, receivers in gen_zones(problem, gen_devices).items():
        arrival = (
            0.0
            if together
            else min(comm.route_time(topo, s, r, full) for s in train_devices for r in receivers)
        )
        out[z] = {"arrival_s": arrival, "fanout_s": zone_fanout(problem, receivers)}
    return out


def weight_transfer(
    problem: PlacementProblem, plan: PlacementPlan
) -> tuple[str, float, dict[str, Any], bool]:
    """C_reshard or C_sync (module doc), whichever the plan's layout needs, with its parts."""
    train = plan.task(ACTOR_TRAINING)
    gen = plan.task(ACTOR_GENERATION)
    groups = plan.group_of()
    together = groups[ACTOR_GENERATION] == groups[ACTOR_TRAINING]
    ag, exact = replica_allgather(problem, train)
    if problem.workflow.mode == "sync" and together:
        return "reshard", max(ag), {"allgather_s": max(ag)}, exact
    index = problem.topology.index_of()
    zones = sync_arrivals(
        problem,
        [index[d] for d in train.all_devices()],
        [index[d] for d in gen.all_devices()],
        together,
    )
    worst = max((v["arrival_s"] + v["fanout_s"] for v in zones.values()), default=0.0)
    return "sync", min(ag) + worst, {"allgather_s": min(ag), "zones": zones}, exact


def evaluate_placement(problem: PlacementProblem, plan: PlacementPlan) -> Evaluation:
    """Predicted seconds per iteration of ``plan`` (HetRL Appendix B.4, module doc) and its
    breakdown."""
    wf = problem.workflow
    params = problem.params
    mem = device_memory(problem, plan)
    groups = plan.group_of()
    task_costs: dict[str, dict[str, Any]] = {}
    exact = True
    for task in problem.tasks:
        task_costs[task.name], task_exact = task_cost(problem, task, plan.task(task.name), mem)
        exact = exact and task_exact

    def stage_cost(kind: TaskKind, only_group: int | None = None) -> float:
        names = [
            t.name
            for t in problem.tasks
            if t.kind is kind and (only_group is None or groups[t.name] == only_group)
        ]
        if not params.group_aware_overlap:
            return phi([task_costs[n]["time_s"] for n in names], wf.eta)
        by_group: dict[int, list[float]] = {}
        for n in names:
            by_group.setdefault(groups[n], []).append(task_costs[n]["time_s"])
        return max((phi(v, wf.eta) for v in by_group.values()), default=0.0)

    gen = task_costs[ACTOR_GENERATION]["time_s"]
    inf = stage_cost(TaskKind.INFERENCE)
    trn = stage_cost(TaskKind.TRAINING)
    transfer_kind, transfer, transfer_parts, transfer_exact = weight_transfer(problem, plan)
    exact = exact and transfer_exact
    phases: dict[str, Any] = {
        "generation_s": gen,
        "inference_s": inf,
        "training_s": trn,
        "weight_transfer_s": transfer,
        "weight_transfer": transfer_kind,
        "weight_transfer_parts": transfer_parts,
    }
    if wf.mode == "sync":
        total = gen + inf + trn + transfer
    elif params.group_aware_overlap:
        # generation overlaps training only on other GPUs: its group is busy with what shares it
        g = groups[ACTOR_GENERATION]
        busy = gen + stage_cost(TaskKind.INFERENCE, g) + stage_cost(TaskKind.TRAINING, g)
        phases["generation_group_busy_s"] = busy
        total = max(busy, inf + trn) + transfer
    else:
        total = max(gen, inf + trn) + transfer
    peak = max(((s["model_gb"] + s["working_gb"]) / s["capacity_gb"], d) for d, s in mem.items())
    breakdown = {
        "iteration_time_s": total,
        "throughput_samples_per_s": wf.samples / total if total > 0 else math.inf,
        "throughput_tokens_per_s": wf.samples * (wf.prompt_length + wf.response_length) / total
        if total > 0
        else math.inf,
        "phases": phases,
        "tasks": task_costs,
        "memory": {
            "peak_utilization": peak[0],
            "tightest_device": problem.topology.devices[peak[1]].id,
        },
        "efficiency": params.efficiency.summary(),
        "model": {
            "decode": params.decode_model,
            "group_aware_overlap": params.group_aware_overlap,
            "share_prompt_prefill": params.share_prompt_prefill,
        },
        "ring_exact": exact,
    }
    return Evaluation(total, breakdown)
