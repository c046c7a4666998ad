"""The cost model memoises a task's replicas on their node-class signature (GPU type, zone,
intra-node link of the nodes they use, and in which pattern): a value it returns must be the
one costing the replica afresh gives, on every kind of task and network, with the resident
memory that generation's "as many as fit" reads (and the floor on it the placement ILP bounds
with), and across problems that share a topology."""

from __future__ import annotations

import dataclasses
import random

import pytest

import costmodels.replica_cost as replica_cost
from benchmarks.instances import random_cluster
from costmodels.placement.memory import task_memory
from costmodels.placement.space import is_heterogeneous, place_task, task_configs
from costmodels.placement.task_cost import generation_floor, task_cost
from planner.io import build_problem


def _costs(memo: bool, cluster, workflow: str, seed: int, monkeypatch) -> list:
    monkeypatch.setattr(replica_cost, "REPLICA_MEMO", memo)
    p = build_problem("placement", {"cluster": cluster, "workflow": workflow})
    rng = random.Random(seed)
    devs = [d.id for d in p.topology.devices]
    out = []
    for _ in range(25):
        k = rng.choice([s for s in (4, 8, 16, 32, 64) if s <= len(devs)])
        start = rng.randrange(len(devs) - k + 1)
        # contiguous blocks repeat node patterns (memo hits); random subsets mix them
        gpus = (
            devs[start : start + k]
            if rng.random() < 0.5
            else sorted(rng.sample(devs, k), key=devs.index)
        )
        task = rng.choice(p.tasks)
        cfgs = task_configs(p, task, k, is_heterogeneous(p, gpus))
        for cfg in rng.sample(cfgs, min(3, len(cfgs))):
            tp_ = place_task(p, task, gpus, cfg)
            residents = rng.choice([1.0, 1.5, 3.0])
            mem = {
                d: {
                    "model_gb": mo * residents,
                    "working_gb": 0.0,
                    "capacity_gb": p.topology.devices[d].gpu.memory_gb - p.params.memory_reserve_gb,
                }
                for d, (mo, _) in task_memory(p, task, tp_).items()
            }
            out.append(task_cost(p, task, tp_, mem))
            if task.kind.value == "generation" and cfg.decode_batch is None:
                out.append(generation_floor(p, task, tp_, mem))  # its prefill and decode floor
    return out


@pytest.mark.parametrize(
    "cluster,workflow,seed",
    [
        (random_cluster(128, seed=0, zones=4, per_node=8, types=4), "ppo-sync-qwen3-14b", 0),
        (random_cluster(64, seed=1, zones=2, per_node=4, types=3), "grpo-async-qwen3-8b", 1),
        ("hetrl-multi-continent", "ppo-async-qwen3-8b", 2),
        ("hetrl-multi-country", "grpo-sync-qwen3-4b", 3),
    ],
)
def test_replica_memo_never_changes_a_cost(cluster, workflow, seed, monkeypatch):
    memo = _costs(True, cluster, workflow, seed, monkeypatch)
    fresh = _costs(False, cluster, workflow, seed, monkeypatch)
    assert len(memo) == len(fresh) > 30
    assert memo == fresh


def test_replica_memo_tells_problems_sharing_a_topology_apart():
    p = build_problem(
        "placement", {"cluster": "hetrl-single-region", "workflow": "grpo-sync-qwen3-8b"}
    )
    q = dataclasses.replace(
        p,
        params=p.params.model_copy(
            update={"share_prompt_prefill": not p.params.share_prompt_prefill}
        ),
    )
    object.__setattr__(q, "topology", p.topology)  # one topology (and its memo) for both
    task = next(t for t in p.tasks if t.kind.value == "generation")
    gpus = [d.id for d in p.topology.devices][:16]
    cfg = next(c for c in task_configs(p, task, 16, is_heterogeneous(p, gpus)) if c.decode_batch)
    a, _ = task_cost(p, task, place_task(p, task, gpus, cfg))
    b, _ = task_cost(q, task, place_task(q, task, gpus, cfg))
    assert a["time_s"] != b["time_s"]


@pytest.mark.parametrize(
    "cluster,workflow,seed",
    [
        ("small-24", "ppo-sync-qwen3-8b", 0),
        (random_cluster(64, seed=1, zones=2, per_node=4, types=3), "grpo-async-qwen3-8b", 1),
    ],
)
def test_a_floor_kernel_gives_every_resident_sets_floor_to_the_last_bit(cluster, workflow, seed):
    """The placement ILP keeps one coster per generation layout and takes its prefill once
    (``FloorKernel``); beside each of several resident sets it must give the floor a coster
    built for that set gives."""
    from costmodels.placement.decode_cost import GenerationCoster
    from costmodels.placement.task_cost import FloorKernel, coster_floor

    p = build_problem("placement", {"cluster": cluster, "workflow": workflow})
    assert FloorKernel.applies(p)
    rng = random.Random(seed)
    devs = [d.id for d in p.topology.devices]
    task = next(t for t in p.tasks if t.kind.value == "generation")
    checked = 0
    for _ in range(12):
        k = rng.choice([s for s in (4, 8, 16) if s <= len(devs)])
        gpus = sorted(rng.sample(devs, k), key=devs.index)
        cfgs = [
            c for c in task_configs(p, task, k, is_heterogeneous(p, gpus)) if c.decode_batch is None
        ]
        tp_ = place_task(p, task, gpus, rng.choice(cfgs))
        own = task_memory(p, task, tp_)

        def mem(residents: float, own: dict = own) -> dict:
            return {
                d: {
                    "model_gb": mo * residents,
                    "working_gb": 0.0,
                    "capacity_gb": p.topology.devices[d].gpu.memory_gb - p.params.memory_reserve_gb,
                }
                for d, (mo, _) in own.items()
            }

        kernel = FloorKernel(GenerationCoster(p, task, tp_, mem(1.0)))
        for residents in (1.0, 1.7, 2.5, 1.2):
            fresh = GenerationCoster(p, task, tp_, mem(residents))
            assert kernel.dbs(mem(residents)) == fresh.replica_dbs()
            assert kernel.floor() == coster_floor(fresh)
            checked += 1
    assert checked == 48
