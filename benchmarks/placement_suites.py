"""The placement benchmark suites (HetRL §5; ``benchmarks.suites`` lists every suite):
``placement`` (§5.4: the ILP against SHA-EA, the plain EA and the baselines on small and random
clusters), ``scenarios`` (§5.2: the four 64-GPU testbed scenarios) and ``scale`` (128-1 024
GPUs)."""

from __future__ import annotations

from benchmarks.harness import InstanceRef
from benchmarks.suite_parts import (
    Comparison,
    Suite,
    _once,
    _ratios_to,
    _runs,
)

#: the placement suite's workflows on each small cluster: PPO on Qwen3-8B needs 360.8 GB of model
#: memory and small-8 has 344 GB, so small-8 runs PPO on Qwen3-4B
PLACEMENT_WORKFLOWS = {
    c: [
        "grpo-sync-qwen3-8b",
        "grpo-async-qwen3-8b",
        *(f"ppo-{m}-qwen3-{'4b' if c == 'small-8' else '8b'}" for m in ("sync", "async")),
    ]
    for c in ("small-8", "small-16", "small-24")
}


def placement(plugins: tuple[str, ...] = ()) -> Suite:
    instances = [
        InstanceRef(f"{c}/{wf}", "placement", fields={"cluster": c, "workflow": wf})
        for c, wfs in PLACEMENT_WORKFLOWS.items()
        for wf in wfs
    ]
    wf = "grpo-sync-qwen3-8b"
    instances += [
        InstanceRef(
            f"random-16-s{s}/{wf}",
            "placement",
            generator="random_cluster",
            generates="cluster",
            args={"gpus": 16, "seed": s},
            fields={"workflow": wf},
        )
        for s in range(3)
    ]
    solvers = [
        *_once("ilp", limit=600.0),
        ("sha-ea", {}, 10.0, (0, 1)),
        *_once("sha-ea", limit=60.0),
        *_once("ea", limit=10.0),
        *_once("ea", limit=60.0),
        *_once("random", limit=10.0),
        *_once("verl", "streamrl", "rlinf", "real"),
    ]
    return Suite(
        "placement",
        "HetRL §5.4: ILP vs SHA-EA vs EA vs baselines over time budgets",
        _runs("placement", instances, solvers, plugins),
        [
            Comparison("SHA-EA / ILP iteration time", "sha-ea", "ilp", "objective"),
            Comparison("EA / ILP iteration time", "ea", "ilp", "objective"),
            Comparison("verl / SHA-EA iteration time", "verl", "sha-ea", "objective"),
            Comparison("StreamRL / SHA-EA iteration time", "streamrl", "sha-ea", "objective"),
            Comparison("RLinf / ILP iteration time", "rlinf", "ilp", "objective"),
            Comparison("ReaL / ILP iteration time", "real", "ilp", "objective"),
            Comparison("RLinf / SHA-EA iteration time", "rlinf", "sha-ea", "objective"),
            Comparison("ReaL / SHA-EA iteration time", "real", "sha-ea", "objective"),
        ],
        anytime=("sha-ea", "ea", "ilp"),
    )


def _sha_ea_against_baselines(
    name: str, description: str, instances: list[InstanceRef], plugins: tuple[str, ...]
) -> Suite:
    """SHA-EA, the verl and StreamRL baselines, the field's planners (RLinf's auto-placement,
    ReaL's search) and the plain EA on ``instances``, each once under the same 60 s limit,
    compared as iteration-time ratios to SHA-EA."""
    return Suite(
        name,
        description,
        _runs(
            name,
            instances,
            _once("sha-ea", "verl", "streamrl", "ea", "rlinf", "real", limit=60.0),
            plugins,
        ),
        _ratios_to(
            "sha-ea",
            "SHA-EA iteration time",
            {
                "verl": "verl",
                "streamrl": "StreamRL",
                "ea": "plain EA",
                "rlinf": "RLinf",
                "real": "ReaL",
            },
        ),
        anytime=("sha-ea", "ea"),
    )


def scenarios(plugins: tuple[str, ...] = ()) -> Suite:
    """HetRL §5.2: the four testbed network scenarios, SHA-EA against the verl and StreamRL
    baselines (64 GPUs: too large for the ILP to finish, so ratios are between solvers)."""
    instances = [
        InstanceRef(f"{c}/{wf}", "placement", fields={"cluster": f"hetrl-{c}", "workflow": wf})
        for c in ("single-region", "multi-region-hybrid", "multi-country", "multi-continent")
        for wf in (
            "grpo-sync-qwen3-8b",
            "ppo-sync-qwen3-8b",
            "grpo-async-qwen3-8b",
            "ppo-async-qwen3-8b",
        )
    ]
    # the baselines' sweeps grow with the number of node classes (eight zones here): same 60 s cap
    return _sha_ea_against_baselines(
        "scenarios",
        "HetRL §5.2 testbed scenarios: SHA-EA vs verl / StreamRL / RLinf / ReaL",
        instances,
        plugins,
    )


def scale(plugins: tuple[str, ...] = ()) -> Suite:
    """Placement at 128 to 1 024 GPUs: random clusters of four GPU types in four zones (8-GPU
    nodes), GRPO on Qwen3-8B and PPO on Qwen3-14B; SHA-EA against the baselines and the plain EA,
    every solver under the same 60 s limit (wall time and peak memory are in each row)."""
    instances = [
        InstanceRef(
            f"random-{n}-4types/{tag}",
            "placement",
            generator="random_cluster",
            generates="cluster",
            args={"gpus": n, "seed": 0, "zones": 4, "per_node": 8, "types": 4},
            fields={"workflow": wf},
        )
        for n in (128, 256, 512, 1024)
        for tag, wf in (("grpo-8b", "grpo-sync-qwen3-8b"), ("ppo-14b", "ppo-sync-qwen3-14b"))
    ]
    return _sha_ea_against_baselines(
        "scale",
        "placement at 128-1 024 GPUs: SHA-EA vs verl / StreamRL / RLinf / ReaL / plain EA, 60 s "
        "each",
        instances,
        plugins,
    )
