"""A job plan in sequence (``costmodels.job``): the placement first, by any placement solver on
its own work budget, then the generation knobs on the rollout problem that placement leaves
(:mod:`heuristics.job.knobs`). The placement does not see the knobs: this is what a user does
today with rlplan's problems one at a time, each answer typed into the next."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from costmodels.job.derive import rollout_problem
from costmodels.job.judge import evaluate_job
from costmodels.job.plan import JobPlan
from costmodels.job.problem import JobProblem
from costmodels.placement.problem import PlacementProblem
from costmodels.solving import Deadline, SolverOutput, Status
from heuristics.job.knobs import DEFAULT_EPOCHS, choose_knobs

PlacementSolver = Literal["sha-ea", "ilp", "real", "streamrl", "verl", "rlinf", "ea"]
#: the job solvers' options, typed (``planner.registry`` validates them by these)
PlacementOption = Annotated[
    PlacementSolver, Field(description="the placement solver (its default work budget)")
]
EvaluationsOption = Annotated[
    int | None,
    Field(ge=1, le=10**6, description="SHA-EA's or the EA's evaluations (default theirs)"),
]
RolloutEpochsOption = Annotated[
    int, Field(ge=1, le=10**4, description="simulated epochs the knob descent may try")
]


def plan_in_sequence(
    problem: JobProblem,
    placement_problem: PlacementProblem,
    deadline: Deadline,
    seed: int,
    placement: str,
    evaluations: int | None,
    rollout_epochs: int,
    placers: Mapping[str, Callable[..., SolverOutput]],
    progress: Any = None,
) -> SolverOutput:
    """Place ``placement_problem`` (the job's, or one whose generation is scaled), then choose
    the knobs of the placement found; the plan judged on the job's own problem. ``stats``:
    the placement solver's message, the knobs' worth and the knobs' generation ratio."""
    options: dict[str, Any] = {}
    if evaluations is not None and placement in ("sha-ea", "ea"):
        options["evaluations"] = evaluations
    if progress is not None and placement == "sha-ea":
        options["progress"] = progress
    # a caller's limit is shared out; without one, the placement solver keeps its own work
    # budget under the default cap (a time limit would make SHA-EA fill it: costmodels.solving's
    # default_cap)
    placed = placers[placement](
        placement_problem,
        time_limit=None if deadline.time_limit is None else deadline.remaining(),
        seed=seed,
        **options,
    )
    if placed.plan is None:
        return SolverOutput(
            placed.status, message=f"placement ({placement}): {placed.message}", stats=placed.stats
        )
    stats: dict[str, Any] = {"placement": {"solver": placement, "message": placed.message}}
    rp, why = rollout_problem(problem, placed.plan)
    knobs = None
    if rp is not None:
        knobs, worth = choose_knobs(rp, deadline, rollout_epochs)
        stats["knobs"] = worth
    else:
        stats["knobs"] = {"why": why}
    plan = JobPlan(placement=placed.plan, rollout=knobs)
    objective, breakdown = evaluate_job(problem, plan)
    stats["ratio"] = breakdown["rollout"]["ratio"]
    return SolverOutput(
        Status.FEASIBLE,
        plan,
        objective,
        message=f"placement by {placement} ({placed.message}), then the generation knobs",
        stats=stats,
    )


def solve_sequential(
    problem: JobProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    placement: PlacementOption = "sha-ea",
    evaluations: EvaluationsOption = None,
    rollout_epochs: RolloutEpochsOption = DEFAULT_EPOCHS,
    placers: Mapping[str, Callable[..., SolverOutput]],
    progress: Any = None,
) -> SolverOutput:
    return plan_in_sequence(
        problem,
        problem.placement,
        Deadline(time_limit),
        seed,
        placement,
        evaluations,
        rollout_epochs,
        placers,
        progress,
    )
