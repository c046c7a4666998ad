"""OrchestrRL re-planning (issue 13): the Eq. 1 MILP against brute force and the cost model, the
validator, the heuristics' place below the optimum, and hostile state files."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from costmodels.errors import SpecError
from costmodels.replan.canned import tiny_state
from costmodels.replan.presets import synthetic_state
from costmodels.replan.problem import (
    ReplanPlan,
    ReplanProblem,
    ReplanSpec,
    check_replan,
    current_plan,
    evaluate_replan,
)
from costmodels.solving import Status
from formulations.replan.bruteforce import solve_replan_bruteforce
from formulations.replan.milp import solve_replan_milp
from heuristics.replan.greedy import solve_greedy, solve_keep, solve_verl_lo, solve_verl_to

HEURISTICS = (solve_greedy, solve_keep, solve_verl_to, solve_verl_lo)


def _random_tiny(seed: int) -> ReplanProblem:
    rng = np.random.default_rng(seed)
    tps = [1, 1] if rng.random() < 0.5 else [2]
    reqs = [[[int(rng.integers(1, 6000)), int(rng.integers(0, 3000))] for _ in range(int(rng.integers(1, 3)))] for _ in tps]
    return tiny_state(reqs, tps, delta=None)


@pytest.mark.parametrize("seed", range(6))
def test_milp_equals_brute_force_and_the_cost_model(seed):
    problem = _random_tiny(seed)
    brute = solve_replan_bruteforce(problem)
    milp = solve_replan_milp(problem, time_limit=60)
    assert milp.status is Status.OPTIMAL and check_replan(problem, milp.plan) == []
    evaluated, _ = evaluate_replan(problem, milp.plan)
    assert milp.objective == pytest.approx(evaluated, rel=1e-6)
    assert milp.objective == pytest.approx(brute.objective, rel=1e-6)
    for heuristic in HEURISTICS:
        out = heuristic(problem)
        if out.plan is not None:
            assert check_replan(problem, out.plan) == []
            assert out.objective >= milp.objective * (1 - 1e-6), heuristic.__name__


@pytest.mark.parametrize("seed", range(3))
def test_milp_on_a_small_pool_agrees_with_the_cost_model_and_beats_every_heuristic(seed):
    spec = ReplanSpec.model_validate(synthetic_state("Qwen2.5-7B", "H800", 1, 2, 4, 512, gpus_per_node=4, responses=8, seed=seed) | {"tps": [1, 2, 4]})
    spec.check()
    problem = ReplanProblem(spec)
    milp = solve_replan_milp(problem, time_limit=60, warm_start=solve_greedy)
    assert milp.plan is not None and check_replan(problem, milp.plan) == []
    assert milp.objective == pytest.approx(evaluate_replan(problem, milp.plan)[0], rel=1e-6)
    if milp.status is Status.OPTIMAL:
        for heuristic in HEURISTICS:
            out = heuristic(problem)
            assert out.objective >= milp.objective * (1 - 1e-6), heuristic.__name__
    assert milp.bound is not None and milp.bound <= milp.objective * (1 + 1e-9)


def test_kv_balance_constraint_binds_in_the_milp_and_the_validator():
    problem = tiny_state([[[3000, 500], [200, 300]], [[100, 200]]], [1, 1], delta=0.001)
    milp = solve_replan_milp(problem, time_limit=60)
    if milp.plan is not None:
        assert check_replan(problem, milp.plan) == []
    free = tiny_state([[[3000, 500], [200, 300]], [[100, 200]]], [1, 1])
    unconstrained = solve_replan_milp(free, time_limit=60)
    assert milp.plan is None or milp.objective >= unconstrained.objective * (1 - 1e-9)
    # a plan that leaves one instance's KV share far from the target is rejected once δ is set
    assert any(v.constraint == "(2) KV balance" for v in check_replan(problem, current_plan(problem)))


def test_current_plan_is_valid_and_is_the_unchanged_makespan():
    problem = tiny_state([[[3000, 500], [200, 300]], [[100, 200]]], [1, 1])
    plan = current_plan(problem)
    assert check_replan(problem, plan) == []
    obj, breakdown = evaluate_replan(problem, plan)
    assert obj == pytest.approx(breakdown["current_makespan_s"]) and breakdown["migrated_requests"] == 0
    assert all(r["switch_s"] == 0 and r["migrate_s"] == 0 for r in breakdown["instances"])


def test_validator_names_each_broken_rule():
    problem = tiny_state([[[3000, 500], [200, 300]], [[100, 200]]], [1, 1])
    good = current_plan(problem).model_dump()
    cases = {
        "disjoint": {"instances": [good["instances"][0], {**good["instances"][0], "bins": []}]},
        "gpus": {"instances": [{**good["instances"][0], "gpu": 5}]},
        "(4) assignment": {"instances": [good["instances"][0]]},
        "layout": {"instances": [{"node": 0, "gpu": 1, "tp": 1, "bins": good["instances"][0]["bins"] + good["instances"][1]["bins"]}]},
    }
    for rule, data in cases.items():
        names = {v.constraint for v in check_replan(problem, ReplanPlan.model_validate(data))}
        assert rule in names, (rule, names)


@pytest.mark.parametrize(("patch", "field"), [
    ({"tps": [3]}, "tps[0]"),
    ({"tps": [16]}, "tps[0]"),
    ({"instances": [{"node": 0, "gpu": 1, "tp": 2, "requests": [[10, 0]]}]}, "instances[0].gpu"),
    ({"instances": [{"node": 5, "gpu": 0, "tp": 2, "requests": [[10, 0]]}]}, "instances[0].node"),
    ({"instances": [{"node": 0, "gpu": 0, "tp": 2, "requests": [[0, 0]]}]}, "instances[0].requests[0]"),
    ({"instances": [{"node": 0, "gpu": 0, "tp": 2, "histogram": [[300, 1, 0]]}]}, "instances[0].histogram[0]"),
    ({"instances": [{"node": 0, "gpu": 0, "tp": 2}]}, "instances"),
    ({"gpu_budget": 99}, "gpu_budget"),
])
def test_bad_states_name_the_field(patch, field):
    base = {"model": "Qwen2.5-7B", "gpu": "H800", "nodes": 1, "instances": [{"node": 0, "gpu": 0, "tp": 2, "requests": [[10, 0]]}]}
    with pytest.raises(SpecError) as err:
        ReplanSpec.model_validate(base | patch).check()
    assert err.value.field == field


def test_cli_plans_validates_and_refuses_a_bad_state(tmp_path):
    out = tmp_path / "plan.json"
    cmd = [sys.executable, "-m", "benchmarks.cli"]
    run = subprocess.run([*cmd, "plan", "replan", "--state", "replan-tail", "--solver", "greedy", "-o", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert data["problem"] == "replan" and data["plan"]["instances"]
    assert subprocess.run([*cmd, "validate", str(out)], capture_output=True, text=True).returncode == 0
    bad = tmp_path / "state.yaml"
    bad.write_text("model: Qwen2.5-7B\ngpu: H800\nnodes: 1\ninstances:\n  - {node: 0, gpu: 0, tp: 2, requests: [[-4, 0]]}\n")
    run = subprocess.run([*cmd, "plan", "replan", "--state", str(bad), "-o", str(tmp_path / "x.json")], capture_output=True, text=True)
    assert run.returncode == 2 and "instances[0].requests[0]" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "x.json").exists()


def test_instance_makespan_stays_near_the_generation_simulator():
    """T_j of the cost model (what the MILP optimises) against the request-level simulator on the
    true lengths; the full distribution is in benchmarks/results/replan (benchmarks.replan_tk_error)."""
    from benchmarks.replan_tk_error import run, summary

    s = summary(run(12))
    assert s["median_abs"] < 0.10 and abs(s["worst"]) < 0.5, s
