"""Weight-synchronisation topologies from training to rollout GPUs (RollMux §5.2, RFabric
Appendix E).

* flat (veRL's collective, RollMux §5.2 Figure 8-top): every rollout GPU fetches a full copy of
  the weights across the slow cross-cluster link, which all of them share.
* two-stage (RollMux §5.2): the model is cut into N shards, one per training GPU, and scattered
  so that exactly one copy crosses the slow link; the rollout GPUs then all-gather the shards
  over their fast intra-cluster fabric.
* two-level tree (RFabric Appendix E): Phase A seeds one GPU per destination PoD over OCS-Core
  circuits in waves (per-PoD boundary budget d: a PoD holding a copy sends to up to d new PoDs per
  wave, so copies multiply by d+1 per wave); Phase B fans out inside each PoD with a pipelined
  tree on the intra-PoD fabric. Naive one-to-all sends every GPU its copy from the source.

Units: GB, GB/s, seconds.
"""

from __future__ import annotations

import math


def flat_sync(
    weights_gb: float, receivers: int, cross_gbs: float, cross_latency_s: float = 0.0
) -> float:
    """Seconds for ``receivers`` GPUs each to pull ``weights_gb`` over one shared link."""
    return cross_latency_s + receivers * weights_gb / cross_gbs


def all_gather_s(
    weights_gb: float, gpus: int, link_gbs: float, hop_latency_s: float = 0.0
) -> float:
    """Ring all-gather of a model split into ``gpus`` shards: (n-1) steps of one shard each."""
    if gpus <= 1:
        return 0.0
    return (gpus - 1) * (hop_latency_s + weights_gb / gpus / link_gbs)


def two_stage_sync(
    weights_gb: float,
    receivers: int,
    cross_gbs: float,
    intra_gbs: float,
    cross_latency_s: float = 0.0,
    intra_latency_s: float = 0.0,
) -> dict[str, float]:
    """RollMux's scatter-then-broadcast: one copy crosses the slow link, then an intra-cluster
    all-gather completes every receiver."""
    scatter = cross_latency_s + weights_gb / cross_gbs
    gather = all_gather_s(weights_gb, receivers, intra_gbs, intra_latency_s)
    return {"scatter_s": scatter, "broadcast_s": gather, "total_s": scatter + gather}


def pipelined_broadcast_s(
    weights_gb: float, gpus: int, link_gbs: float, hop_latency_s: float = 0.0, chunks: int = 64
) -> float:
    """Chunked chain broadcast to ``gpus`` receivers: the first chunk walks the chain, the rest
    stream behind it."""
    if gpus <= 0:
        return 0.0
    chunk = weights_gb / chunks
    return (gpus - 1 + chunks) * (hop_latency_s + chunk / link_gbs)


def two_level_tree(
    weights_gb: float,
    pods: list[int],
    circuit_gbs: float,
    intra_gbs: float,
    pod_budget: int,
    circuit_latency_s: float = 0.0,
    intra_latency_s: float = 0.0,
) -> dict[str, float]:
    """RFabric's two-level broadcast from a source PoD to GPUs in ``pods`` (receivers per PoD)."""
    if pod_budget < 1:
        raise ValueError("pod_budget must be >= 1")
    destinations = len(pods)
    waves = math.ceil(math.log(destinations + 1, pod_budget + 1)) if destinations else 0
    # the last wave can use spare boundary budget: circuits are added to equalise the slowest edge
    holders_before_last = (pod_budget + 1) ** (waves - 1) if waves else 0
    last_new = destinations + 1 - holders_before_last
    spare = max(1, (holders_before_last * pod_budget) // max(last_new, 1))
    per_wave = circuit_latency_s + weights_gb / circuit_gbs
    phase_a = (
        (waves - 1) * per_wave
        + (circuit_latency_s + weights_gb / (circuit_gbs * min(spare, pod_budget)))
        if waves
        else 0.0
    )
    phase_b = max(
        (
            pipelined_broadcast_s(weights_gb, n - 1, intra_gbs, intra_latency_s)
            for n in pods
            if n > 1
        ),
        default=0.0,
    )
    return {
        "waves": waves,
        "phase_a_s": phase_a,
        "phase_b_s": phase_b,
        "total_s": phase_a + phase_b,
    }


def naive_one_to_all(
    weights_gb: float, receivers: int, source_gbs: float, latency_s: float = 0.0
) -> float:
    """Every receiver gets its own copy from one source NIC."""
    return latency_s + receivers * weights_gb / source_gbs
