"""The placement ILP costs its columns in worker processes (``formulations.placement.costing``)
and takes the same path to the same plan as in process: same relaxed pairs, masters, columns,
expansions and task evaluations, the plan to the last digit."""

from __future__ import annotations

import json

import pytest

from costmodels.placement.space import compositions
from costmodels.solving import Status
from formulations.placement import costing
from formulations.placement.ilp import solve_placement_ilp
from planner.io import build_problem
from search.placement.group_options import GroupOptions

PATH = ("pairs", "iterations", "columns", "master_solves", "expansions", "task_evaluations")


def _builder(cluster: str, workflow: str) -> GroupOptions:
    return GroupOptions(build_problem("placement", {"cluster": cluster, "workflow": workflow}))


def _run(cluster: str, workflow: str, workers: int, **kw):
    p = build_problem("placement", {"cluster": cluster, "workflow": workflow})
    return solve_placement_ilp(p, workers=workers, **kw)


@pytest.mark.parametrize(
    "cluster,workflow",
    [("small-16", "ppo-async-qwen3-8b"), ("small-16", "grpo-sync-qwen3-8b")],
)
def test_workers_take_the_same_path_to_the_same_plan(cluster, workflow):
    one = _run(cluster, workflow, 1)
    two = _run(cluster, workflow, 2)
    assert one.status is Status.OPTIMAL and two.status is Status.OPTIMAL
    assert two.objective == one.objective
    assert json.dumps(two.plan.model_dump(), sort_keys=True) == json.dumps(
        one.plan.model_dump(), sort_keys=True
    )
    assert {k: two.stats[k] for k in PATH} == {k: one.stats[k] for k in PATH}
    assert (one.stats["workers"], two.stats["workers"]) == (1, 2)


def test_a_worker_stopped_by_the_limit_stops_the_solve():
    """The workers get the solve's remaining time; the one that runs out raises in the caller,
    which returns what it has, as in process."""
    out = _run("small-24", "ppo-sync-qwen3-8b", 2, time_limit=0.5)
    assert out.status in (Status.FEASIBLE, Status.NO_SOLUTION)
    assert "time limit" in out.message


def test_auto_costs_in_process_below_the_threshold_and_in_workers_above(monkeypatch):
    small = _builder("small-16", "grpo-sync-qwen3-8b")
    big = _builder("small-24", "ppo-sync-qwen3-8b")
    monkeypatch.setattr(costing.os, "sched_getaffinity", lambda _: {0, 1, 2, 3}, raising=False)
    a = costing.column_costing(small, None)
    b = costing.column_costing(big, None)
    try:
        assert a.workers == 1
        assert b.workers == costing.AUTO_WORKERS
    finally:
        a.close()
        b.close()
    monkeypatch.setattr(costing.os, "sched_getaffinity", lambda _: {0}, raising=False)
    c = costing.column_costing(big, None)
    assert c.workers == 1  # one usable CPU: workers would only add their start-up


def test_compositions_spread_over_the_workers():
    """Not by lattice position, which on classes of odd size is the GPU count's parity."""
    big = _builder("small-24", "ppo-sync-qwen3-8b")
    comps = list(compositions(big.cap))
    pool = costing.ProcessCosting(big, 2)
    try:
        even = [c for c in comps if sum(c) % 2 == 0]
        share = sum(pool.owner(c) for c in even) / len(even)
        assert 0.4 < share < 0.6
    finally:
        pool.close()


def _solve_in(queue) -> None:
    try:
        out = _run("small-16", "grpo-sync-qwen3-8b", 2)
        queue.put((out.status.value, out.objective, out.stats["workers"]))
    except Exception as exc:  # the failure, not a silent child
        queue.put((repr(exc), None, None))


def test_a_pool_worker_costs_in_process():
    """A process pool's workers are daemonic and may not start processes (``rlplan bench``'s
    local executor runs every solver in one): there the ILP costs in process, same plan."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_solve_in, args=(queue,), daemon=True)
    proc.start()
    status, objective, workers = queue.get(timeout=120)
    proc.join(timeout=60)
    assert (status, workers) == ("optimal", 1)
    assert objective == _run("small-16", "grpo-sync-qwen3-8b", 1).objective
