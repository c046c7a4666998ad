"""Hardware profiles: what one GPU type reaches, fitted to measurements (``rlplan calibrate``).

The judge's default decode step (:func:`costmodels.decode.decode_step_time`) derates peaks by one
flat :class:`~costmodels.efficiency.Efficiency` and charges a ring of 1.5 µs hops per all-reduce;
held against AIConfigurator's vLLM measurements it is off by 0.13-0.51 RMS log error, worst where
the TP decisions are made (``benchmarks/results/fidelity``). A :class:`HardwareProfile` replaces
those constants for one GPU type by fitted ones, in a form that keeps the step closed and affine
in the batch's context between events (the simulator's requirement, docs/architecture.md):

For an instance of TP ``t`` running ``B`` sequences that hold ``C`` tokens of KV in all, per GPU::

    gemm   = max(W / (H e_w[t]),  F / (P e_c))          weights streamed, or FLOPs at GEMM speed
    kv     = C k / (H e_kv)                             the attention kernel's KV reads
    floor  = L (c0 + c1 B)                              per-layer kernel launches, norms,
    per-sequence work
    comm   = (2 L + 1) AR[t](B h 2)                     vLLM's all-reduces: two per layer, one after
    the embedding
    step   = gemm + kv + floor + comm

``W`` is the GPU's weight shard without the embedding, a lookup (GB; for MoE the experts the
batch routes to), ``F`` the step's FLOPs per GPU (2 x active parameters x B / t plus attention's
4 C h L / t), ``k`` KV bytes per token per GPU, ``H`` and ``P`` the GPU's HBM and
dense BF16 peaks, ``L`` layers, ``h`` hidden size. Kernels run one after another on a GPU, so the
terms add; only a GEMM chooses between streaming its weights and computing. ``e_w`` is per TP
because a narrow shard streams worse (AIConfigurator: 0.5 of peak for small TP8 shards, 0.8 at
TP1). The all-reduce ``AR[t]`` is per TP size on the GPU's own link (NVLink's custom all-reduce is
almost
flat in TP; PCIe is not), measured rather than derived from hops: affine in the message
(``a[t] + x / b[t]``), or interpolated in a table of measured times where one exists
(:class:`AllReduceTerm`).

Prefill of ``T`` prompt tokens (``B`` prompts of ``T / B``) reuses the same terms with ``F`` the
prompt's FLOPs (causal attention included) and the all-reduce message ``T h 2`` bytes.

Every profile carries where it came from and its fit's residuals (:mod:`costmodels.calibration`).
"""

from __future__ import annotations

import bisect
import functools
import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

from costmodels.catalog import GPUSpec, ModelSpec
from costmodels.transformer import (
    BYTES_BF16,
    attention_params,
    kv_bytes_per_token,
    mlp_params,
    weights_read_gb,
)

GB = 1e9
_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class AllReduceTerm(BaseModel):
    """One TP size's all-reduce of a message of ``x`` bytes, in seconds.

    Affine, ``latency_us 1e-6 + x / (bus_gb_per_s 1e9)``, when nothing else is known. Measured
    all-reduce times are not affine in the message: NCCL and vLLM's custom all-reduce switch
    algorithm and protocol with its size (one-shot, two-shot, ring), so on a PCIe box a 1 MiB
    message can cost less per byte than a 512 KiB one (AIConfigurator, L40S TP8: 0.44 ms at
    512 KiB, 0.58 ms at 1 MiB, 2.08 ms at 2 MiB). When ``measured`` holds the times at two or more
    message sizes, a message between them costs the piecewise-linear interpolation of those times
    (AIConfigurator composes steps from the same table the same way); outside them, the nearest
    measured point plus or minus the affine term's bandwidth (never below ``latency_us``, and
    below the table never above its first point). The step stays affine in its KV context: the
    message depends on the batch only.

    The table is read through its padded envelope (:attr:`padded`): a message can always be sent
    padded to a larger measured size, so no message costs more than a larger one. At their
    latency floor the measured tables dip (AIConfigurator's L40S and L4 TP8: 27.62 µs at 8 KiB,
    27.37 µs at 16 KiB; A100, H100, H800 and H20 TP2 at 16-32 KiB; H200 TP2 at 8-16 KiB), and
    read as measured they made a decode step of two sequences cheaper than one."""

    model_config = _STRICT

    latency_us: float = Field(ge=0, le=1e6, description="fixed cost per all-reduce, µs")
    bus_gb_per_s: float = Field(gt=0, le=1e6, description="bytes of the message per second, GB/s")
    measured: tuple[tuple[float, float], ...] = Field(
        default=(),
        max_length=4096,
        description="(message bytes, seconds) measured, ascending in bytes; interpolated between",
    )

    @model_validator(mode="after")
    def _ascending(self) -> AllReduceTerm:
        sizes = [b for b, _ in self.measured]
        if any(b <= 0 or s <= 0 for b, s in self.measured) or sizes != sorted(set(sizes)):
            raise ValueError(
                "measured all-reduce points need positive bytes and seconds, bytes strictly "
                "ascending"
            )
        return self

    def affine_seconds(self, message_bytes: float) -> float:
        """The affine law alone, ``latency_us 1e-6 + x / (bus_gb_per_s 1e9)``."""
        return self.latency_us * 1e-6 + message_bytes / (self.bus_gb_per_s * GB)

    @functools.cached_property
    def padded(self) -> tuple[tuple[float, float], ...]:
        """The measured points, each time lowered to the least time of any larger message
        (t'_i = min_{j >= i} t_j): non-decreasing in the message, equal to the measured wherever
        the table already is."""
        out: list[tuple[float, float]] = []
        least = math.inf
        for b, t in reversed(self.measured):
            least = min(least, t)
            out.append((b, least))
        return tuple(reversed(out))

    def seconds(self, message_bytes: float) -> float:
        pts = self.padded
        if len(pts) < 2:
            return self.affine_seconds(message_bytes)
        if message_bytes <= pts[0][0]:
            # never above the first point, to which it can be padded (a fitted latency may lie
            # above the measured time of the smallest message)
            down = pts[0][1] - (pts[0][0] - message_bytes) / (self.bus_gb_per_s * GB)
            return min(pts[0][1], max(self.latency_us * 1e-6, down))
        if message_bytes >= pts[-1][0]:
            return pts[-1][1] + (message_bytes - pts[-1][0]) / (self.bus_gb_per_s * GB)
        i = bisect.bisect_right(pts, (message_bytes, math.inf))
        (x0, y0), (x1, y1) = pts[i - 1], pts[i]
        return y0 + (y1 - y0) * (message_bytes - x0) / (x1 - x0)

    def scaled(self, bandwidth_ratio: float) -> AllReduceTerm:
        """The same all-reduce on a link ``bandwidth_ratio`` times as fast: the latency stays, the
        rest of every measured time scales by ``1 / bandwidth_ratio``."""
        lat = self.latency_us * 1e-6
        return AllReduceTerm(
            latency_us=self.latency_us,
            bus_gb_per_s=self.bus_gb_per_s * bandwidth_ratio,
            measured=tuple(
                (b, lat + max(s - lat, 0.0) / bandwidth_ratio) for b, s in self.measured
            ),
        )


class HardwareProfile(BaseModel):
    """One GPU type's fitted kernel speeds (module doc)."""

    model_config = _STRICT

    gpu: str = Field(min_length=1, description="catalog GPU type this profile describes")
    source: str = Field(default="", description="the measurements it was fitted to")
    weight_efficiency: dict[int, float] = Field(
        description="e_w per TP size: share of HBM peak a weight stream reaches"
    )
    gemm_efficiency: float = Field(
        gt=0, le=1, description="e_c: share of dense BF16 peak a compute-bound GEMM reaches"
    )
    kv_efficiency: float = Field(
        gt=0, le=1, description="e_kv: share of HBM peak the attention kernel's KV reads reach"
    )
    layer_floor_us: float = Field(ge=0, le=1e5, description="c0: per layer per step, µs")
    layer_sequence_us: float = Field(
        ge=0, le=1e4, description="c1: per layer per sequence in the batch, µs"
    )
    allreduce: dict[int, AllReduceTerm] = Field(default_factory=dict, description="per TP size > 1")
    residuals: dict[str, float] = Field(
        default_factory=dict, description="RMS log error of the fit, per TP size and in all"
    )

    def covers(self, tp: int) -> bool:
        """Whether the profile was fitted at this TP (else the default judge stands in)."""
        return tp in self.weight_efficiency and (tp == 1 or tp in self.allreduce)

    def terms(
        self,
        m: ModelSpec,
        gpu: GPUSpec,
        tp: int,
        batch: float,
        context_tokens: float,
        prefill_tokens: float = 0.0,
        attention_pairs: float = 0.0,
        stage_layers: int | None = None,
        first: bool = True,
        last: bool = True,
    ) -> dict[str, float]:
        """The step's terms in seconds (module doc), for the whole model or one pipeline stage of
        ``stage_layers`` layers (the embedding's all-reduce on the ``first``, the LM head on the
        ``last``). For a prefill, ``batch`` is the number of prompts, ``prefill_tokens`` their
        tokens in all and ``attention_pairs`` the causal (query, key) pairs summed over prompts;
        ``context_tokens`` is then 0."""
        if not self.covers(tp):
            raise ValueError(
                f"profile of {self.gpu} has no TP{tp} terms (fitted: "
                f"{sorted(self.weight_efficiency)})"
            )
        L, h = (m.layers if stage_layers is None else stage_layers), m.hidden
        tokens = prefill_tokens or batch
        weights = weights_read_gb(
            m, L, False, last, tp, tokens
        )  # the layers and the LM head; the embedding is a lookup
        active = L * (attention_params(m) + mlp_params(m, active=True)) + (
            m.vocab * h if last else 0
        )
        flops = (2 * active * tokens + 4 * h * L * (context_tokens + attention_pairs)) / tp
        stream = weights / (gpu.hbm_gb_per_s * self.weight_efficiency[tp])
        compute = flops / (gpu.tflops_bf16_dense * 1e12 * self.gemm_efficiency)
        kv = (
            context_tokens
            * kv_bytes_per_token(m, L, tp)
            / GB
            / (gpu.hbm_gb_per_s * self.kv_efficiency)
        )
        floor = L * (self.layer_floor_us + self.layer_sequence_us * batch) * 1e-6
        comm = self.comm_s(m, tp, tokens, L, first)
        gemm = max(stream, compute)
        return {
            "stream_s": stream,
            "flops_s": compute,
            "gemm_s": gemm,
            "kv_s": kv,
            "floor_s": floor,
            "comm_s": comm,
            "step_s": gemm + kv + floor + comm,
        }

    def comm_s(
        self, m: ModelSpec, tp: int, tokens: float, layers: int | None = None, first: bool = True
    ) -> float:
        """The step's all-reduces (module doc): two per layer of ``tokens x h`` bf16 values, one
        more after the embedding on the ``first`` stage; 0 at TP1."""
        if tp == 1:
            return 0.0
        L = m.layers if layers is None else layers
        return (2 * L + (1 if first else 0)) * self.allreduce[tp].seconds(
            tokens * m.hidden * BYTES_BF16
        )

    def decode_s(
        self, m: ModelSpec, gpu: GPUSpec, tp: int, batch: float, context_tokens: float
    ) -> float:
        """Kernel seconds of one decode step of ``batch`` sequences holding ``context_tokens``."""
        return self.terms(m, gpu, tp, batch, context_tokens)["step_s"]

    def prefill_s(
        self, m: ModelSpec, gpu: GPUSpec, tp: int, prompts: int, tokens_each: int
    ) -> float:
        """Seconds to prefill ``prompts`` prompts of ``tokens_each`` tokens from an empty cache."""
        return self.prefill_batch_s(m, gpu, tp, [tokens_each] * prompts, [0] * prompts)

    def prefill_batch_s(
        self, m: ModelSpec, gpu: GPUSpec, tp: int, tokens: list[int], contexts: list[int]
    ) -> float:
        """Seconds to prefill one batch: prompt ``i`` computes ``tokens[i]`` new tokens after
        ``contexts[i]`` cached ones (its queries attend to the cache and causally to each other)."""
        pairs = sum(t * c + t * (t + 1) / 2 for t, c in zip(tokens, contexts, strict=True))
        return self.terms(
            m, gpu, tp, len(tokens), 0.0, prefill_tokens=sum(tokens), attention_pairs=pairs
        )["step_s"]


class EngineProfile(BaseModel):
    """A serving engine's CPU time per decode step, outside the GPU kernels (one per serving mode).

    A decode step of ``B`` sequences through ``L`` layers costs the engine

        overhead = step_ms 1e-3 + B sequence_us 1e-6 + L layer_us 1e-6          seconds

    on top of the kernels, added rather than overlapped: vLLM schedules, prepares inputs and
    samples between forward passes, so the GPU waits for it. ``step_ms`` is the scheduler and
    input preparation, ``sequence_us`` sampling and detokenising per running sequence, and
    ``layer_us`` the host time to launch one layer's kernels, which CUDA graphs replace by one
    graph launch per step (0 in ``cuda-graph`` mode). Launches are per GPU, so the term does not
    shrink with TP: it is what makes a large TP group lose in the latency-bound tail less than
    its kernels alone would say (OrchestrRL §2.1 measures TP8 / TP2 = 0.79 in the tail)."""

    model_config = _STRICT

    name: str = Field(
        min_length=1, max_length=64, description="serving mode, e.g. cuda-graph or eager"
    )
    source: str = Field(default="", description="what the numbers came from")
    step_ms: float = Field(ge=0, le=1e4, description="per decode step, ms")
    sequence_us: float = Field(ge=0, le=1e5, description="per running sequence per decode step, µs")
    layer_us: float = Field(
        default=0.0,
        ge=0,
        le=1e5,
        description="per model layer per decode step (kernel launches), µs",
    )
    residuals: dict[str, float] = Field(
        default_factory=dict, description="RMS log error of the fit"
    )

    def overhead_s(self, batch: int, layers: int) -> float:
        return self.step_ms * 1e-3 + batch * self.sequence_us * 1e-6 + layers * self.layer_us * 1e-6

    def efficiency_update(self) -> dict[str, float | str]:
        """The :class:`~costmodels.efficiency.Efficiency` fields this profile sets."""
        return {
            "decode_step_overhead_ms": self.step_ms,
            "decode_sequence_overhead_us": self.sequence_us,
            "decode_layer_overhead_us": self.layer_us,
            "engine": self.name,
        }


def _shipped(name: str) -> dict:
    from importlib import resources

    import yaml

    # LibYAML's loader when PyYAML was built with it: the fitted profiles are a few hundred kB
    # and the pure-Python loader spends a quarter second on them in every command
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    text = resources.files("costmodels").joinpath("data", "profiles", name).read_text("utf-8")
    return yaml.load(text, Loader=loader)  # a safe loader either way


@functools.cache
def engine_profiles() -> dict[str, EngineProfile]:
    """The shipped engine profiles (``costmodels/data/profiles/engines.yaml``) by name."""
    return {
        p.name: p for p in (EngineProfile(**item) for item in _shipped("engines.yaml")["engines"])
    }


@functools.cache
def shipped_profiles() -> dict[str, HardwareProfile]:
    """The shipped hardware profiles (``costmodels/data/profiles/aic-vllm.yaml``: fitted to
    AIConfigurator's vLLM measurements, or derived for the catalog GPUs it lacks) by GPU type."""
    return {
        p.gpu: p
        for p in (HardwareProfile(**item) for item in _shipped("aic-vllm.yaml")["profiles"])
    }
