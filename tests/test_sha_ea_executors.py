"""SHA-EA's evaluations in process, on a process pool and on Ray: the same plan for the same
budget (results are consumed in order), and the CLI's --executor / --ray-address."""

from __future__ import annotations

import json
import time

import pytest

from planner import solve
from planner.io import build_problem
from tests.conftest import SMALL_SPECS, run_cli, run_cli_pty


@pytest.fixture(scope="module")
def problem():
    return build_problem("placement", {"cluster": "small-8", "workflow": "grpo-sync-qwen3-4b"})


def _plan(r):
    return r.plan.model_dump()


@pytest.fixture(scope="module")
def in_process(problem):
    return solve(problem, "sha-ea", seed=5, evaluations=30, seeds=False)


@pytest.mark.slow
def test_a_process_pool_gives_the_in_process_plan(problem, in_process):
    pooled = solve(problem, "sha-ea", seed=5, evaluations=30, seeds=False, workers=2)
    assert pooled.success and pooled.violations == []
    assert pooled.objective == in_process.objective and _plan(pooled) == _plan(in_process)


@pytest.mark.slow
def test_ray_actors_give_the_in_process_plan_and_leave_a_callers_ray_running(problem, in_process):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = solve(
            problem, "sha-ea", seed=5, evaluations=30, seeds=False, executor="ray", workers=2
        )
        assert on_ray.success and on_ray.violations == []
        assert on_ray.objective == in_process.objective and _plan(on_ray) == _plan(in_process)
        assert ray.is_initialized()  # the caller's Ray is the caller's to shut down
        for _ in range(100):  # and our actors are gone from it: their CPUs come back
            if ray.available_resources().get("CPU", 0) == 2:
                break
            time.sleep(0.1)
        assert ray.available_resources().get("CPU", 0) == 2
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_plan_on_ray_from_a_terminal(tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "plan.json"
    code, text = run_cli_pty(
        "plan",
        *SMALL_SPECS,
        "--executor",
        "ray",
        "-O",
        "workers=2",
        "-O",
        "evaluations=20",
        "-O",
        "seeds=false",
        "-o",
        str(out),
        timeout=240,
    )
    assert code == 0, text[-2000:]
    assert "Traceback" not in text
    doc = json.loads(out.read_text())
    assert doc["options"]["executor"] == "ray" and doc["violations"] == []


@pytest.mark.parametrize(
    "args,message",
    [
        (["--solver", "ilp", "--executor", "ray"], "solver 'ilp' runs in this process"),
        (["--executor", "threads"], "--executor threads: use local or ray"),
        (
            ["--ray-address", "auto", "--executor", "local"],
            "--ray-address auto needs --executor ray",
        ),
        (["--executor", "ray", "-O", "executor=local"], "both set executor"),
        (["--solver", "sha-ea", "-O", "workers=0"], "workers"),
    ],
)
def test_bad_executor_flags_exit_2_and_write_nothing(tmp_path, args, message):
    out = tmp_path / "plan.json"
    r = run_cli("plan", *SMALL_SPECS, *args, "-o", str(out))
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()
