"""Generation makespan under a parallelism configuration (OrchestrRL §2.1, §4.1: T_k(R_k, y_k)).

A serving instance of ``tp`` GPUs (for MoE models, experts spread over the same GPUs: EP = TP)
decodes a batch in steps. One decode step costs

    max(memory-bound term, compute-bound term) + TP (and EP) communication

* memory-bound: the weights held by one GPU plus the KV cache its batch reads, over HBM bandwidth;
  for MoE only the experts the batch routes to are read (expected distinct experts of b tokens
  choosing k of E: E * (1 - (1 - k/E)^b));
* compute-bound: 2 FLOPs per active parameter per token plus attention (4 * context * hidden per
  layer per token), split over TP;
* communication: two all-reduces of the batch's hidden states per layer (Megatron TP), each a
  ring of ``2 (tp-1)`` steps: ``2 (tp-1) * alpha_hop + 2 (tp-1)/tp * volume / beta`` on the
  node's links, and for MoE two all-to-alls (dispatch, combine). Decoding moves little data per
  step, so the per-hop latency is what makes a large TP group slow at high batch while its
  smaller weight shard makes it fast in the latency-bound tail: the crossover of OrchestrRL §2.1.
  (HetRL's training formulas charge one alpha per collective; at decode granularity the ring's
  hop count matters.)

KV capacity is the memory left on the instance after weights, at the engine's memory utilisation.
A set of requests is given as a remaining-length histogram (OrchestrRL §4.1: bins, each bin's
upper bound taken as the length), each with the context already in the cache. Continuous batching
admits requests in order while the engine's max batch (``max_num_seqs``) and the KV cache, with
room reserved for each request's full final length, allow it; the makespan comes from an
event simulation over completions. Units: seconds, tokens, GB, GB/s, FLOP/s.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import GPUSpec, ModelSpec
from costmodels.memory import GB
from costmodels.transformer import (
    BYTES_BF16,
    attention_params,
    kv_bytes_per_token,
    mlp_params,
    total_params,
)

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class ServingParams(BaseModel):
    """Serving-engine knobs (vLLM-like defaults). Efficiencies derate peak FLOP/s and HBM GB/s."""

    model_config = _STRICT

    compute_efficiency: float = Field(default=0.5, gt=0, le=1)
    hbm_efficiency: float = Field(default=0.8, gt=0, le=1)
    max_num_seqs: int = Field(default=256, gt=0, description="engine's max concurrent sequences per instance")
    memory_utilization: float = Field(default=0.9, gt=0, le=1, description="share of GPU memory the engine may use")
    activation_reserve_gb: float = Field(default=2.0, ge=0, description="per-GPU memory kept for activations and graphs")
    hop_latency_ms: float = Field(default=0.0015, ge=0, description="latency of one ring step between GPUs of a node (NVLink, NCCL low-latency protocol)")


@dataclass(frozen=True)
class Instance:
    """One serving instance: a model on ``tp`` GPUs of one type (EP = TP for MoE)."""

    model: ModelSpec
    gpu: GPUSpec
    tp: int
    params: ServingParams = field(default_factory=ServingParams)

    @property
    def link_gbs(self) -> float:
        return self.gpu.intra_node_gb_per_s

    def weights_gb_per_gpu(self) -> float:
        return BYTES_BF16 * total_params(self.model) / self.tp / GB

    def kv_gb_per_token(self) -> float:
        """KV bytes per token summed over the instance's GPUs (GB)."""
        return kv_bytes_per_token(self.model, self.model.layers, self.tp) * self.tp / GB

    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache the instance holds (0 when the weights alone do not fit)."""
        p = self.params
        free = self.gpu.memory_gb * p.memory_utilization - self.weights_gb_per_gpu() - p.activation_reserve_gb
        if free <= 0:
            return 0
        return int(free * self.tp / self.kv_gb_per_token())

    def _weights_read_gb(self, batch: int) -> float:
        m = self.model
        if not m.is_moe:
            return self.weights_gb_per_gpu()
        e, k = m.num_experts, m.experts_per_token
        touched = e * (1 - (1 - k / e) ** max(batch, 0))  # type: ignore[operator]
        expert = mlp_params(m, active=False) / e  # type: ignore[operator]
        other = total_params(m) - m.layers * e * expert  # type: ignore[operator]
        return BYTES_BF16 * (other + m.layers * touched * expert) / self.tp / GB

    def _allreduce_s(self, volume_gb: float) -> float:
        if self.tp == 1:
            return 0.0
        return 2 * (self.tp - 1) * self.params.hop_latency_ms / 1e3 + 2 * (self.tp - 1) / self.tp * volume_gb / self.link_gbs

    def decode_step(self, batch: int, context_tokens: float) -> dict[str, float]:
        """Seconds for one decode step of ``batch`` sequences holding ``context_tokens`` in total."""
        m, p = self.model, self.params
        if batch <= 0:
            return {"memory_s": 0.0, "compute_s": 0.0, "comm_s": 0.0, "step_s": 0.0}
        kv_read = context_tokens * kv_bytes_per_token(m, m.layers, self.tp) / GB
        memory = (self._weights_read_gb(batch) + kv_read) / (self.gpu.hbm_gb_per_s * p.hbm_efficiency)
        active = m.layers * (attention_params(m) + mlp_params(m, active=True)) + m.vocab * m.hidden
        flops = 2 * active * batch + 4 * context_tokens * m.hidden * m.layers
        compute = flops / (self.tp * self.gpu.tflops_bf16_dense * 1e12 * p.compute_efficiency)
        hidden_gb = batch * m.hidden * BYTES_BF16 / GB
        comm = 2 * m.layers * self._allreduce_s(hidden_gb)
        if m.is_moe and self.tp > 1:
            a2a = (self.tp - 1) * p.hop_latency_ms / 1e3 + hidden_gb * m.experts_per_token * (self.tp - 1) / self.tp / self.link_gbs  # type: ignore[operator]
            comm += 2 * m.layers * a2a
        return {"memory_s": memory, "compute_s": compute, "comm_s": comm, "step_s": max(memory, compute) + comm}

    def prefill(self, tokens: int, context: int = 0) -> float:
        """Seconds to (re)compute the KV cache of ``tokens`` new tokens after ``context`` cached ones."""
        return self.prefill_batch([tokens], [context])

    def prefill_batch(self, tokens: list[int], contexts: list[int] | None = None) -> float:
        """Seconds to prefill several sequences in one batch: compute-bound (linear FLOPs plus
        causal attention per sequence), never faster than one pass over the weights, plus the TP
        all-reduces of the batch's hidden states."""
        m, p = self.model, self.params
        contexts = contexts or [0] * len(tokens)
        total = sum(tokens)
        if total <= 0:
            return 0.0
        active = m.layers * (attention_params(m) + mlp_params(m, active=True))
        attn = sum(2 * 2 * m.hidden * m.layers * (t * c + t * (t + 1) / 2) for t, c in zip(tokens, contexts, strict=True))
        compute = (2 * active * total + attn) / (self.tp * self.gpu.tflops_bf16_dense * 1e12 * p.compute_efficiency)
        memory = self._weights_read_gb(total) / (self.gpu.hbm_gb_per_s * p.hbm_efficiency)
        comm = 2 * m.layers * self._allreduce_s(total * m.hidden * BYTES_BF16 / GB)
        return max(compute, memory) + comm


@dataclass(frozen=True)
class Request:
    """A pending request: tokens still to generate and tokens already in its KV cache."""

    remaining: int
    context: int


class LengthHistogram(BaseModel):
    """Remaining-length histogram (OrchestrRL §4.1): ``counts[i]`` requests whose remaining length
    falls in bin i, costed at the bin's upper bound ``upper[i]``; ``context[i]`` is the tokens they
    already hold (prompt plus generated so far)."""

    model_config = _STRICT

    upper: list[int] = Field(min_length=1)
    counts: list[int]
    context: list[int] | None = None

    def requests(self) -> list[Request]:
        if len(self.counts) != len(self.upper) or (self.context is not None and len(self.context) != len(self.upper)):
            raise ValueError("upper, counts and context must have the same length")
        ctx = self.context or [0] * len(self.upper)
        out = []
        for u, c, x in zip(self.upper, self.counts, ctx, strict=True):
            out.extend(Request(int(u), int(x)) for _ in range(int(c)))
        return out

    @property
    def total(self) -> int:
        return sum(self.counts)


def simulate_instance(inst: Instance, requests: list[Request]) -> dict[str, Any]:
    """Makespan of ``requests`` on one instance under continuous batching (see module doc).

    Returns seconds, decode steps, the peak batch, and ``feasible`` False when a request cannot
    fit in the KV cache even alone.
    """
    cap = inst.kv_capacity_tokens()
    if any(r.context + r.remaining > cap for r in requests):
        return {"makespan_s": math.inf, "steps": 0, "peak_batch": 0, "feasible": False}
    waiting = list(requests)
    waiting.reverse()  # pop() from the end keeps arrival order
    running: list[tuple[int, int]] = []  # heap of (finish step, reserved tokens)
    step = 0
    reserved = 0
    context = 0.0  # tokens currently in the running requests' caches
    t = 0.0
    peak = 0
    while waiting or running:
        while waiting and len(running) < inst.params.max_num_seqs and reserved + waiting[-1].context + waiting[-1].remaining <= cap:
            r = waiting.pop()
            heapq.heappush(running, (step + r.remaining, r.context + r.remaining))
            reserved += r.context + r.remaining
            context += r.context
        peak = max(peak, len(running))
        finish = running[0][0]
        d = finish - step
        b = len(running)
        if d > 0:
            # contexts grow by one token per step: cost the segment at its mid-point
            t += d * inst.decode_step(b, context + b * (d - 1) / 2)["step_s"]
            context += b * d
            step = finish
        while running and running[0][0] == step:
            _, res = heapq.heappop(running)
            reserved -= res
            context -= res  # a finished request held exactly its reservation
    return {"makespan_s": t, "steps": step, "peak_batch": peak, "feasible": True}


def assign_lpt(requests: list[Request], instances: int) -> list[list[Request]]:
    """Longest-remaining-first onto the instance with the least assigned work (a balanced
    request assignment X of OrchestrRL Eq. 1 for identical instances)."""
    buckets: list[list[Request]] = [[] for _ in range(instances)]
    heap = [(0, i) for i in range(instances)]
    for r in sorted(requests, key=lambda r: -r.remaining):
        load, i = heapq.heappop(heap)
        buckets[i].append(r)
        heapq.heappush(heap, (load + r.remaining, i))
    return buckets


def configuration_makespan(model: ModelSpec, gpu: GPUSpec, gpus: int, tp: int, requests: list[Request],
                           params: ServingParams | None = None) -> dict[str, Any]:
    """T for the whole budget run as ``gpus // tp`` instances of TP ``tp``: the slowest instance."""
    inst = Instance(model, gpu, tp, params or ServingParams())
    dp = gpus // tp
    results = [simulate_instance(inst, part) for part in assign_lpt(requests, dp)]
    makespan = max(r["makespan_s"] for r in results)
    return {
        "tp": tp, "dp": dp, "makespan_s": makespan, "feasible": all(r["feasible"] for r in results),
        "kv_capacity_tokens": inst.kv_capacity_tokens(), "peak_batch": max(r["peak_batch"] for r in results),
        "steps": max(r["steps"] for r in results),
    }


def feasible_tps(model: ModelSpec, gpus: int, gpus_per_node: int = 8) -> list[int]:
    """TP degrees that divide the budget, stay inside a node and divide the attention heads."""
    out = []
    tp = 1
    while tp <= min(gpus, gpus_per_node):
        if gpus % tp == 0 and model.query_heads % tp == 0 and (model.kv_heads % tp == 0 or tp % model.kv_heads == 0):
            out.append(tp)
        tp *= 2
    return out


def sweep(model: ModelSpec, gpu: GPUSpec, gpus: int, requests: list[Request], params: ServingParams | None = None,
          gpus_per_node: int = 8) -> list[dict[str, Any]]:
    """Makespan of every feasible TP x DP configuration of the budget, fastest first."""
    rows = [configuration_makespan(model, gpu, gpus, tp, requests, params) for tp in feasible_tps(model, gpus, gpus_per_node)]
    return sorted(rows, key=lambda r: (not r["feasible"], r["makespan_s"]))
