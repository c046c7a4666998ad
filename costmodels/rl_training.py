"""The RL training step's time, shared by the problems that need one number for it (RollMux's
co-scheduling, RollPacker's rollout planning); HetRL's placement has its own per-stage model.

rlplan's choice (the papers give profiles, not a formula): 10 x active params x tokens FLOPs —
the actor's forward and backward (6PT) and the reference and old-policy log-probs (2PT each) —
over the GPUs at the project's sustained FLOP/s (``Efficiency``).
"""

from __future__ import annotations

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import ServingParams
from costmodels.transformer import active_fraction, total_params

TRAIN_FLOPS_PER_PARAM_TOKEN = 10.0


def train_seconds(model: str, gpu: str, gpus: int, tokens: float, params: ServingParams | None = None,
                  flops_per_param_token: float = TRAIN_FLOPS_PER_PARAM_TOKEN) -> float:
    """Seconds to train on ``tokens`` tokens on ``gpus`` GPUs (module doc)."""
    m, g = get_model(model), get_gpu(gpu)
    flops = (params or ServingParams()).efficiency.flops(g)
    return flops_per_param_token * total_params(m) * active_fraction(m) * tokens / (gpus * flops)
