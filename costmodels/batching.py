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


# a solve reads 100-200 of these (SHA-EA on h100-64, 60 evaluations); each holds a replica's
# lengths, so the bound keeps a long-lived caller (a scheduler planning every step) to a few
# solves' worth of memory
@functools.lru_cache(maxsize=1024)
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
    length = np.asarray(lengths, dtype=float)
    if slots >= n:
        starts = np.zeros(n)
    else:
        free = [0] * slots
        start_list = []
        for k in lengths:
            t = heapq.heappop(free)
            start_list.append(t)
            heapq.heappush(free, t + k)
        starts = np.asarray(start_list, dtype=float)
    ends = starts + length
    makespan = float(ends.max())
    # whole rounds at the edges, so every stretch between two boundaries is whole rounds
    edges = np.unique(np.round(np.linspace(0.0, makespan, windows + 1)))
    # sweep the starts, ends and window edges (no change): between two consecutive events the
    # occupancy b and the sum of the starts in flight are constant
    times = np.concatenate([starts, ends, edges])
    delta_b = np.concatenate([np.ones(n), -np.ones(n), np.zeros(len(edges))])
    delta_s = np.concatenate([starts, -starts, np.zeros(len(edges))])
    order = np.argsort(times, kind="stable")
    times = times[order]
    b = np.cumsum(delta_b[order])[:-1]
    s_sum = np.cumsum(delta_s[order])[:-1]
    t0, d = times[:-1], np.diff(times)
    keep = (d > 0) & (b > 0)
    t0, d, b, s_sum = t0[keep], d[keep], b[keep], s_sum[keep]
    # sum over rounds r in [t0, t0 + d) of sum_k (P + r - s_k + 1/2)
    context = d * (b * (prompt + 0.5 + t0) - s_sum) + b * d * (d - 1) / 2
    w = np.minimum(np.searchsorted(edges, t0, side="right") - 1, len(edges) - 2)
    count = len(edges) - 1
    rounds = np.bincount(w, weights=d, minlength=count)
    batch = np.bincount(w, weights=b * d, minlength=count)
    ctx = np.bincount(w, weights=context, minlength=count)
    return tuple(
        Window(float(r), float(bs), float(c))
        for r, bs, c in zip(rounds, batch, ctx, strict=True)
        if r > 0
    )


@functools.lru_cache(maxsize=1024)  # as occupancy_windows
def streamed_window(lengths: tuple[int, ...], slots: int, prompt: int) -> Window:
    """The same responses generated at full occupancy, as a rollouter that never runs out of
    work does (no tail): ceil(sum L / w) rounds with w = min(slots, n), and the same total
    context sum_k (L_k P + L_k^2 / 2) as the schedule of :func:`occupancy_windows` (every token
    is generated once, at the same context, whenever it is generated)."""
    if slots < 1:
        raise ValueError("slots must be >= 1")
    tokens = sum(lengths)
    width = min(slots, len(lengths))
    rounds = math.ceil(tokens / width) if width else 0
    context = sum(k * prompt + k * k / 2 for k in lengths)
    return Window(float(rounds), float(tokens), float(context))


def makespan_rounds(lengths: tuple[int, ...], slots: int) -> int:
    """Token rounds until the last of ``lengths`` (admission order) finishes on ``slots``."""
    return int(math.fsum(w.rounds for w in occupancy_windows(lengths, slots, 0, 1)))
