"""planner.solve: one Result shape, a test per status, options checked, objective re-derived."""

from __future__ import annotations

import pytest

from costmodels.placement.plan import PlacementPlan
from costmodels.solving import SolverOutput, Status
from heuristics.placement.colocated import colocated_plan
from planner import Registry, UnknownSolverError, default_registry, solve
from planner.io import build_problem
from planner.registry import SolverOptionError


@pytest.fixture(scope="module")
def problem():
    return build_problem("placement", {"cluster": "small-8", "workflow": "grpo-sync-qwen3-4b"})


def _reg(func, name="s", exact=False):
    reg = Registry.builtin_problems()
    reg.register("placement", name, func, description="test double", exact=exact)
    return reg


def test_feasible_objective_is_the_cost_models(problem):
    def lying(p, *, time_limit=None, seed=0):
        return SolverOutput(Status.FEASIBLE, plan=colocated_plan(p, 2, 2, 1), objective=1e-3)

    r = solve(problem, "s", registry=_reg(lying))
    assert r.status is Status.FEASIBLE and r.success
    assert r.objective > 1 and r.solver_objective == 1e-3
    assert r.stats["objective_mismatch"]["cost_model"] == r.objective
    assert r.bound is None and r.gap is None


def test_optimal_with_bound_reports_gap(problem):
    plan = colocated_plan(problem, 2, 2, 1)

    def exact(p, *, time_limit=None, seed=0):
        return SolverOutput(Status.OPTIMAL, plan=plan, bound=1.0)

    r = solve(problem, "s", registry=_reg(exact, exact=True))
    assert r.status is Status.OPTIMAL
    assert r.bound == 1.0 and r.gap == pytest.approx((r.objective - 1.0) / r.objective)

    def overclaiming(p, *, time_limit=None, seed=0):
        return SolverOutput(Status.OPTIMAL, plan=plan, bound=1e9)

    r = solve(problem, "s", registry=_reg(overclaiming))
    assert r.bound is None and "bound dropped" in r.message


def test_only_a_solver_registered_exact_can_return_optimal(problem):
    """A proof is the registry's word: a heuristic (a plugin's, say) that calls its plan optimal
    is reported feasible, its search finished, and says why; its valid bound is kept."""
    plan = colocated_plan(problem, 2, 2, 1)

    def boasting(p, *, time_limit=None, seed=0):
        return SolverOutput(Status.OPTIMAL, plan=plan, bound=1.0)

    r = solve(problem, "s", registry=_reg(boasting))
    assert r.status is Status.FEASIBLE and r.termination.value == "converged"
    assert "claim of optimality dropped" in r.message and r.bound == 1.0


def test_crash_becomes_error(problem):
    def crash(p, *, time_limit=None, seed=0):
        raise RuntimeError("boom")

    r = solve(problem, "s", registry=_reg(crash))
    assert r.status is Status.ERROR and "boom" in r.message and not r.success
    assert "Traceback" in r.stats["traceback"]


def test_invalid_plan_becomes_invalid(problem):
    def bad(p, *, time_limit=None, seed=0):
        plan = colocated_plan(p, 2, 2, 1)
        tasks = [
            t.model_copy(update={"devices": [[[t.devices[0][0][0]] * t.tp] * t.pp] * t.dp})
            for t in plan.tasks
        ]
        return SolverOutput(Status.FEASIBLE, plan=PlacementPlan(groups=plan.groups, tasks=tasks))

    r = solve(problem, "s", registry=_reg(bad))
    assert r.status is Status.INVALID and r.objective is None
    assert any("C1-tasklets" in v for v in r.violations)


def test_infeasible_and_no_solution_pass_through(problem):
    for status in (Status.INFEASIBLE, Status.NO_SOLUTION):
        r = solve(
            problem,
            "s",
            registry=_reg(
                lambda p, *, time_limit=None, seed=0, s=status: SolverOutput(s, message="m")
            ),
        )
        assert r.status is status and r.plan is None and not r.success


def test_plan_claimed_without_plan_is_error(problem):
    r = solve(
        problem,
        "s",
        registry=_reg(lambda p, *, time_limit=None, seed=0: SolverOutput(Status.OPTIMAL)),
    )
    assert r.status is Status.ERROR


def test_wrong_plan_type_is_error(problem):
    from costmodels.circuits.plan import CircuitPlan

    r = solve(
        problem,
        "s",
        registry=_reg(
            lambda p, *, time_limit=None, seed=0: SolverOutput(Status.FEASIBLE, plan=CircuitPlan())
        ),
    )
    assert r.status is Status.ERROR and "CircuitPlan" in r.message


def test_options_are_checked_and_passed(problem):
    seen = {}

    def with_opts(p, *, time_limit=None, seed=0, population: int = 10):
        seen.update(population=population, seed=seed, time_limit=time_limit)
        return SolverOutput(Status.FEASIBLE, plan=colocated_plan(p, 2, 2, 1))

    reg = _reg(with_opts)
    assert reg.get("placement", "s").options == ("population",)
    r = solve(problem, "s", registry=reg, population=7, seed=3, time_limit=5)
    assert seen == {"population": 7, "seed": 3, "time_limit": 5} and r.options == {"population": 7}
    with pytest.raises(SolverOptionError, match="mutation"):
        solve(problem, "s", registry=reg, mutation=0.1)
    with pytest.raises(ValueError):
        solve(problem, "s", registry=reg, time_limit=0)


def test_registry_fails_loudly():
    reg = Registry.builtin_problems()
    f = lambda p, *, time_limit=None, seed=0: None  # noqa: E731
    reg.register("placement", "a", f, description="")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("placement", "a", f, description="")
    with pytest.raises(TypeError, match="time_limit"):
        reg.register("placement", "b", lambda p, *, seed=0: None, description="")
    with pytest.raises(UnknownSolverError, match="available: a"):
        reg.get("placement", "zzz")


def test_default_registry_lists_placement_solvers(problem):
    reg = default_registry()
    assert "verl" in [s.name for s in reg.solvers("placement")]
    r = solve(problem, evaluations=20)  # the problem's default solver, on a small budget
    assert r.success and r.solver == reg.default("placement")


def test_unknown_problem_type():
    with pytest.raises(TypeError, match="not a problem"):
        solve(object())


def test_a_run_without_a_limit_stops_at_the_solvers_default_cap(problem):
    """Every run is bounded (docs/architecture.md, "Interfaces people use"): a solver that would
    search forever without a limit stops at its registered default cap, and the limit it ran under
    is recorded."""
    import time

    from costmodels.solving import Deadline

    plan = colocated_plan(problem, 2, 2, 1)
    seen = {}

    def endless(p, *, time_limit=None, seed=0):
        deadline = Deadline(time_limit)
        seen["time_limit"], seen["cap"] = deadline.time_limit, deadline.cap
        while not deadline.expired():
            time.sleep(0.01)
        return SolverOutput(Status.FEASIBLE, plan=plan)

    reg = Registry.builtin_problems()
    reg.register("placement", "endless", endless, description="test double", time_limit=0.3)
    r = solve(problem, "endless", registry=reg)
    assert r.success and r.wall_time_s < 5
    assert seen == {"time_limit": None, "cap": 0.3}  # a cap, not a budget the solver must fill
    assert r.stats["default_time_limit"] == 0.3 and r.time_limit is None
    r = solve(
        problem, "endless", registry=reg, time_limit=0.5
    )  # the caller's limit replaces the cap
    assert seen == {"time_limit": 0.5, "cap": None} and "default_time_limit" not in r.stats
    with pytest.raises(ValueError, match="default time_limit"):
        reg.register(
            "placement", "unbounded", endless, description="test double", time_limit=float("inf")
        )


def test_every_registered_solver_has_a_finite_default_limit():
    import math

    for info in default_registry().solvers():
        assert 0 < info.time_limit < math.inf, info


def test_sha_ea_without_a_limit_plans_for_what_fits_its_cap(problem):
    """Under the default cap SHA-EA keeps its own budget (300 evaluations) on a small instance
    instead of filling the cap, and on any instance it returns before the cap."""
    r = solve(problem, "sha-ea", seed=1)
    assert (
        r.success and r.stats["budget"] <= 300 and r.wall_time_s < r.stats["default_time_limit"] + 5
    )


def test_a_solve_past_its_limit_is_clock_bound_unless_its_whole_budget_was_done(problem):
    """A solver that ran past its limit: the clock had its say, unless its work record shows
    the whole budget done (all 5 of 5 evaluations), when what ran late cut nothing (judging the
    plan): the result is the same on any machine and does not claim the limit stopped it."""
    import time

    from costmodels.solving import note_work

    plan = colocated_plan(problem, 2, 2, 1)

    def finished_then_late(p, *, time_limit=None, seed=0):
        note_work(5, 5, "evaluations")
        time.sleep(0.05)  # past the 0.01 s limit, whatever the machine
        return SolverOutput(Status.FEASIBLE, plan=plan)

    def late(p, *, time_limit=None, seed=0):
        note_work(3, 5, "evaluations")
        time.sleep(0.05)
        return SolverOutput(Status.FEASIBLE, plan=plan)

    done = solve(problem, "s", time_limit=0.01, registry=_reg(finished_then_late))
    assert done.deterministic and done.clock == "" and "time limit" not in done.message
    cut = solve(problem, "s", time_limit=0.01, registry=_reg(late))
    assert not cut.deterministic and "stopped by the time limit" in cut.clock
