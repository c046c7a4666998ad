"""The benchmark harness: `rlplan bench --suite smoke` end to end, crash and invalid
rows, resumption, Ray giving the same objectives, stable instance ids."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.harness import InstanceRef, RunSpec, execute_run, load_rows
from benchmarks.instances import circuits_instance, instance_id
from benchmarks.suites import get_suite
from planner.io import build_problem
from tests.conftest import run_cli

PLUGIN = "tests.bench_doubles:register"


@pytest.fixture(scope="module")
def smoke_local(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("smoke-local")
    r = run_cli(
        "bench",
        "--suite",
        "smoke",
        "--out",
        str(out),
        "--jobs",
        "2",
        "--plugin",
        PLUGIN,
        "-q",
        cwd=Path(__file__).parents[1],
    )
    assert r.returncode == 0, r.stderr
    return out


def test_smoke_runs_every_problem_and_solver_of_the_registry():
    """The smoke suite is built from the registry: every solvable problem x each canned instance
    x every registered solver (the plugin's test doubles included)."""
    from planner.registry import build_registry

    reg = build_registry((PLUGIN,))
    runs = {
        (r.instance.kind, r.instance.canned, r.solver) for r in get_suite("smoke", (PLUGIN,)).runs
    }
    for kind in reg.solvable():
        for canned in kind.canned():
            for info in reg.solvers(kind.name):
                assert (kind.name, canned.name, info.name) in runs


@pytest.mark.slow
def test_smoke_writes_a_row_for_every_run(smoke_local):
    suite = get_suite("smoke", (PLUGIN,))
    df = pd.read_csv(smoke_local / "runs.csv")
    assert len(df) == len(suite.runs) == len({s.key() for s in suite.runs})
    assert set(df["key"]) == {s.key() for s in suite.runs}
    assert pd.read_parquet(smoke_local / "runs.parquet").shape[0] == len(df)
    for name in ("summary.json", "report.md", "ratio_box.png", "time_vs_size.png", "anytime.png"):
        assert (smoke_local / name).exists(), name
    summary = json.loads((smoke_local / "summary.json").read_text())
    assert (
        summary["runs"] == len(df)
        and summary["machine"]["cores"] >= 1
        and summary["versions"]["highspy"] == "1.12.0"
    )
    report = (smoke_local / "report.md").read_text()
    assert (
        "rlplan bench --suite smoke" in report
        and "Machine:" in report
        and "highspy 1.12.0" in report
    )


@pytest.mark.slow
def test_crash_and_invalid_plans_are_rows_not_skips(smoke_local):
    df = pd.read_csv(smoke_local / "runs.csv")
    crash = df[df["solver"] == "crashing"]
    bogus = df[df["solver"] == "over-budget"]
    killed = df[df["solver"] == "killed"]
    circuits = {
        r.instance.name for r in get_suite("smoke", (PLUGIN,)).runs if r.instance.kind == "circuits"
    }
    # one per circuits instance of the smoke suite, the curated and the canned ones
    assert len(crash) == len(bogus) == len(killed) == len(circuits) == 5
    assert (
        set(crash["status"]) == {"error"} and crash["message"].str.contains("always crashes").all()
    )
    assert set(killed["status"]) == {"error"}  # a killed process is that run's error row only
    assert set(bogus["status"]) == {"invalid"} and (bogus["violations"] > 0).all()
    assert bogus["objective"].isna().all()
    honest = df[~df["solver"].isin(["crashing", "over-budget", "killed"])]
    # a published baseline that does not check SLOs may break them (SolverEntry.ignores); a
    # baseline that keeps the current layout may find it cannot serve a budget (infeasible)
    from planner.registry import default_registry

    ignoring = {(s.problem, s.name) for s in default_registry().solvers() if s.ignores}
    pairs = zip(honest["kind"], honest["solver"], strict=True)
    rule_breakers = honest[[pair in ignoring for pair in pairs]]
    assert set(rule_breakers["status"]) <= {"optimal", "feasible", "no_solution", "invalid"}
    honest = honest.drop(rule_breakers.index)
    assert set(honest["status"]) <= {"optimal", "feasible", "no_solution", "infeasible"}


@pytest.mark.slow
def test_exact_solvers_define_best_known_and_ratios(smoke_local):
    df = pd.read_csv(smoke_local / "runs.csv")
    circ = df[(df["kind"] == "circuits") & df["status"].isin(["optimal", "feasible"])]
    assert circ["best_known"].notna().all()
    # nothing beats a proven optimum; a plan worse on the primary key (uncovered demand) has no
    # ratio (benchmarks/report.py)
    assert (circ["ratio"].dropna() >= 1 - 1e-9).all()
    assert (circ[circ["solver"].isin(["milp", "cpsat", "bruteforce"])]["ratio"].round(9) == 1).all()


@pytest.mark.slow
def test_rerun_skips_finished_rows(smoke_local):
    before = (smoke_local / "runs.jsonl").read_text().count("\n")
    r = run_cli(
        "bench",
        "--suite",
        "smoke",
        "--out",
        str(smoke_local),
        "--plugin",
        PLUGIN,
        "-q",
        cwd=Path(__file__).parents[1],
    )
    assert r.returncode == 0, r.stderr
    assert (smoke_local / "runs.jsonl").read_text().count("\n") == before


@pytest.mark.slow
def test_ray_executor_gives_the_same_objectives(tmp_path):
    """Four runs (exact, heuristic, a crash, a killed worker) rather than the whole smoke suite:
    Ray starts one fresh worker per run, which on a loaded 2-core machine costs tens of seconds
    each, and what the test checks is that rows do not depend on the executor."""
    pytest.importorskip("ray")
    problem = tmp_path / "mine.yaml"
    problem.write_text("problem: circuits\nfabric: fabric-moe-16\ndemand: demand-moe-16\n")
    args = [
        "--problem",
        str(problem),
        "--solver",
        "greedy",
        "--solver",
        "milp",
        "--solver",
        "crashing",
        "--solver",
        "killed",
        "--time-limit",
        "60",
        "--plugin",
        PLUGIN,
        "--jobs",
        "2",
        "-q",
    ]
    root = Path(__file__).parents[1]
    r = run_cli("bench", *args, "--out", str(tmp_path / "local"), cwd=root)
    assert r.returncode == 0, r.stderr
    r = run_cli(
        "bench", *args, "--out", str(tmp_path / "ray"), "--executor", "ray", cwd=root, timeout=900
    )
    assert r.returncode == 0, r.stderr
    local = {row["key"]: row for row in load_rows(tmp_path / "local" / "runs.jsonl")}
    remote = {row["key"]: row for row in load_rows(tmp_path / "ray" / "runs.jsonl")}
    assert local.keys() == remote.keys() and len(local) == 4
    for key, row in local.items():
        assert remote[key]["status"] == row["status"], row["solver"]
        if row["objective"] is not None:
            assert remote[key]["objective"] == pytest.approx(row["objective"], rel=1e-9), (
                row["solver"],
                row["instance"],
            )


def test_bad_suite_and_plugin_are_usage_errors(tmp_path):
    r = run_cli("bench", "--suite", "nope", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "nope" in r.stderr and not (tmp_path / "x").exists()
    r = run_cli("bench", "--plugin", "no_such_module:register", "--out", str(tmp_path / "y"))
    assert r.returncode == 2 and "no_such_module" in r.stderr and not (tmp_path / "y").exists()


@pytest.mark.parametrize("suite", ["smoke", "circuits"])
def test_a_named_suite_with_problem_is_refused(tmp_path, suite):
    """``--suite smoke --problem p.yaml`` contradicts itself: refused naming both options, not
    run as the custom suite with the explicit ``--suite`` dropped."""
    problem = tmp_path / "mine.yaml"
    problem.write_text("problem: circuits\nfabric: fabric-moe-16\ndemand: demand-moe-16\n")
    out = tmp_path / "out"
    r = run_cli("bench", "--suite", suite, "--problem", str(problem), "--out", str(out), "-q")
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [
        f"error: --suite {suite} and --problem: a named suite runs its own problems; give "
        "--problem alone for a custom suite"
    ]
    assert not out.exists()


def test_instance_ids_are_stable_content_hashes():
    a = circuits_instance(8, 4, "sparse", seed=3)
    assert instance_id(a) == instance_id(circuits_instance(8, 4, "sparse", seed=3))
    assert instance_id(a) != instance_id(circuits_instance(8, 4, "sparse", seed=4))
    preset = build_problem("placement", {"cluster": "small-4", "workflow": "grpo-sync-qwen3-4b"})
    from planner.presets import get_preset

    inline = build_problem(
        "placement",
        {
            "cluster": get_preset("small-4").data(),
            "workflow": get_preset("grpo-sync-qwen3-4b").data(),
        },
    )
    assert instance_id(preset) == instance_id(inline)


def test_a_broken_instance_is_an_error_row():
    spec = RunSpec(
        "t",
        InstanceRef(
            "broken", "circuits", fields={"fabric": "no-such-fabric", "demand": "demand-alltoall-8"}
        ),
        "greedy",
    )
    row = execute_run(spec)
    assert row["status"] == "error" and "no-such-fabric" in row["message"]


def test_retry_errors_reruns_only_the_error_rows(tmp_path):
    from benchmarks.harness import run_specs

    inst = InstanceRef(
        "tiny",
        "circuits",
        generator="circuits_instance",
        args={"endpoints": 4, "ports": 2, "shape": "sparse", "pairs": 4},
    )
    specs = [
        RunSpec("t", inst, "crashing", plugins=(PLUGIN,)),
        RunSpec("t", inst, "greedy", plugins=(PLUGIN,)),
    ]
    first = run_specs(specs, tmp_path, progress=False)
    assert [r["status"] for r in first] == ["error", "feasible"]
    assert len(load_rows(tmp_path / "runs.jsonl")) == 2
    run_specs(specs, tmp_path, progress=False)
    assert len(load_rows(tmp_path / "runs.jsonl")) == 2  # finished, errors included, are skipped
    again = run_specs(specs, tmp_path, progress=False, retry_errors=True)
    assert len(load_rows(tmp_path / "runs.jsonl")) == 3 and [r["status"] for r in again] == [
        "error",
        "feasible",
    ]


def test_custom_suite_over_user_files(tmp_path):
    problem = tmp_path / "mine.yaml"
    problem.write_text("problem: circuits\nfabric: fabric-moe-16\ndemand: demand-moe-16\n")
    out = tmp_path / "out"
    solvers = shlex.split("--solver greedy --solver cpsat --time-limit 30")
    problems = ["--problem", str(problem), "--problem", "broadcast-example"]
    r = run_cli("bench", *problems, *solvers, "--out", str(out), "-q")
    assert (
        r.returncode == 2 and "broadcast" in r.stderr
    )  # broadcast has no greedy: refused before any run
    assert not out.exists()
    r = run_cli(
        "bench", "--problem", str(problem), *solvers, "--seeds", "2", "--out", str(out), "-q"
    )
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(out / "runs.csv")
    assert len(df) == 4 and set(df["solver"]) == {"greedy", "cpsat"} and set(df["seed"]) == {0, 1}
    assert (df["ratio"] >= 1 - 1e-9).all() and df["instance"].iloc[0] == str(problem)


def test_bench_help_names_every_suite():
    """``--suite``'s help is a literal (the CLI does not import the suites to start): it names
    each one the harness runs."""
    import typing

    from benchmarks.cli import bench
    from benchmarks.suites import SUITES

    hints = typing.get_type_hints(bench, include_extras=True)
    help_text = hints["suite"].__metadata__[0].help
    assert all(name in help_text for name in SUITES)


def test_the_per_solver_counts_add_up_to_the_runs():
    """Every run is counted in one column of the per-solver table: ok (optimal or feasible) or
    the status it ended with (an infeasible run was counted in none)."""
    from benchmarks.report import solver_table, tidy
    from costmodels.solving import Status

    def row(i: int, status: Status) -> dict:
        planned = status.has_plan
        return {
            "key": f"k{i}",
            "instance_id": "i",
            "instance": "i",
            "kind": "circuits",
            "size": 4,
            "solver": "s",
            "exact": True,
            "options": "{}",
            "seed": i,
            "time_limit": None,
            "status": status.value,
            "termination": None,
            "objective": 1.0 if planned else None,
            "primary": 0.0 if planned else None,
            "wall_time_s": 0.1,
            "peak_rss_mb": 50.0,
            "extra": {},
            "trace": None,
        }

    statuses = [*Status, Status.INFEASIBLE]
    table = solver_table(tidy([row(i, s) for i, s in enumerate(statuses)]))
    (counts,) = table.to_dict(orient="records")
    unplanned = [s.value for s in Status if not s.has_plan]
    assert counts["runs"] == len(statuses)
    assert counts["ok"] + sum(counts[s] for s in unplanned) == counts["runs"]
    assert counts["infeasible"] == 2 and counts["optimal"] == 1
