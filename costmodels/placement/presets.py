"""Shipped placement examples (usable wherever a file is expected; ``rlplan presets``).

* HetRL testbed (HetRL §5.1): 24 A100-40GB + 24 L40S + 16 L4 in eight 8-GPU nodes, under the four
  network scenarios. The paper gives the scenarios' ranges (claims.md) but its per-pair figures
  are in a plot we do not have; we place one node per region and set each inter-region link by
  the great-circle distance between the regions, mapped linearly onto the paper's latency and
  bandwidth ranges (farther: slower). The hybrid scenario follows the text exactly: Ohio-Virginia
  10 ms / 5 Gbps, edge GPUs in Virginia on 1 Gbps links.
* Small heterogeneous clusters of 4, 8, 16 and 24 GPUs for exact solving.
* PPO/GRPO x sync/async workflows on Qwen3-4B/8B/14B with HetRL's hyper-parameters (global batch
  384, 8 responses per prompt, prompt and response length 1024).
* The same GRPO Qwen3-8B workflows with long-tailed responses (``-tail``: RollPacker §2.2's
  marginal), and verl's DAPO recipe on Qwen2.5-7B (``dapo-sync``, ``dapo-fully-async``) with the
  response lengths fitted to its published runs.
* Homogeneous H100 and H800 clusters as people rent them (``h100-32``, ``h100-64``, ``h800-64``:
  nodes of 8, one 400 Gb/s NIC per GPU, the HGX reference design, as ``benchmarks/fidelity``
  assumes) and the GRPO jobs people run on them (``grpo-sync-qwen3-32b``,
  ``grpo-sync-qwen3-8b-verl``, ``grpo-sync-llama3.1-8b``: verl's GSM8K/DAPO-style settings, 256
  prompts x 8 responses, responses cut at 4K tokens, RollPacker §2.2's long tail).
* ``default``: the placement problem ``rlplan plan`` solves when given nothing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

from costmodels.problem import Preset

CITIES = {
    "virginia": (38.9, -77.4),
    "ohio": (40.0, -83.0),
    "paris": (48.86, 2.35),
    "stockholm": (59.33, 18.07),
    "london": (51.5, -0.13),
    "ireland": (53.35, -6.26),
    "spain": (40.42, -3.7),
    "zurich": (47.37, 8.54),
    "frankfurt": (50.11, 8.68),
    "milan": (45.46, 9.19),
}

#: HetRL testbed nodes in declaration order: (GPU type, 8 GPUs each)
TESTBED = ["A100-40GB"] * 3 + ["L40S"] * 3 + ["L4"] * 2
FAST_LAN = {"bandwidth_gbps": 100.0, "latency_ms": 0.05}


def _km(a: str, b: str) -> float:
    (la1, lo1), (la2, lo2) = CITIES[a], CITIES[b]
    p1, p2, dl = math.radians(la1), math.radians(la2), math.radians(lo2 - lo1)
    c = math.sin(p1) * math.sin(p2) + math.cos(p1) * math.cos(p2) * math.cos(dl)
    return 6371.0 * math.acos(max(-1.0, min(1.0, c)))


def _geo_links(
    regions: list[str], lat_range: tuple[float, float], bw_range: tuple[float, float]
) -> list[dict[str, Any]]:
    pairs = list(itertools.combinations(regions, 2))
    dist = {p: _km(*p) for p in pairs}
    lo, hi = min(dist.values()), max(dist.values())
    links = []
    for p in pairs:
        f = (dist[p] - lo) / (hi - lo) if hi > lo else 0.0
        links.append(
            {
                "zones": list(p),
                "latency_ms": round(lat_range[0] + f * (lat_range[1] - lat_range[0]), 2),
                "bandwidth_gbps": round(bw_range[1] - f * (bw_range[1] - bw_range[0]), 2),
            }
        )
    return links


def _testbed(
    name: str, description: str, zones: list[str], network: dict[str, Any]
) -> dict[str, Any]:
    counters: dict[str, int] = {}
    nodes = []
    for gpu, zone in zip(TESTBED, zones, strict=True):
        prefix = {"A100-40GB": "a100", "L40S": "l40s", "L4": "l4"}[gpu]
        k = counters.get(prefix, 0)
        counters[prefix] = k + 1
        nodes.append({"name": f"{prefix}-{k}", "gpu": gpu, "count": 8, "zone": zone})
    return {"name": name, "description": description, "nodes": nodes, "network": network}


def hetrl_single_region() -> dict[str, Any]:
    return _testbed(
        "hetrl-single-region",
        "HetRL testbed, scenario 1: one region, no network limits",
        ["us-east"] * 8,
        {"intra_zone": FAST_LAN},
    )


def hetrl_multi_region_hybrid() -> dict[str, Any]:
    # each edge node is its own zone: edge GPUs reach anything, even each other, over 1 Gbps
    zones = ["ohio"] * 3 + ["virginia"] * 3 + ["virginia-edge-0", "virginia-edge-1"]
    edge = {"bandwidth_gbps": 1.0, "latency_ms": 1.0}
    inter = [
        {"zones": ["ohio", "virginia"], "bandwidth_gbps": 5.0, "latency_ms": 10.0},
        {"zones": ["virginia-edge-0", "virginia-edge-1"], **edge},
    ]
    for e in ("virginia-edge-0", "virginia-edge-1"):
        inter.append({"zones": ["virginia", e], **edge})
        # edge GPUs have no direct link to Ohio: traffic is routed through Virginia
        inter.append({"zones": ["ohio", e], "bandwidth_gbps": 1.0, "latency_ms": 11.0})
    spec = _testbed(
        "hetrl-multi-region-hybrid",
        "HetRL testbed, scenario 2: Ohio (A100) and Virginia (L40S), 10 ms / 5 Gbps between; "
        "L4 edge GPUs in Virginia on 1 Gbps links",
        zones,
        {"intra_zone": FAST_LAN, "inter_zone": inter},
    )
    for node in spec["nodes"]:
        node["region"] = "ohio" if node["zone"] == "ohio" else "virginia"
    return spec


def hetrl_multi_country() -> dict[str, Any]:
    regions = ["frankfurt", "paris", "london", "ireland", "stockholm", "zurich", "spain", "milan"]
    return _testbed(
        "hetrl-multi-country",
        "HetRL testbed, scenario 3: one node in each of 8 EU regions; 5-30 ms, 1.9-5.0 Gbps by "
        "distance",
        regions,
        {"intra_zone": FAST_LAN, "inter_zone": _geo_links(regions, (5.0, 30.0), (1.9, 5.0))},
    )


def hetrl_multi_continent() -> dict[str, Any]:
    regions = ["virginia", "ohio", "frankfurt", "london", "paris", "ireland", "stockholm", "milan"]
    return _testbed(
        "hetrl-multi-continent",
        "HetRL testbed, scenario 4: one node in each of 8 EU and US regions; 5-60 ms, 0.9-5.0 "
        "Gbps by distance",
        regions,
        {"intra_zone": FAST_LAN, "inter_zone": _geo_links(regions, (5.0, 60.0), (0.9, 5.0))},
    )


def _small(n: int) -> Callable[[], dict[str, Any]]:
    layout = {
        4: [("A100-40GB", 2), ("L40S", 2)],
        8: [("A100-40GB", 4), ("L40S", 4)],
        16: [("A100-40GB", 8), ("L40S", 8)],
        24: [("A100-40GB", 8), ("L40S", 8), ("L4", 8)],
    }[n]

    def build() -> dict[str, Any]:
        nodes = [
            {"name": f"{gpu.split('-')[0].lower()}-0", "gpu": gpu, "count": k, "zone": "lab"}
            for gpu, k in layout
        ]
        mix = " + ".join(f"{k} {gpu}" for gpu, k in layout)
        return {
            "name": f"small-{n}",
            "description": f"{n} GPUs ({mix}), one zone: small enough for exact solving",
            "nodes": nodes,
            "network": {"intra_zone": FAST_LAN},
        }

    return build


def _workflow(algorithm: str, mode: str, size: str) -> Callable[[], dict[str, Any]]:
    model = f"Qwen3-{size.upper()}"

    def build() -> dict[str, Any]:
        models = {"actor": model, "reference": model, "reward": model}
        if algorithm == "ppo":
            models["critic"] = model
        return {
            "name": f"{algorithm}-{mode}-qwen3-{size}",
            "description": f"{algorithm.upper()} ({mode}) on {model}, HetRL §5.1 hyper-parameters",
            "algorithm": algorithm,
            "mode": mode,
            "models": models,
            "global_batch": 384,
            "responses_per_prompt": 8,
            "prompt_length": 1024,
            "response_length": 1024,
            "eta": 0.0,
            # HetRL's DAG: no old log-prob recompute (its §5.1 workflow)
            "old_log_prob_pass": False,
        }

    return build


#: the HetRL workflows that also ship with a long tail (``<name>-tail``): (algorithm, mode, size)
TAIL_WORKFLOWS = (("grpo", "sync", "8b"), ("grpo", "async", "8b"))


def recorded_tail() -> dict[str, Any]:
    """The project's synthetic request traces (``costmodels.generation.request_traces.
    TraceParams``' defaults, calibrated to RollPacker §2.2): lognormal, median 420 tokens, sigma
    hypot(sigma_prompt, sigma_response), of which a prompt's responses share
    sigma_prompt^2 / sigma^2 (``ResponseLengths.prompt_share``); ``benchmarks.long_tail`` plans
    with it."""
    from costmodels.generation.request_traces import TraceParams

    trace = TraceParams()
    sigma2 = trace.sigma_prompt**2 + trace.sigma_response**2
    return {
        "distribution": "lognormal",
        "median": 420.0,
        "sigma": round(math.sqrt(sigma2), 2),
        "prompt_share": round(trace.sigma_prompt**2 / sigma2, 2),
        "source": "request_traces.TraceParams defaults (RollPacker §2.2)",
    }


def _tailed(algorithm: str, mode: str, size: str) -> Callable[[], dict[str, Any]]:
    """A HetRL workflow with :data:`RECORDED_TAIL` in place of HetRL's constant lengths."""

    def build() -> dict[str, Any]:
        wf = _workflow(algorithm, mode, size)()
        wf["name"] += "-tail"
        wf["description"] += ", responses lognormal (RollPacker §2.2's marginal)"
        wf["response_lengths"] = recorded_tail()
        return wf

    return build


#: the HGX 8-GPU reference design's network: one 400 Gb/s RDMA NIC per GPU, 5 us
HGX_NETWORK = {"intra_zone": {"bandwidth_gbps": 400.0, "latency_ms": 0.005}}


def _homogeneous(gpu: str, n: int) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        short = gpu.split("-")[0].lower()
        return {
            "name": f"{short}-{n}",
            "description": f"{n // 8} nodes of 8 {gpu}, 400 Gb/s per GPU (HGX reference design)",
            "nodes": [
                {"name": f"{short}-{k}", "gpu": gpu, "count": 8, "zone": "dc"}
                for k in range(n // 8)
            ],
            "network": HGX_NETWORK,
        }

    return build


#: (preset name, actor model) of the GRPO jobs run on rented H100/H800 nodes
GRPO_JOBS = (
    ("grpo-sync-qwen3-32b", "Qwen3-32B"),
    ("grpo-sync-qwen3-8b-verl", "Qwen3-8B"),
    ("grpo-sync-llama3.1-8b", "Llama-3.1-8B"),
)


#: (preset name, actor model) of the same jobs one step off (verl's ``one_step_off_policy``:
#: generation of step k+1 overlaps training of step k on separate GPUs)
GRPO_ASYNC_JOBS = (
    ("grpo-async-qwen3-32b", "Qwen3-32B"),
    ("grpo-async-qwen3-8b-verl", "Qwen3-8B"),
    ("grpo-async-llama3.1-8b", "Llama-3.1-8B"),
)


def _grpo_job(name: str, model: str, mode: str = "sync") -> Callable[[], dict[str, Any]]:
    """GRPO as verl's example scripts run it (256 prompts x 8 responses, KL against a reference,
    rule reward, 4K response cap, mini-batch 64), responses long-tailed as RollPacker §2.2;
    ``mode`` sync or async (one step off). The old log-prob recompute is left to the framework's
    default (``costmodels.workflow.recompute_by_default``): verl's sync trainer runs it."""

    def build() -> dict[str, Any]:
        return {
            "name": name,
            "description": f"GRPO ({mode}) on {model}: 256 x 8, 4K cap, long-tailed responses",
            "algorithm": "grpo",
            "mode": mode,
            "models": {"actor": model, "reference": model},
            "global_batch": 256,
            "responses_per_prompt": 8,
            "prompt_length": 512,
            "response_length": 4096,
            "response_lengths": recorded_tail(),
            "mini_batch": 64,
        }

    return build


def _dapo(mode: str) -> Callable[[], dict[str, Any]]:
    """verl's DAPO recipe on Qwen2.5-Math-7B as its published runs are configured
    (``benchmarks/fidelity/steps_cases.py``: 512 prompts x 16 responses, 28K cap, mini-batch 32,
    max_num_seqs 1024, no KL, rule reward), with the response lengths fitted to those runs
    (``costmodels/data/measured/step_error.json``, written by ``benchmarks.fidelity.steps``).
    No KL, so no reference pass; ``sync`` recomputes the old log-probs on the trainer, as verl's
    ``main_ppo`` runs it (``old_log_prob_pass``); ``fully-async`` is the recipe's
    fully_async_policy: staleness 0.5, partial rollout, 4 local updates per sync, the rollout's
    log-probs."""

    def build() -> dict[str, Any]:
        from costmodels.step_error import step_error_table

        fit = dict(step_error_table()["fitted_lengths"])
        cap, prompt = fit.pop("cap"), fit.pop("prompt_tokens")
        wf: dict[str, Any] = {
            "name": f"dapo-{mode}-qwen2.5-7b",
            "description": (
                f"DAPO ({mode}) on Qwen2.5-7B as verl's published Qwen2.5-Math-7B runs; lengths "
                "fitted to them"
            ),
            "algorithm": "grpo",
            "mode": mode,
            "models": {"actor": "Qwen2.5-7B"},
            "global_batch": 512,
            "responses_per_prompt": 16,
            "prompt_length": prompt,
            "response_length": cap,
            "response_lengths": fit,
            "mini_batch": 32,
            "decode_batch_size": 1024,
            "reference_pass": False,
            "old_log_prob_pass": mode != "fully-async",
        }
        if mode == "fully-async":
            wf["fully_async"] = {"staleness": 0.5, "partial_rollout": True, "updates_per_sync": 4}
        return wf

    return build


def placement_presets() -> tuple[Preset, ...]:
    items = [
        Preset(
            "hetrl-single-region",
            "cluster",
            "HetRL testbed (24 A100 + 24 L40S + 16 L4), single region",
            hetrl_single_region,
        ),
        Preset(
            "hetrl-multi-region-hybrid",
            "cluster",
            "HetRL testbed, Ohio/Virginia + 1 Gbps edge GPUs",
            hetrl_multi_region_hybrid,
        ),
        Preset(
            "hetrl-multi-country",
            "cluster",
            "HetRL testbed across 8 EU regions",
            hetrl_multi_country,
        ),
        Preset(
            "hetrl-multi-continent",
            "cluster",
            "HetRL testbed across 8 EU+US regions",
            hetrl_multi_continent,
        ),
    ]
    for n in (4, 8, 16, 24):
        items.append(
            Preset(
                f"small-{n}",
                "cluster",
                f"{n}-GPU heterogeneous cluster for exact solving",
                _small(n),
            )
        )
    for algorithm, mode, size in itertools.product(
        ("ppo", "grpo"), ("sync", "async"), ("4b", "8b", "14b")
    ):
        items.append(
            Preset(
                f"{algorithm}-{mode}-qwen3-{size}",
                "workflow",
                f"{algorithm.upper()} {mode} on Qwen3-{size.upper()} (HetRL §5.1)",
                _workflow(algorithm, mode, size),
            )
        )
    for algorithm, mode, size in TAIL_WORKFLOWS:
        items.append(
            Preset(
                f"{algorithm}-{mode}-qwen3-{size}-tail",
                "workflow",
                f"{algorithm.upper()} {mode} on Qwen3-{size.upper()}, long-tailed responses",
                _tailed(algorithm, mode, size),
            )
        )
    for mode in ("sync", "fully-async"):
        items.append(
            Preset(
                f"dapo-{mode}-qwen2.5-7b",
                "workflow",
                f"verl's DAPO recipe ({mode}) on Qwen2.5-7B, 28K responses, fitted lengths",
                _dapo(mode),
            )
        )
    for gpu, n in (("H100-SXM", 32), ("H100-SXM", 64), ("H800", 64)):
        items.append(
            Preset(
                f"{gpu.split('-')[0].lower()}-{n}",
                "cluster",
                f"{n} {gpu} in nodes of 8, 400 Gb/s per GPU",
                _homogeneous(gpu, n),
            )
        )
    for name, model in GRPO_JOBS:
        items.append(
            Preset(
                name,
                "workflow",
                f"GRPO sync on {model}: verl's settings, 4K cap, long tail",
                _grpo_job(name, model),
            )
        )
    for name, model in GRPO_ASYNC_JOBS:
        items.append(
            Preset(
                name,
                "workflow",
                f"GRPO one step off on {model}: verl's settings, 4K cap, long tail",
                _grpo_job(name, model, "async"),
            )
        )
    items.append(
        Preset(
            "default",
            "problem",
            "placement: GRPO sync on Qwen3-8B over the single-region HetRL testbed",
            lambda: {
                "problem": "placement",
                "cluster": "hetrl-single-region",
                "workflow": "grpo-sync-qwen3-8b",
            },
        )
    )
    return tuple(items)
