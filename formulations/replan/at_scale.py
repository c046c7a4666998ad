"""The re-planning MILP at scale (module doc of ``formulations.replan.milp``, "At scale"): before
the per-slot model runs, the aggregate model's bound (instances counted by type and longest bin,
``formulations.replan.aggregate``) and the packing's best plan on the warm start's layout and the
aggregate's (``formulations.replan.packing``); often they settle the problem within the gap."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from costmodels.replan.plan import ReplanPlan, layout_choice, to_plan
from costmodels.replan.problem import ReplanProblem
from costmodels.replan.slots import layout_slots
from costmodels.solving import Deadline, SolverOutput, Status, Termination
from formulations.replan.aggregate import aggregate_bound
from formulations.replan.fluid import longest_alone, lower_bound
from formulations.replan.packing import best_packing


@dataclass
class Scale:
    """What the aggregate bound and the packing primal found before the per-slot model runs."""

    plan: ReplanPlan | None
    objective: float
    bound: float
    source: str
    stats: dict[str, Any]

    def output(
        self, status: Status, message: str, stats: dict[str, Any] | None = None
    ) -> SolverOutput:
        """This plan and bound as the solver's answer."""
        return SolverOutput(
            status,
            self.plan,
            self.objective,
            self.bound,
            message=message,
            stats=self.stats if stats is None else stats,
            termination=Termination.OPTIMAL if status is Status.OPTIMAL else None,
        )


def at_scale(
    problem: ReplanProblem, incumbent: SolverOutput | None, deadline: Deadline, mip_gap: float
) -> Scale:
    """The bound from the aggregate model and the best plan the packing finds on the incumbent's
    layout and on the aggregate's (module doc, "At scale"); the incumbent itself when better."""
    fluid = float(lower_bound(problem))
    upper = None if incumbent is None else float(incumbent.objective)
    agg = aggregate_bound(problem, fluid, upper, deadline=deadline)
    layouts: list[tuple[str, list[int]]] = []
    if incumbent is not None:
        mine = layout_choice(problem, incumbent.plan)
        if None not in mine:
            layouts.append(("the warm start's layout", mine))  # type: ignore[arg-type]
    suggested = agg.choice()
    if suggested is not None and all(suggested != c for _, c in layouts):
        layouts.append(("the aggregate model's layout", suggested))
    best: tuple[float, ReplanPlan | None, str] = (
        (upper, incumbent.plan, "the warm start") if incumbent is not None else (math.inf, None, "")
    )
    high = upper if upper is not None else agg.feasible_at * 1.5
    for name, choice in layouts:
        if deadline.expired():
            break
        chosen = layout_slots(problem, choice)
        got, x = best_packing(problem, chosen, agg.bound, high, deadline=deadline)
        if x is not None and got < best[0] - 1e-9:
            best = (got, to_plan(problem, chosen, x), f"packing on {name}")
    if math.isfinite(best[0]) and best[0] > agg.bound * (1.0 + mip_gap):
        # one more test just under the plan: infeasible there proves it within the gap
        agg.raise_to(best[0] / (1.0 + mip_gap), deadline)
    bound = max(fluid, agg.bound)
    if agg.bound > fluid * (1.0 + 1e-9):
        why = "the aggregate model (instances by type and longest bin)"
    elif fluid <= longest_alone(problem):
        why = "the longest request alone on its best configuration"
    else:
        why = "the fluid work over the GPU budget"
    plan_from = f"plan from {best[2]}" if best[1] is not None else "no plan before HiGHS"
    source = f"{plan_from}; bound {bound:.6g} from {why}"
    stats = {
        "fluid_bound": fluid,
        "aggregate_bound": agg.bound,
        "aggregate_tests": agg.iterations,
        "warm_start": upper,
        "plan_from": best[2],
    }
    return Scale(best[1], best[0], bound, source, stats)
