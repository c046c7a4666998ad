"""The fleet plan (``costmodels.fleet``, ``heuristics.fleet``): phases from the judge, the
co-scheduling problem they make, each job's plan on its group's GPUs, the validator stage by
stage, and ``rlplan plan fleet`` as a user runs it."""

from __future__ import annotations

import json

import pytest
import yaml

from costmodels.errors import SpecError
from costmodels.fleet.check import check_fleet
from costmodels.fleet.derive import (
    cosched_problem,
    member_problem,
    phase_times,
    rollout_devices,
    solo_problem,
)
from costmodels.fleet.judge import evaluate_fleet
from costmodels.fleet.presets import two_small_jobs
from costmodels.fleet.problem import FleetProblem, FleetSpec
from costmodels.placement.judge import evaluate_placement
from costmodels.workflow import ACTOR_GENERATION
from planner import solve
from tests.conftest import run_cli


def _fleet(**change) -> FleetProblem:
    spec = FleetSpec.model_validate({**two_small_jobs(), **change})
    spec.check()
    return FleetProblem(spec)


@pytest.fixture(scope="module")
def planned():
    problem = _fleet()
    return problem, solve(problem, "stages", seed=0)


def test_every_stage_of_the_plan_is_valid_and_the_judge_agrees(planned):
    problem, result = planned
    assert result.success, result.message
    assert check_fleet(problem, result.plan) == []
    cost, breakdown = evaluate_fleet(problem, result.plan)
    assert cost == pytest.approx(result.objective)
    assert set(breakdown["jobs"]) == {"a", "b"}
    for name, phases in result.plan.phases.items():
        gen = phases.placement.task(ACTOR_GENERATION).all_devices()
        assert set(gen) == set(rollout_devices(solo_problem(problem, name)))
        assert (phases.rollout_s, phases.train_s) == phase_times(problem, name, phases.placement)


def test_worst_case_phases_are_no_shorter_than_expected_ones(planned):
    problem, result = planned
    expected = _fleet(phases="expected")
    for name, phases in result.plan.phases.items():
        roll, train = phase_times(expected, name, phases.placement)
        assert phases.rollout_s >= roll and phases.train_s >= train


def test_a_job_in_its_group_trains_on_all_of_the_groups_training_gpus(planned):
    problem, result = planned
    for gi, group in enumerate(result.plan.cosched.groups):
        for member in group.jobs:
            jp = member_problem(problem, gi, group, member.name)
            devices = jp.placement.topology.devices
            train = [d for d in devices if d.zone == "train"]
            assert len(train) == group.train_nodes * problem.fleet.train_pool.gpus_per_node
            rollout = [d for d in devices if d.zone == "rollout"]
            assert len(rollout) == problem.fleet.jobs[problem.index[member.name]].rollout_gpus


def _edited(result, edit) -> dict:
    doc = json.loads(result.plan.model_dump_json())
    edit(doc)
    return doc


def _first_group_member(doc):
    return doc["cosched"]["groups"][0]["jobs"][0]["name"]


@pytest.mark.parametrize(
    "edit, stage",
    [
        (
            lambda d: d["phases"]["a"].update(rollout_s=d["phases"]["a"]["rollout_s"] / 2),
            "phases:times",
        ),
        (lambda d: d["phases"].pop("b"), "phases:jobs"),
        (lambda d: d["cosched"]["groups"].pop(), "cosched:jobs"),
        (lambda d: d["jobs"].pop(_first_group_member(d)), ":plan"),
        (
            lambda d: d["jobs"][_first_group_member(d)]["placement"]["tasks"][0].update(tp=64),
            ":placement:",
        ),
    ],
    ids=["phase-time", "phases-missing", "group-missing", "job-plan-missing", "job-placement"],
)
def test_a_plan_broken_by_hand_is_refused_naming_the_stage(planned, edit, stage):
    problem, result = planned
    plan = type(result.plan).model_validate(_edited(result, edit))
    violations = check_fleet(problem, plan)
    assert violations and any(stage in v.constraint for v in violations), violations


def test_the_phase_split_is_enforced(planned):
    problem, result = planned
    doc = json.loads(result.plan.model_dump_json())
    placement = doc["phases"]["a"]["placement"]
    # swap the two groups' devices: generation on the training pool
    g0, g1 = placement["groups"]
    g0["devices"], g1["devices"] = g1["devices"], g0["devices"]
    for task in placement["tasks"]:
        swap = {a: b for a, b in zip(g1["devices"], g0["devices"], strict=False)}
        swap |= {b: a for a, b in swap.items()}
        task["devices"] = [[[swap.get(x, x) for x in st] for st in rep] for rep in task["devices"]]
    plan = type(result.plan).model_validate(doc)
    assert any(v.constraint.startswith("phases:") for v in check_fleet(problem, plan))


@pytest.mark.parametrize(
    "job, field",
    [
        ({"workflow": "no-such-workflow"}, "jobs[0].workflow"),
        ({"workflow": {**two_small_jobs()["jobs"][0]["workflow"], "mode": "async"}}, "mode"),
        (
            {"workflow": {**two_small_jobs()["jobs"][0]["workflow"], "global_batch": -1}},
            "global_batch",
        ),
    ],
)
def test_a_bad_job_is_refused_naming_its_field(job, field):
    spec = two_small_jobs()
    spec["jobs"][0] = {**spec["jobs"][0], **job}
    with pytest.raises(SpecError, match="jobs\\[0\\]") as err:
        FleetSpec.model_validate(spec).check()
    assert field in err.value.field


def test_an_unknown_workflow_points_to_a_command_that_lists_workflows():
    import re
    import shlex

    spec = two_small_jobs()
    spec["jobs"][0] = {**spec["jobs"][0], "workflow": "nosuch"}
    with pytest.raises(SpecError) as err:
        FleetSpec.model_validate(spec).check()
    hint = re.search(r"\(rlplan ([^)]*)\)", err.value.reason)
    assert hint, err.value.reason
    proc = run_cli(*shlex.split(hint.group(1)))
    assert proc.returncode == 0, proc.stderr
    assert "grpo-sync-qwen3-4b" in proc.stdout


def test_a_job_alone_iterates_in_the_placement_judges_step_reward_stage_included():
    """RollMux §2's rollout phase scores what it generates: a job's two co-scheduling phases add
    up to the placement judge's synchronous step, its reward stage in the rollout phase."""
    spec = two_small_jobs(phases="expected")
    for job in spec["jobs"]:
        job["workflow"] = {
            **job["workflow"],
            "reward": {"seconds_per_response": 0.05, "workers": 2},
        }
    problem = _fleet(**spec)
    result = solve(problem, "stages", seed=0)
    assert result.success, result.message
    assert check_fleet(problem, result.plan) == []
    for name, phases in result.plan.phases.items():
        solo = evaluate_placement(solo_problem(problem, name), phases.placement).breakdown
        reward = solo["phases"]["reward_s"]
        assert reward == pytest.approx(16 * 4 * 0.05 / 2)
        assert phases.rollout_s == pytest.approx(solo["phases"]["generation_s"] + reward)
        assert phases.rollout_s + phases.train_s == pytest.approx(solo["iteration_time_s"])


def test_the_cosched_problem_carries_the_judges_phases(planned):
    problem, result = planned
    phases = {n: (p.rollout_s, p.train_s) for n, p in result.plan.phases.items()}
    jobs = {j.name: j for j in cosched_problem(problem, phases).jobs.jobs}
    for name, (roll, train) in phases.items():
        assert (jobs[name].t_rollout_s, jobs[name].t_train_s) == (roll, train)
        assert jobs[name].model == problem.workflows[name].models.actor


def test_rlplan_plan_fleet_writes_a_plan_that_validates_and_a_verl_export(tmp_path):
    out = tmp_path / "fleet-plan.json"
    r = run_cli("plan", "fleet", "--fleet", "fleet-two-small", "-o", str(out), "--export", "verl")
    assert r.returncode == 0, r.stderr
    assert "Fleet plan" in r.stdout and "slowdown/SLO" in r.stdout
    export = out.with_suffix(".verl.yaml").read_text()
    assert "a:" in export and "b:" in export
    r = run_cli("validate", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    doc["plan"]["phases"]["a"]["rollout_s"] *= 2
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc))
    r = run_cli("validate", str(broken))
    assert r.returncode != 0 and "phases:times" in r.stdout + r.stderr


def test_a_group_never_trains_a_job_on_fewer_gpus_than_it_asked_for():
    from costmodels.cosched.check import check_cosched
    from costmodels.cosched.plan import CoschedulePlan

    spec = two_small_jobs()
    spec["jobs"][0] = {**spec["jobs"][0], "train_gpus": 16}
    problem = _fleet(jobs=spec["jobs"])
    cp = cosched_problem(problem, {"a": (10.0, 10.0), "b": (10.0, 10.0)})
    assert {j.name: j.min_train_gpus for j in cp.jobs.jobs} == {"a": 16, "b": 2}
    one_node = CoschedulePlan.model_validate(
        {
            "groups": [
                {"rollout_nodes": 1, "train_nodes": 1, "jobs": [{"name": "a", "rollout": [0]}]},
                {"rollout_nodes": 1, "train_nodes": 1, "jobs": [{"name": "b", "rollout": [0]}]},
            ]
        }
    )
    assert [v.constraint for v in check_cosched(cp, one_node)] == ["train-nodes"]


def test_a_fleet_asking_for_more_gpus_than_the_bound_is_refused_before_work(tmp_path):
    """200 jobs of 1 024 + 1 024 GPUs (each job within its own bound): the fleet's total is
    refused in one line naming the jobs and their sum, exit 2, nothing written."""
    from costmodels.fleet.problem import MAX_FLEET_GPUS

    jobs = [
        {
            "name": f"j{i}",
            "workflow": "grpo-sync-qwen3-8b",
            "rollout_gpus": 1024,
            "train_gpus": 1024,
        }
        for i in range(200)
    ]
    (tmp_path / "f.yaml").write_text(yaml.safe_dump({"jobs": jobs}))
    out = tmp_path / "plan.json"
    r = run_cli("plan", "fleet", "--fleet", str(tmp_path / "f.yaml"), "-o", str(out), timeout=60)
    assert r.returncode == 2 and not out.exists()
    line = r.stderr.strip()
    assert "\n" not in line and "jobs" in line and "409,600 GPUs" in line
    assert f"{MAX_FLEET_GPUS:,}" in line


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [("reference_pass", "no", "true or false"), ("global_batch", "16", "a number")],
)
def test_an_inline_workflow_in_a_fleet_is_read_as_strictly_as_a_workflow_file(
    tmp_path, field, value, words
):
    """Pydantic's lax mode would read 'no' as False and '16' as 16: refused, naming the job's
    workflow field and the value, as a workflow file's would be."""
    from costmodels.fleet.presets import two_small_jobs

    fleet = two_small_jobs()
    fleet["jobs"][1]["workflow"][field] = value
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(fleet))
    out = tmp_path / "plan.json"
    r = run_cli("plan", "fleet", "--fleet", str(tmp_path / "f.yaml"), "-o", str(out), timeout=60)
    assert r.returncode == 2 and not out.exists(), r.stderr
    line = r.stderr.strip()
    assert f"jobs[1].workflow.{field}" in line and repr(value) in line and words in line
