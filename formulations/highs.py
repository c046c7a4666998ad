"""One adapter between rlplan's hand-built MILPs and HiGHS (highspy), for the models that are
assembled as sparse arrays rather than through a modelling layer: placement's master (HetRL §3.5),
OrchestrRL's Eq. 1 and RollMux's set partitioning.

A model is ``min c x`` subject to ``row_lower <= A x <= row_upper`` and
``col_lower <= x <= col_upper``, with ``integer`` marking the integer columns (none: the LP
relaxation, whose column duals come back as well). Infinite bounds are HiGHS's infinity. What this
module owns, once: filling the ``HighsLp``, the options every model sets the same way (output off,
the sub-MIP heuristics and restarts a caller may switch off, a warm start), running under the
stdout guard (:func:`costmodels.solving.native_stdout_silenced`), and turning what HiGHS reports
into one :class:`HighsOutcome`: why it stopped, separately from whether it holds a solution
(a time-capped run may hold one; an "optimal" run under an objective bound may not)."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from costmodels.solving import native_stdout_silenced

#: HiGHS's ``primal_solution_status`` for a feasible primal solution (``kSolutionStatusFeasible``)
SOLUTION_FEASIBLE = 2
#: the sub-MIP heuristics a caller may switch off (RINS, RENS, root reduced cost): they hunt for
#: plans that rlplan's warm starts and cutoffs already supply
SUB_MIP_HEURISTICS = (
    "mip_heuristic_run_rins",
    "mip_heuristic_run_rens",
    "mip_heuristic_run_root_reduced_cost",
)


@dataclass(frozen=True)
class HighsOutcome:
    """What one HiGHS run ended with.

    ``stopped``: why it stopped, one of ``optimal`` (proved within the gap), ``infeasible``,
    ``objective_bound`` (no solution better than the cutoff), ``time_limit``, ``node_limit``,
    ``unbounded`` or ``other`` (``highs_status`` has HiGHS's own words). ``x`` is the primal
    solution when HiGHS holds a feasible one, whatever the reason it stopped."""

    stopped: str
    highs_status: str
    x: np.ndarray | None
    objective: float | None
    dual_bound: float | None
    nodes: int
    col_dual: np.ndarray | None = None

    @property
    def optimal(self) -> bool:
        return self.stopped == "optimal"


def _stopped(highspy: Any, status: Any) -> str:
    s = highspy.HighsModelStatus
    return {
        s.kOptimal: "optimal",
        s.kInfeasible: "infeasible",
        s.kObjectiveBound: "objective_bound",
        s.kTimeLimit: "time_limit",
        s.kSolutionLimit: "node_limit",
        s.kUnbounded: "unbounded",
        s.kUnboundedOrInfeasible: "unbounded",
    }.get(status, "other")


def solve_highs(
    cost: np.ndarray,
    a: Any,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    integer: Sequence[bool] | np.ndarray | None,
    *,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    seed: int | None = None,
    threads: int | None = None,
    node_limit: int | None = None,
    objective_bound: float | None = None,
    presolve: bool = True,
    sub_mip_heuristics: bool = True,
    restarts: bool = True,
    warm_start: np.ndarray | None = None,
    cancel: threading.Event | None = None,
) -> HighsOutcome:
    """Solve the model (module doc) on HiGHS. ``a`` is any scipy sparse array of shape (rows,
    columns), converted to column-wise storage here; ``integer=None`` solves the LP and returns
    its column duals. Options left None keep HiGHS's defaults; ``node_limit`` caps
    branch-and-bound nodes (HiGHS reports it as a solution limit); ``warm_start`` is a full
    primal vector HiGHS may start from; ``cancel``, set from another thread, interrupts a MIP at
    its next callback check (HiGHS's MIP interrupt: about a hundred a second on placement's
    masters) and the run then reports ``other``."""
    import highspy

    lp = _highs_lp(highspy, cost, a, row_lower, row_upper, col_lower, col_upper, integer)
    h = highspy.Highs()
    _set_options(
        h,
        time_limit=time_limit,
        mip_gap=mip_gap,
        seed=seed,
        threads=threads,
        node_limit=node_limit,
        objective_bound=objective_bound,
        presolve=presolve,
        sub_mip_heuristics=sub_mip_heuristics,
        restarts=restarts,
    )
    h.passModel(lp)
    if cancel is not None:
        h.cbMipInterrupt += lambda e: e.interrupt() if cancel.is_set() else None
    if warm_start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(warm_start)
        sol.value_valid = True
        h.setSolution(sol)
    with native_stdout_silenced():
        h.run()
    status = h.getModelStatus()
    info = h.getInfo()
    stopped = _stopped(highspy, status)
    if integer is None:  # an LP: its optimum and the column duals, when it has one
        return _lp_outcome(h, status, info, stopped)
    return _mip_outcome(h, status, info, stopped, node_limit)


def _highs_lp(
    highspy: Any,
    cost: np.ndarray,
    a: Any,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    integer: Sequence[bool] | np.ndarray | None,
) -> Any:
    """The model as a ``HighsLp``: costs, bounds, ``a`` in column-wise storage, integrality."""
    from scipy.sparse import csc_array

    m = csc_array(a)
    rows, cols = m.shape
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = cols, rows
    lp.col_cost_ = np.asarray(cost, dtype=float)
    lp.col_lower_ = np.asarray(col_lower, dtype=float)
    lp.col_upper_ = np.asarray(col_upper, dtype=float)
    lp.row_lower_ = np.asarray(row_lower, dtype=float)
    lp.row_upper_ = np.asarray(row_upper, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = m.indptr, m.indices, m.data
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = cols, rows
    if integer is not None:
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
            for i in integer
        ]
    return lp


def _set_options(
    h: Any,
    *,
    time_limit: float | None,
    mip_gap: float | None,
    seed: int | None,
    threads: int | None,
    node_limit: int | None,
    objective_bound: float | None,
    presolve: bool,
    sub_mip_heuristics: bool,
    restarts: bool,
) -> None:
    """Output off, then the caller's options (those left None keep HiGHS's defaults)."""
    h.setOptionValue("output_flag", False)
    if seed is not None:
        h.setOptionValue("random_seed", int(seed))
    if mip_gap is not None:
        h.setOptionValue("mip_rel_gap", float(mip_gap))
    if not presolve:
        h.setOptionValue("presolve", "off")
    if not sub_mip_heuristics:
        for heuristic in SUB_MIP_HEURISTICS:
            h.setOptionValue(heuristic, False)
    if not restarts:
        h.setOptionValue("mip_allow_restart", False)
    if threads:
        h.setOptionValue("threads", int(threads))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(node_limit))
    if objective_bound is not None and math.isfinite(objective_bound):
        h.setOptionValue("objective_bound", float(objective_bound))


def _lp_outcome(h: Any, status: Any, info: Any, stopped: str) -> HighsOutcome:
    """An LP's optimum and its column duals, when it has one."""
    if stopped != "optimal":
        return HighsOutcome(stopped, h.modelStatusToString(status), None, None, None, 0)
    solution = h.getSolution()
    value = float(info.objective_function_value)
    return HighsOutcome(
        stopped,
        h.modelStatusToString(status),
        np.asarray(solution.col_value),
        value,
        value,
        0,
        np.asarray(solution.col_dual),
    )


def _mip_outcome(
    h: Any, status: Any, info: Any, stopped: str, node_limit: int | None
) -> HighsOutcome:
    """A MIP's solution when HiGHS holds a feasible one, its dual bound and node count; a run
    that stopped for another reason at the node cap stopped at ``node_limit``."""
    has_x = info.primal_solution_status == SOLUTION_FEASIBLE
    if stopped == "other" and node_limit is not None and int(info.mip_node_count) >= node_limit:
        stopped = "node_limit"
    return HighsOutcome(
        stopped,
        h.modelStatusToString(status),
        np.asarray(h.getSolution().col_value) if has_x else None,
        float(info.objective_function_value) if has_x else None,
        float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else None,
        int(info.mip_node_count),
    )
