"""What every solver returns, whatever its problem (docs/architecture.md, "Data flow" step 3).

Solvers live in ``heuristics`` and ``formulations`` and import only ``costmodels``, so the shared
return type lives here. The planner turns a :class:`SolverOutput` into a checked ``Result``.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import sys
import threading
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


class Termination(StrEnum):
    """Why a solver stopped, kept apart from what it returns (:class:`Status`: a plan or not),
    after pyomo's ``TerminationCondition`` / ``SolutionStatus``: a MILP the clock stopped and a
    heuristic that finished its search may both return a feasible plan, and only one of them
    would return the same plan on another machine."""

    OPTIMAL = "optimal"  # proved optimal for the solver's model (within its gap)
    INFEASIBLE = "infeasible"  # proved that no plan exists
    TIME_LIMIT = "time_limit"  # the wall clock stopped it (the caller's limit or the default cap)
    WORK_BUDGET = "work_budget"  # its work budget (evaluations, plans, nodes) ran out
    CONVERGED = "converged"  # a search that ended on its own terms, no clock or budget cut it
    ERROR = "error"  # it crashed, or answered what the façade refuses

    @property
    def phrase(self) -> str:
        """How a summary says it."""
        return {
            "optimal": "proved optimal",
            "infeasible": "proved infeasible",
            # the limit stopped the search, or a share of it or the work after the budget was
            # cut (ClockRecord.describe says which)
            "time_limit": "cut by the time limit",
            "work_budget": "work budget spent",
            "converged": "search finished",
            "error": "error",
        }[self.value]


@dataclass
class SolverOutput:
    """A solver's raw answer. ``objective`` is the solver's own claim, which the planner checks
    against the cost model; ``bound`` is a proven lower bound on the optimum, if any;
    ``termination`` why it stopped, when the solver knows better than the façade's reading of its
    status and its clock record (:func:`termination_of`)."""

    status: Status
    plan: BaseModel | None = None
    objective: float | None = None
    bound: float | None = None
    message: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    termination: Termination | None = None


def enumerated(
    plan: BaseModel | None,
    objective: float,
    *,
    count: int,
    unit: str,
    stopped: bool,
    none_valid: str,
) -> SolverOutput:
    """What an enumeration returns after ``count`` ``unit`` (the stats key too): finished, its
    best plan proven optimal (objective = bound), or infeasible saying ``none_valid``; stopped by
    the clock, the best plan so far unproven, or no solution if it had none yet."""
    stats = {unit: count}
    if stopped:
        message = f"time limit after {count} {unit}"
        if plan is None:
            return SolverOutput(Status.NO_SOLUTION, message=message, stats=stats)
        return SolverOutput(Status.FEASIBLE, plan, objective, message=message, stats=stats)
    if plan is None:
        return SolverOutput(Status.INFEASIBLE, message=none_valid, stats=stats)
    return SolverOutput(
        Status.OPTIMAL,
        plan,
        objective,
        objective,
        message=f"enumerated {count} {unit}",
        stats=stats,
    )


def termination_of(out: SolverOutput, record: ClockRecord | None) -> Termination:
    """Why the solve behind ``out`` stopped: the clock when it bound (whatever the solver says,
    its result then depends on machine speed), else what the solver declared, else read off its
    status (optimal, infeasible, error) and its work record (:func:`note_work`: the budget spent
    in full), else a search that finished on its own."""
    if record is not None and record.bound:
        return Termination.TIME_LIMIT
    if out.termination is not None:
        return out.termination
    if out.status == Status.OPTIMAL:
        return Termination.OPTIMAL
    if out.status == Status.INFEASIBLE:
        return Termination.INFEASIBLE
    if out.status == Status.ERROR:
        return Termination.ERROR
    if (
        record is not None
        and record.done is not None
        and record.budget is not None
        and record.done >= record.budget
    ):
        return Termination.WORK_BUDGET
    return Termination.CONVERGED


class DeadlineExceeded(Exception):
    """Raised by :meth:`Deadline.check` inside work that must stop at the solver's time limit;
    the solver catches it and returns its best plan so far."""


class WorkExceeded(DeadlineExceeded):
    """Raised by the :meth:`Deadline.check` of a work box (:meth:`Deadline.work`) whose units
    ran out: a deterministic stop, the same on every machine (the clock record stays clean)."""


#: the wall-clock cap of the solve running in this context, set by the façade from the solver's
#: default limit when the caller gives none (see :func:`default_cap`)
_CAP: contextvars.ContextVar[float | None] = contextvars.ContextVar("rlplan_time_cap", default=None)


@dataclass
class ClockRecord:
    """Whether the wall clock decided a solve's result (docs/architecture.md, "Solver plumbing").

    A solve's default effort is a work budget (evaluations, plans, nodes, columns), so the same
    input, seed and budget give the same plan on any machine at any load; its time limit is a
    safety cap. The façade opens one record per solve; every :class:`Deadline` made inside shares
    it, and the first time one is found expired (or a backend reports its time limit, through
    :meth:`Deadline.note_bound`) the record says so. ``done``/``budget``/``unit`` are the solver's
    last word on how far its budget got ("9 of 300 plans").

    A solver may split its limit into time shares (SHA-EA's baseline seeds,
    ``heuristics.placement.sha_ea.baseline_seeds``): a share that runs out makes the result depend
    on the clock too, but the limit itself did not stop the solve. ``share`` says so (the record
    was bound only by deadlines ending before the solve's own, :meth:`Deadline.note_bound`), and
    :meth:`describe` does not then claim that the limit stopped it."""

    limit: float | None = None
    explicit: bool = False  # the caller's time_limit (a budget to use) rather than the default cap
    deadline_at: float | None = None  # perf_counter() past which :func:`checkpoint` stops work
    bound: bool = False
    share: bool = False  # bound only by time shares ending before the solve's own limit
    at: float | None = None  # seconds into the solve when the clock first stopped work
    done: int | None = None
    budget: int | None = None
    unit: str = ""

    def describe(self) -> str:
        """One sentence for messages and plan files ('' when the clock decided nothing)."""
        if not self.bound:
            return ""
        what = "time limit" if self.explicit else "time cap"
        limit = "" if self.limit is None else f" of {self.limit:g} s"
        work = ""
        if self.done is not None:
            # a search that evaluates in batches may end a batch past its budget (SHA-EA: 63
            # evaluations on a budget of 60); "63 of 60" would read as a typo, so the count
            # stops at the budget here and the past-budget sentence below gives both
            done = self.done if self.budget is None else min(self.done, self.budget)
            work = (
                f" after {done}"
                + (f" of {self.budget}" if self.budget is not None else "")
                + (f" {self.unit}" if self.unit else "")
            )
        if self.share:
            return (
                f"a part of the search ran on a share of the {what}{limit} and was cut short"
                f"{',' if work else ''}{work}: this result depends on machine speed"
            )
        if self.done is not None and self.budget is not None and self.done >= self.budget:
            # the budget was done: the clock cut what follows it (a polish, a job's advice)
            unit = f" {self.unit}" if self.unit else ""
            over = f" ({self.done} with the last batch)" if self.done > self.budget else ""
            return (
                f"the {what}{limit} was reached after all {self.budget}{unit}{over} and cut the "
                "work that followed: this result depends on machine speed"
            )
        return f"stopped by the {what}{limit}{work}: this result depends on machine speed"

    def mark(self, elapsed: float | None, share: bool) -> None:
        """The clock stopped work ``elapsed`` seconds in; ``share``: a deadline ending before the
        solve's own did (a time share), not the solve's limit. The solve's own limit, once it
        binds, outranks any share."""
        if not self.bound:
            self.bound, self.share, self.at = True, share, elapsed
        elif self.share and not share:
            self.share, self.at = False, elapsed


_RECORD: contextvars.ContextVar[ClockRecord | None] = contextvars.ContextVar(
    "rlplan_clock_record", default=None
)


@contextlib.contextmanager
def clock_record(limit: float | None, explicit: bool) -> Iterator[ClockRecord]:
    """Open the :class:`ClockRecord` of one solve (the façade does, around the solver call)."""
    record = ClockRecord(
        limit=limit,
        explicit=explicit,
        deadline_at=None if limit is None else time.perf_counter() + limit,
    )
    token = _RECORD.set(record)
    try:
        yield record
    finally:
        _RECORD.reset(token)


def current_record() -> ClockRecord | None:
    """The record of the solve running in this context (None outside the façade)."""
    return _RECORD.get()


def checkpoint() -> None:
    """Stop work that runs inside one evaluation (a simulated epoch, a column generation) once the
    running solve's limit has passed: raises :class:`DeadlineExceeded` and marks the record.
    A no-op outside a solve (the façade's own re-evaluation, the CLI's simulators), so the cost
    model can call it from its inner loops; callers throttle it (every few hundred events)."""
    record = _RECORD.get()
    if (
        record is not None
        and record.deadline_at is not None
        and time.perf_counter() > record.deadline_at
    ):
        record.mark(record.limit, share=False)
        what = "time limit" if record.explicit else "time cap"
        raise DeadlineExceeded(f"{what} of {record.limit:g} s reached inside one evaluation")


@contextlib.contextmanager
def unclocked() -> Iterator[None]:
    """Run work a solve cannot return without (judging the plan it found, the one evaluation a
    baseline needs) to its end, even past the limit: :func:`checkpoint` does nothing inside.

    A solver whose search is done must still judge its answer: cut there, the whole solve would
    end with no plan (the façade's "a single evaluation outlasted the limit") although it has
    one. The overrun is one bounded evaluation; the clock record is untouched, so a limit that
    did stop part of the search is still reported."""
    token = _RECORD.set(None)
    try:
        yield
    finally:
        _RECORD.reset(token)


def note_work(done: int, budget: int | None = None, unit: str = "") -> None:
    """Tell the running solve's record how far the work budget got (shown when the clock binds)."""
    record = _RECORD.get()
    if record is not None:
        record.done, record.budget, record.unit = (
            int(done),
            None if budget is None else int(budget),
            unit,
        )


@contextlib.contextmanager
def default_cap(seconds: float | None) -> Iterator[None]:
    """Run a solve under a default wall-clock cap: every :class:`Deadline` made inside without a
    limit of its own stops after ``seconds``.

    Why a cap and not a limit: a search given ``time_limit`` treats it as a budget to fill (SHA-EA
    calibrates its evaluations to it), which is right when a user asks for 60 s and wrong when
    the user asked for nothing and a small instance finishes in one. Under a cap a solver keeps
    its own default effort (``Deadline.time_limit`` stays None), a work budget, and only stops
    early when that effort would overrun the cap, which the solve's :class:`ClockRecord` then
    reports; the cap reaches HiGHS and CP-SAT through :meth:`Deadline.remaining`, which every
    backend call reads."""
    token = _CAP.set(seconds)
    try:
        yield
    finally:
        _CAP.reset(token)


class Deadline:
    """A solver's wall-clock limit, made once from ``time_limit`` and handed to everything that
    can stop early (one object instead of ``float | None`` arithmetic in every loop).

    ``time_limit`` is the caller's limit (None when none was given); ``cap`` is the default cap
    in force when it is None (:func:`default_cap`), and ``limit`` whichever of the two applies.
    A deadline found expired marks the solve's :class:`ClockRecord`: from then on its result
    depends on the machine's speed, and the façade says so."""

    def __init__(self, time_limit: float | None) -> None:
        self.start = time.perf_counter()
        self.time_limit = time_limit
        self.cap = _CAP.get() if time_limit is None else None
        self.limit = time_limit if time_limit is not None else self.cap
        self.at = None if self.limit is None else self.start + self.limit
        self.record = _RECORD.get()
        self.units: int | None = None  # a work box's budget of checks (None: time only)
        self.used = 0

    def work(self, units: int) -> Deadline:
        """A work box inside this deadline: its :meth:`check` counts one unit of work per call
        and raises :class:`WorkExceeded` past ``units`` (and :class:`DeadlineExceeded` at this
        deadline's time, as before). A time-boxed sub-search that gives the same answer on any
        machine: the unit is whatever the boxed code checks once per step (a partial combination
        extended, a state pruned), so callers size ``units`` in those steps."""
        out = Deadline(None)
        out.start, out.time_limit, out.cap, out.limit, out.at, out.record = (
            self.start,
            self.time_limit,
            self.cap,
            self.limit,
            self.at,
            self.record,
        )
        out.units = int(units)
        return out

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def sub(self, seconds: float) -> Deadline:
        """A deadline for one step of this solve: ``seconds`` from now, never past this one
        (a time-boxed sub-search, e.g. an exact Level-4 enumeration that must not eat the run)."""
        out = Deadline(seconds)
        out.record = self.record
        if self.at is not None and self.at < out.at:  # type: ignore[operator]
            out.at = self.at
            out.limit = self.at - out.start
        return out

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None without a limit."""
        return None if self.at is None else max(0.0, self.at - time.perf_counter())

    def expired(self) -> bool:
        if self.at is not None and time.perf_counter() > self.at:
            self.note_bound()
            return True
        return False

    def note_bound(self) -> None:
        """The clock stopped work here (also for a backend that reports its own time limit)."""
        record = self.record
        if record is not None:
            record.mark(self.elapsed(), share=self._ends_early(record))

    def _ends_early(self, record: ClockRecord) -> bool:
        """Whether this deadline ends before the solve's own limit (a time share of it): earlier
        by more than 1% of the limit (and 50 ms), so that a deadline made a moment after the
        record, for the whole limit, is the limit."""
        if self.at is None:
            return False
        if record.deadline_at is None or record.limit is None:
            return True
        return self.at < record.deadline_at - max(0.05, 0.01 * record.limit)

    def check(self, work: int = 1) -> None:
        """Raise :class:`DeadlineExceeded` once the limit has passed (:class:`WorkExceeded` once
        a work box's units are spent; ``work`` is what the step just checked counts)."""
        if self.units is not None:
            self.used += work
            if self.used > self.units:
                raise WorkExceeded(f"work box of {self.units} steps spent")
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

#: the most local worker processes a solver starts: each holds the problem and its own caches,
#: so thousands exhaust the machine's memory before any work (Ray spreads its actors instead)
LOCAL_WORKERS = 64


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

    def __init__(
        self,
        problem: Any,
        evaluate: Callable[[Any, Any], float],
        check: Callable[[Any, Any], list[Any]],
        tol: float = 0.0,
    ) -> None:
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


#: whether :func:`native_stdout_silenced` may swap the process's file descriptor 1. Off in a
#: library: a scheduler calling ``solve()`` from several threads owns its stdout, and a swap would
#: swallow what its other threads print meanwhile. The CLI turns it on (it owns the process and
#: writes plan JSON to ``-``, where one native debug line would corrupt the document).
_PROTECT_STDOUT = False
#: guards the swap: the first solve to enter points fd 1 at /dev/null, the last to leave restores
#: it, so concurrent solves never restore each other's /dev/null as "the original"
_SILENCE_LOCK = threading.Lock()
_silence_depth = 0
_saved_stdout_fd: int | None = None


def protect_stdout(on: bool = True) -> None:
    """Let :func:`native_stdout_silenced` discard native output on fd 1 (the CLI calls this once
    at start-up; a library caller that writes machine-readable output to stdout may too)."""
    global _PROTECT_STDOUT
    _PROTECT_STDOUT = on


@contextlib.contextmanager
def native_stdout_silenced() -> Iterator[None]:
    """Discard what native solver code prints to file descriptor 1 while the block runs (the
    solvers' own logs are off; what is left is debug noise), when the process asked for it with
    :func:`protect_stdout`; otherwise do nothing.

    HiGHS 1.12 prints ``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``
    with printf even when its output is off (ERGO-Code/HiGHS#2783); on stdout it would corrupt
    ``--json`` output and plan files written to ``-``. Python-level output is flushed first so
    nothing is reordered. Reentrant and thread-safe: nested or concurrent blocks share one swap
    (reference-counted under a lock) and the last one out restores the original descriptor."""
    global _silence_depth, _saved_stdout_fd
    if not _PROTECT_STDOUT:
        yield
        return
    with _SILENCE_LOCK:
        if _silence_depth == 0:
            sys.stdout.flush()
            try:
                saved = os.dup(1)
            except OSError:  # no fd 1 (embedded interpreters): nothing to protect
                saved = None
            if saved is not None:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.close(devnull)
            _saved_stdout_fd = saved
        _silence_depth += 1
    try:
        yield
    finally:
        with _SILENCE_LOCK:
            _silence_depth -= 1
            if _silence_depth == 0 and _saved_stdout_fd is not None:
                try:
                    sys.stdout.flush()
                finally:
                    os.dup2(_saved_stdout_fd, 1)
                    os.close(_saved_stdout_fd)
                    _saved_stdout_fd = None
