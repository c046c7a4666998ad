"""Adding a problem touches neither ``planner/`` nor ``benchmarks/`` (docs/architecture.md, "Adding
a problem"): a toy problem (makespan scheduling of jobs on identical machines) arrives as a plugin
package with its spec, plan, evaluator, validator, one heuristic, one exact solver, a preset and
canned instances, and the real ``rlplan`` runs ``plan``, ``validate``, ``evaluate`` and
``bench --problem`` on it; the contract test picks it up with no edit. A problem without solvers is
refused at load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import rlplan_executable

TOY = '''
"""A toy problem: assign jobs to identical machines, minimise the makespan (the busiest load)."""
from dataclasses import dataclass, field
import itertools

from pydantic import BaseModel, Field

from costmodels.problem import Canned, Preset, ProblemKind, SolverEntry, SpecField, Summary
from costmodels.solving import SolverOutput, Status
from costmodels.violations import Violation


class JobsSpec(BaseModel):
    durations: list[float] = Field(min_length=1)
    machines: int = Field(ge=1)


class Assignment(BaseModel):
    machine_of: list[int]


@dataclass(frozen=True, eq=False)
class ToyProblem:
    spec: JobsSpec
    kind: str = field(default="toy", init=False)

    def to_inputs(self):
        return {"work": self.spec.model_dump(mode="json")}


def evaluate(problem, plan):
    load = [0.0] * problem.spec.machines
    for job, m in enumerate(plan.machine_of):
        load[m] += problem.spec.durations[job]
    return max(load), {"loads": load}


def check(problem, plan):
    out = []
    if len(plan.machine_of) != len(problem.spec.durations):
        jobs = len(problem.spec.durations)
        out.append(Violation("coverage", f"{len(plan.machine_of)} assignments for {jobs} jobs"))
    out += [Violation("machine", f"job {j} on machine {m}")
            for j, m in enumerate(plan.machine_of) if not 0 <= m < problem.spec.machines]
    return out


def solve_lpt(problem, *, time_limit=None, seed=0):
    load, plan = [0.0] * problem.spec.machines, [0] * len(problem.spec.durations)
    for j in sorted(range(len(plan)), key=lambda j: -problem.spec.durations[j]):
        m = min(range(len(load)), key=load.__getitem__)
        plan[j], load[m] = m, load[m] + problem.spec.durations[j]
    return SolverOutput(Status.FEASIBLE, Assignment(machine_of=plan))


def solve_exhaustive(problem, *, time_limit=None, seed=0):
    best = min(itertools.product(range(problem.spec.machines), repeat=len(problem.spec.durations)),
               key=lambda a: evaluate(problem, Assignment(machine_of=list(a)))[0])
    plan = Assignment(machine_of=list(best))
    return SolverOutput(Status.OPTIMAL, plan, objective=evaluate(problem, plan)[0])


def summary(solved):
    return Summary(f"toy by {solved.solver}: makespan {solved.objective:g} ({solved.status})",
                   ("machine", "load"),
                   [(str(m), f"{x:g}") for m, x in enumerate(solved.breakdown["loads"])])


EXAMPLE = {"durations": [3, 3, 2, 2, 2], "machines": 2}  # LPT: 7; optimum 6 (3+3 | 2+2+2)

KIND = ProblemKind(
    name="toy", summary="makespan scheduling on identical machines", title="Toy",
    fields=(SpecField("work", JobsSpec, "jobs file or preset", default="toy-five"),),
    problem_type=ToyProblem, build=lambda work: ToyProblem(work), plan_type=Assignment,
    evaluate=evaluate, check=check, objective="makespan", units="s",
    solvers=(SolverEntry("lpt", "toy_pack.toy:solve_lpt", "longest processing time first",
                         default=True),
             SolverEntry("exhaustive", "toy_pack.toy:solve_exhaustive", "every assignment",
                         exact=True)),
    presets=(Preset("toy-five", "work", "five jobs, two machines", lambda: dict(EXAMPLE)),),
    summary_table=summary, size=lambda p: len(p.spec.durations), size_label="jobs",
    canned=lambda: [Canned("five-jobs", lambda: ToyProblem(JobsSpec(**EXAMPLE)), optimum=6.0)],
)

UNSOLVABLE = ProblemKind(name="toy-later", summary="solvers to come", title="ToyLater",
                         fields=(SpecField("work", JobsSpec, "jobs", default="toy-five"),),
                         problem_type=ToyProblem, build=lambda work: ToyProblem(work))


def register(registry):
    registry.add_problem(KIND)
    registry.add_problem(UNSOLVABLE)
'''


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy")
    (root / "toy_pack").mkdir()
    (root / "toy_pack" / "__init__.py").write_text("")
    (root / "toy_pack" / "toy.py").write_text(textwrap.dedent(TOY))
    env = {
        **os.environ,
        "COLUMNS": "200",
        "NO_COLOR": "1",
        "RLPLAN_PLUGINS": "toy_pack.toy:register",
        "PYTHONPATH": os.pathsep.join(
            [str(root), str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
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
