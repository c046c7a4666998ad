"""Per-GPU memory footprints of tasklets (HetRL §3.1 constraint C3).

C3 says: on every GPU, the sum of the model memory of its tasklets plus the largest working
memory among them fits in the GPU. Model memory is what stays resident (weights, and for training
gradients and optimizer states); working memory is what one task needs while it runs
(activations, KV cache). Units: GB (1e9 bytes).

* Training (mixed-precision Adam, Megatron-style): BF16 weights 2 B/param, FP32 gradients and
  FP32 master weights + Adam moments (``CostParams``), the optimizer states sharded over DP when
  the distributed optimizer is on. Activations per micro-batch follow Korthikanti et al.: with full
  recomputation each layer keeps its 2*s*b*h input plus one layer's 34*s*b*h working set;
  without it, 34*s*b*h per layer (FlashAttention removes the s^2 term). Sequence parallelism
  divides by TP; 1F1B keeps up to PP micro-batches in flight on the first stage.
* Inference: BF16 weights; one micro-batch's layer activations plus its logits.
* Generation: BF16 weights; the working memory is the KV cache of the sequences in flight, at
  least one full sequence (a serving engine admits as many as fit, see ``kv_capacity_sequences``).

MoE models hold all experts in memory (their FLOPs use the active experts only).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from costmodels.catalog import ModelSpec
from costmodels.transformer import BYTES_BF16, BYTES_FP32, kv_bytes_per_token, stage_params
from costmodels.workflow import TaskKind

GB = 1e9

#: mixed-precision Adam: BF16 weights (2 B) and FP32 gradients (4 B) per parameter, sharded over
#: a replica's model-parallel GPUs; FP32 master weights and two Adam moments (12 B), sharded over
#: the data-parallel GPUs by the distributed optimizer (Megatron-LM; ZeRO, Rajbhandari et al. 2020)
WEIGHT_GRAD_BYTES_PER_PARAM = BYTES_BF16 + BYTES_FP32
OPTIMIZER_BYTES_PER_PARAM = 3 * BYTES_FP32
TRAIN_STATE_BYTES_PER_PARAM = WEIGHT_GRAD_BYTES_PER_PARAM + OPTIMIZER_BYTES_PER_PARAM


@dataclass(frozen=True)
class TaskletMemory:
    model_gb: float
    working_gb: float


def training_model_gb(
    params: float, dp: int, grad_bytes: float, optimizer_bytes: float, distributed_optimizer: bool
) -> float:
    opt = optimizer_bytes / dp if distributed_optimizer else optimizer_bytes
    return params * (BYTES_BF16 + grad_bytes + opt) / GB


def activation_gb(
    m: ModelSpec, seq: int, mbs: int, stage_layers: int, tp: int, recompute: bool, in_flight: int
) -> float:
    sbh = float(seq) * mbs * m.hidden
    per_mb = (2 * sbh * stage_layers + 34 * sbh) if recompute else 34 * sbh * stage_layers
    return per_mb * in_flight / tp / GB


def logits_gb(m: ModelSpec, seq: int, mbs: int, tp: int) -> float:
    return float(seq) * mbs * m.vocab * BYTES_FP32 / tp / GB


def micro_batches_in_flight(pp: int, micro_batches: float) -> int:
    """Micro-batches whose activations a training stage holds at once (1F1B: up to PP, no more
    than there are): the only way a training tasklet's memory reads its micro-batch count."""
    return max(1, min(pp, int(micro_batches) if micro_batches >= 1 else 1))


@functools.lru_cache(maxsize=1 << 16)
def tasklet_memory(
    kind: TaskKind,
    m: ModelSpec,
    *,
    stage_layers: int,
    first: bool,
    last: bool,
    tp: int,
    pp: int,
    dp: int,
    seq: int,
    mbs: int,
    micro_batches: float,
    recompute: bool,
    grad_bytes: float,
    optimizer_bytes: float,
    distributed_optimizer: bool,
) -> TaskletMemory:
    """Model and working memory (GB) of one tasklet l^t_{i,j,k}. Memoised: a search asks for the
    same stage of the same configuration on every GPU group it places the task on (a pure
    function of its arguments, and ``TaskletMemory`` is frozen, so sharing it is safe)."""
    p = stage_params(m, stage_layers, first, last) / tp
    if kind is TaskKind.TRAINING:
        model = training_model_gb(p, dp, grad_bytes, optimizer_bytes, distributed_optimizer)
        in_flight = micro_batches_in_flight(pp, micro_batches)
        work = activation_gb(m, seq, mbs, stage_layers, tp, recompute, in_flight)
        if last:
            work += logits_gb(m, seq, mbs, tp)
        return TaskletMemory(model, work)
    model = p * BYTES_BF16 / GB
    if kind is TaskKind.INFERENCE:
        work = activation_gb(m, seq, mbs, 1, tp, recompute=False, in_flight=1)
        if last:
            work += logits_gb(m, seq, mbs, tp)
        return TaskletMemory(model, work)
    # generation: at least one whole sequence's KV cache must fit
    work = kv_bytes_per_token(m, stage_layers, tp) * seq / GB
    return TaskletMemory(model, work)


def kv_capacity_sequences(
    free_gb: float, m: ModelSpec, stage_layers: int, tp: int, seq: int
) -> int:
    """How many ``seq``-token sequences fit in ``free_gb`` of KV cache on one GPU."""
    per_seq = kv_bytes_per_token(m, stage_layers, tp) * seq / GB
    if per_seq <= 0:
        return 0
    return max(0, int(free_gb // per_seq))
