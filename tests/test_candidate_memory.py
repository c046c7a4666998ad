"""The placement search reads a configuration's per-GPU memory from a memo keyed on what a
tasklet's memory reads (``costmodels.placement.memory.tasklet_rows_key``): the layout's shape,
and the replicas' batch shares only where they matter. Every array it returns must be the one
``task_memory`` gives for that placement, GPU by GPU, on every kind of task, balance and decode
batch, including training replicas with fewer micro-batches than stages."""

from __future__ import annotations

import random

import pytest

from benchmarks.instances import random_cluster
from costmodels.placement.memory import task_memory
from costmodels.placement.space import is_heterogeneous, place_task, task_configs
from planner.io import build_problem
from search.placement.candidates import TaskCandidates


@pytest.mark.parametrize(
    "cluster,workflow,overrides,seed",
    [
        ("small-24", "ppo-sync-qwen3-8b", {}, 0),
        (random_cluster(48, seed=2, zones=2, per_node=8, types=3), "grpo-async-qwen3-8b", {}, 1),
        # 8 samples (2 prompts x 4) in micro-batches of 4 over up to 16 replicas: most have
        # fewer micro-batches than stages, so their shares decide how many are in flight
        (
            "small-24",
            "ppo-sync-qwen3-8b",
            {"global_batch": 2, "responses_per_prompt": 4, "micro_batch_size": 4},
            2,
        ),
    ],
)
def test_memoised_memory_is_task_memory_gpu_by_gpu(cluster, workflow, overrides, seed):
    p = build_problem("placement", {"cluster": cluster, "workflow": workflow})
    if overrides:
        wf = {**p.workflow.model_dump(mode="json", exclude_none=True), **overrides}
        p = build_problem("placement", {"cluster": cluster, "workflow": wf})
        assert p.workflow.samples == 8
    search = TaskCandidates(p)
    rng = random.Random(seed)
    devs = [d.id for d in p.topology.devices]
    index = p.topology.index_of()
    checked = 0
    for _ in range(60):
        k = rng.choice([s for s in (2, 4, 6, 8, 12, 16) if s <= len(devs)])
        gpus = sorted(rng.sample(devs, k), key=devs.index)
        task = rng.choice(p.tasks)
        for cfg in task_configs(p, task, k, is_heterogeneous(p, gpus)):
            tp_ = place_task(p, task, gpus, cfg)
            model, working = search._memory(task, tp_)
            want = task_memory(p, task, tp_)
            assert model.tolist() == [want[index[g]][0] for g in gpus]
            assert working.tolist() == [want[index[g]][1] for g in gpus]
            checked += 1
    assert checked > 200
