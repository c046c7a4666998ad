"""The RL training step's time, shared by the problems that need one number for it (RollMux's
co-scheduling, RollPacker's rollout planning); HetRL's placement has its own per-stage model
(HetRL Appendix B).

A GRPO training step over ``T`` tokens (prompts and responses) of a model with ``N`` active
parameters on ``G`` GPUs of peak ``F`` dense BF16 FLOP/s and HBM bandwidth ``H``::

    compute   = f N T / (G F mfu)                                   the passes over the batch
    optimizer = 28 N / G / (H e_hbm)                                Adam on each GPU's shard
    sync      = 2 N / b                                             actor weights to the rollout
    engine
    step      = compute + optimizer + sync

* ``f = 12`` FLOPs per parameter per token: the actor's forward and backward (6) with activation
  recomputation (2 more: verl and ROLL turn gradient checkpointing on for the models the papers
  train), the reference's forward (2) and the old policy's log-probs (2).
* ``mfu`` is the share of peak the whole stage reaches *in effect*: FSDP's all-gathers and
  reduce-scatters that compute does not hide, variable-length micro-batches, the log-prob passes'
  small batches. No paper publishes it; it is fitted (:func:`fit_mfu`) to the one published step
  breakdown, RollPacker Table 1 (veRL, Qwen2.5-14B, 16k responses, 32 H800: training 21-23% of
  the step), on rlplan's own rollout of that job with verl's engine of the time (``eager``). The
  fit and what each engine implies are in ``benchmarks/results/fidelity``.
* the optimizer step reads fp32 parameters, gradients and two Adam moments (16 bytes per
  parameter) and writes three of them back (12): a stream over HBM at ``e_hbm`` (``Efficiency``).
* weight sync: every rollout GPU receives the whole bf16 model once (FSDP gathers it; vLLM loads
  its TP shard) at ``b``, the slower of the node's NVLink per direction and
  :data:`INTER_NODE_GB_PER_S` when the training group spans nodes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import ServingParams
from costmodels.transformer import active_fraction, total_params

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

#: actor forward + backward with recomputation (8), reference (2), old log-probs (2)
TRAIN_FLOPS_PER_PARAM_TOKEN = 12.0
#: Adam: read fp32 parameters, gradients, m, v (16 B); write parameters, m, v (12 B)
OPTIMIZER_BYTES_PER_PARAM = 28.0
#: one GPU's share of the node's scale-out network: 200 Gb/s per GPU (8 x 200 Gb/s RoCE/IB NICs
#: per 8-GPU node, the common H800 build), in GB/s
INTER_NODE_GB_PER_S = 25.0
#: training MFU fitted to RollPacker Table 1 (:func:`fit_mfu`; re-fitted by
#: ``python -m benchmarks.fidelity``, which fails when this drifts from the fit)
FITTED_MFU = 0.105


def mfu_field(description: str) -> Any:
    """A spec field for the training MFU: in (0, 1], :data:`FITTED_MFU` by default."""
    return Field(default=FITTED_MFU, gt=0, le=1, description=description)


def flops_per_param_token_field() -> Any:
    """A spec field for the training FLOPs per active parameter per token: in (0, 100],
    :data:`TRAIN_FLOPS_PER_PARAM_TOKEN` by default."""
    return Field(
        default=TRAIN_FLOPS_PER_PARAM_TOKEN,
        gt=0,
        le=100,
        description="training FLOPs per active parameter per token",
    )


class TrainingProfile(BaseModel):
    """The training stage's constants (module doc)."""

    model_config = _STRICT

    mfu: float = mfu_field("effective share of dense BF16 peak the stage reaches")
    flops_per_param_token: float = flops_per_param_token_field()
    source: str = Field(
        default=(
            "fitted to RollPacker Table 1 (veRL, Qwen2.5-14B/16k, 32 H800), "
            "costmodels.rl_training.fit_mfu"
        )
    )

    def compute_s(self, model: str, gpu: str, gpus: int, tokens: float) -> float:
        """Seconds of the passes over ``tokens`` tokens on ``gpus`` GPUs."""
        m, g = get_model(model), get_gpu(gpu)
        return (
            self.flops_per_param_token
            * total_params(m)
            * active_fraction(m)
            * tokens
            / (gpus * g.tflops_bf16_dense * 1e12 * self.mfu)
        )

    def fixed_s(
        self,
        model: str,
        gpu: str,
        gpus: int,
        gpus_per_node: int = 8,
        params: ServingParams | None = None,
    ) -> float:
        """Seconds a step spends whatever its tokens: the optimizer step and the weight sync."""
        m, g = get_model(model), get_gpu(gpu)
        eff = (params or ServingParams()).efficiency
        n = total_params(m)
        optimizer = OPTIMIZER_BYTES_PER_PARAM * n / gpus / 1e9 / eff.hbm_gbs(g)
        link = (
            g.link_gb_per_s if gpus <= gpus_per_node else min(g.link_gb_per_s, INTER_NODE_GB_PER_S)
        )
        return optimizer + 2 * n / 1e9 / link


class TrainingFit(BaseModel):
    """One GPU type's training MFU fitted to measured RL training steps (``rlplan calibrate``,
    ``train`` rows; :func:`costmodels.calibration.fit_training`): what the rollout and co-scheduling
    problems' training stage uses on that GPU type in place of :data:`FITTED_MFU`."""

    model_config = _STRICT

    gpu: str = Field(min_length=1, description="catalog GPU type the steps ran on")
    mfu: float = Field(
        gt=0, le=1, description="effective share of dense BF16 peak the training stage reached"
    )
    source: str = Field(default="", description="the measurements it was fitted to")
    steps: int = Field(default=0, ge=0, description="training steps the fit used")
    residuals: dict[str, float] = Field(
        default_factory=dict, description="RMS log error of the fit"
    )


def train_seconds(
    model: str,
    gpu: str,
    gpus: int,
    tokens: float,
    params: ServingParams | None = None,
    profile: TrainingProfile | None = None,
) -> float:
    """Seconds of one training step on ``tokens`` tokens on ``gpus`` GPUs (module doc)."""
    p = profile or TrainingProfile()
    return p.compute_s(model, gpu, gpus, tokens) + p.fixed_s(model, gpu, gpus, params=params)
