"""A fleet replayed over its jobs' arrivals (RollMux §7.4-7.5's cluster simulation,
``heuristics.cosched.cluster_trace``), on the phase times its plan's first stage took from the
judge: jobs arrive at ``arrival_s``, a policy places each, they leave after ``duration_s`` of
work alone (longer when co-executed)."""

from __future__ import annotations

from typing import Any

from costmodels.fleet.derive import cosched_problem
from costmodels.fleet.plan import FleetPlan
from costmodels.fleet.problem import FleetProblem
from heuristics.cosched.cluster_trace import TraceResult, simulate_trace


def simulate_fleet(
    problem: FleetProblem, plan: FleetPlan, policy: str = "rollmux", **options: Any
) -> TraceResult:
    """Replay the fleet under ``policy`` (``heuristics.cosched.cluster_trace.POLICIES``) with the
    plan's judged phases; ``options`` go to :func:`simulate_trace`."""
    phases = {n: (p.rollout_s, p.train_s) for n, p in plan.phases.items()}
    return simulate_trace(cosched_problem(problem, phases), policy, **options)
