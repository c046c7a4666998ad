"""Reconfiguration costs of a generation cluster (OrchestrRL §4.1, Appendix A).

* C_sw, parallel-mode switching: weights are re-sharded to the new TP layout. A GPU keeps what
  its old shard already holds of its new shard and fetches the rest from peers over the path;
  the switch takes as long as the GPU that fetches most, plus the path's latency and an optional
  fixed overhead (engine re-initialisation; OrchestrRL measured about 1.5 s in total, §6.2.2).
* C_mig, per-request state migration: the cheaper of transferring the KV cache (setup latency +
  bytes / bandwidth) and recomputing it on the destination by replaying the prompt plus the
  tokens generated so far (a prefill, ``Instance.prefill``). Transfer wins for large caches;
  recomputation wins for small caches or slow links (Appendix A, Figure 19).

Units: seconds, tokens, GB, GB/s.
"""

from __future__ import annotations

from costmodels.decode import Instance
from costmodels.memory import GB
from costmodels.transformer import BYTES_BF16, kv_bytes_per_token, total_params


def shard_overlap(tp_old: int, tp_new: int) -> float:
    """Share of a GPU's new TP shard that its old shard already holds (aligned contiguous shards:
    GPU r holds slice [r/tp, (r+1)/tp) of every sharded weight)."""
    if tp_new % tp_old == 0:  # splitting further: the new slice lies inside the old one
        return 1.0
    if tp_old % tp_new == 0:  # merging: the old slice is tp_new/tp_old of the new one
        return tp_new / tp_old
    # general case: the smallest overlap over ranks of two interleaved partitions
    worst = 1.0
    for r in range(tp_new):
        lo, hi = r / tp_new, (r + 1) / tp_new
        old = min(r, tp_old - 1)
        olo, ohi = old / tp_old, (old + 1) / tp_old
        worst = min(worst, max(0.0, min(hi, ohi) - max(lo, olo)) * tp_new)
    return worst


def switch_cost(
    inst_new: Instance,
    tp_old: int,
    bandwidth_gbs: float,
    latency_s: float = 0.0,
    overhead_s: float = 0.0,
) -> dict[str, float]:
    """C_sw: seconds to move from TP ``tp_old`` to ``inst_new.tp`` (weights from peers at
    ``bandwidth_gbs`` per GPU)."""
    new_shard_gb = BYTES_BF16 * total_params(inst_new.model) / inst_new.tp / GB
    fetch_gb = new_shard_gb * (1.0 - shard_overlap(tp_old, inst_new.tp))
    transfer = (latency_s + fetch_gb / bandwidth_gbs) if fetch_gb > 0 else 0.0
    return {
        "bytes_moved_gb": fetch_gb * inst_new.tp,
        "transfer_s": transfer,
        "overhead_s": overhead_s,
        "cost_s": transfer + overhead_s,
    }


def kv_cache_gb(inst: Instance, tokens: int) -> float:
    """KV bytes (GB) of ``tokens`` cached tokens summed over the instance's GPUs."""
    m = inst.model
    return kv_bytes_per_token(m, m.layers, inst.tp) * inst.tp * tokens / GB


def migration_cost(
    dest: Instance, contexts: list[int], bandwidth_gbs: float, setup_s: float = 0.01
) -> dict[str, float | str]:
    """C_mig for moving requests holding ``contexts`` tokens each to ``dest``: KV transfer over a
    path of ``bandwidth_gbs`` (after ``setup_s`` of connection set-up and synchronisation) versus
    recomputation on ``dest``; the cheaper is chosen."""
    kv = sum(kv_cache_gb(dest, c) for c in contexts)
    transfer = setup_s + kv / bandwidth_gbs if contexts else 0.0
    # recomputation replays every request's prompt and generated tokens as one prefill batch
    recompute = dest.prefill_batch(list(contexts)) if contexts else 0.0
    choice = "transfer" if transfer <= recompute else "recompute"
    return {
        "kv_gb": kv,
        "transfer_s": transfer,
        "recompute_s": recompute,
        "choice": choice,
        "cost_s": min(transfer, recompute),
    }
