"""Continuous batching in token rounds: how many sequences are in flight, and with how much
context, while one serving replica generates responses of different lengths.

A replica admits its ``n`` responses in a fixed order into ``slots`` places (vLLM's
``max_num_seqs``, or fewer when the KV cache holds fewer); every token round each sequence in
flight generates one token, and a finished one frees its place for the next in the queue
(Orca/vLLM continuous batching). Sequence k starts at round s_k (the earliest free place) and ends
at s_k + L_k; the generation takes max_k (s_k + L_k) rounds, at least the longest response:
the long tail that decides a measured RL step.

The schedule is independent of the hardware, so it is computed once per (lengths, slots, prompt)
and costed on any replica: :func:`occupancy_windows` cuts the rounds into ``windows`` windows of
equal length and gives each its rounds, sum of occupancy sum_r b(r) and sum of context
sum_r sum_{k in flight} c_k(r), with c_k(r) = P + (r - s_k) + 1/2 (the midpoint of the token's
context growth, as ``costmodels.placement.decode_cost`` integrates the constant model). A cost
that is affine in the batch and in its total context is exact on these sums; the decode step's
roofline max is applied per window.
"""

from __future__ import annotations

import functools
import heapq
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Window:
    """A stretch of token rounds: ``rounds`` rounds holding ``batch_sum`` sequence-rounds whose
    contexts sum to ``context_sum`` tokens."""

    rounds: float
    batch_sum: float
    context_sum: float


@functools.lru_cache(maxsize=8192)
def occupancy_windows(
    lengths: tuple[int, ...], slots: int, prompt: int, windows: int
) -> tuple[Window, ...]:
    """The module doc's windows for responses of ``lengths`` (tokens, in admission order) on
    ``slots`` places after prompts of ``prompt`` tokens; empty windows are left out."""
    if slots < 1:
        raise ValueError("slots must be >= 1")
    n = len(lengths)
    if n == 0:
        return ()
    free = [0] * min(slots, n)
    starts = np.empty(n)
    for k, length in enumerate(lengths):
        t = heapq.heappop(free)
        starts[k] = t
        heapq.heappush(free, t + length)
    ends = starts + np.asarray(lengths, dtype=float)
    # sweep the starts and ends: between two events b and sum of starts in flight are constant
    times = np.concatenate([starts, ends])
    delta_b = np.concatenate([np.ones(n), -np.ones(n)])
    delta_s = np.concatenate([starts, -starts])
    order = np.lexsort((delta_b, times))  # at one time, ends (-1) before starts
    times, delta_b, delta_s = times[order], delta_b[order], delta_s[order]
    b_after = np.cumsum(delta_b)
    s_after = np.cumsum(delta_s)
    makespan = float(ends.max())
    # whole rounds at the edges, so every stretch between two boundaries is whole rounds
    edges = np.unique(np.round(np.linspace(0.0, makespan, windows + 1)))
    windows = len(edges) - 1
    rounds = np.zeros(windows)
    batch = np.zeros(windows)
    context = np.zeros(windows)
    for i in range(len(times) - 1):
        t0, t1 = float(times[i]), float(times[i + 1])
        b = float(b_after[i])
        if t1 <= t0 or b <= 0:
            continue
        s_sum = float(s_after[i])
        w = min(int(np.searchsorted(edges, t0, side="right")) - 1, windows - 1)
        while t0 < t1:
            stop = min(t1, float(edges[w + 1])) if w < windows - 1 else t1
            d = stop - t0
            # sum over rounds r in [t0, stop) of sum_k (P + r - s_k + 1/2)
            first = b * (prompt + 0.5 + t0) - s_sum
            rounds[w] += d
            batch[w] += b * d
            context[w] += d * first + b * d * (d - 1) / 2
            t0 = stop
            w += 1
    return tuple(
        Window(float(r), float(b), float(c))
        for r, b, c in zip(rounds, batch, context, strict=True)
        if r > 0
    )


def makespan_rounds(lengths: tuple[int, ...], slots: int) -> int:
    """Token rounds until the last of ``lengths`` (admission order) finishes on ``slots``."""
    return int(math.fsum(w.rounds for w in occupancy_windows(lengths, slots, 0, 1)))
