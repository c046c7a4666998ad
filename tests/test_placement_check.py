"""The independent placement validator catches each class of violation and names it."""

from __future__ import annotations

import pytest

from costmodels.placement.check import check_placement
from costmodels.placement.plan import PlacementPlan, TaskGroup
from costmodels.placement.space import tasklet_layout as layout
from heuristics.placement.colocated import colocated_plan
from planner.io import build_problem


@pytest.fixture(scope="module")
def problem():
    return build_problem("placement", {"cluster": "small-8", "workflow": "grpo-sync-qwen3-4b"})


def names(violations):
    return {v.constraint for v in violations}


def test_valid_plan_has_no_violations(problem):
    assert check_placement(problem, colocated_plan(problem, 2, 2, 1)) == []


def test_missing_and_unknown_tasks(problem):
    plan = colocated_plan(problem, 2, 2, 1)
    dropped = PlacementPlan(groups=plan.groups, tasks=plan.tasks[1:])
    assert "C2-coverage" in names(check_placement(problem, dropped))
    extra = plan.tasks[0].model_copy(update={"task": "critic_training"})
    assert "C2-coverage" in names(
        check_placement(problem, PlacementPlan(groups=plan.groups, tasks=[*plan.tasks, extra]))
    )


def test_overlapping_groups_and_unknown_gpus(problem):
    plan = colocated_plan(problem, 2, 2, 1)
    devices = plan.groups[0].devices
    groups = [
        TaskGroup(tasks=["actor_generation"], devices=devices),
        TaskGroup(tasks=[t.task for t in plan.tasks[1:]], devices=devices),
    ]
    assert "groups" in names(
        check_placement(problem, PlacementPlan(groups=groups, tasks=plan.tasks))
    )
    ghost = [TaskGroup(tasks=plan.groups[0].tasks, devices=[*devices, "zz:0"])]
    assert "groups" in names(
        check_placement(problem, PlacementPlan(groups=ghost, tasks=plan.tasks))
    )


def test_task_outside_its_group(problem):
    all_dev = [d.id for d in problem.topology.devices]
    plan = colocated_plan(problem, 2, 2, 1)
    gen = next(t for t in plan.tasks if t.task == "actor_generation")
    rest = [t for t in plan.tasks if t.task != "actor_generation"]
    groups = [
        TaskGroup(tasks=["actor_generation"], devices=all_dev[:4]),
        TaskGroup(tasks=[t.task for t in rest], devices=all_dev[4:]),
    ]
    v = check_placement(problem, PlacementPlan(groups=groups, tasks=[gen, *rest]))
    assert "groups" in names(v)


def test_shape_errors(problem):
    plan = colocated_plan(problem, 2, 2, 1)
    t0 = plan.tasks[0]
    bad_tp = t0.model_copy(
        update={"tp": 3, "devices": layout(plan.groups[0].devices[:6], 3, 1, 2), "dp": 2}
    )
    assert "shape" in names(
        check_placement(problem, PlacementPlan(groups=plan.groups, tasks=[bad_tp, *plan.tasks[1:]]))
    )
    wrong_dims = t0.model_copy(update={"dp": 3})
    assert "shape" in names(
        check_placement(
            problem, PlacementPlan(groups=plan.groups, tasks=[wrong_dims, *plan.tasks[1:]])
        )
    )
    t1 = plan.tasks[1]
    split = t1.model_copy(update={"layers_per_stage": [1, 2]})
    assert "shape" in names(
        check_placement(
            problem, PlacementPlan(groups=plan.groups, tasks=[t0, split, *plan.tasks[2:]])
        )
    )
    shares = t1.model_copy(update={"batch_shares": [0.7, 0.7]})
    assert "shape" in names(
        check_placement(
            problem, PlacementPlan(groups=plan.groups, tasks=[t0, shares, *plan.tasks[2:]])
        )
    )


def test_memory_overflow_names_gpu_and_numbers(problem):
    plan = colocated_plan(problem, 1, 1, 1)
    v = [x for x in check_placement(problem, plan) if x.constraint == "C3-memory"]
    assert v, "four Qwen3-4B copies with unsharded training state cannot fit on one A100-40GB"
    assert "a100-0:0" in v[0].message and "GB" in v[0].message and "A100-40GB" in v[0].message


def test_uneven_split_and_shares_are_accepted(problem):
    plan = colocated_plan(problem, 2, 2, 2)  # inference/training: tp=2, pp=2, dp=2
    t1 = plan.tasks[1].model_copy(
        update={"layers_per_stage": [20, 16], "batch_shares": [0.75, 0.25]}
    )
    assert (
        check_placement(
            problem, PlacementPlan(groups=plan.groups, tasks=[plan.tasks[0], t1, *plan.tasks[2:]])
        )
        == []
    )
