"""``rlplan plan rollout`` and ``rlplan simulate rollout`` as a user runs them: on a terminal and
without one, with the plan file validated, re-evaluated and exported."""

from __future__ import annotations

import json

import yaml

from costmodels.rollout.canned import tiny_workload
from tests.conftest import run_cli, run_cli_json, run_cli_pty

TINY = {"name": "tiny", "workload": tiny_workload()}


def test_plan_then_validate_evaluate_export_and_simulate(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(TINY))
    plan = tmp_path / "plan.json"
    r = run_cli(
        "plan",
        "rollout",
        "--job",
        str(job),
        "-o",
        str(plan),
        "--plot",
        str(tmp_path / "p.png"),
        "--export",
        "roll",
    )
    assert r.returncode == 0, r.stderr
    words = " ".join(r.stdout.split())
    assert "s per step" in words and "lost 0, repeated 0" in words
    doc = json.loads(plan.read_text())
    assert (
        doc["problem"] == "rollout"
        and doc["solver"] == "search"
        and doc["plan"]["eta_prompts"] >= 1
    )
    roll = yaml.safe_load((tmp_path / "plan.roll.yaml").read_text())
    assert (
        roll["rollout_batch_size"] == 4 and roll["max_prompts_ratio"] == doc["plan"]["eta_prompts"]
    )
    assert (tmp_path / "p.png").stat().st_size > 10_000
    assert run_cli("validate", str(plan)).returncode == 0
    ev = run_cli("evaluate", str(plan), "--json")
    assert ev.returncode == 0 and abs(json.loads(ev.stdout)["objective"] - doc["objective"]) < 1e-9
    res = run_cli_json(
        "simulate", "rollout", "--job", job, "--plan", plan, "--setting", "verl", "--json"
    )["results"]
    assert res[0]["objective_s"] == doc["objective"] and res[1]["objective_s"] >= doc["objective"]


def test_simulate_rollout_on_a_terminal_and_without(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(TINY))
    code, text = run_cli_pty(
        "simulate", "rollout", "--job", str(job), "--plot", str(tmp_path / "s.png")
    )
    assert code == 0 and "verl:" in text and "paper:" in text and "x the speed of verl" in text
    r = run_cli("simulate", "rollout", "--job", str(job), "--setting", "paper")
    assert r.returncode == 0 and "short" in r.stdout and "long" in r.stdout and not r.stderr.strip()
