"""Fully asynchronous RL (verl ``fully_async_policy``) in the placement judge: what staleness and
partial rollout buy, and the step's shape (``costmodels.placement.judge``'s module doc)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels.errors import SpecError
from costmodels.placement.canned import ONE_ZONE, small_workflow
from costmodels.placement.judge import StepShape, evaluate_placement, overlapped_step
from costmodels.placement.space import TaskConfig, build_plan
from costmodels.workflow import ACTOR_GENERATION, WorkflowSpec
from planner.io import build_problem

TAIL = {"distribution": "lognormal", "median": 120, "sigma": 0.9}


def _problem(mode: str = "fully-async", **knobs: Any):
    wf = {**small_workflow(mode=mode), "response_lengths": TAIL}
    if mode == "fully-async":
        wf["fully_async"] = knobs
    return build_problem("placement", {"cluster": ONE_ZONE, "workflow": wf})


def _split(problem):
    """Generation alone on one GPU, the trainer on the other two."""
    devs = [d.id for d in problem.topology.devices]
    names = [t.name for t in problem.tasks]
    configs = {n: TaskConfig(1, 1, 1) for n in names}
    rest = [n for n in names if n != ACTOR_GENERATION]
    return build_plan(problem, [([ACTOR_GENERATION], devs[:1]), (rest, devs[1:2])], configs)


def _phases(problem) -> dict[str, float]:
    return evaluate_placement(problem, _split(problem)).breakdown["phases"]


def test_a_rollouter_that_drains_waits_for_the_tail_as_one_step_off_does():
    off = _phases(_problem("async"))
    drain = _phases(_problem(staleness=0.0, partial_rollout=False))
    zero = _phases(_problem(staleness=0.0))  # nothing to run ahead with
    no_partial = _phases(_problem(staleness=1.0, partial_rollout=False))
    assert drain["generation_s"] == pytest.approx(off["generation_s"], rel=1e-12)
    assert zero["generation_s"] == pytest.approx(off["generation_s"], rel=1e-12)
    assert no_partial["generation_s"] == pytest.approx(off["generation_s"], rel=1e-12)


@settings(max_examples=15, deadline=None)
@given(a=st.floats(0.0, 3.0), b=st.floats(0.0, 3.0))
def test_more_staleness_never_slows_generation(a, b):
    lo, hi = sorted((a, b))
    g_lo = _phases(_problem(staleness=lo))["generation_s"]
    g_hi = _phases(_problem(staleness=hi))["generation_s"]
    assert g_hi <= g_lo * (1 + 1e-12)


def test_staleness_hides_the_tail_down_to_the_throughput_bound_and_no_further():
    drain = _phases(_problem(staleness=0.0, partial_rollout=False))["generation_s"]
    some = _phases(_problem(staleness=0.1))["generation_s"]
    ample = _phases(_problem(staleness=8.0))["generation_s"]
    more = _phases(_problem(staleness=16.0))["generation_s"]
    assert ample < some < drain
    assert more == pytest.approx(ample, rel=1e-12)  # the tail is gone: full occupancy


def test_the_step_of_a_draining_rollouter_adds_the_last_local_update():
    """max(busy, trainer, generation + trainer / updates_per_sync) + transfer."""
    for updates in (1, 2, 4):
        p = _problem(staleness=0.0, partial_rollout=False, updates_per_sync=updates)
        ev = evaluate_placement(p, _split(p))
        ph = ev.breakdown["phases"]
        trainer = ph["inference_s"] + ph["training_s"]
        core = overlapped_step(
            ph.get("generation_group_busy_s", ph["generation_s"]),
            ph["generation_s"],
            trainer,
            1 / updates,
        )
        assert ev.objective == pytest.approx(core + ph["weight_transfer_s"], rel=1e-12)
        assert StepShape.of(p.workflow).trailing == pytest.approx(1 / updates)
    streaming = _problem(staleness=0.5)
    assert StepShape.of(streaming.workflow).trailing == 0.0


def _spec(**fields: Any) -> WorkflowSpec:
    wf = WorkflowSpec.model_validate({**small_workflow(), **fields})
    wf.check()
    return wf


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"fully_async": {"staleness": 0.5}}, "fully_async"),
        ({"mode": "async", "fully_async": {}}, "fully_async"),
        ({"mode": "fully-async", "fully_async": {"updates_per_sync": 3}}, "updates_per_sync"),
        (
            {"mode": "fully-async", "mini_batch": 8, "fully_async": {"updates_per_sync": 4}},
            "updates_per_sync",
        ),
    ],
)
def test_contradictory_knobs_are_refused_naming_the_field(fields, where):
    with pytest.raises(SpecError) as err:
        _spec(**fields)
    assert where in err.value.field


def test_defaults_are_verls():
    """fully_async_ppo_trainer.yaml at v0.7.0 and 0.9.1: staleness_threshold 0.1,
    partial_rollout True; one local update per sync is rlplan's (a step is one sync)."""
    knobs = _spec(mode="fully-async").asynchrony
    assert (knobs.staleness, knobs.partial_rollout, knobs.updates_per_sync) == (0.1, True, 1)


def test_each_local_update_is_an_optimizer_step_as_the_export_runs_it():
    """Without a mini-batch, a fully-async trainer takes updates_per_sync optimizer steps per RL
    step (the verl export's ppo_mini_batch_size is the local update's prompts), each with its
    gradient sync; with one, global_batch / mini_batch of them."""
    one = _problem(staleness=0.5, updates_per_sync=1)
    four = _problem(staleness=0.5, updates_per_sync=4)
    assert one.workflow.optimizer_steps == 1 and four.workflow.optimizer_steps == 4
    devs = [d.id for d in one.topology.devices]
    names = [t.name for t in one.tasks]

    def dp_s(problem) -> float:
        # every task data-parallel over two GPUs, so training has a gradient sync
        plan = build_plan(problem, [(names, devs[:2])], {n: TaskConfig(1, 1, 2) for n in names})
        return evaluate_placement(problem, plan).breakdown["tasks"]["actor_training"]["dp_s"]

    assert dp_s(one) > 0
    assert dp_s(four) == pytest.approx(4 * dp_s(one), rel=1e-12)
    wf = {**small_workflow(mode="fully-async"), "fully_async": {"updates_per_sync": 4}}
    mini = WorkflowSpec(**{**wf, "mini_batch": wf["global_batch"] // 8})
    assert mini.optimizer_steps == 8
