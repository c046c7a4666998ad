"""Same input, same plan (docs/architecture.md, "Solver plumbing"): a solver's default effort is a
work
budget, never the wall clock, so the same input, seed and budget give a byte-identical plan on a
quiet machine, a loaded one, and from several threads at once; the time cap only stops a search
that would overrun it, and the result then says so (``Result.clock``).

The load here is real: two CPU-bound processes run beside every determinism check."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from costmodels.solving import (
    Deadline,
    Status,
    Termination,
    clock_record,
    native_stdout_silenced,
    note_work,
)
from planner import solve
from planner.io import build_problem
from planner.registry import default_registry

#: one instance per problem, sized so every solver's default budget finishes well inside its cap
#: on a loaded two-core machine (the cap is a safety net; a run it stopped would fail the check)
INSTANCES = {
    "placement": {"cluster": "small-8", "workflow": "grpo-sync-qwen3-4b"},
    "circuits": {"fabric": "fabric-8", "demand": "demand-alltoall-8"},
    "broadcast": {"sync": "weight-sync-example"},
    "replan": {"state": "replan-tail"},
    "cosched": {"jobs": "rollmux-mixed"},
    "rollout": None,  # the kind's first canned job: a preset's default budget is minutes of epochs
    "job": None,  # its first canned job (a long tail: placement and knobs)
    "fleet": {"fleet": "fleet-two-small"},
}


def _burn() -> None:  # pragma: no cover - runs in a child process
    x = 0
    while True:
        x = (x * 1103515245 + 12345) % 2147483648


@contextlib.contextmanager
def loaded(processes: int = 2) -> Iterator[None]:
    """Two CPU-bound processes beside the block (the load a shared CI machine adds)."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_burn, daemon=True) for _ in range(processes)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(timeout=10)


def _cases() -> list[tuple[str, str]]:
    reg = default_registry()
    return [(k.name, s.name) for k in reg.solvable() for s in reg.solvers(k.name)]


def _fingerprint(result) -> str:
    assert result.plan is not None, (result.solver, result.status, result.message)
    return json.dumps(
        {
            "plan": result.plan.model_dump(mode="json"),
            "objective": result.objective,
            "status": result.status.value,
        },
        sort_keys=True,
    )


def test_every_problem_has_a_determinism_instance():
    assert {k for k, _ in _cases()} <= set(INSTANCES)


@pytest.mark.slow
@pytest.mark.parametrize("kind,solver", _cases())
def test_default_budget_gives_byte_identical_plans_under_load(kind, solver):
    """Every registered solver, twice with its default budget while two CPU-bound processes run
    beside it: the same plan to the byte, and a result that says the clock decided nothing."""
    # brute force refuses the presets by size: it runs on the kind's first canned instance
    canned = solver == "bruteforce" or INSTANCES[kind] is None
    problem = (
        default_registry().kind(kind).canned()[0].build()
        if canned
        else build_problem(kind, INSTANCES[kind])
    )
    with loaded():
        first = solve(problem, solver, seed=3)
        second = solve(problem, solver, seed=3)
    assert first.deterministic and second.deterministic, (first.clock, second.clock)
    assert _fingerprint(first) == _fingerprint(second)


# --- the clock record ---------------------------------------------------------------------------


def test_an_expired_deadline_marks_the_solve_as_clock_bound():
    with clock_record(0.001, explicit=False) as record:
        d = Deadline(None)
        d.at = d.start  # already past
        note_work(9, 300, "plans")
        assert d.expired()
    assert record.bound
    assert (
        record.describe() == "stopped by the time cap of 0.001 s after 9 of 300 plans: "
        "this result depends on machine speed"
    )


def test_a_time_share_that_runs_out_is_not_reported_as_the_limit_stopping_the_solve():
    """A solver that splits its limit (SHA-EA's baseline seeds) and sees a share run out: the
    result depends on the clock, but the limit did not stop it; once the limit itself binds,
    the record says so instead."""
    with clock_record(10.0, explicit=True) as record:
        share = Deadline(10.0).sub(1.0)
        share.at = share.start  # the share is spent
        note_work(1200, 1200, "evaluations")
        assert share.expired()
        assert record.bound and record.share
        assert record.describe() == (
            "a part of the search ran on a share of the time limit of 10 s and was cut short, "
            "after 1200 of 1200 evaluations: this result depends on machine speed"
        )
        whole = Deadline(10.0)
        whole.at = record.deadline_at = time.perf_counter() - 1.0  # the limit itself passes
        assert whole.expired()
    assert record.bound and not record.share
    assert record.describe().startswith(
        "the time limit of 10 s was reached after all 1200 evaluations and cut the work"
    )
    # a search that evaluates in batches may end one past its budget: both counts are said
    record.done = 1203
    assert record.describe().startswith(
        "the time limit of 10 s was reached after all 1200 evaluations (1203 with the last "
        "batch) and cut the work"
    )


def test_a_deadline_that_never_expires_leaves_the_record_clean():
    with clock_record(60.0, explicit=False) as record:
        d = Deadline(None)
        assert not d.expired()
        assert not d.sub(30.0).expired()
    assert not record.bound and record.describe() == ""


def test_a_capped_solve_says_so_in_its_result_and_plan_file():
    """A limit too short for the default budget: the result (and the plan file) says the clock
    decided it; without the cap binding the result is marked deterministic."""
    from planner.planfile import result_to_dict

    problem = build_problem("placement", {"cluster": "small-16", "workflow": "ppo-sync-qwen3-4b"})
    r = solve(problem, "ea", time_limit=0.3)
    assert not r.deterministic and "depends on machine speed" in r.clock
    assert r.clock in r.message and r.termination == Termination.TIME_LIMIT
    if r.plan is not None:
        assert (
            result_to_dict(r)["clock"] == r.clock
            and result_to_dict(r)["termination"] == "time_limit"
        )


def _replan_mixed_balanced(delta: float) -> dict:
    """``replan-mixed`` with KV balance (2) held within ``delta``."""
    from costmodels.replan.presets import replan_mixed

    return {**{k: v for k, v in replan_mixed().items() if k != "name"}, "kv_delta": delta}


@pytest.mark.parametrize(
    ("kind", "fields", "solver", "why", "status"),
    [
        (
            "placement",
            {"cluster": "small-8", "workflow": "grpo-sync-qwen3-8b"},
            "ilp",
            Termination.OPTIMAL,
            Status.OPTIMAL,
        ),
        (
            "placement",
            {"cluster": "small-8", "workflow": "grpo-sync-qwen3-8b"},
            "verl",
            Termination.CONVERGED,
            Status.FEASIBLE,
        ),
        # KV balance (2) within 0.1: the packing's plans break it, so HiGHS spends its nodes
        (
            "replan",
            {"state": _replan_mixed_balanced(0.1)},
            "milp",
            Termination.WORK_BUDGET,
            Status.FEASIBLE,
        ),
        ("replan", {"state": "replan-64"}, "milp", Termination.OPTIMAL, Status.OPTIMAL),
    ],
)
def test_why_a_solver_stopped_is_kept_apart_from_what_it_returned(
    kind, fields, solver, why, status
):
    """Termination (why it stopped) beside status (what it returned): a proof, a finished search
    and a spent work budget all say so, in the result and in the plan file."""
    from planner.planfile import result_to_dict

    # the spent budget: ten branch-and-bound nodes say it as well as the default hundred
    options = {"nodes": 10} if why is Termination.WORK_BUDGET else {}
    r = solve(build_problem(kind, fields), solver, **options)
    assert (r.status, r.termination) == (status, why), r.message
    assert result_to_dict(r)["termination"] == why.value


def test_termination_reads_the_clock_before_the_solver():
    """The clock, when it bound, decides what the result is called, whatever the solver declared;
    otherwise a declared termination stands, then the status, then a spent work budget."""
    from costmodels.solving import ClockRecord, SolverOutput, termination_of

    bound = ClockRecord(limit=1.0, bound=True)
    assert (
        termination_of(SolverOutput(Status.OPTIMAL, termination=Termination.OPTIMAL), bound)
        == Termination.TIME_LIMIT
    )
    assert (
        termination_of(
            SolverOutput(Status.FEASIBLE, termination=Termination.CONVERGED), ClockRecord()
        )
        == Termination.CONVERGED
    )
    assert termination_of(SolverOutput(Status.INFEASIBLE), ClockRecord()) == Termination.INFEASIBLE
    spent = ClockRecord(done=300, budget=300, unit="plans")
    assert termination_of(SolverOutput(Status.FEASIBLE), spent) == Termination.WORK_BUDGET
    assert (
        termination_of(SolverOutput(Status.NO_SOLUTION), ClockRecord(done=3, budget=300))
        == Termination.CONVERGED
    )


# --- threads --------------------------------------------------------------------------------------


def test_solve_from_threads_gives_the_serial_results_and_leaves_stdout_alone(capfd):
    """A scheduler calling ``solve()`` from four threads: each gets the serial answer, and what
    the process prints meanwhile and afterwards reaches its stdout (the library never swaps
    file descriptor 1; only the CLI, which owns its process, silences native output)."""
    problem = build_problem("replan", {"state": "replan-tail"})
    serial = _fingerprint(solve(problem, "milp", seed=0))
    stop = threading.Event()

    def chatter() -> int:
        n = 0
        while not stop.is_set():
            os.write(1, b"tick\n")
            n += 1
            stop.wait(0.01)
        return n

    with ThreadPoolExecutor(5) as pool:
        talker = pool.submit(chatter)
        futures = [pool.submit(solve, problem, "milp", seed=0) for _ in range(4)]
        results = [f.result() for f in futures]
        stop.set()
        ticks = talker.result()
    assert all(_fingerprint(r) == serial for r in results)
    os.write(1, b"after\n")
    out = capfd.readouterr().out
    assert out.count("tick\n") == ticks and out.endswith("after\n")


def test_nested_and_concurrent_silencing_restores_the_original_stdout(capfd):
    """With silencing on (the CLI), overlapping blocks from several threads share one swap and
    the last one out restores the real descriptor."""
    from costmodels.solving import protect_stdout

    protect_stdout(True)
    try:
        barrier = threading.Barrier(4)

        def worker(i: int) -> None:
            with native_stdout_silenced():
                barrier.wait()
                os.write(1, f"noise {i}\n".encode())
                with native_stdout_silenced():
                    os.write(1, b"nested noise\n")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        protect_stdout(False)
    os.write(1, b"still here\n")
    assert capfd.readouterr().out == "still here\n"


# --- library arguments are checked like CLI ones ------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"time_limit": "5"}, "time_limit"),
        ({"time_limit": True}, "time_limit"),
        ({"time_limit": float("inf")}, "time_limit"),
        ({"time_limit": -1.0}, "time_limit"),
        ({"seed": "x"}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"seed": -1}, "seed"),
        ({"seed": True}, "seed"),
    ],
)
def test_solve_refuses_bad_library_arguments_before_it_runs(kwargs, needle):
    problem = build_problem("circuits", INSTANCES["circuits"])
    with pytest.raises(ValueError, match=needle):
        solve(problem, "greedy", **kwargs)


def test_cli_seed_out_of_range_names_the_option():
    from tests.conftest import run_cli

    r = run_cli("plan", "circuits", "--seed", "-1", "-o", "-")
    assert (
        r.returncode == 2
        and "--seed" in r.stderr
        and "greater than or equal to 0" in r.stderr
        and r.stdout == ""
    )
