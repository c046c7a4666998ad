"""A job's rollout and training phase durations from rlplan's cost models (RollMux §4.2).

* **Rollout TP**: the smallest TP (inside a node, dividing the heads and the pool) whose KV cache
  holds eight max-length responses; the pool runs ``gpus / tp`` data-parallel engine instances.
* **Worst-case rollout** (§4.2 "conservative planning"): every response at the maximum length,
  simulated on the continuous-batching engine (``costmodels.generation.engine``) with the
  responses dealt round-robin over the instances.
* **Training**: ``costmodels.rl_training.train_seconds`` (12 x active params x tokens FLOPs at
  the training MFU fitted to RollPacker Table 1, then the optimizer step and the weight sync),
  re-exported here.
"""

from __future__ import annotations

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance, ServingParams, feasible_tps
from costmodels.rl_training import TRAIN_FLOPS_PER_PARAM_TOKEN, train_seconds

__all__ = ["TRAIN_FLOPS_PER_PARAM_TOKEN", "rollout_tp", "train_seconds", "worst_case_rollout_s"]


def rollout_tp(
    model: str, gpu: str, gpus: int, max_len: int, params: ServingParams | None = None
) -> int:
    m, g = get_model(model), get_gpu(gpu)
    for tp in feasible_tps(m, gpus):
        if Instance(m, g, tp, params or ServingParams()).kv_capacity_tokens() >= 8 * max_len:
            return tp
    raise ValueError(f"{model} does not fit {gpus} x {gpu} with room for {max_len}-token responses")


def worst_case_rollout_s(
    model: str,
    gpu: str,
    gpus: int,
    responses: int,
    max_len: int,
    prompt: int = 512,
    params: ServingParams | None = None,
) -> float:
    from costmodels.generation.engine import simulate
    from costmodels.generation.requests import Request

    params = params or ServingParams()
    tp = rollout_tp(model, gpu, gpus, max_len + prompt, params)
    inst = Instance(get_model(model), get_gpu(gpu), tp, params)
    return simulate(
        [inst] * (gpus // tp), [Request(i, prompt, max_len) for i in range(responses)]
    ).makespan_s
