"""load spec -> solve -> write JSON -> `rlplan validate` -> exit 0; tamper -> exit 1
(docs/architecture.md, "Data flow" step 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costmodels.circuits.plan import Circuit, CircuitPlan
from costmodels.solving import SolverOutput, Status
from heuristics.placement.colocated import colocated_plan
from planner import Registry, load_problem, solve
from planner.io import build_problem, write_atomic
from planner.planfile import result_to_json
from tests.conftest import SMALL_PLACEMENT, run_cli, run_cli_json


def trivial_placement(problem, *, time_limit=None, seed=0):
    """Test double: every task on every GPU, TP=2, PP=1, no search."""
    return SolverOutput(
        Status.FEASIBLE, plan=colocated_plan(problem, 2, 2, 1), message="test double"
    )


def trivial_circuits(problem, *, time_limit=None, seed=0):
    """Test double: one circuit per demanded pair while ports last."""
    free = problem.fabric.degrees()
    circuits = []
    for pair in sorted(problem.pair_demand(), key=sorted):
        a, b = sorted(pair)
        if free[a] and free[b] and pair in problem.fabric.eligible_pairs():
            circuits.append(Circuit(a=a, b=b, count=1))
            free[a] -= 1
            free[b] -= 1
    return SolverOutput(Status.FEASIBLE, plan=CircuitPlan(circuits=circuits))


@pytest.fixture
def registry() -> Registry:
    reg = Registry.builtin_problems()
    reg.register("placement", "trivial", trivial_placement, description="test double")
    reg.register("circuits", "trivial", trivial_circuits, description="test double")
    return reg


def _write(result, path: Path) -> Path:
    write_atomic(path, result_to_json(result))
    return path


def test_placement_round_trip_and_tamper(registry, tmp_path: Path):
    problem = build_problem("placement", {"cluster": "small-16", "workflow": "grpo-sync-qwen3-4b"})
    result = solve(problem, "trivial", registry=registry)
    assert result.success, result.message + str(result.violations)
    path = _write(result, tmp_path / "plan.json")
    proc = run_cli("validate", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "valid" in proc.stdout

    # tamper a number in the plan: the recorded objective no longer matches the cost model
    doc = json.loads(path.read_text())
    doc["objective"] *= 0.9
    bad = tmp_path / "tampered-objective.json"
    bad.write_text(json.dumps(doc))
    proc = run_cli("validate", str(bad))
    assert proc.returncode == 1
    assert "[objective]" in proc.stderr

    # tamper the plan itself: one tasklet moved onto a GPU the task already uses (C1)
    doc = json.loads(path.read_text())
    task = doc["plan"]["tasks"][0]
    task["devices"][1][0][0] = task["devices"][0][0][0]
    bad = tmp_path / "tampered-plan.json"
    bad.write_text(json.dumps(doc))
    proc = run_cli("validate", str(bad))
    assert proc.returncode == 1
    assert "C1-tasklets" in proc.stderr


def test_plan_priced_by_another_judge_stays_valid(registry, tmp_path: Path):
    """A plan whose recorded objective differs from today's judge is invalid only when today's
    judge wrote it (same fingerprint); priced by another judge (another fingerprint, or a schema
    1.5 file that records none), it is valid, and both objectives are shown, labelled. Its bound
    is held to the objective its writer recorded."""
    problem = build_problem("placement", {"cluster": "small-16", "workflow": "grpo-sync-qwen3-4b"})
    path = _write(solve(problem, "trivial", registry=registry), tmp_path / "plan.json")
    doc = json.loads(path.read_text())
    assert len(doc["judge"]) == 16
    today = doc["objective"]

    def edited(name, **fields):
        d = {**doc, **fields}
        if "judge" in fields and fields["judge"] is None:
            d.pop("judge")
        (tmp_path / name).write_text(json.dumps(d))
        return str(tmp_path / name)

    for name, fields in (
        ("other.json", {"judge": "0123456789abcdef"}),
        ("v15.json", {"schema_version": "1.5", "judge": None}),
    ):
        f = edited(name, objective=today * 1.25, **fields)
        proc = run_cli("validate", f)
        assert proc.returncode == 0, proc.stderr
        assert "[judge moved]" in proc.stdout and "-20.0%" in proc.stdout, proc.stdout
        verdict = run_cli_json("validate", "--json", f)
        assert verdict["valid"] and not verdict["same_judge"]
        assert verdict["objective_recorded"] == pytest.approx(today * 1.25)
        assert verdict["objective_today"] == pytest.approx(today)
    # a bound above the writer's objective is still a false record
    f = edited("bound.json", objective=today * 1.25, bound=today * 1.5, judge="0123456789abcdef")
    proc = run_cli("validate", f)
    assert proc.returncode == 1 and "[bound]" in proc.stderr
    # the same judge: a disagreeing objective is a false record
    proc = run_cli("validate", "--json", edited("same.json", objective=today * 1.25))
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 1 and not verdict["valid"] and verdict["same_judge"]
    assert "[objective]" in verdict["violations"][0]


def test_memory_tamper_names_c3(registry, tmp_path: Path):
    problem = build_problem("placement", {"cluster": "small-16", "workflow": "grpo-sync-qwen3-4b"})
    path = _write(solve(problem, "trivial", registry=registry), tmp_path / "plan.json")
    doc = json.loads(path.read_text())
    doc["inputs"]["workflow"]["models"] = {
        "actor": "Qwen3-14B",
        "reference": "Qwen3-14B",
        "reward": "Qwen3-14B",
    }
    path.write_text(json.dumps(doc))
    proc = run_cli("validate", str(path))
    assert proc.returncode == 1
    assert "C3-memory" in proc.stderr and "GB" in proc.stderr


def test_circuit_round_trip_and_tamper(registry, tmp_path: Path):
    problem = load_problem("circuits-example")
    result = solve(problem, "trivial", registry=registry)
    assert result.success
    path = _write(result, tmp_path / "circuits.json")
    assert run_cli("validate", str(path)).returncode == 0
    doc = json.loads(path.read_text())
    doc["plan"]["circuits"][0]["count"] = 99
    doc["objective"] = None
    path.write_text(json.dumps(doc))
    proc = run_cli("validate", str(path))
    assert proc.returncode == 1 and "port-budget" in proc.stderr


def test_cli_plan_then_validate(tmp_path: Path):
    out = tmp_path / "plan.json"
    proc = run_cli(
        "plan",
        "placement",
        "--cluster",
        "small-16",
        "--workflow",
        "grpo-sync-qwen3-4b",
        "-O",
        "evaluations=10",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "actor_generation" in proc.stdout
    doc = json.loads(out.read_text())
    for key in (
        "schema_version",
        "problem",
        "solver",
        "status",
        "objective",
        "bound",
        "gap",
        "wall_time_s",
        "plan",
        "breakdown",
        "inputs",
    ):
        assert key in doc
    assert doc["problem"] == "placement" and doc["status"] == "feasible"
    assert run_cli("validate", str(out)).returncode == 0


def test_plan_to_stdout(tmp_path: Path):
    assert run_cli_json(*SMALL_PLACEMENT, "-o", "-", cwd=tmp_path)["problem"] == "placement"
    assert not list(tmp_path.iterdir())


def test_no_feasible_plan_exits_1_and_writes_nothing(tmp_path: Path):
    # Qwen3-14B PPO cannot fit on 4 GPUs with four model copies
    out = tmp_path / "plan.json"
    proc = run_cli(
        "plan",
        "placement",
        "--cluster",
        "small-4",
        "--workflow",
        "ppo-sync-qwen3-14b",
        "-o",
        str(out),
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no feasible plan" in proc.stderr
    assert not out.exists()
