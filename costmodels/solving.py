"""What every solver returns, whatever its problem (DESIGN.md, "Data flow" step 3).

Solvers live in ``heuristics`` and ``formulations`` and import only ``costmodels``, so the shared
return type lives here. The planner turns a :class:`SolverOutput` into a checked ``Result``.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel


class Status(StrEnum):
    """Outcome of a solve (after python-mip: stopped-with-a-plan differs from stopped-without)."""

    OPTIMAL = "optimal"  # plan proven optimal for the solver's model
    FEASIBLE = "feasible"  # a valid plan, optimality not proven (time limit, heuristic)
    INFEASIBLE = "infeasible"  # proven: no plan satisfies the constraints
    NO_SOLUTION = "no_solution"  # stopped (time limit) before any plan was found
    INVALID = "invalid"  # the solver returned a plan the independent validator rejects
    ERROR = "error"  # the solver crashed

    @property
    def has_plan(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


@dataclass
class SolverOutput:
    """A solver's raw answer. ``objective`` is the solver's own claim, which the planner checks
    against the cost model; ``bound`` is a proven lower bound on the optimum, if any."""

    status: Status
    plan: BaseModel | None = None
    objective: float | None = None
    bound: float | None = None
    message: str = ""
    stats: dict[str, Any] = field(default_factory=dict)


class DeadlineExceeded(Exception):
    """Raised by :meth:`Deadline.check` inside work that must stop at the solver's time limit;
    the solver catches it and returns its best plan so far."""


#: the wall-clock cap of the solve running in this context, set by the façade from the solver's
#: default limit when the caller gives none (see :func:`default_cap`)
_CAP: contextvars.ContextVar[float | None] = contextvars.ContextVar("rlplan_time_cap", default=None)


@contextlib.contextmanager
def default_cap(seconds: float | None) -> Iterator[None]:
    """Run a solve under a default wall-clock cap: every :class:`Deadline` made inside without a
    limit of its own stops after ``seconds``.

    Why a cap and not a limit: a search given ``time_limit`` treats it as a budget to fill (SHA-EA
    calibrates its evaluations to it), which is right when a user asks for 60 s and wrong when
    the user asked for nothing and a small instance finishes in one. Under a cap a solver keeps
    its own default effort (``Deadline.time_limit`` stays None) and only stops early when that
    effort would overrun the cap; the cap reaches HiGHS and CP-SAT through
    :meth:`Deadline.remaining`, which every backend call reads."""
    token = _CAP.set(seconds)
    try:
        yield
    finally:
        _CAP.reset(token)


class Deadline:
    """A solver's wall-clock limit, made once from ``time_limit`` and handed to everything that
    can stop early (one object instead of ``float | None`` arithmetic in every loop).

    ``time_limit`` is the caller's limit (None when none was given); ``cap`` is the default cap
    in force when it is None (:func:`default_cap`), and ``limit`` whichever of the two applies."""

    def __init__(self, time_limit: float | None) -> None:
        self.start = time.perf_counter()
        self.time_limit = time_limit
        self.cap = _CAP.get() if time_limit is None else None
        self.limit = time_limit if time_limit is not None else self.cap
        self.at = None if self.limit is None else self.start + self.limit

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def sub(self, seconds: float) -> Deadline:
        """A deadline for one step of this solve: ``seconds`` from now, never past this one
        (a time-boxed sub-search, e.g. an exact Level-4 enumeration that must not eat the run)."""
        out = Deadline(seconds)
        if self.at is not None and self.at < out.at:  # type: ignore[operator]
            out.at = self.at
            out.limit = self.at - out.start
        return out

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None without a limit."""
        return None if self.at is None else max(0.0, self.at - time.perf_counter())

    def expired(self) -> bool:
        return self.at is not None and time.perf_counter() > self.at

    def check(self) -> None:
        """Raise :class:`DeadlineExceeded` once the limit has passed."""
        if self.expired():
            what = "time limit" if self.cap is None else "default time limit"
            raise DeadlineExceeded(f"{what} of {self.limit:g} s reached")


@dataclass(frozen=True)
class TracePoint:
    """One point of an anytime curve: ``t`` seconds after the solver started, the best
    objective so far, and the evaluations spent (None for solvers that do not count them)."""

    t: float
    best: float
    evaluations: int | None = None

    def as_row(self) -> list[Any]:
        """``[t, evaluations, best]``: the JSON form the harness stores (best last)."""
        return [self.t, self.evaluations, self.best]


#: no limit: the default of functions that take an optional deadline
UNLIMITED = Deadline(None)


class Trace:
    """An anytime trace, recorded against a :class:`Deadline`'s clock."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self.points: list[TracePoint] = []

    def record(self, best: float, evaluations: int | None = None) -> None:
        self.points.append(TracePoint(self.deadline.elapsed(), best, evaluations))

    def rows(self) -> list[list[Any]]:
        """The points where the best improved, plus the last one, as ``[t, evaluations, best]``."""
        return [p.as_row() for p in improvements(self.points)]


def improvements(trace: list[TracePoint]) -> list[TracePoint]:
    """An anytime trace cut to the points where the best improved, plus the last point, so a
    long search keeps its whole curve in a few entries."""
    out: list[TracePoint] = []
    for point in trace:
        if not out or point.best < out[-1].best:
            out.append(point)
    if trace and out[-1] is not trace[-1]:
        out.append(trace[-1])
    return out


class KeepBest:
    """Validate, score, keep the best: the loop every sweep-style solver runs (baselines, brute
    force). ``offer(plan)`` checks the plan with the problem's validator and scores it with its
    evaluator; invalid plans are counted, never kept. A later plan replaces the best only when it
    is better by more than ``tol`` (so ties keep the first)."""

    def __init__(self, problem: Any, evaluate: Callable[[Any, Any], float], check: Callable[[Any, Any], list[Any]],
                 tol: float = 0.0) -> None:
        self.problem, self._evaluate, self._check, self.tol = problem, evaluate, check, tol
        self.best: float = math.inf
        self.plan: Any = None
        self.offered = self.rejected = 0

    def offer(self, plan: Any) -> float:
        """The plan's objective (inf when the validator rejects it); kept when it is the best."""
        self.offered += 1
        if self._check(self.problem, plan):
            self.rejected += 1
            return math.inf
        cost = self._evaluate(self.problem, plan)
        if cost < self.best - self.tol:
            self.best, self.plan = cost, plan
        return cost


@contextlib.contextmanager
def native_stdout_silenced() -> Iterator[None]:
    """Discard what native solver code prints to file descriptor 1 while the block runs (the
    solvers' own logs are off; what is left is debug noise).

    HiGHS 1.12 prints ``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``
    with printf even when its output is off (ERGO-Code/HiGHS#2783); on stdout it would corrupt
    ``--json`` output and plan files written to ``-``. Python-level output is flushed first so
    nothing is reordered."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no fd 1 (embedded interpreters): nothing to protect
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.close(devnull)
        yield
    finally:
        try:
            sys.stdout.flush()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
