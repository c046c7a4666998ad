"""``planner.plan`` is what ``rlplan plan`` does (docs/architecture.md, "Data flow"): for every
problem the library call and the command write the same plan file; a request that contradicts
itself is refused before any work, with nothing written; a plan that is not usable is an outcome,
not an exception; and calls from several threads at once give each the plan it would get alone
(an external scheduler plans in-process, every step)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from costmodels.errors import SpecError
from planner import PlanRequest, plan
from planner.planning import PlanRequestError, default_output
from planner.registry import UnknownSolverError, default_registry
from tests.conftest import run_cli

#: a fast solver per problem, with what keeps it short; every registered problem has one here
FAST = {
    "placement": ("verl", {"cluster": "small-8", "workflow": "grpo-sync-qwen3-4b"}),
    "circuits": ("greedy", {}),
    "broadcast": ("two-level", {}),
    "replan": ("greedy", {}),
    "cosched": ("rollmux", {}),
    "rollout": ("paper", {}),
    "job": ("sequential", {"cluster": "small-4", "workflow": "grpo-sync-qwen3-4b"}),
    "fleet": ("stages", {"fleet": "fleet-two-small"}),
}
#: what a plan file records about the machine rather than the plan
WALL_CLOCK = ("wall_time_s", "trace")


def _plan_doc(path: Path) -> dict:
    doc = json.loads(path.read_text())
    for key in WALL_CLOCK:
        doc.pop(key, None)
        doc.get("stats", {}).pop(key, None)
    return doc


def test_every_problem_has_a_fast_case():
    assert set(FAST) == {k.name for k in default_registry().solvable()}


@pytest.mark.parametrize("problem", sorted(FAST))
def test_the_library_call_and_the_command_write_the_same_plan_file(problem, tmp_path):
    solver, fields = FAST[problem]
    outcome = plan(
        PlanRequest(problem, fields=fields, solver=solver, output=tmp_path / "library.json")
    )
    assert outcome.ok, outcome.failure
    assert outcome.written == [tmp_path / "library.json"]
    flags = [arg for name, value in fields.items() for arg in (f"--{name}", value)]
    cli = run_cli("plan", problem, *flags, "--solver", solver, "-o", "cli.json", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert _plan_doc(tmp_path / "library.json") == _plan_doc(tmp_path / "cli.json")
    assert outcome.plan_json.strip() == (tmp_path / "library.json").read_text().strip()


def test_a_plan_with_its_export_and_picture(tmp_path):
    out = tmp_path / "p.json"
    outcome = plan(
        PlanRequest(
            "placement",
            fields=FAST["placement"][1],
            solver="verl",
            output=out,
            exports=("verl",),
            plot=tmp_path / "p.png",
        )
    )
    assert outcome.written == [out, tmp_path / "p.verl.yaml", tmp_path / "p.png"]
    assert all(p.stat().st_size > 0 for p in outcome.written)
    assert outcome.exports["verl"]["framework"] == "verl"
    assert outcome.summary is not None and outcome.summary.rows
    assert any("took" in line for line in outcome.notes)


@pytest.mark.parametrize(
    ("request_", "error", "words"),
    [
        (PlanRequest("circuits", fields={"cluster": "small-8"}), PlanRequestError, "--cluster"),
        (PlanRequest("circuits", exports=("verl",)), PlanRequestError, "beside the plan file"),
        (PlanRequest("circuits", output="x.json", exports=("verl",)), PlanRequestError, "verl"),
        (PlanRequest("circuits", profile="flat"), PlanRequestError, "no decode kernels"),
        (PlanRequest("circuits", target="verl"), PlanRequestError, "no framework restriction"),
        (PlanRequest("circuits", solver="nope"), UnknownSolverError, "nope"),
        (PlanRequest("circuits", options={"bogus": 1}), ValueError, "bogus"),
        (PlanRequest("circuits", output="x.txt", plot="x.jpg"), SpecError, "--plot"),
        (PlanRequest("nope"), SpecError, "nope"),
    ],
)
def test_a_bad_request_is_refused_before_any_work_and_writes_nothing(
    request_, error, words, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=words):
        plan(request_)
    assert list(tmp_path.iterdir()) == []


def test_no_usable_plan_is_an_outcome_and_writes_nothing(tmp_path):
    # a 1 ms limit stops the exact model before it has any plan
    outcome = plan(
        PlanRequest("replan", solver="bruteforce", time_limit=1e-3, output=tmp_path / "replan.json")
    )
    if outcome.ok:  # pragma: no cover - a machine fast enough to enumerate in 1 ms
        pytest.skip("the enumeration finished within 1 ms")
    assert outcome.failure.startswith("no feasible plan")
    assert outcome.written == [] and list(tmp_path.iterdir()) == []


def test_calls_from_several_threads_each_get_the_plan_they_would_get_alone(tmp_path):
    problems = ["circuits", "broadcast", "replan", "cosched"] * 2

    def one(i_problem):
        i, problem = i_problem
        solver, fields = FAST[problem]
        out = tmp_path / f"{i}-{default_output(problem)}"
        outcome = plan(PlanRequest(problem, fields=fields, solver=solver, seed=1, output=out))
        return problem, outcome.result.objective, _plan_doc(out)["plan"]

    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(one, enumerate(problems)))
    alone = [one((100 + i, p)) for i, p in enumerate(problems)]
    assert together == alone


def test_an_unknown_solver_is_a_value_error(tmp_path, monkeypatch):
    """A scheduler's ``except ValueError`` catches every bad input (docs/python.md), an unknown
    solver included, from ``planner.plan`` and ``planner.solve`` alike; it stays a
    ``LookupError`` for callers that catch that. The command names ``--solver``."""
    from planner import solve
    from planner.io import build_problem

    monkeypatch.chdir(tmp_path)
    circuits = build_problem("circuits", default_registry().kind("circuits").defaults())
    for call in (
        lambda: plan(PlanRequest("placement", solver="nope")),
        lambda: solve(circuits, solver="nope"),
    ):
        with pytest.raises(ValueError, match="nope") as raised:
            call()
        assert isinstance(raised.value, UnknownSolverError)
        assert isinstance(raised.value, LookupError)
    cli = run_cli("plan", "placement", "--solver", "nope", cwd=tmp_path)
    assert cli.returncode == 2, cli.stderr
    assert cli.stderr.startswith("error: --solver: unknown solver 'nope'"), cli.stderr
    assert list(tmp_path.iterdir()) == []


def test_exports_as_a_bare_string_is_refused():
    """``exports="verl"`` would be read as the formats v, e, r, l: refused, naming exports."""
    with pytest.raises(PlanRequestError, match=r"exports: .*'verl'"):
        PlanRequest("placement", exports="verl")


@pytest.mark.parametrize(
    ("problem", "words"),
    [("placement", "use verl, verl-0.7, roll"), ("circuits", "circuits plans have no exports")],
)
def test_an_unknown_export_is_one_short_line(problem, words, tmp_path):
    """The error names the format and this problem's formats, not every problem's: one line
    near 80 columns."""
    with pytest.raises(PlanRequestError, match=words) as raised:
        plan(PlanRequest(problem, output=tmp_path / "p.json", exports=("foo",)))
    message = str(raised.value)
    assert message.startswith("--export foo: ") and "\n" not in message
    assert len("error: " + message) <= 90, message
    assert list(tmp_path.iterdir()) == []
