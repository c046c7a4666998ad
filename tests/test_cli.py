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
