"""The one decode-step model of rlplan, and generation makespan under a parallelism configuration
(OrchestrRL §2.1, §4.1: T_k(R_k, y_k)).

:func:`decode_step_time` is the only place a decode step is costed: placement's generation task
(``costmodels.placement.judge``), ``rlplan estimate generation`` (:class:`Instance` below) and the
generation simulator all call it. For one pipeline stage of ``L_s`` layers on a TP group of
``tp`` GPUs, a batch of ``b`` sequences holding ``C`` context tokens in total costs

    t_step = max(t_mem, t_comp) + t_comm                                     (D1)
    t_mem  = (W_read(b) + C * kv(L_s, tp)) / (HBM * e_hbm)                   (D2)
    t_comp = (2 * P_active * b + 4 * C * h * L_s) / (tp * FLOPS * e_comp)    (D3)
    t_comm = 2 * L_s * AR(b * h * 2 bytes)  [+ 2 * L_s * A2A for MoE]        (D4)

* (D2) a step reads the GPU's weight shard ``W_read`` (stage parameters / tp, BF16; for MoE only
  the experts the batch routes to: E * (1 - (1 - k/E)^b) of E) and the batch's whole KV cache
  (``kv`` bytes per token per GPU for the stage's layers); a longer context is a slower step;
* (D3) 2 FLOPs per active parameter per token (the LM head on the last stage) plus attention's
  4 * context * hidden per layer; batching stops paying once compute-bound (the roofline);
* (D4) two all-reduces of the batch's hidden states per layer (Megatron TP), each a ring of
  ``2 (tp-1)`` steps: ``AR(v) = 2 (tp-1) * (alpha + v / tp / beta)`` on the group's slowest link
  (``beta`` one direction), and for MoE two all-to-alls (dispatch, combine). Decoding moves
  little data, so the hop latency is what makes a large TP group slow at high batch while its
  smaller shard makes it fast in the latency-bound tail: OrchestrRL §2.1's crossover.

The serving engine adds CPU time per step, ``o_step + b * o_seq`` (``Efficiency``), outside the
GPU roofline. Peaks are derated by the project's one :class:`costmodels.efficiency.Efficiency`.

For a fixed batch, (D2) and (D3) are affine in the context C, so a step is
``max(m0 + m1 C, c0 + c1 C) + rest`` (:class:`StepCoefficients`, read off
:meth:`Instance.decode_step` by :func:`step_coefficients`; with a fitted profile the slopes are
measured at two contexts). That is this model in closed form, so it lives here, beside the step
it must reproduce (the tests check it does), rather than with one of its users: the generation
simulator (``costmodels.generation.engine``) sums it over the steps between two events, and the
replan model (``costmodels.replan.problem``) reads its KV slope from it.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import GPUSpec, ModelSpec
from costmodels.efficiency import INTRA_NODE_HOP_LATENCY_MS, Efficiency
from costmodels.memory import GB
from costmodels.transformer import (
    BYTES_BF16,
    attention_params,
    kv_bytes_per_token,
    mlp_params,
    total_params,
    weights_read_gb,
)

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def decode_step_time(
    m: ModelSpec,
    gpu: GPUSpec,
    *,
    tp: int,
    stage_layers: int,
    first: bool,
    last: bool,
    batch: float,
    context_tokens: float,
    efficiency: Efficiency,
    allreduce_s: Callable[[float], float],
    alltoall_s: Callable[[float], float] | None = None,
) -> dict[str, float]:
    """One decode step of one pipeline stage on one GPU of its TP group, (D1)-(D4), seconds.

    ``allreduce_s(volume_gb)`` is the TP group's all-reduce time (0 for tp = 1), ``alltoall_s``
    the MoE expert exchange's; ``context_tokens`` is the batch's total context. The engine's CPU
    overhead is the caller's (once per step, not per stage)."""
    if batch <= 0:
        return {"memory_s": 0.0, "compute_s": 0.0, "comm_s": 0.0, "step_s": 0.0}
    profile = efficiency.profile_for(gpu, tp)
    if profile is not None:  # a fitted profile replaces (D2)-(D4) (costmodels.profiles)
        t = profile.terms(
            m, gpu, tp, batch, context_tokens, stage_layers=stage_layers, first=first, last=last
        )
        comm = t["comm_s"]
        if m.is_moe and tp > 1 and alltoall_s is not None:
            comm += (
                2
                * stage_layers
                * alltoall_s(batch * m.hidden * BYTES_BF16 / GB * m.experts_per_token)
            )  # type: ignore[operator]
        # max(stream, flops) + kv + floor written as max(memory, compute), as (D1) has it
        rest = t["kv_s"] + t["floor_s"]
        memory, compute = t["stream_s"] + rest, t["flops_s"] + rest
        return {
            "memory_s": memory,
            "compute_s": compute,
            "comm_s": comm,
            "step_s": max(memory, compute) + comm,
        }
    kv_read = context_tokens * kv_bytes_per_token(m, stage_layers, tp) / GB
    memory = (
        weights_read_gb(m, stage_layers, first, last, tp, batch) + kv_read
    ) / efficiency.hbm_gbs(gpu)
    active = stage_layers * (attention_params(m) + mlp_params(m, active=True)) + (
        m.vocab * m.hidden if last else 0
    )
    flops = 2 * active * batch + 4 * context_tokens * m.hidden * stage_layers
    compute = flops / (tp * efficiency.flops(gpu))
    hidden_gb = batch * m.hidden * BYTES_BF16 / GB
    comm = 2 * stage_layers * allreduce_s(hidden_gb) if tp > 1 else 0.0
    if m.is_moe and tp > 1 and alltoall_s is not None:
        comm += 2 * stage_layers * alltoall_s(hidden_gb * m.experts_per_token)  # type: ignore[operator]
    return {
        "memory_s": memory,
        "compute_s": compute,
        "comm_s": comm,
        "step_s": max(memory, compute) + comm,
    }


def ring_allreduce_s(tp: int, hop_s: float, link_gbs: float, volume_gb: float) -> float:
    """Ring all-reduce of ``volume_gb`` over ``tp`` GPUs: 2 (tp-1) steps of volume / tp (D4)."""
    if tp <= 1:
        return 0.0
    return 2 * (tp - 1) * (hop_s + volume_gb / tp / link_gbs)


class ServingParams(BaseModel):
    """Serving-engine knobs (vLLM-like defaults); peaks are derated by the project's one
    efficiency set."""

    model_config = _STRICT

    efficiency: Efficiency = Field(default_factory=Efficiency)
    max_num_seqs: int = Field(
        default=256, gt=0, description="engine's max concurrent sequences per instance"
    )
    memory_utilization: float = Field(
        default=0.9, gt=0, le=1, description="share of GPU memory the engine may use"
    )
    activation_reserve_gb: float = Field(
        default=2.0, ge=0, description="per-GPU memory kept for activations and graphs"
    )
    share_prompt_prefill: bool = Field(
        default=False,
        description=(
            "requests of one group with the same prompt length share its prefill while one of "
            "them holds its KV (vLLM prefix caching under n samples per prompt); off unless "
            "the caller's groups are prompts"
        ),
    )
    hop_latency_ms: float = Field(
        default=INTRA_NODE_HOP_LATENCY_MS,
        ge=0,
        description=(
            "latency of one ring step between GPUs of a node (NVLink, NCCL low-latency protocol)"
        ),
    )


@dataclass(frozen=True)
class Instance:
    """One serving instance: a model on ``tp`` GPUs of one type in one node (EP = TP for MoE)."""

    model: ModelSpec
    gpu: GPUSpec
    tp: int
    params: ServingParams = field(default_factory=ServingParams)

    @property
    def link_gbs(self) -> float:
        """One-direction NVLink/PCIe bandwidth per GPU (a ring step sends one way)."""
        return self.gpu.link_gb_per_s

    def weights_gb_per_gpu(self) -> float:
        return BYTES_BF16 * total_params(self.model) / self.tp / GB

    def kv_gb_per_token(self) -> float:
        """KV bytes per token summed over the instance's GPUs (GB)."""
        return kv_bytes_per_token(self.model, self.model.layers, self.tp) * self.tp / GB

    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache the instance holds (0 when the weights alone do not fit)."""
        p = self.params
        free = (
            self.gpu.memory_gb * p.memory_utilization
            - self.weights_gb_per_gpu()
            - p.activation_reserve_gb
        )
        if free <= 0:
            return 0
        return int(free * self.tp / self.kv_gb_per_token())

    def _hop_s(self) -> float:
        return self.params.hop_latency_ms / 1e3

    def _allreduce_s(self, volume_gb: float) -> float:
        return ring_allreduce_s(self.tp, self._hop_s(), self.link_gbs, volume_gb)

    def _alltoall_s(self, volume_gb: float) -> float:
        return (self.tp - 1) * self._hop_s() + volume_gb * (self.tp - 1) / self.tp / self.link_gbs

    def decode_step(self, batch: int, context_tokens: float) -> dict[str, float]:
        """Seconds for one decode step of ``batch`` sequences holding ``context_tokens`` in total:
        :func:`decode_step_time` on the whole model plus the engine's per-step overhead."""
        m = self.model
        out = decode_step_time(
            m,
            self.gpu,
            tp=self.tp,
            stage_layers=m.layers,
            first=True,
            last=True,
            batch=batch,
            context_tokens=context_tokens,
            efficiency=self.params.efficiency,
            allreduce_s=self._allreduce_s,
            alltoall_s=self._alltoall_s,
        )
        if batch > 0:
            out["overhead_s"] = self.params.efficiency.step_overhead_s(batch, m.layers)
            out["step_s"] += out["overhead_s"]
        return out

    def prefill(self, tokens: int, context: int = 0) -> float:
        """Seconds to (re)compute the KV cache of ``tokens`` new tokens after ``context`` cached
        ones."""
        return self.prefill_batch([tokens], [context])

    def prefill_batch(self, tokens: list[int], contexts: list[int] | None = None) -> float:
        """Seconds to prefill several sequences in one batch: compute-bound (linear FLOPs plus
        causal attention per sequence), never faster than one pass over the weights, plus the TP
        all-reduces of the batch's hidden states."""
        m, eff = self.model, self.params.efficiency
        contexts = contexts or [0] * len(tokens)
        total = sum(tokens)
        if total <= 0:
            return 0.0
        profile = eff.profile_for(self.gpu, self.tp)
        if profile is not None:
            return profile.prefill_batch_s(m, self.gpu, self.tp, list(tokens), list(contexts))
        active = m.layers * (attention_params(m) + mlp_params(m, active=True))
        attn = sum(
            2 * 2 * m.hidden * m.layers * (t * c + t * (t + 1) / 2)
            for t, c in zip(tokens, contexts, strict=True)
        )
        compute = (2 * active * total + attn) / (self.tp * eff.flops(self.gpu))
        memory = weights_read_gb(m, m.layers, True, True, self.tp, total) / eff.hbm_gbs(self.gpu)
        comm = 2 * m.layers * self._allreduce_s(total * m.hidden * BYTES_BF16 / GB)
        return max(compute, memory) + comm


@dataclass
class StepCoefficients:
    """A decode step of a fixed batch as a function of its context C:
    ``max(m0 + m1 * C, c0 + c1 * C) + rest``."""

    m0: float
    m1: float
    c0: float
    c1: float
    rest: float

    def at(self, context: float) -> float:
        return max(self.m0 + self.m1 * context, self.c0 + self.c1 * context) + self.rest

    def total(self, c_start: float, growth: float, steps: int) -> float:
        """Sum of ``at(c_start + growth * k)`` for k = 0 .. steps - 1, in closed form."""
        if steps <= 0:
            return 0.0
        a1, s1 = self.m0 + self.m1 * c_start, self.m1 * growth
        a2, s2 = self.c0 + self.c1 * c_start, self.c1 * growth

        def arith(a: float, s: float, lo: int, hi: int) -> float:  # sum of a + s k, lo <= k < hi
            n = hi - lo
            return a * n + s * (lo + hi - 1) * n / 2 if n > 0 else 0.0

        # the max switches at most once (two lines); split there
        if s1 == s2:
            split = 0 if a1 >= a2 else steps
        else:
            cross = min(
                float(steps), max(0.0, (a2 - a1) / (s1 - s2))
            )  # clamped before ceil: may be +-inf
            split = min(steps, max(0, math.ceil(cross - 1e-12)))
        if s1 > s2:  # memory line on top from `split` on
            body = arith(a2, s2, 0, split) + arith(a1, s1, split, steps)
        elif s1 < s2:
            body = arith(a1, s1, 0, split) + arith(a2, s2, split, steps)
        else:
            body = arith(a1 if a1 >= a2 else a2, s1, 0, steps)
        # guard the rounding at the split step: each side is exact where it dominates
        return body + self.rest * steps


def step_coefficients(inst: Instance, batch: int) -> StepCoefficients:
    """The affine pieces of ``inst.decode_step(batch, C)`` (D2, D3 are affine in C). With a fitted
    profile (``costmodels.profiles``) both sides of the max are affine too, and the slopes are read
    off the step at two contexts."""
    d0 = inst.decode_step(batch, 0.0)
    m, eff, g = inst.model, inst.params.efficiency, inst.gpu
    if eff.profile_for(g, inst.tp) is None:
        m1 = kv_bytes_per_token(m, m.layers, inst.tp) / 1e9 / eff.hbm_gbs(g)
        c1 = 4 * m.hidden * m.layers / (inst.tp * eff.flops(g))
    else:
        d1 = inst.decode_step(batch, _SLOPE_CONTEXT)
        m1 = (d1["memory_s"] - d0["memory_s"]) / _SLOPE_CONTEXT
        c1 = (d1["compute_s"] - d0["compute_s"]) / _SLOPE_CONTEXT
    rest = d0["comm_s"] + d0.get("overhead_s", 0.0)
    return StepCoefficients(d0["memory_s"], m1, d0["compute_s"], c1, rest)


# : the context the slopes are read at: large, so rounding in the difference stays far below 1e-12
# relative
_SLOPE_CONTEXT = 2.0**20


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
        if len(self.counts) != len(self.upper) or (
            self.context is not None and len(self.context) != len(self.upper)
        ):
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
        while (
            waiting
            and len(running) < inst.params.max_num_seqs
            and reserved + waiting[-1].context + waiting[-1].remaining <= cap
        ):
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


def configuration_makespan(
    model: ModelSpec,
    gpu: GPUSpec,
    gpus: int,
    tp: int,
    requests: list[Request],
    params: ServingParams | None = None,
) -> dict[str, Any]:
    """T for the whole budget run as ``gpus // tp`` instances of TP ``tp``: the slowest instance."""
    inst = Instance(model, gpu, tp, params or ServingParams())
    dp = gpus // tp
    results = [simulate_instance(inst, part) for part in assign_lpt(requests, dp)]
    makespan = max(r["makespan_s"] for r in results)
    return {
        "tp": tp,
        "dp": dp,
        "makespan_s": makespan,
        "feasible": all(r["feasible"] for r in results),
        "kv_capacity_tokens": inst.kv_capacity_tokens(),
        "peak_batch": max(r["peak_batch"] for r in results),
        "steps": max(r["steps"] for r in results),
    }


def feasible_tps(model: ModelSpec, gpus: int, gpus_per_node: int = 8) -> list[int]:
    """TP degrees that divide the budget, stay inside a node and divide the attention heads."""
    out = []
    tp = 1
    while tp <= min(gpus, gpus_per_node):
        if (
            gpus % tp == 0
            and model.query_heads % tp == 0
            and (model.kv_heads % tp == 0 or tp % model.kv_heads == 0)
        ):
            out.append(tp)
        tp *= 2
    return out


def sweep(
    model: ModelSpec,
    gpu: GPUSpec,
    gpus: int,
    requests: list[Request],
    params: ServingParams | None = None,
    gpus_per_node: int = 8,
) -> list[dict[str, Any]]:
    """Makespan of every feasible TP x DP configuration of the budget, fastest first."""
    rows = [
        configuration_makespan(model, gpu, gpus, tp, requests, params)
        for tp in feasible_tps(model, gpus, gpus_per_node)
    ]
    return sorted(rows, key=lambda r: (not r["feasible"], r["makespan_s"]))
