"""How long a data-parallel pass over long-tailed sequences waits for its slowest rank.

Training and inference cost a replica's share of the batch at the expected packed sequence
(``costmodels.replica_cost``). Under a length distribution the ranks of one pass do not
hold equal work, and the pass ends with the slowest. Two schedules, as verl runs them:

* **Inference** (``compute_log_prob``): verl's ``balance_batch`` partitions the whole batch over
  the ranks by sequence length (``get_seqlen_balanced_partitions``), and nothing synchronises the
  ranks before the pass ends. A rank's work is then at best the balanced share, and at least the
  longest sequence of the step, which one rank must hold whole:

      T = max(n mu, w(s_max(M)))

* **Training**: every optimizer step (one mini-batch) synchronises the gradients, and a rank's
  mini-batch is a contiguous chunk of its balanced partition, so the chunks are not balanced. A
  rank's work is the sum of n of the mini-batch's M sequences' work w(s), drawn without
  replacement; over R ranks the expected largest sum in the normal approximation (with the
  finite-population correction), or the rank that holds the mini-batch's longest sequence beside
  n - 1 of the others, whichever is longer:

      T = max(n mu + z(R) sigma sqrt(n (M - n) / (M - 1)),
              w(s_max(M)) + (n - 1) (M mu - w(s_max(M))) / (M - 1))

Here s = prompt + response tokens, w(s) the forward FLOPs of the model on one sequence
(linear and quadratic terms, ``costmodels.transformer``), mu and sigma its mean and standard
deviation over the response-length distribution (its stratified quantiles,
``costmodels.response_lengths``), n = M / R sequences per rank, M sequences per pass (the
mini-batch in training, the batch in inference), s_max(M) the longest of M
(``ResponseLengths.longest_of``) and z(R) = Phi^-1((R - 0.375) / (R + 0.25)), Blom's expected
maximum of R standard normals (z(1) = 0). The replica's time is multiplied by T / (n mu) >= 1;
one rank holding the whole pass (n = M) gets exactly 1, as it should. A rank with fewer than one
sequence (n < 1: more ranks than sequences) waits for the longest, T = w(s_max(M)).

This is why verl's measured steps stop scaling past 64 GPUs (``docs/advance/fully_async.md``:
update_actor 270 / 133 / 114 s on 32 / 64 / 128 H20): halving n adds a larger spread per unit of
work, and the longest sequence does not shrink. ``constant`` lengths (HetRL Appendix B) have no
spread: the factor is 1 and the literal model is unchanged. Deterministic: no draw is made.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from costmodels.catalog import ModelSpec
from costmodels.response_lengths import MEAN_POINTS, ResponseLengths, expected_max_normal
from costmodels.transformer import attention_params, lm_head_forward_flops, mlp_params


def _sequence_flops(m: ModelSpec, seq: np.ndarray) -> np.ndarray:
    """Forward FLOPs of the whole model on one sequence of each length (every layer and the LM
    head; ``costmodels.transformer.layer_forward_flops`` per layer)."""
    linear = 2 * attention_params(m) + 2 * mlp_params(m, active=True)
    per_layer = linear * seq + 2 * 2 * seq * seq * m.hidden
    return m.layers * per_layer + lm_head_forward_flops(m, 1.0) * seq


@functools.lru_cache(maxsize=65_536)
def straggler_factor(
    m: ModelSpec,
    lengths: ResponseLengths,
    prompt: int,
    cap: int,
    per_rank: float,
    ranks: int,
    per_pass: int,
    balanced: bool,
) -> float:
    """T / (n mu) of the module doc: how much longer than its expected share a rank holding
    ``per_rank`` sequences of a pass of ``per_pass`` over ``ranks`` ranks takes (1 for constant
    lengths or an empty rank)."""
    if lengths.is_constant or per_rank <= 0:
        return 1.0
    seq = prompt + lengths.sample(MEAN_POINTS, cap)
    w = _sequence_flops(m, seq.astype(float))
    mu, sigma = float(w.mean()), float(w.std())
    longest = float(
        _sequence_flops(m, np.array([float(prompt + lengths.longest_of(max(per_pass, 1), cap))]))[0]
    )
    share = per_rank * mu
    if per_rank >= per_pass:
        return 1.0
    if per_rank < 1:
        return max(longest / share, 1.0)
    if balanced:
        t = max(share, longest)
    else:
        others = (per_pass * mu - longest) / (per_pass - 1)
        fpc = (per_pass - per_rank) / (per_pass - 1)
        spread = share + expected_max_normal(ranks) * sigma * math.sqrt(per_rank * fpc)
        t = max(spread, longest + (per_rank - 1.0) * others)
    return max(t / share, 1.0)
