"""The contract every problem and every solver signs (docs/architecture.md, "The problem
descriptor"; after cvxpy's ``solver_test_helpers``): each solvable descriptor is complete, and every
solver registered for a kind, read from the registry and never listed by hand, runs on that kind's
canned instances, returns a documented status, returns a plan the independent validator accepts,
never beats the known optimum (or the physical floor), and, when exact, hits the optimum. A solver
is covered the day it is registered."""

from __future__ import annotations

import functools
import math

import pytest

from costmodels.solving import Status
from planner import default_registry, solve
from planner.solve import EXACT_RTOL, check_plan
from tests.conftest import broken_constraints

REG = default_registry()
KINDS = REG.solvable()
CASES = [
    (k.name, c.name, s.name)
    for k in KINDS
    for c in (k.canned() if k.canned else [])
    for s in REG.solvers(k.name)
]
#: canned instances are tiny: heuristics that search until their limit get a few seconds, exact
#: solvers enough to prove optimality (they stop when they do)
TIME_LIMIT, EXACT_TIME_LIMIT = 5.0, 120.0


def _canned(kind: str, name: str):
    return next(c for c in REG.kind(kind).canned() if c.name == name)


@functools.cache
def _problem(kind: str, name: str):
    return _canned(kind, name).build()


@functools.cache
def _known(kind: str, name: str) -> tuple[float | None, float | None]:
    """(optimum, primary of the optimum): given by the canned instance, or proven now by the
    kind's reference (exact) solver."""
    canned = _canned(kind, name)
    if canned.optimum is not None or canned.reference is None:
        return canned.optimum, canned.primary
    ref = solve(_problem(kind, name), canned.reference)
    assert ref.status is Status.OPTIMAL, (
        f"reference {canned.reference} did not prove {name}: {ref.status} {ref.message}"
    )
    key = REG.kind(kind).primary_key
    return ref.objective, ref.breakdown.get(key) if key else None


@pytest.mark.parametrize("kind", [k.name for k in REG.kinds()])
def test_descriptor_is_complete_or_refused(kind):
    desc = REG.kind(kind)
    if REG.solvers(kind):
        assert desc.incomplete() == [], f"{kind}: {desc.incomplete()}"
        assert desc.canned() and REG.default(kind) in {s.name for s in REG.solvers(kind)}
        assert any(s.exact for s in REG.solvers(kind)) or all(
            c.lower_bound is not None for c in desc.canned()
        ), f"{kind}: without an exact solver every canned instance needs a physical floor"
    # landed before its solvers: loading it is refused (tests/test_toy_problem.py runs the CLI)
    else:
        from costmodels.errors import SpecError
        from planner.io import build_problem

        with pytest.raises(SpecError, match="no solvers are registered"):
            build_problem(kind, desc.defaults())


def test_every_solvable_kind_has_cases():
    assert {k for k, _, _ in CASES} == {k.name for k in KINDS}


@pytest.mark.parametrize(("kind", "instance", "solver"), CASES)
def test_solver_signs_the_contract(kind, instance, solver):
    desc = REG.kind(kind)
    problem = _problem(kind, instance)
    info = REG.get(kind, solver)
    result = solve(problem, solver, time_limit=EXACT_TIME_LIMIT if info.exact else TIME_LIMIT)
    if info.ignores and result.status is Status.INVALID:
        # a published baseline that does not enforce these (SolverEntry.ignores): judged, and
        # broken only where it says it does not look
        broken = broken_constraints(result.violations)
        assert broken and broken <= set(info.ignores), (solver, result.violations)
        return
    assert result.status in set(Status) - {Status.INVALID, Status.ERROR}, (
        f"{solver}: {result.status.value} {result.message}"
    )
    assert result.violations == []
    if (
        not result.success
    ):  # a heuristic may find nothing; an exact one must prove on tiny instances
        assert not info.exact, (
            f"exact {solver} ended {result.status.value} on a canned instance: {result.message}"
        )
        return
    # the façade re-derived objective and breakdown; re-check independently
    violations, objective, _ = check_plan(problem, result.plan)
    assert violations == [] and objective == pytest.approx(result.objective, rel=1e-12)
    canned = _canned(kind, instance)
    if canned.lower_bound is not None:
        assert result.objective >= canned.lower_bound * (1 - 1e-9), (
            f"{solver} beats the physical floor {canned.lower_bound}"
        )
    optimum, primary = _known(kind, instance)
    if optimum is None:
        return
    key = (
        (result.breakdown.get(desc.primary_key), result.objective)
        if desc.primary_key
        else (0.0, result.objective)
    )
    best = (primary, optimum) if desc.primary_key else (0.0, optimum)
    tol = EXACT_RTOL * max(1.0, abs(optimum))
    better = key[0] < best[0] - 1e-9 or (
        math.isclose(key[0], best[0], abs_tol=1e-9) and key[1] < best[1] - tol
    )
    assert not better, f"{solver} beats the known optimum {best} with {key}"
    if info.exact:
        assert result.status is Status.OPTIMAL, (
            f"exact {solver}: {result.status.value} {result.message}"
        )
        assert key[0] == pytest.approx(best[0], abs=1e-9) and result.objective == pytest.approx(
            optimum, rel=EXACT_RTOL
        )
        if result.solver_objective is not None:
            assert result.solver_objective == pytest.approx(result.objective, rel=EXACT_RTOL), (
                "exact model disagrees with the cost model"
            )
