"""The real `rlplan` entry point: help for every command, solver listing."""

from __future__ import annotations

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
    assert set(doc["breakdown"]["tasks"]["actor_training"]) >= {"comp_s", "tp_s", "pp_s", "dp_s", "bubble_s", "hbm_s", "time_s"}
    out = tmp_path / "p.json"
    assert run_cli("plan", "placement", "--cluster", "small-8", "--workflow", "grpo-sync-qwen3-4b", "-o", str(out), "-q").returncode == 0
    proc = run_cli("evaluate", str(out))
    assert proc.returncode == 0 and "actor_training" in proc.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(example.read_text().replace("tp: 4", "tp: 3", 1))
    proc = run_cli("evaluate", str(bad))
    assert proc.returncode == 1 and "shape" in proc.stderr
