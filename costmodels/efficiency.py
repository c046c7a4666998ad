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
* the serving engine's per-step CPU work (scheduling, sampling, kernel launches), which does not
  shrink with TP: what makes many small instances pay for their batch (**Engine** below).

``per_gpu`` overrides either fraction for one GPU type (e.g. PCIe L4 parts rarely reach the SXM
parts' MFU).

**Kernels.** With ``kernels = "aic-vllm"`` (the default) the decode step and prefill of every
catalog GPU read a fitted :class:`~costmodels.profiles.HardwareProfile` instead of the flat
fractions and the hop-latency all-reduce: the shipped profiles, fitted to AIConfigurator's vLLM
measurements (H100, H200, A100-80GB, L40S) or derived from them (H800, A100-40GB; H20 and L4
assumed), RMS log error 0.03-0.09 against 0.13-0.51 for the flat fractions
(``benchmarks/results/fidelity``). ``profiles`` (``rlplan calibrate``) come first for the GPU
types they cover. ``kernels = "flat"`` is the judge of rlplan 0.x and plan files of schema 1.0-1.1.
Training compute (HetRL's B.2 and the RL training step) still uses ``compute``.

**Engine.** The three ``decode_*_overhead`` fields are the serving engine's CPU time per step
(:class:`~costmodels.profiles.EngineProfile`); the default is vLLM with CUDA graphs
(``cuda-graph``), what verl's rollout runs since 0.6 and ROLL since mid-2025; ``eager`` is what
verl up to 0.5 ran (``enforce_eager: True``), the papers' veRL baselines, fitted to OrchestrRL
§2.1.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import GPUSpec
from costmodels.profiles import HardwareProfile, engine_profiles, shipped_profiles

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

#: one ring step between GPUs of one node (NVLink / PCIe, NCCL low-latency protocol), ms
INTRA_NODE_HOP_LATENCY_MS = 0.0015
#: the serving mode the judge assumes unless told (costmodels/data/profiles/engines.yaml)
DEFAULT_ENGINE = "cuda-graph"


def _engine_default(field: str) -> float:
    return float(getattr(engine_profiles()[DEFAULT_ENGINE], field))


def kernels_phrase(kernels: str, own: Iterable[str] = ()) -> str:
    """How a summary names the decode kernels it costed with: ``kernels: aic-vllm``, with the
    GPU types a calibration (``--profile``) gave their own profiles named as the user's."""
    mine = sorted(own)
    return f"kernels: {kernels}" + (f" (yours for {', '.join(mine)})" if mine else "")


class GPUEfficiency(BaseModel):
    """Overrides for one GPU type; unset fields keep the global value."""

    model_config = _STRICT

    compute: float | None = Field(default=None, gt=0, le=1)
    hbm: float | None = Field(default=None, gt=0, le=1)


class Efficiency(BaseModel):
    """Fractions of peak reached in practice, shared by every cost model (see module doc)."""

    model_config = _STRICT

    compute: float = Field(
        default=0.5, gt=0, le=1, description="fraction of dense BF16 peak FLOP/s reached"
    )
    hbm: float = Field(default=0.8, gt=0, le=1, description="fraction of HBM bandwidth reached")
    decode_step_overhead_ms: float = Field(
        default_factory=lambda: _engine_default("step_ms"),
        ge=0,
        le=1e4,
        description="serving engine CPU time per decode step, ms",
    )
    decode_sequence_overhead_us: float = Field(
        default_factory=lambda: _engine_default("sequence_us"),
        ge=0,
        le=1e5,
        description="serving engine CPU time per sequence per decode step, µs",
    )
    decode_layer_overhead_us: float = Field(
        default_factory=lambda: _engine_default("layer_us"),
        ge=0,
        le=1e5,
        description=(
            "serving engine CPU time per model layer per decode step (kernel launches without "
            "CUDA graphs), µs"
        ),
    )
    engine: str = Field(
        default=DEFAULT_ENGINE,
        max_length=64,
        description=(
            "the serving-engine profile the three overheads came from "
            "(costmodels/data/profiles/engines.yaml), or custom"
        ),
    )
    kernels: Literal["aic-vllm", "flat"] = Field(
        default="aic-vllm",
        description=(
            "decode and prefill kernels: aic-vllm, the shipped profiles fitted to "
            "AIConfigurator's measurements (every catalog GPU); "
            "flat, the compute and hbm fractions with ring all-reduces"
        ),
    )
    per_gpu: dict[str, GPUEfficiency] = Field(
        default_factory=dict, description="per GPU type overrides"
    )
    profiles: dict[str, HardwareProfile] = Field(
        default_factory=dict,
        description=(
            "fitted kernel profiles per GPU type (rlplan calibrate); before the shipped ones"
        ),
    )
    training_mfu: dict[str, Annotated[float, Field(gt=0, le=1)]] = Field(
        default_factory=dict,
        description=(
            "share of dense BF16 peak the training and log-prob passes reach per GPU type, fitted "
            "to measured RL training steps (rlplan calibrate, train rows); every problem's "
            "training stage on that GPU type uses it in place of compute"
        ),
    )

    def profile_for(self, gpu: GPUSpec, tp: int) -> HardwareProfile | None:
        """The fitted profile of ``gpu`` when it covers ``tp`` (the given profiles first, then the
        shipped ones unless ``kernels`` is flat), else None (the flat fractions)."""
        p = self.profiles.get(gpu.name)
        if p is None and self.kernels == "aic-vllm":
            p = shipped_profiles().get(gpu.name)
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

    def training_compute(self, gpu: GPUSpec) -> float:
        """The share of peak the training and log-prob passes reach on ``gpu``: its fitted
        ``training_mfu``, else ``compute``."""
        fitted = self.training_mfu.get(gpu.name)
        return fitted if fitted is not None else self.compute_for(gpu)

    def training_flops(self, gpu: GPUSpec) -> float:
        """Sustained FLOP/s of one GPU in the training and log-prob passes."""
        return gpu.tflops_bf16_dense * 1e12 * self.training_compute(gpu)

    def hbm_gbs(self, gpu: GPUSpec) -> float:
        """Sustained HBM GB/s of one GPU."""
        return gpu.hbm_gb_per_s * self.hbm_for(gpu)

    def step_overhead_s(self, batch: int, layers: int = 0) -> float:
        """Serving engine CPU time of one decode step of ``batch`` sequences through ``layers``
        layers, seconds."""
        return (
            self.decode_step_overhead_ms / 1e3
            + batch * self.decode_sequence_overhead_us / 1e6
            + layers * self.decode_layer_overhead_us / 1e6
        )

    def summary(self) -> dict[str, float | dict[str, dict[str, float | None]]]:
        """What breakdowns print: the values every term above was derated with."""
        out: dict[str, float | dict[str, dict[str, float | None]]] = {
            "compute": self.compute,
            "hbm": self.hbm,
            "decode_step_overhead_ms": self.decode_step_overhead_ms,
            "decode_sequence_overhead_us": self.decode_sequence_overhead_us,
            "decode_layer_overhead_us": self.decode_layer_overhead_us,
            "engine": self.engine,
            "kernels": self.kernels,  # type: ignore[dict-item]
            "intra_node_hop_latency_ms": INTRA_NODE_HOP_LATENCY_MS,
        }
        if self.per_gpu:
            out["per_gpu"] = {k: v.model_dump() for k, v in self.per_gpu.items()}
        if self.training_mfu:
            out["training_mfu"] = dict(self.training_mfu)  # type: ignore[assignment]
        if self.profiles:
            out["profiles"] = {
                k: {"source": v.source, "tps": sorted(v.weight_efficiency)}
                for k, v in self.profiles.items()
            }  # type: ignore[misc]
        return out
