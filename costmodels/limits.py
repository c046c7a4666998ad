"""Bounds on what a user can ask for, and the memory bound sizes are checked against.

A bound here is not a modelling constant: it keeps absurd input (a typo, a fuzzer, a unit
mix-up) from turning into a hang, gigabytes of memory or an overflow deep in a solver. Each is
far above any real deployment, and its source is named beside it. Inputs past a bound are
refused before work starts, with one line naming the field (docs/architecture.md, "Interfaces
people use").

Memory: simulations hold one object per request, so their size is checked against
:func:`memory_limit_bytes` (``--memory-limit-gb`` or ``RLPLAN_MEMORY_LIMIT_GB``; default
:data:`DEFAULT_MEMORY_LIMIT_GB`) with the per-item costs measured below, before they start.
"""

from __future__ import annotations

import os

from costmodels.errors import SpecError

# --- hardware (physical limits, with headroom over the largest part shipping in 2026) -----------
#: dense BF16 peak: B200 is 2 250 TFLOP/s (NVIDIA datasheet); 100x that
MAX_TFLOPS = 250_000.0
#: HBM per GPU: B300 has 288 GB; 100x that
MAX_GPU_MEMORY_GB = 30_000.0
#: HBM bandwidth: B200 8 TB/s; 100x that
MAX_HBM_GB_PER_S = 1_000_000.0
#: a GPU's link bandwidth (NVLink 5: 1 800 GB/s both directions); 100x that
MAX_LINK_GB_PER_S = 200_000.0
#: a network link: 1.6 Tb/s Ethernet ports ship in 2026; 1 000x that
MAX_LINK_GBPS = 1_600_000.0
#: the slowest rate taken for any link, HBM or compute peak, in its field's unit (Gbit/s, GB/s or
#: TFLOP/s): a thousandth of a unit is a thousand times below the slowest link of HetRL's testbed
#: (1 Gbit/s to its edge GPUs) and a GTX 480's 1.3 TFLOP/s; below it the step times of a plan
#: pass 10^300 s and overflow float arithmetic instead of meaning anything
MIN_RATE = 1e-3

# --- models and workloads ------------------------------------------------------------------
#: parameters of one model, billions: the largest open models have ~2 T; 100x that
MAX_PARAMS_B = 200_000.0
#: a model's width, layers, heads, experts, vocabulary (the largest have hidden 16k, 126 layers,
#: 256 experts, 256k vocabulary): each bounded by this
MAX_MODEL_DIMENSION = 1 << 24
#: tokens of one prompt or response: context windows reach 10 M tokens (Llama 4 Scout)
MAX_TOKENS = 1 << 24
#: prompts in one RL step (HetRL §5.1 uses 384; DAPO 512): 2 048x the largest
MAX_GLOBAL_BATCH = 1 << 20
#: responses per prompt (GRPO groups are 4-64)
MAX_RESPONSES_PER_PROMPT = 1024
#: concurrent sequences of one serving engine (vLLM's default 256, 1 024 on large GPUs)
MAX_NUM_SEQS = 1 << 16
#: KV-cache block: vLLM takes 8-128 tokens (FlashInfer up to 256); 1 024 is generous
MAX_BLOCK_SIZE = 1024
#: bytes one transfer or weight set moves: 10^18 is an exabyte, a thousand times the weights of
#: the largest model and past where float sums of them lose their last byte
MAX_BYTES = 1e18
#: GPUs a simulation or estimate may use (HetRL's and OrchestrRL's largest: 1 024)
MAX_SIMULATED_GPUS = 65_536
#: RL jobs in one co-scheduling file or trace: RollMux's largest experiment has 2 000; Algorithm 1
#: is quadratic in jobs (3 000 jobs plan in 8 s on one core), so 10 000 stays near a minute
MAX_JOBS = 10_000

#: ranks (endpoints) of one weight-sync broadcast, all PoDs together: 16x MAX_SIMULATED_GPUS,
#: past the largest GPU clusters built; its two-level schedule, cost and check take ~6 s and
#: ~0.7 GB at 2^20 ranks (measured: 8 PoDs of 131 072 ranks)
MAX_BROADCAST_RANKS = 1 << 20

#: a duration, arrival or phase time: 10^10 s is over 300 years
MAX_SECONDS = 1e10

# --- memory ---------------------------------------------------------------------------------
#: the default memory bound: what a laptop can give one process
DEFAULT_MEMORY_LIMIT_GB = 8.0
#: bytes one simulated request holds through a generation run (the request, its KV blocks and
# : its timeline entry), measured with tracemalloc (32 000 requests on 4 instances, 8 000 on 64):
# 0.8-1.1 kB
REQUEST_BYTES = 2048
#: bytes one serving instance holds (engine state, queues, per-step records), measured: ~40 kB
INSTANCE_BYTES = 65_536
#: bytes one broadcast rank holds through a plan, its cost and its check (the check's set of
#: shards each generation rank received dominates), measured with tracemalloc on the
#: weight-sync example's 8 PoDs at 2 000, 8 000 and 32 000 ranks each: 620 B a rank at all three
#: (RSS 680 B a rank at 2^20 ranks)
BROADCAST_RANK_BYTES = 1024
#: bytes one transfer of a naive one-to-all broadcast holds (its pending entry and Edge of a
#: wave; a transfer is a generation rank x a shard), measured with tracemalloc on the
#: weight-sync example at 3 072 and 12 288 transfers: 730-750 B
BROADCAST_TRANSFER_BYTES = 1024
#: bytes one co-scheduled job holds (its profile, group state and trace record), measured ~3 kB
JOB_BYTES = 8192


def memory_limit_bytes() -> float:
    """The memory bound sizes are checked against, in bytes: ``RLPLAN_MEMORY_LIMIT_GB`` (the
    CLI's ``--memory-limit-gb`` sets it) or :data:`DEFAULT_MEMORY_LIMIT_GB`."""
    text = os.environ.get("RLPLAN_MEMORY_LIMIT_GB", "")
    try:
        gb = float(text) if text else DEFAULT_MEMORY_LIMIT_GB
    except ValueError:
        raise SpecError("RLPLAN_MEMORY_LIMIT_GB", text, "not a number of GB") from None
    if not 0 < gb < float("inf"):
        raise SpecError("RLPLAN_MEMORY_LIMIT_GB", text, "must be a finite number of GB > 0")
    return gb * 1e9


def check_memory(field: str, value: object, count: int, bytes_each: int, what: str) -> None:
    """Refuse ``count`` items of ``bytes_each`` when they would pass the memory bound: one
    SpecError naming ``field`` and the bound, before any of them is made."""
    need = float(count) * bytes_each
    limit = memory_limit_bytes()
    if need > limit:
        raise SpecError(
            field,
            value,
            f"{count:,} {what} need about {need / 1e9:,.1f} GB, above the memory limit of "
            f"{limit / 1e9:g} GB (raise it with --memory-limit-gb)",
        )
