"""The real `rlplan` entry point: help for every command, solver listing."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.conftest import SMALL_SPECS, plan_small, run_cli


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["plan", "--help"],
        ["validate", "--help"],
        ["presets", "--help"],
        ["presets", "show", "--help"],
    ],
)
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
    assert plan_small(out, "-q").returncode == 0
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
    assert set(doc["breakdown"]["tasks"]["actor_training"]) >= {
        "comp_s",
        "tp_s",
        "pp_s",
        "dp_s",
        "bubble_s",
        "decode_s",
        "time_s",
    }
    out = tmp_path / "p.json"
    assert plan_small(out, "-q").returncode == 0
    proc = run_cli("evaluate", str(out))
    assert proc.returncode == 0 and "actor_training" in proc.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(example.read_text().replace("tp: 4", "tp: 3", 1))
    proc = run_cli("evaluate", str(bad))
    assert proc.returncode == 1 and "shape" in proc.stderr


def test_plan_circuits_every_solver_with_plot(tmp_path):
    """Every solver's plan written and valid; the picture (the same drawing for every solver)
    drawn for the first."""
    for i, solver in enumerate(("greedy", "greedy-reference", "milp", "cpsat", "uniform")):
        out, png = tmp_path / f"{solver}.json", tmp_path / f"{solver}.png"
        argv = shlex.split("plan circuits --fabric fabric-moe-16 --demand demand-moe-16 --solver")
        r = run_cli(*argv, solver, "-o", str(out), *(["--plot", str(png)] if i == 0 else []))
        assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        assert doc["problem"] == "circuits" and doc["plan"]["circuits"][0].keys() == {
            "a",
            "b",
            "count",
        }
        assert i > 0 or png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert run_cli("validate", str(out)).returncode == 0


def test_plan_broadcast_two_level_and_naive(tmp_path):
    objectives = {}
    for solver in ("two-level", "naive"):
        out = tmp_path / f"{solver}.json"
        r = run_cli(
            "plan",
            "broadcast",
            "--solver",
            solver,
            "-o",
            str(out),
            "--plot",
            str(tmp_path / f"{solver}.png"),
        )
        assert r.returncode == 0, r.stderr
        assert "Phase A" in r.stdout
        objectives[solver] = json.loads(out.read_text())["objective"]
        assert run_cli("validate", str(out)).returncode == 0
    assert objectives["two-level"] < objectives["naive"]


@pytest.mark.parametrize(
    "cluster,workflow,solver",
    [
        ("small-16", "ppo-async-qwen3-4b", "streamrl"),
        ("hetrl-multi-country", "grpo-sync-qwen3-8b", "verl"),
    ],
)
def test_placement_plot_draws_the_cluster_and_the_timeline(tmp_path, cluster, workflow, solver):
    """`--plot` on a placement plan: a PNG of the cluster by zone and the iteration's phases,
    sync and async, one zone and several (the first thing a person wants to see)."""
    png, out = tmp_path / "p.png", tmp_path / "p.json"
    argv = ["--cluster", cluster, "--workflow", workflow, "--solver", solver]
    r = run_cli("plan", "placement", *argv, "-o", str(out), "--plot", str(png))
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    assert f"wrote {out} and {png}" in " ".join(r.stdout.split())


def test_plan_in_a_terminal_writes_its_plan(tmp_path):
    """On a terminal the search reports progress through the façade's callback; the callback is
    not a solver option, so it never reaches the plan file (it used to crash json.dumps)."""
    from tests.conftest import run_cli_pty

    out = tmp_path / "plan.json"
    code, text = run_cli_pty(
        "plan",
        *SMALL_SPECS,
        "-O",
        "evaluations=20",
        "-o",
        str(out),
    )
    assert code == 0, text[-2000:]
    assert "Traceback" not in text and json.loads(out.read_text())["options"] == {"evaluations": 20}
    # a solver that reports no progress gets a spinner with the clock on a terminal
    code, text = run_cli_pty("plan", "circuits", "--solver", "milp", "-o", str(tmp_path / "c.json"))
    assert code == 0 and "Traceback" not in text and "wrote" in text and "proven optimal" in text, (
        text[-2000:]
    )


def test_plan_without_output_writes_the_problems_own_file(tmp_path):
    """Without -o each problem writes <problem>-plan.json, so planning one problem never
    overwrites another's plan."""
    r = run_cli("plan", "circuits", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "circuits-plan.json").is_file() and not (tmp_path / "plan.json").exists()
    assert run_cli("validate", "circuits-plan.json", cwd=tmp_path).returncode == 0


def test_long_runs_outside_a_terminal_report_progress_on_stderr(tmp_path):
    """Outside a terminal a run is never silent: a progress line every few seconds on stderr
    (here every 0.2 s), stdout left to the plan; the summary says how the search ended and
    under which limit."""
    import os
    import subprocess

    from tests.conftest import rlplan_executable

    env = {**os.environ, "RLPLAN_PROGRESS_EVERY": "0.2", "COLUMNS": "200"}
    r = subprocess.run(
        [
            rlplan_executable(),
            "plan",
            "--cluster",
            "small-16",
            "--workflow",
            "ppo-sync-qwen3-8b",
            "--solver",
            "sha-ea",
            "-O",
            "evaluations=20",
            "-o",
            str(tmp_path / "p.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    lines = [
        ln
        for ln in r.stderr.splitlines()
        if ln.startswith("rlplan: solving placement by sha-ea, limit 300 s (default)")
    ]
    assert len(lines) >= 3, r.stderr
    assert any("evaluations" in ln and "best" in ln for ln in lines)
    assert "took" in r.stdout and "of the default 300 s limit" in r.stdout
    quiet = run_cli("plan", "circuits", "-q", "-o", str(tmp_path / "c.json"))
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_solver_help_lists_each_solvers_default_limit():
    r = run_cli("plan", "placement", "--solver", "help")
    assert r.returncode == 0
    assert "default limit" in r.stdout and "300 s" in r.stdout and "60 s" in r.stdout
    import re

    text = re.sub(
        r"-\s+", "-", " ".join(run_cli("plan", "--help").stdout.replace("│", " ").split())
    )  # undo wrapping at hyphens
    assert "Default: the solver's own cap" in text and "placement sha-ea 300 s" in text


def test_shell_completion_knows_problems_and_each_problems_solvers():
    import os
    import subprocess

    from tests.conftest import rlplan_executable

    def complete(words: str, cword: int) -> list[str]:
        env = {
            **os.environ,
            "COMP_WORDS": words,
            "COMP_CWORD": str(cword),
            "_RLPLAN_COMPLETE": "complete_bash",
        }
        return subprocess.run(
            [rlplan_executable()], capture_output=True, text=True, env=env, timeout=60
        ).stdout.split()

    assert "circuits" in complete("rlplan plan ci", 2) and "placement" not in complete(
        "rlplan plan ci", 2
    )
    circuits = complete("rlplan plan circuits --solver ", 4)
    assert {"greedy", "milp", "cpsat", "help"} <= set(circuits) and "sha-ea" not in circuits
    assert "sha-ea" in complete("rlplan plan --solver ", 3)
    assert "--install-completion" in run_cli("--help").stdout


def test_a_long_line_fits_the_terminal_and_stays_whole_when_piped():
    """``say`` wraps between words at a terminal (a path longer than the width stays whole, to be
    copied) and leaves a piped line as one line, for grep."""
    import io

    from rich.console import Console

    from planner.cli.console import say

    line = (
        "SHA-EA: best of 302 evaluations (budget), 1.45x better than its best seed (StreamRL) "
        "/tmp/" + "x" * 90 + ".json"
    )
    tty = io.StringIO()
    say(Console(file=tty, force_terminal=True, width=80, color_system=None), line)
    rows = tty.getvalue().splitlines()
    assert len(rows) > 1 and all(len(r) <= 80 for r in rows if "xxx" not in r)
    assert any(r.strip() == "/tmp/" + "x" * 90 + ".json" for r in rows)
    assert " ".join(r.strip() for r in rows) == line
    two = io.StringIO()
    say(Console(file=two, force_terminal=True, width=80, color_system=None), "a\n" + "b " * 50)
    assert two.getvalue().splitlines()[0] == "a"
    piped = io.StringIO()
    say(Console(file=piped, force_terminal=False, width=80), line)
    assert piped.getvalue() == line + "\n"
