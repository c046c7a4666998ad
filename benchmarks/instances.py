"""Seeded instance generators and stable instance ids.

Every generator is a pure function of its arguments (numpy ``default_rng(seed)``), so the same
call gives the same problem on any machine; :func:`instance_id` hashes a problem's content, so the
same instance gets the same id however it was made (generator, preset or file).

Circuits (OrchestrRL App. D, I): demand shapes ``all-to-all`` (EP/CP all-to-all with skewed
expert load), ``all-reduce`` (ring all-reduce over ranks spread unevenly over ToRs, aggregated to
ToR pairs as AGGREGATEDEMAND does), ``m2n`` (bipartite attention -> FFN traffic under AFD),
``fan-out`` (weight-sync from a few training endpoints to many generation ones) and ``sparse``
(random pairs, log-normal volumes).

Placement (HetRL §5.4): random heterogeneous clusters (zones of mixed GPU types, inter-zone links
drawn from the paper's ranges) with one of the shipped workflows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import numpy as np

from costmodels.circuits.fabric import DemandEntry, DemandSpec, FabricSpec
from costmodels.circuits.problem import CircuitProblem
from costmodels.rollout.workload import RolloutWorkload

DEMAND_SHAPES = ("all-to-all", "all-reduce", "m2n", "fan-out", "sparse")


def instance_id(problem: Any) -> str:
    """12 hex digits of the SHA-256 of the problem's canonical JSON inputs."""
    blob = json.dumps(
        {"kind": problem.kind, **problem.to_inputs()},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _entries(matrix: dict[tuple[int, int], float], names: list[str]) -> list[DemandEntry]:
    return [
        DemandEntry(src=names[u], dst=names[v], bytes=float(round(b)))
        for (u, v), b in sorted(matrix.items())
        if b > 0 and u != v
    ]


def circuits_instance(
    endpoints: int,
    ports: int | None,
    shape: str,
    *,
    seed: int = 0,
    link_gbps: float = 400.0,
    pairs: int | None = None,
    gb: float = 1.0,
    failed_ports: int = 0,
    pods: int = 1,
    spare: int = 0,
) -> CircuitProblem:
    """A random circuit-allocation instance: ``endpoints`` ToRs with ``ports`` OCS ports each
    (``None``: just enough for every demanded pair to get a circuit, plus ``spare``).

    ``gb`` scales the volumes (GB per pair on average), ``pairs`` is the number of demanded pairs
    for ``sparse``, ``failed_ports`` masks that many ports on randomly chosen endpoints and
    ``pods`` labels endpoints round-robin into PoDs (for templates)."""
    if shape not in DEMAND_SHAPES:
        raise ValueError(f"unknown demand shape {shape!r}; known: {', '.join(DEMAND_SHAPES)}")
    rng = np.random.default_rng(seed)
    n = endpoints
    names = [f"tor{i:0{len(str(n - 1))}d}" for i in range(n)]
    unit = gb * 1e9
    m: dict[tuple[int, int], float] = {}
    side = None
    template = "all-pairs"
    if shape == "all-to-all":
        _all_to_all(rng, n, unit, m)
    elif shape == "all-reduce":
        _all_reduce(rng, n, unit, m)
    elif shape == "m2n":
        side = _m2n(rng, n, unit, m)
        template = "bipartite"
    elif shape == "fan-out":
        _fan_out(rng, n, unit, m)
    else:  # sparse
        _sparse(rng, n, unit, m, pairs)
    if ports is None:
        fanout = [0] * n
        for u, v in {tuple(sorted(k)) for k, b in m.items() if b > 0 and k[0] != k[1]}:
            fanout[u] += 1
            fanout[v] += 1
        ports = max(fanout) + spare
    failed: dict[str, int] = {}
    for i in rng.choice(n, size=min(failed_ports, n), replace=False) if failed_ports else ():
        failed[names[int(i)]] = 1
    fabric = FabricSpec(
        name=f"{shape}-{n}x{ports}-s{seed}",
        link_gbps=link_gbps,
        template=template,
        endpoints=[
            {
                "name": names[i],
                "ports": ports,
                "pod": f"pod{i % pods}",
                "side": side[i] if side else None,
            }
            for i in range(n)
        ],
        failed_ports=failed,
    )
    fabric.check()
    return CircuitProblem(fabric, DemandSpec(entries=_entries(m, names)))


def _all_to_all(
    rng: np.random.Generator, n: int, unit: float, m: dict[tuple[int, int], float]
) -> None:
    """Every ordered pair, scaled by both endpoints' lognormal load."""
    load = rng.lognormal(0.0, 0.6, n)  # hot experts make some endpoints send/receive more
    for u in range(n):
        for v in range(n):
            if u != v:
                m[(u, v)] = unit * load[u] * load[v] * rng.uniform(0.8, 1.2)


def _all_reduce(
    rng: np.random.Generator, n: int, unit: float, m: dict[tuple[int, int], float]
) -> None:
    """One to three rings over uneven ranks per ToR; a unit per ring hop between ToRs."""
    ranks_per = rng.integers(1, 5, n)  # uneven ranks per ToR
    ranks = np.repeat(np.arange(n), ranks_per)
    rings = max(1, int(rng.integers(1, 4)))
    for _ in range(rings):
        order = rng.permutation(ranks)
        for i, u in enumerate(order):
            v = order[(i + 1) % len(order)]
            if u != v:
                m[(int(u), int(v))] = m.get((int(u), int(v)), 0.0) + unit


def _m2n(
    rng: np.random.Generator, n: int, unit: float, m: dict[tuple[int, int], float]
) -> list[str]:
    """Attention ToRs (the first half) to FFN ToRs and half as much back; each endpoint's side."""
    k = max(1, n // 2)
    side = ["attn" if i < k else "ffn" for i in range(n)]
    hot = rng.lognormal(0.0, 0.5, n)
    for u in range(k):
        for v in range(k, n):
            m[(u, v)] = unit * hot[v] * rng.uniform(0.5, 1.5)
            m[(v, u)] = 0.5 * unit * hot[v] * rng.uniform(0.5, 1.5)
    return side


def _fan_out(
    rng: np.random.Generator, n: int, unit: float, m: dict[tuple[int, int], float]
) -> None:
    """An eighth of the ToRs each send a share of a unit to every other ToR."""
    senders = max(1, n // 8)
    for u in range(senders):
        for v in range(senders, n):
            m[(u, v)] = unit * rng.uniform(0.9, 1.1) / senders


def _sparse(
    rng: np.random.Generator,
    n: int,
    unit: float,
    m: dict[tuple[int, int], float],
    pairs: int | None,
) -> None:
    """``pairs`` (default 4n) random distinct pairs with lognormal volumes."""
    count = pairs or 4 * n
    count = min(count, n * (n - 1))
    seen: set[tuple[int, int]] = set()
    while len(seen) < count:
        u, v = (int(x) for x in rng.integers(0, n, 2))
        if u != v:
            seen.add((u, v))
    for u, v in sorted(seen):
        m[(u, v)] = unit * rng.lognormal(0.0, 1.0)


#: GPU types the random clusters draw from (all in the shipped catalog)
PLACEMENT_GPUS = ("A100-40GB", "H100-SXM", "H800", "L40S", "L4", "H20")


def random_cluster(
    gpus: int, *, seed: int = 0, zones: int = 2, per_node: int = 4, types: int = 3
) -> dict[str, Any]:
    """A random heterogeneous cluster spec (a mapping, like a cluster YAML): ``gpus`` GPUs in nodes
    of
    ``per_node``, each node one of ``types`` GPU types drawn from :data:`PLACEMENT_GPUS`, spread
    over
    ``zones`` zones; links inside a zone 100 Gbps, between zones drawn from HetRL §5.1's ranges
    (5-60 ms, 0.9-5 Gbps)."""
    rng = np.random.default_rng(seed)
    if gpus % per_node:
        raise ValueError(f"gpus ({gpus}) must be a multiple of per_node ({per_node})")
    types_ = list(rng.choice(PLACEMENT_GPUS, size=min(types, len(PLACEMENT_GPUS)), replace=False))
    nodes = []
    for i in range(gpus // per_node):
        gpu = str(types_[i % len(types_)])
        nodes.append({"name": f"n{i}", "gpu": gpu, "count": per_node, "zone": f"z{i % zones}"})
    links = [
        {
            "zones": [f"z{a}", f"z{b}"],
            "latency_ms": round(float(rng.uniform(5, 60)), 1),
            "bandwidth_gbps": round(float(rng.uniform(0.9, 5.0)), 2),
        }
        for a in range(zones)
        for b in range(a + 1, zones)
    ]
    used = {n["zone"] for n in nodes}
    links = [lk for lk in links if set(lk["zones"]) <= used]
    return {
        "name": f"random-{gpus}-s{seed}",
        "description": f"random heterogeneous cluster ({gpus} GPUs, seed {seed})",
        "nodes": nodes,
        "network": {
            "intra_zone": {"bandwidth_gbps": 100.0, "latency_ms": 0.05},
            "inter_zone": links,
        },
    }


def replan_state(
    nodes: int,
    tp: int,
    per_gpu: int,
    progress: int,
    *,
    seed: int = 0,
    model: str = "Qwen2.5-14B",
    gpu: str = "H800",
    max_len: int = 16384,
) -> Any:
    """A generation pool mid-step (``costmodels.replan.presets.synthetic_state``) as a replan
    problem."""
    from costmodels.replan.presets import synthetic_state
    from planner.io import build_problem

    state = synthetic_state(
        model,
        gpu,
        nodes,
        tp,
        per_gpu,
        progress,
        max_len=max_len,
        seed=seed,
        name=f"{nodes * 8}gpu-tp{tp}-p{progress}-s{seed}",
    )
    return build_problem("replan", {"state": state})


def table6_problem(jobs: int, *, seed: int = 0, large_share: float = 0.0) -> Any:
    """``jobs`` RollMux Table 6 jobs (mixed, SLO ~ U(1, 2); ``large_share`` of them on 16 GPUs)
    as a checked cosched problem."""
    from costmodels.cosched.presets import table6_jobs
    from planner.io import build_problem

    data = table6_jobs(jobs, seed=seed, large_share=large_share)
    return build_problem("cosched", {"jobs": data})


def rollout_problem(
    name: str,
    *,
    seed: int = 0,
    dataset_prompts: int = 1280,
    training_mfu: float | None = None,
    engine_step_ms: float | None = None,
    log_prob_pass: bool | None = None,
) -> Any:
    """A RollPacker Table 2 job (``rollout-7b-8k`` ...) on the epoch of ``seed``, as a rollout
    problem; ``training_mfu`` replaces the training stage's fitted MFU (a what-if on training's
    size), ``engine_step_ms`` the rollout engine's CPU time per decode step (a what-if on the
    engine term, :class:`EngineStepWhatIf`), ``log_prob_pass`` the training stage's old
    log-prob pass (false: as RollPacker's artifact trains, ``TrainingSpec``)."""
    from costmodels.rollout.presets import table2_job
    from planner.io import build_problem

    job = table2_job(name, seed=seed, dataset_prompts=dataset_prompts)
    if training_mfu is not None:
        job["workload"].setdefault("training", {})["mfu"] = training_mfu
    if log_prob_pass is not None:
        job["workload"].setdefault("training", {})["log_prob_pass"] = log_prob_pass
    problem = build_problem("rollout", {"job": job})
    if engine_step_ms is None:
        return problem
    workload = engine_step_what_if(problem.workload, engine_step_ms)
    return dataclasses.replace(problem, job=problem.job.model_copy(update={"workload": workload}))


class EngineStepWhatIf(RolloutWorkload):
    """A rollout workload whose engine spends ``decode_step_ms`` of CPU time per decode step
    instead of its profile's ``step_ms`` (``costmodels/data/profiles/engines.yaml``); the field
    is part of the workload's hash, so the judge's caches keep the two apart. Only benchmarks
    build one (:func:`engine_step_what_if`): the engine term is not a user's knob."""

    decode_step_ms: float

    def serving(self) -> Any:
        base = super().serving()
        eff = base.efficiency.model_copy(update={"decode_step_overhead_ms": self.decode_step_ms})
        return base.model_copy(update={"efficiency": eff})


def engine_step_what_if(workload: RolloutWorkload, step_ms: float) -> EngineStepWhatIf:
    """``workload`` with its engine's CPU time per decode step at ``step_ms``."""
    return EngineStepWhatIf(**workload.model_dump(), decode_step_ms=step_ms)
