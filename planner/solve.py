"""The façade: ``solve(problem, solver=..., time_limit=..., seed=..., **options) -> Result``.

It looks the solver up, checks its options, runs it, then re-evaluates the returned plan with
the cost model and checks it with the independent validator (docs/architecture.md, "Data flow"
step 2). A solver's crash becomes a Result with status ``error``; a plan the validator rejects
becomes status ``invalid`` with the violations listed. The objective is always the cost model's.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable
from typing import Any

from costmodels.problem import ProblemKind
from costmodels.solving import (
    ClockRecord,
    DeadlineExceeded,
    SolverOutput,
    Status,
    Termination,
    clock_record,
    default_cap,
    termination_of,
)
from planner.registry import Registry, SolverInfo, default_registry
from planner.result import Result, relative_gap

#: relative tolerance between an exact solver's own objective and the cost model
#: (docs/architecture.md, "The cost model is the contract")
EXACT_RTOL = 1e-6


def check_plan(
    problem: Any, plan: Any, registry: Registry | None = None
) -> tuple[list[str], float | None, dict[str, Any]]:
    """Validate ``plan`` and, when valid, evaluate it: (violations, objective, breakdown)."""
    kind = (registry or default_registry()).kind_of(problem)
    violations = [str(v) for v in kind.check(problem, plan)]
    if violations:
        return violations, None, {}
    objective, breakdown = kind.evaluate(problem, plan)
    return [], objective, breakdown


def _checked_budget(time_limit: float | None, seed: int) -> None:
    if time_limit is not None and (
        isinstance(time_limit, bool)
        or not isinstance(time_limit, int | float)
        or not math.isfinite(time_limit)
        or not time_limit > 0
    ):
        raise ValueError(f"time_limit must be a finite number of seconds > 0, got {time_limit!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be an integer in [0, 2**63), got {seed!r}")


def solve(
    problem: Any,
    solver: str | None = None,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    registry: Registry | None = None,
    progress: Callable[[int, int, float], None] | None = None,
    **options: Any,
) -> Result:
    """Solve ``problem`` with the named solver (the problem's default when None).

    Every run is bounded: without ``time_limit`` the solver runs under its default cap
    (``SolverInfo.time_limit``, listed by ``rlplan plan <problem> --solver help``), which stops it
    early only when its own default effort would overrun the cap; with ``time_limit`` a search
    may use all of it.

    ``progress(used, budget, best)`` is called by solvers that report progress (others ignore
    it). Raises ``UnknownSolverError`` for an unknown solver and ``SolverOptionError`` (a
    ``ValueError``) for an option the solver does not take or a value it rejects, before the
    solver starts; everything that goes wrong inside the solver is reported in the Result.
    """
    reg = registry or default_registry()
    info = reg.get(reg.kind_of(problem).name, solver)
    return run_validated(
        problem,
        info,
        info.validate_options(options),
        time_limit=time_limit,
        seed=seed,
        progress=progress,
        registry=reg,
    )


def _budget_spent(clock: ClockRecord) -> bool:
    """Whether the solver's work record shows its whole budget done ("60 of 60 evaluations"):
    a solve that then runs past its limit finishing work no deadline cut (judging its plan)
    returns what it would return on any machine. Work a deadline did cut marked the record
    where it was cut (:meth:`costmodels.solving.Deadline.expired`, ``checkpoint``)."""
    return clock.done is not None and clock.budget is not None and clock.done >= clock.budget


def run_validated(
    problem: Any,
    info: SolverInfo,
    options: dict[str, Any],
    *,
    time_limit: float | None = None,
    seed: int = 0,
    progress: Callable[[int, int, float], None] | None = None,
    registry: Registry | None = None,
) -> Result:
    """:func:`solve` with the solver looked up and its options already validated
    (``info.validate_options``): what :func:`planner.planning.plan` calls, so a request's options
    are checked once, before its progress display opens."""
    reg = registry or default_registry()
    kind = reg.kind_of(problem)
    _checked_budget(time_limit, seed)
    start = time.perf_counter()
    base = {
        "problem": problem,
        "solver": info.name,
        "options": dict(options),
        "seed": seed,
        "time_limit": time_limit,
    }
    facade = {"progress": progress} if progress is not None and info.takes_progress else {}
    try:
        with (
            default_cap(None if time_limit is not None else info.time_limit),
            clock_record(
                time_limit if time_limit is not None else info.time_limit, time_limit is not None
            ) as clock,
        ):
            out = info.func(problem, time_limit=time_limit, seed=seed, **facade, **options)
    except DeadlineExceeded as exc:  # one evaluation outlasted the whole limit: no plan, and why
        what = "time limit" if time_limit is not None else "default time cap"
        limit = time_limit if time_limit is not None else info.time_limit
        return Result(
            status=Status.NO_SOLUTION,
            wall_time_s=time.perf_counter() - start,
            clock=clock.describe(),
            termination=Termination.TIME_LIMIT,
            message=f"{info.name}: a single evaluation outlasted the {what} of {limit:g} s "
            f"({exc}); give a longer --time-limit",
            **base,
        )
    except (
        Exception
    ) as exc:  # a crash is a result, never a silent skip (docs/architecture.md, "Data flow")
        return Result(
            status=Status.ERROR,
            wall_time_s=time.perf_counter() - start,
            termination=Termination.ERROR,
            message=f"{type(exc).__name__}: {exc}",
            stats={"traceback": traceback.format_exc()},
            **base,
        )
    wall = time.perf_counter() - start
    if clock.limit is not None and wall >= clock.limit and not _budget_spent(clock):
        # ran the whole limit with its budget unspent: whatever stopped it, the clock had its say
        clock.mark(wall, share=False)
    if clock.bound:  # the wall clock, not the work budget, ended the search: say so everywhere
        base["clock"] = clock.describe()
        if isinstance(out, SolverOutput):
            out.message = f"{out.message} [{base['clock']}]".strip()
    if not isinstance(out, SolverOutput):
        return Result(
            status=Status.ERROR,
            wall_time_s=wall,
            message=f"solver returned {type(out).__name__}, not SolverOutput",
            termination=Termination.ERROR,
            **base,
        )
    result = Result(
        status=out.status,
        wall_time_s=wall,
        plan=out.plan,
        bound=out.bound,
        message=out.message,
        solver_objective=out.objective,
        stats=dict(out.stats),
        termination=termination_of(out, clock),
        **base,
    )
    if time_limit is None:
        result.stats["default_time_limit"] = info.time_limit
    return _judged(result, out, kind, info, reg)


def _judged(
    result: Result, out: SolverOutput, kind: ProblemKind, info: SolverInfo, reg: Registry
) -> Result:
    """The solver's output held to the judge: the plan's type, the independent validator, the
    cost model's objective (never the solver's), and its bound against that objective."""
    problem = result.problem
    if out.plan is None:
        if out.status.has_plan:
            result.status, result.termination = Status.ERROR, Termination.ERROR
            result.message = (
                f"solver reported {out.status.value} without a plan. {out.message}".strip()
            )
        return result
    if not isinstance(out.plan, kind.plan_type):
        result.status, result.termination = Status.ERROR, Termination.ERROR
        result.message = (
            f"solver returned a {type(out.plan).__name__}, not a {kind.plan_type.__name__}"
        )
        return result
    try:
        violations, objective, breakdown = check_plan(problem, out.plan, reg)
    except Exception as exc:
        result.status, result.termination = Status.ERROR, Termination.ERROR
        result.message = f"cost model failed on the plan: {type(exc).__name__}: {exc}"
        return result
    if violations:
        result.status = Status.INVALID
        result.violations = violations
        result.message = (
            f"the validator rejected the plan ({len(violations)} violations). {out.message}".strip()
        )
        return result
    if not out.status.has_plan:
        result.status = Status.FEASIBLE
    if out.status is Status.OPTIMAL and not info.exact:
        # a proof is the registry's word (SolverInfo.exact), not the solver's: a heuristic's
        # "optimal" (a plugin's, say) would make bench count it as a best-known objective
        result.status = Status.FEASIBLE
        if result.termination is Termination.OPTIMAL:
            result.termination = Termination.CONVERGED
        result.message += " [not registered as exact: its claim of optimality dropped]"
    result.objective = objective
    result.breakdown = breakdown
    if (
        out.bound is not None
        and objective is not None
        and out.bound > objective * (1 + EXACT_RTOL) + 1e-12
    ):
        result.message += (
            f" [bound {out.bound:.9g} exceeds the cost model's objective {objective:.9g}: "
            "bound dropped]"
        )
        result.bound = None
    result.gap = relative_gap(result.objective, result.bound)
    if out.objective is not None and objective is not None and math.isfinite(out.objective):
        mismatch = abs(out.objective - objective) > EXACT_RTOL * max(1.0, abs(objective))
        if mismatch:
            result.stats["objective_mismatch"] = {"solver": out.objective, "cost_model": objective}
            if info.exact:
                result.message += (
                    f" [exact solver claimed {out.objective:.9g}, cost model says {objective:.9g}]"
                )
    return result
