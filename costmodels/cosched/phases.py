"""A job's rollout and training phase durations from rlplan's cost models (RollMux §4.2).

* **Rollout TP**: the smallest TP (inside a node, dividing the heads and the pool) whose KV cache
  holds eight max-length responses; the pool runs ``gpus / tp`` data-parallel engine instances.
* **Worst-case rollout** (§4.2 "conservative planning"): every response at the maximum length,
  simulated on the continuous-batching engine (``costmodels.generation.engine``) with the
  responses dealt round-robin over the instances.
* **Training**: the project's one training model (``costmodels.rl_training``: the placement
  judge's log-prob and training passes on the job's training GPUs, then the optimizer step and
  the weight sync) at veRL's efficiency as RollPacker Table 1 measured it (RollMux's jobs are
  veRL jobs on H800), on the phase's own batch: its sequences at their mean length.
"""

from __future__ import annotations

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance, ServingParams, feasible_tps
from costmodels.rl_training import TABLE1_PROFILE, BatchShape
from costmodels.rl_training import train_seconds as _train_seconds


def train_seconds(
    model: str,
    gpu: str,
    gpus: int,
    sequences: int,
    prompt: float,
    response: float,
    params: ServingParams | None = None,
) -> float:
    """A job's training phase on ``gpus`` GPUs over ``sequences`` sequences of ``prompt`` +
    ``response`` tokens on average (module doc)."""
    shape = BatchShape.constant(sequences, round(prompt), round(response))
    return _train_seconds(
        model, gpu, gpus, sequences * (prompt + response), params, TABLE1_PROFILE, shape
    )


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
