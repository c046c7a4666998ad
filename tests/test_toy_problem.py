"""Adding a problem touches neither ``planner/`` nor ``benchmarks/`` (docs/architecture.md, "Adding
a problem"): the example pack ``examples/toy_problem`` (makespan scheduling of jobs on identical
machines: spec, plan, judge, validator, one heuristic, one exact solver, a preset, a canned
instance) arrives as a plugin, and the real ``rlplan`` runs ``plan``, ``validate``, ``evaluate``
and ``bench --problem`` on it; the contract test picks it up with no edit, and ``planner.plan``
writes the plan file ``rlplan plan`` writes. A problem without solvers is refused at load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import rlplan_executable

EXAMPLE = Path(__file__).parents[1] / "examples" / "toy_problem"

#: test-only: a descriptor whose solvers have not landed, registered by a second plugin
TOY_LATER = """
from costmodels.problem import ProblemKind, SpecField
from rlplan_toy.problem import JobsSpec, ToyProblem

UNSOLVABLE = ProblemKind(
    name="toy-later",
    summary="solvers to come",
    title="ToyLater",
    fields=(SpecField("work", JobsSpec, "jobs", default="toy-five"),),
    problem_type=ToyProblem,
    build=lambda work: ToyProblem(work),
)


def register(registry):
    registry.add_problem(UNSOLVABLE)
"""


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy")
    (root / "toy_later.py").write_text(TOY_LATER)
    env = {
        **os.environ,
        "COLUMNS": "200",
        "NO_COLOR": "1",
        "RLPLAN_PLUGINS": "rlplan_toy.register:register,toy_later:register",
        "PYTHONPATH": os.pathsep.join(
            [
                str(EXAMPLE),
                str(root),
                str(Path(__file__).parents[1]),
                os.environ.get("PYTHONPATH", ""),
            ]
        ),
    }
    return root, env


def _run(env, *args, cwd):
    return subprocess.run(
        [rlplan_executable(), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def test_plan_validate_evaluate_a_new_problem(toy):
    root, env = toy
    r = _run(env, "plan", "toy", "-o", "lpt.json", cwd=root)
    assert r.returncode == 0, r.stderr
    assert "toy by lpt: makespan 7" in " ".join(
        r.stdout.split()
    )  # the title wraps to the table width
    (root / "toy.yaml").write_text(
        "problem: toy\nwork: {durations: [3, 3, 2, 2, 2], machines: 2}\n"
    )
    r = _run(env, "plan", "toy.yaml", "--solver", "exhaustive", "-o", "best.json", "-q", cwd=root)
    assert r.returncode == 0, r.stderr
    doc = json.loads((root / "best.json").read_text())
    assert doc["problem"] == "toy" and doc["objective"] == 6 and doc["status"] == "optimal"
    assert doc["objective_meaning"] == "makespan" and doc["inputs"] == {
        "work": {"durations": [3, 3, 2, 2, 2], "machines": 2}
    }
    r = _run(env, "validate", "best.json", cwd=root)
    assert (
        r.returncode == 0 and "valid: best.json (toy plan by exhaustive, objective 6)" in r.stdout
    ), r.stdout + r.stderr
    r = _run(env, "evaluate", "best.json", "--json", cwd=root)
    assert r.returncode == 0 and json.loads(r.stdout)["objective"] == 6
    r = _run(env, "plan", "toy", "--solver", "help", cwd=root)
    assert r.returncode == 0 and "lpt (default)" in r.stdout and "exhaustive" in r.stdout
    # tamper: the recorded objective must be the cost model's
    doc["objective"] = 5
    (root / "tampered.json").write_text(json.dumps(doc))
    r = _run(env, "validate", "tampered.json", cwd=root)
    assert r.returncode == 1 and "[objective]" in r.stderr


def test_bench_a_new_problem(toy):
    root, env = toy
    (root / "toy.yaml").write_text("problem: toy\nwork: toy-five\n")
    r = _run(env, "bench", "--problem", "toy.yaml", "--out", "bench", "-q", cwd=root)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in (root / "bench" / "runs.jsonl").read_text().splitlines()]
    assert {(row["solver"], row["status"], row["objective"], row["size"]) for row in rows} == {
        ("lpt", "feasible", 7, 5),
        ("exhaustive", "optimal", 6, 5),
    }


def test_the_contract_test_covers_a_new_problem(toy):
    root, env = toy
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "toy",
            str(Path(__file__).parent / "test_contract.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-3000:]
    assert "4 passed" in r.stdout, r.stdout[
        -2000:
    ]  # two descriptors (toy, toy-later) and two solvers


def test_a_problem_without_solvers_is_refused_at_load(toy):
    root, env = toy
    (root / "later.yaml").write_text("problem: toy-later\nwork: toy-five\n")
    for args in (
        ["plan", "later.yaml"],
        ["plan", "toy-later"],
        ["bench", "--problem", "later.yaml", "--out", "b2"],
    ):
        r = _run(env, *args, cwd=root)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert (
            "problem" in r.stderr
            and "no solvers are registered" in r.stderr
            and "Traceback" not in r.stderr
        )
    assert "later.yaml: problem:" in _run(env, "plan", "later.yaml", cwd=root).stderr
    assert not (root / "b2").exists()


#: what a plan file records of the wall clock: how long the solve took. (``clock`` says whether the
#: wall clock stopped the search; exhaustive search always finishes, so it is empty in both files
#: and compared like the rest.)
WALL_CLOCK = ("wall_time_s",)

LIBRARY_CALL = """
import sys

import planner

outcome = planner.plan(planner.PlanRequest("toy", solver="exhaustive", output=sys.argv[1]))
assert outcome.ok, outcome.failure
assert [str(p) for p in outcome.written] == [sys.argv[1]], outcome.written
sys.stdout.write(outcome.plan_json)
"""


def test_the_library_call_writes_the_plan_file_the_command_writes(toy):
    root, env = toy
    r = _run(env, "plan", "toy", "--solver", "exhaustive", "-o", "cli.json", "-q", cwd=root)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(
        [sys.executable, "-c", LIBRARY_CALL, str(root / "lib.json")],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    lib = json.loads((root / "lib.json").read_text())
    assert json.loads(r.stdout) == lib  # outcome.plan_json is what was written
    cli = json.loads((root / "cli.json").read_text())
    assert set(lib) == set(cli) and set(WALL_CLOCK) <= set(lib)
    for doc in (lib, cli):
        for key in WALL_CLOCK:
            del doc[key]
    assert lib == cli
    assert lib["objective"] == 6 and lib["plan"] == {"machine_of": [0, 0, 1, 1, 1]}
