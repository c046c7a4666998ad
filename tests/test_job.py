"""The job plan (``costmodels.job``, ``heuristics.job``): the rollout problem a placement leaves,
the composed step, the validator, and ``rlplan plan job`` as a user runs it."""

from __future__ import annotations

import math

import pytest
import yaml

from costmodels.circuits.plan import CircuitPlan
from costmodels.job.canned import CLUSTER, _problem, _workflow
from costmodels.job.check import check_job
from costmodels.job.derive import (
    lognormal_of,
    no_rollout_reason,
    replan_setting,
    rollout_problem,
    weight_sync_circuits,
)
from costmodels.job.judge import evaluate_job
from costmodels.job.plan import REPLAN_MARGIN, JobPlan
from costmodels.placement.judge import evaluate_placement
from costmodels.response_lengths import ResponseLengths
from costmodels.rollout.plan import RolloutPlan
from heuristics.job.replan import advise_replan
from planner import solve
from planner.io import build_problem
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def tail_job():
    problem = _problem(tail=True)
    return problem, solve(problem, "sequential", seed=0)


def test_a_lognormal_enters_the_rollout_job_with_its_spread_split_as_rollpacker_calibrated(
    tail_job,
):
    problem, result = tail_job
    rp, why = rollout_problem(problem, result.plan.placement)
    assert rp is not None, why
    lengths = rp.workload.lengths
    assert math.hypot(lengths.sigma_prompt, lengths.sigma_response) == pytest.approx(0.9)
    assert lengths.sigma_prompt / lengths.sigma_response == pytest.approx(0.75 / 0.55)
    assert lengths.median == 300 and lengths.p_hard == 0
    wf = problem.workflow
    assert rp.workload.prompts_per_step == wf.global_batch
    assert rp.workload.max_response == wf.response_length


def test_a_histogram_enters_as_its_median_and_log_spread():
    hist = ResponseLengths(distribution="histogram", bins=((100, 1), (200, 2), (400, 1)))
    median, sigma = lognormal_of(hist, 4096)
    assert median == 200
    logs = [math.log(100), math.log(200), math.log(200), math.log(400)]
    mean = sum(logs) / 4
    assert sigma == pytest.approx(math.sqrt(sum((x - mean) ** 2 for x in logs) / 4))


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"algorithm": "ppo", "models": {"actor": "Qwen3-1.7B", "critic": "Qwen3-1.7B"}}, "PPO"),
        ({"mode": "async"}, "overlaps"),
        ({"response_lengths": {"distribution": "constant"}}, "constant"),
    ],
)
def test_jobs_without_knobs_say_why(change, reason):
    wf = {**_workflow(True), **change}
    problem = build_problem("job", {"cluster": CLUSTER, "workflow": wf})
    plan = solve(problem.placement, "verl", seed=0).plan
    assert reason in no_rollout_reason(problem, plan)
    r = solve(problem, "sequential", seed=0, placement="verl")
    assert r.plan.rollout is None and reason in r.breakdown["rollout"]["why"]
    # no knobs: the job's step is the placement judge's, exactly
    assert r.objective == evaluate_placement(problem.placement, r.plan.placement).objective


def test_the_knobs_only_shorten_generation_and_the_step_composes_from_the_placement_judge(
    tail_job,
):
    problem, result = tail_job
    assert result.violations == []
    b = result.breakdown
    effect = b["rollout"]
    assert effect["applied"] and effect["ratio"] <= 1.0
    placement = evaluate_placement(problem.placement, result.plan.placement)
    gen = placement.breakdown["phases"]["generation_s"]
    assert result.objective == pytest.approx(placement.objective - gen + gen * effect["ratio"])
    assert result.objective <= placement.objective
    # the descent starts from veRL's rollout at the placement's TP and keeps that TP for short
    # rounds
    assert result.plan.rollout.short_tp == result.plan.placement.task("actor_generation").tp


def test_verl_does_not_run_the_knobs_so_they_are_reported_not_counted(tail_job):
    problem, result = tail_job
    verl = build_problem(
        "job", {"cluster": CLUSTER, "workflow": _workflow(True), "target": {"framework": "verl"}}
    )
    step, b = evaluate_job(verl, result.plan)
    assert not b["rollout"]["applied"] and "verl" in b["rollout"]["why"]
    assert step == pytest.approx(b["placement_step_s"])


def test_the_validator_refuses_knobs_a_job_cannot_have_and_a_tp_the_placement_does_not_run(
    tail_job,
):
    problem, result = tail_job
    tp = result.plan.placement.task("actor_generation").tp
    other = RolloutPlan(short_tp=tp * 2, long_tp=tp * 2)
    bad = check_job(problem, JobPlan(placement=result.plan.placement, rollout=other))
    assert "rollout-tp" in {v.constraint for v in bad}
    constant = _problem(tail=False)
    plan = JobPlan(placement=result.plan.placement, rollout=result.plan.rollout)
    assert [v.constraint for v in check_job(constant, plan)] == ["rollout-scope"]


def test_the_replan_advice_is_measured_again_the_same_and_never_credited_to_the_step(tail_job):
    problem, result = tail_job
    advice = result.plan.replan
    setting, why = replan_setting(problem, result.plan.placement)
    assert setting is not None and advice is not None, why
    assert advice.start_tp == setting.tp == result.plan.placement.task("actor_generation").tp
    # the simulator is deterministic: the same pool and steps give the same advice
    assert advise_replan(problem, result.plan.placement) == (advice, "")
    assert advice.best_static_s <= advice.static_s
    assert advice.ratio == pytest.approx(advice.replanned_s / advice.static_s)
    assert (advice.decision == "re-plan") == (advice.ratio <= 1 - REPLAN_MARGIN)
    b = result.breakdown["replan"]
    assert not b["applied"] and b["advice"] == advice.model_dump()
    # advice only: the step is the same without it
    without = evaluate_job(problem, result.plan.model_copy(update={"replan": None}))[0]
    assert result.objective == without


def test_the_validator_refuses_replan_advice_edited_by_hand(tail_job):
    problem, result = tail_job
    a = result.plan.replan
    assert a is not None

    def broken(**change):
        plan = result.plan.model_copy(update={"replan": a.model_copy(update=change)})
        return {v.constraint for v in check_job(problem, plan)}

    assert broken(start_tp=a.start_tp * 2) == {"replan-tp"}
    assert broken(ratio=a.ratio * 0.5) >= {"replan-ratio"}
    assert broken(best_static_s=a.static_s * 2) == {"replan-oracle"}
    flipped = "keep" if a.decision == "re-plan" else "re-plan"
    assert broken(decision=flipped) == {"replan-decision"}
    constant = _problem(tail=False)
    plan = JobPlan(placement=result.plan.placement, replan=a)
    assert [v.constraint for v in check_job(constant, plan)] == ["replan-scope"]


def test_rlplan_plan_job_writes_a_plan_validate_accepts_and_a_roll_export(tmp_path):
    spec = {"problem": "job", "cluster": CLUSTER, "workflow": _workflow(True)}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "plan.json"
    proc = run_cli("plan", str(path), "-o", str(out), "--export", "roll", "--export", "verl")
    assert proc.returncode == 0, proc.stderr
    assert "rollout knobs" in proc.stdout and "expected error" in proc.stdout
    assert "re-planning" in proc.stdout
    roll = yaml.safe_load(out.with_suffix(".roll.yaml").read_text())
    assert "max_prompts_ratio" in roll
    verl = out.with_suffix(".verl.yaml").read_text()
    assert "RollPacker" in verl  # the knobs verl cannot run are named
    check = run_cli("validate", str(out))
    assert check.returncode == 0, check.stdout + check.stderr
    costs = run_cli("evaluate", str(out))
    assert costs.returncode == 0 and "rollout knobs" in costs.stdout, costs.stderr


def test_rlplan_plan_job_refuses_a_placement_solver_it_does_not_know():
    proc = run_cli("plan", "job", "--cluster", "small-4", "-O", "placement=nope")
    assert proc.returncode == 2 and "placement" in proc.stderr


@pytest.fixture(scope="module")
def fabric_job():
    problem = build_problem(
        "job",
        {"cluster": "h100-32", "workflow": "grpo-async-qwen3-32b", "fabric": "ocs-h100-32"},
    )
    return problem, solve(problem, "sequential", seed=0)


def test_on_an_optical_fabric_the_weight_sync_gets_circuits_reported_not_credited(fabric_job):
    problem, result = fabric_job
    assert result.violations == [] and result.plan.circuits is not None
    cp, why = weight_sync_circuits(problem, result.plan.placement)
    assert cp is not None, why
    # every generation node pulls the shard it lacks from every training node: W / T bytes each
    gen = {
        d.split(":")[0]
        for r in result.plan.placement.task("actor_generation").devices
        for s in r
        for d in s
    }
    train = {
        d.split(":")[0]
        for r in result.plan.placement.task("actor_training").devices
        for s in r
        for d in s
    }
    assert {(e.src, e.dst) for e in cp.demand.entries} == {
        (t, g) for t in train for g in gen if t != g
    }
    c = result.breakdown["circuits"]
    assert c["circuits"] == len(result.plan.circuits.circuits) and not c["applied"]
    assert c["bottleneck_s"] > 0 and c["uncovered_pairs"] == 0
    without = evaluate_job(problem, result.plan.model_copy(update={"circuits": None}))[0]
    assert result.objective == without


def test_the_validator_refuses_circuits_beyond_the_ports_or_without_a_fabric(fabric_job):
    problem, result = fabric_job
    first = result.plan.circuits.circuits[0]
    many = CircuitPlan(circuits=[first.model_copy(update={"count": 100})])
    bad = check_job(problem, result.plan.model_copy(update={"circuits": many}))
    assert bad and all(v.constraint.startswith("circuits:") for v in bad)
    bare = build_problem("job", {"cluster": "h100-32", "workflow": "grpo-async-qwen3-32b"})
    assert [v.constraint for v in check_job(bare, result.plan)] == ["circuits-scope"]


def test_a_fabric_whose_endpoints_are_not_the_clusters_nodes_is_refused_in_one_line(tmp_path):
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text(
        yaml.safe_dump(
            {
                "link_gbps": 400,
                "endpoints": [{"name": "h100-0", "ports": 8}, {"name": "tor9", "ports": 8}],
            }
        )
    )
    out = tmp_path / "plan.json"
    proc = run_cli("plan", "job", "--cluster", "h100-32", "--fabric", str(fabric), "-o", str(out))
    assert proc.returncode == 2 and not out.exists()
    line = proc.stderr.strip().splitlines()
    assert len(line) == 1 and "tor9" in line[0] and "endpoints[1].name" in line[0], proc.stderr


def test_the_summary_names_a_static_tp_the_simulator_found_faster():
    from costmodels.job.summary import _replan_row

    advice = {
        "decision": "re-plan",
        "start_tp": 2,
        "first_switch_s": 30.0,
        "ratio": 0.74,
        "best_static_tp": 4,
        "static_s": 200.0,
        "best_static_s": 180.0,
    }
    name, choice, effect = _replan_row({"advice": advice, "why": ""})
    assert choice == "re-plan (TP2 start, first at 30 s)"
    assert "-26.0%" in effect and "static TP4: -10.0%" in effect
    same = _replan_row({"advice": {**advice, "best_static_tp": 2}, "why": ""})[2]
    assert "static TP" not in same


def test_a_limit_reached_after_the_placement_keeps_the_plan_and_drops_only_the_advice(tail_job):
    """The clock runs out once the placement is found: the job plan is still returned and
    judged in full, the knobs stop at their baseline's worth, and the re-planning advice (never
    credited to the step) says it was not assessed; the record says the clock had its say."""
    from costmodels.solving import SolverOutput, Status, clock_record
    from heuristics.job.sequential import solve_sequential

    problem, result = tail_job
    placed = result.plan.placement

    def given(p, *, time_limit=None, seed=0, **_):
        return SolverOutput(Status.FEASIBLE, placed, message="given")

    # a limit long past once the placement returns
    with clock_record(1e-9, explicit=True) as record:
        out = solve_sequential(problem, time_limit=1e-9, placement="verl", placers={"verl": given})
    assert out.status is Status.FEASIBLE and out.plan.placement == placed
    assert out.plan.replan is None and "not assessed" in out.stats["replan"]["why"]
    assert out.stats["knobs"]["stopped"] == "time limit"
    assert out.objective == pytest.approx(evaluate_job(problem, out.plan)[0])
    assert record.bound


def test_the_advices_simulation_stops_at_the_limit(tail_job):
    """The advice's schemes advance the simulator a few events at a time: its checkpoints count
    events over every call, so a limit already past stops the advice within its first
    thousand events, with the solve's record marked."""
    from costmodels.solving import DeadlineExceeded, clock_record
    from heuristics.job.replan import advise_replan

    problem, result = tail_job
    with clock_record(1e-9, explicit=True) as record, pytest.raises(DeadlineExceeded):
        advise_replan(problem, result.plan.placement)
    assert record.bound


def test_a_limit_reached_inside_the_advices_simulation_drops_only_the_advice(tail_job, monkeypatch):
    """The simulator's checkpoint stops the advice mid-way (DeadlineExceeded): the plan stays."""
    import heuristics.job.sequential as sequential
    from costmodels.solving import DeadlineExceeded, SolverOutput, Status

    problem, result = tail_job

    def cut(*_):
        raise DeadlineExceeded("time limit of 1 s reached inside one evaluation")

    monkeypatch.setattr(sequential, "advise_replan", cut)
    out = sequential.solve_sequential(
        problem,
        placement="verl",
        placers={"verl": lambda p, **_: SolverOutput(Status.FEASIBLE, result.plan.placement)},
    )
    assert out.plan is not None and out.plan.replan is None
    assert out.stats["replan"]["why"].endswith("during its simulation")
