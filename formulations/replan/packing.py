"""Plans at a target makespan: the primal side of the re-planning MILP at scale.

The aggregate bound (``formulations.replan.aggregate``) says what no plan can beat; this module
looks for a plan near it. For a layout (the instances) and a target makespan M* it assigns the
bins longest first, and within a bin:

1. **residents stay home** while their kept instance's term T_j + C_mig_j + C_sw_j stays <= M*
   (Eq. 1's migration is then free; the greedy instead keeps every resident, so an instance that
   holds a 16k-token request keeps its sixty short ones too and sets the makespan);
2. **the rest** go by one of two rules, each tried:

   * ``spread``: water-filling, the lowest level at which the instances take them all (LPT in
     bulk: every instance's room at a level is closed form, ``Loads.room``);
   * ``pack``: best fit at M*, the fullest instance with room first (the first-fit-decreasing
     rule of bin packing: two long requests share an instance when M* allows, leaving the others
     free for short ones), spreading whatever M* leaves over.

:func:`best_packing` bisects M* between a bound and a known makespan and keeps the best plan by the
cost model; under constraint (2) a plan that breaks it is not kept. Work-bounded: a fixed number
of targets, each O(bins x instances).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from costmodels.replan.check import check_replan
from costmodels.replan.layouts import Slot
from costmodels.replan.plan import to_plan
from costmodels.replan.problem import ReplanProblem, instance_cost
from costmodels.solving import UNLIMITED, Deadline
from search.replan.loads import Loads

Rule = Literal["spread", "pack"]


def pack(
    problem: ReplanProblem, chosen: list[Slot], target: float, rule: Rule
) -> np.ndarray | None:
    """x_jb for ``chosen`` at target makespan ``target`` (module doc); None when a bin fits
    nowhere."""
    if not chosen:
        return None
    ld = Loads(problem, chosen)
    for b in reversed(range(len(problem.bins))):
        left = problem.bins[b].count
        if not ld.fits[:, b].any():
            return None
        home = np.minimum(np.where(ld.fits[:, b], ld.local[:, b], 0), ld.room(b, target))
        for j in np.flatnonzero(home):
            ld.add(int(j), b, int(home[j]))
        left -= int(home.sum())
        if left and rule == "pack":
            left = _best_fit(ld, b, left, target)
        if left:
            _water_fill(ld, b, left)
    return ld.x


def _best_fit(ld: Loads, b: int, left: int, target: float) -> int:
    """Fill the fullest instances that have room at ``target`` first; what does not fit is left."""
    room = ld.room(b, target)
    order = np.flatnonzero(room > 0)
    totals = ld.totals()
    for j in order[np.argsort(-totals[order], kind="stable")]:
        n = min(left, int(room[j]))
        ld.add(int(j), b, n)
        left -= n
        if not left:
            break
    return left


def _water_fill(ld: Loads, b: int, left: int) -> None:
    """Place ``left`` requests of bin b at the lowest level every instance's room reaches."""
    after = ld.after_add(b)
    lo = float(np.min(after)) - 1e-9
    hi = max(lo, 1.0)
    while int(ld.room(b, hi).sum()) < left:
        hi = 2.0 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if int(ld.room(b, mid).sum()) >= left:
            hi = mid
        else:
            lo = mid
    n = ld.room(b, hi)
    excess = int(n.sum()) - left
    # the level admits a few more than asked: take them back from the instances it raises most
    raised = ld.totals() + n * ld.w[:, b]
    while excess:
        for j in np.argsort(-np.where(n > 0, raised, -np.inf), kind="stable")[:excess]:
            n[j] -= 1
            excess -= 1
    for j in np.flatnonzero(n):
        ld.add(int(j), b, int(n[j]))


def best_packing(
    problem: ReplanProblem,
    chosen: list[Slot],
    lower: float,
    upper: float,
    *,
    steps: int = 12,
    deadline: Deadline = UNLIMITED,
) -> tuple[float, np.ndarray | None]:
    """The best plan :func:`pack` finds on ``chosen`` over targets bisected between ``lower`` (a
    bound) and ``upper`` (a makespan already known): a target is met when the plan's makespan is
    at or below it. Returns (makespan, x), (inf, None) when a bin fits nowhere. Work-bounded by
    ``steps``; the deadline, a safety cap, ends it between targets."""
    best: tuple[float, np.ndarray | None] = (np.inf, None)
    lo, hi = lower, upper
    for step in range(steps):
        if step and deadline.expired():
            break
        target = 0.5 * (lo + hi)
        met = False
        for rule in ("pack", "spread"):
            x = pack(problem, chosen, target, rule)
            if x is None:
                return best
            got = makespan(problem, chosen, x)
            if got < best[0] and _balanced(problem, chosen, x):
                best = (got, x)
            met = met or got <= target
        if met:
            hi = min(target, best[0])
        else:
            lo = target
    return best


def _balanced(problem: ReplanProblem, chosen: list[Slot], x: np.ndarray) -> bool:
    """Constraint (2), KV balance, when the state asks for it: the packing does not aim at it, so
    a plan that breaks it is not kept."""
    if problem.spec.kv_delta is None:
        return True
    return not any(
        v.constraint == "(2) KV balance" for v in check_replan(problem, to_plan(problem, chosen, x))
    )


def makespan(problem: ReplanProblem, chosen: list[Slot], x: np.ndarray) -> float:
    """Objective (1) of an assignment to ``chosen``: the cost model's largest instance term."""
    return max(
        (instance_cost(problem, s.node, s.gpu, s.tp, x[j]).total_s for j, s in enumerate(chosen)),
        default=0.0,
    )
