"""The real `rlplan` entry point: help for every command, solver listing."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli


@pytest.mark.parametrize("args", [["--help"], ["plan", "--help"], ["validate", "--help"], ["presets", "--help"], ["presets", "show", "--help"]])
def test_help(args):
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout


def test_no_arguments_shows_help():
    proc = run_cli()
    assert "plan" in proc.stdout + proc.stderr


def test_solver_help_lists_solvers():
    proc = run_cli("plan", "placement", "--solver", "help")
    assert proc.returncode == 0
    assert "verl" in proc.stdout and "default" in proc.stdout


def test_validate_json_verdict(tmp_path):
    out = tmp_path / "p.json"
    assert run_cli("plan", "placement", "--cluster", "small-8", "--workflow", "grpo-sync-qwen3-4b", "-o", str(out), "-q").returncode == 0
    proc = run_cli("validate", str(out), "--json")
    assert proc.returncode == 0 and '"valid": true' in proc.stdout


def test_spec_option_with_problem_file_is_usage_error(tmp_path):
    proc = run_cli("plan", "default", "--cluster", "small-8", "-o", str(tmp_path / "p.json"))
    assert proc.returncode == 2


def test_evaluate_hand_written_plan_and_plan_file(tmp_path):
    from pathlib import Path

    example = Path(__file__).parent.parent / "examples" / "handwritten-grpo-qwen3-8b.yaml"
    proc = run_cli("evaluate", str(example))
    assert proc.returncode == 0, proc.stderr
    for task in ("actor_generation", "reward_inference", "reference_inference", "actor_training"):
        assert task in proc.stdout
    proc = run_cli("evaluate", str(example), "--json")
    import json

    doc = json.loads(proc.stdout)
    assert doc["breakdown"]["phases"]["weight_transfer"] == "sync"  # generation is disaggregated
    assert set(doc["breakdown"]["tasks"]["actor_training"]) >= {"comp_s", "tp_s", "pp_s", "dp_s", "bubble_s", "decode_s", "time_s"}
    out = tmp_path / "p.json"
    assert run_cli("plan", "placement", "--cluster", "small-8", "--workflow", "grpo-sync-qwen3-4b", "-o", str(out), "-q").returncode == 0
    proc = run_cli("evaluate", str(out))
    assert proc.returncode == 0 and "actor_training" in proc.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(example.read_text().replace("tp: 4", "tp: 3", 1))
    proc = run_cli("evaluate", str(bad))
    assert proc.returncode == 1 and "shape" in proc.stderr


def test_plan_circuits_every_solver_with_plot(tmp_path):
    for solver in ("greedy", "greedy-reference", "milp", "cpsat", "uniform"):
        out, png = tmp_path / f"{solver}.json", tmp_path / f"{solver}.png"
        r = run_cli("plan", "circuits", "--fabric", "fabric-moe-16", "--demand", "demand-moe-16", "--solver", solver,
                    "-o", str(out), "--plot", str(png))
        assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        assert doc["problem"] == "circuits" and doc["plan"]["circuits"][0].keys() == {"a", "b", "count"}
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert run_cli("validate", str(out)).returncode == 0


def test_plan_broadcast_two_level_and_naive(tmp_path):
    objectives = {}
    for solver in ("two-level", "naive"):
        out = tmp_path / f"{solver}.json"
        r = run_cli("plan", "broadcast", "--solver", solver, "-o", str(out), "--plot", str(tmp_path / f"{solver}.png"))
        assert r.returncode == 0, r.stderr
        assert "Phase A" in r.stdout
        objectives[solver] = json.loads(out.read_text())["objective"]
        assert run_cli("validate", str(out)).returncode == 0
    assert objectives["two-level"] < objectives["naive"]


def test_plot_is_refused_for_placement(tmp_path):
    r = run_cli("plan", "placement", "--cluster", "small-4", "--plot", str(tmp_path / "x.png"), "-o", str(tmp_path / "p.json"))
    assert r.returncode == 2 and "--plot" in r.stderr
    assert not (tmp_path / "p.json").exists()


def test_plan_in_a_terminal_writes_its_plan(tmp_path):
    """On a terminal the search reports progress through the façade's callback; the callback is
    not a solver option, so it never reaches the plan file (it used to crash json.dumps)."""
    from tests.conftest import run_cli_pty

    out = tmp_path / "plan.json"
    code, text = run_cli_pty("plan", "--cluster", "small-8", "--workflow", "grpo-sync-qwen3-4b", "-O", "evaluations=20", "-o", str(out))
    assert code == 0, text[-2000:]
    assert "Traceback" not in text and json.loads(out.read_text())["options"] == {"evaluations": 20}
