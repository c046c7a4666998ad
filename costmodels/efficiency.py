"""One set of hardware efficiency and latency defaults for every cost model in rlplan.

Peak figures (dense BF16 TFLOP/s, HBM GB/s, link GB/s) are what a spec sheet promises; kernels
reach a fraction of them. Every model in the project (placement, the decode step behind
``rlplan estimate`` and the generation simulator) derates peaks with the same :class:`Efficiency`,
and every breakdown prints the values it used, so two numbers rlplan prints are always comparable.

Defaults (a systems engineer's reading of public measurements, not tuned to any paper's figure):

* ``compute = 0.5``: fraction of dense BF16 peak reached by the GEMMs of training, prefill and
  decode. Megatron-LM reports 40-55 % MFU for dense 7-70B training on A100/H100; vLLM prefill is
  in the same range. HetRL Appendix B uses 100 % (its literal term: ``compute=1``).
* ``hbm = 0.8``: fraction of HBM bandwidth a decode step's weight and KV reads reach (STREAM-like
  kernels reach 80-90 %).
* :data:`INTRA_NODE_HOP_LATENCY_MS` (1.5 µs): one ring step between GPUs of a node over
  NVLink/PCIe with NCCL's low-latency protocol; the topology's default intra-node alpha and the
  serving model's hop latency. Network links carry their own latency in the cluster spec.
* :data:`DECODE_STEP_OVERHEAD_MS` (0.2 ms per step) and
  :data:`DECODE_SEQUENCE_OVERHEAD_US` (10 µs per sequence per step): the serving engine's
  per-step CPU work (scheduling, sampling, detokenisation) that does not shrink with TP; what makes
  many small instances pay for their batch (OrchestrRL §2.1 needs it: see ``costmodels.decode``).

``per_gpu`` overrides either fraction for one GPU type (e.g. PCIe L4 parts rarely reach the SXM
parts' MFU). ``profiles`` goes further: a fitted :class:`~costmodels.profiles.HardwareProfile` per
GPU type (``rlplan calibrate``) replaces the flat fractions and the hop-latency all-reduce in the
decode step and prefill of that GPU type, at the TPs it was fitted at; the engine's CPU overhead
above still applies on top (the profiles are kernel time).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import GPUSpec
from costmodels.profiles import HardwareProfile

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

#: one ring step between GPUs of one node (NVLink / PCIe, NCCL low-latency protocol), ms
INTRA_NODE_HOP_LATENCY_MS = 0.0015
#: serving engine's fixed CPU time per decode step (scheduler, sampler), ms
DECODE_STEP_OVERHEAD_MS = 0.2
#: serving engine's CPU time per running sequence per decode step (sampling, detokenising), µs
DECODE_SEQUENCE_OVERHEAD_US = 10.0


class GPUEfficiency(BaseModel):
    """Overrides for one GPU type; unset fields keep the global value."""

    model_config = _STRICT

    compute: float | None = Field(default=None, gt=0, le=1)
    hbm: float | None = Field(default=None, gt=0, le=1)


class Efficiency(BaseModel):
    """Fractions of peak reached in practice, shared by every cost model (see module doc)."""

    model_config = _STRICT

    compute: float = Field(default=0.5, gt=0, le=1, description="fraction of dense BF16 peak FLOP/s reached")
    hbm: float = Field(default=0.8, gt=0, le=1, description="fraction of HBM bandwidth reached")
    decode_step_overhead_ms: float = Field(default=DECODE_STEP_OVERHEAD_MS, ge=0, description="serving engine CPU time per decode step, ms")
    decode_sequence_overhead_us: float = Field(default=DECODE_SEQUENCE_OVERHEAD_US, ge=0, description="serving engine CPU time per sequence per decode step, µs")
    decode_layer_overhead_us: float = Field(default=0.0, ge=0, le=1e5, description="serving engine CPU time per model layer per decode step (kernel launches without CUDA graphs), µs")
    engine: str = Field(default="custom", max_length=64, description="the serving-engine profile the three overheads came from (costmodels.profiles.ENGINE_PROFILES), or custom")
    per_gpu: dict[str, GPUEfficiency] = Field(default_factory=dict, description="per GPU type overrides")
    profiles: dict[str, HardwareProfile] = Field(default_factory=dict, description="fitted kernel profiles per GPU type (rlplan calibrate)")

    def profile_for(self, gpu: GPUSpec, tp: int) -> HardwareProfile | None:
        """The fitted profile of ``gpu`` when it covers ``tp``, else None (the flat fractions)."""
        p = self.profiles.get(gpu.name)
        return p if p is not None and p.covers(tp) else None

    def compute_for(self, gpu: GPUSpec) -> float:
        o = self.per_gpu.get(gpu.name)
        return o.compute if o is not None and o.compute is not None else self.compute

    def hbm_for(self, gpu: GPUSpec) -> float:
        o = self.per_gpu.get(gpu.name)
        return o.hbm if o is not None and o.hbm is not None else self.hbm

    def flops(self, gpu: GPUSpec) -> float:
        """Sustained FLOP/s of one GPU."""
        return gpu.tflops_bf16_dense * 1e12 * self.compute_for(gpu)

    def hbm_gbs(self, gpu: GPUSpec) -> float:
        """Sustained HBM GB/s of one GPU."""
        return gpu.hbm_gb_per_s * self.hbm_for(gpu)

    def step_overhead_s(self, batch: int, layers: int = 0) -> float:
        """Serving engine CPU time of one decode step of ``batch`` sequences through ``layers``
        layers, seconds."""
        return (self.decode_step_overhead_ms / 1e3 + batch * self.decode_sequence_overhead_us / 1e6
                + layers * self.decode_layer_overhead_us / 1e6)

    def summary(self) -> dict[str, float | dict[str, dict[str, float | None]]]:
        """What breakdowns print: the values every term above was derated with."""
        out: dict[str, float | dict[str, dict[str, float | None]]] = {
            "compute": self.compute, "hbm": self.hbm,
            "decode_step_overhead_ms": self.decode_step_overhead_ms,
            "decode_sequence_overhead_us": self.decode_sequence_overhead_us,
            "decode_layer_overhead_us": self.decode_layer_overhead_us,
            "intra_node_hop_latency_ms": INTRA_NODE_HOP_LATENCY_MS,
        }
        if self.per_gpu:
            out["per_gpu"] = {k: v.model_dump() for k, v in self.per_gpu.items()}
        if self.profiles:
            out["profiles"] = {k: {"source": v.source, "tps": sorted(v.weight_efficiency)} for k, v in self.profiles.items()}  # type: ignore[misc]
        return out
