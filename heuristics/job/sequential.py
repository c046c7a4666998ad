"""A job plan in sequence (``costmodels.job``): the placement first, by any placement solver on
a job budget (below), then the generation knobs on the rollout problem that placement leaves
(:mod:`heuristics.job.knobs`). The placement does not see the knobs: this is what a user does
today with rlplan's problems one at a time, each answer typed into the next.

**The placement's budget.** SHA-EA, the default placement solver, runs on a job budget smaller
than its own default: :data:`JOB_EVALUATIONS` evaluations, :data:`JOB_POLISH` phenotypes polished
and :data:`JOB_SEED_CANDIDATES` StreamRL seed candidates, against 300, 16 and 20 000. A job plan
is asked for in under a minute; on every job benchmark instance the smaller budget returned the
same placement step in a fifth of the time or less (``benchmarks/results/performance-history.md``,
"the job plan's placement budget"). The job budget drops the polish, the exact Level-4 re-solve of
the best phenotypes, the costliest part of a short run on 64 GPUs. ``evaluations``, ``polish``
and ``seed_candidates`` set the budget back to SHA-EA's own, or anywhere between."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from costmodels.circuits.plan import plan_from_counts
from costmodels.job.derive import rollout_problem, weight_sync_circuits
from costmodels.job.judge import evaluate_job
from costmodels.job.plan import JobPlan, ReplanAdvice
from costmodels.job.problem import JobProblem
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.solving import Deadline, DeadlineExceeded, SolverOutput, Status, unclocked
from heuristics.circuits.greedy import allocate_greedy
from heuristics.job.knobs import DEFAULT_EPOCHS, choose_knobs
from heuristics.job.replan import advise_replan

PlacementSolver = Literal["sha-ea", "ilp", "real", "streamrl", "verl", "rlinf", "ea"]
#: the job solvers' options, typed (``planner.registry`` validates them by these)
PlacementOption = Annotated[
    PlacementSolver, Field(description="the placement solver (SHA-EA on the job budget)")
]
#: SHA-EA's job budget (module doc)
JOB_EVALUATIONS = 60
JOB_POLISH = 0
JOB_SEED_CANDIDATES = 2000
EvaluationsOption = Annotated[
    int | None,
    Field(
        ge=1,
        le=10**6,
        description=f"SHA-EA (default {JOB_EVALUATIONS}) or EA evaluations (default its own)",
    ),
]
PolishOption = Annotated[
    int,
    Field(ge=0, le=1000, description="SHA-EA: best phenotypes re-solved exactly at the end"),
]
SeedCandidatesOption = Annotated[
    int, Field(ge=1, le=10**6, description="SHA-EA: StreamRL candidates its seed sweep costs")
]
RolloutEpochsOption = Annotated[
    int, Field(ge=1, le=10**4, description="simulated epochs the knob descent may try")
]


@dataclass(frozen=True)
class PlacementBudget:
    """The placement solver's work budget in a job plan (module doc)."""

    evaluations: int | None = None
    polish: int = JOB_POLISH
    seed_candidates: int = JOB_SEED_CANDIDATES

    def options(self, placement: str) -> dict[str, Any]:
        """The placement solver's options: SHA-EA's job budget, the EA's evaluations."""
        if placement == "sha-ea":
            return {
                "evaluations": self.evaluations or JOB_EVALUATIONS,
                "polish": self.polish,
                "seed_candidates": self.seed_candidates,
            }
        if placement == "ea" and self.evaluations is not None:
            return {"evaluations": self.evaluations}
        return {}


def plan_in_sequence(
    problem: JobProblem,
    placement_problem: PlacementProblem,
    deadline: Deadline,
    seed: int,
    placement: str,
    budget: PlacementBudget,
    rollout_epochs: int,
    placers: Mapping[str, Callable[..., SolverOutput]],
    progress: Any = None,
) -> SolverOutput:
    """Place ``placement_problem`` (the job's, or one whose generation is scaled), then choose
    the knobs of the placement found; the plan judged on the job's own problem. ``stats``:
    the placement solver's message, the knobs' worth and the knobs' generation ratio."""
    options = budget.options(placement)
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
    advice, unadvised = _advice(problem, placed.plan, deadline)
    stats["replan"] = advice.model_dump() if advice is not None else {"why": unadvised}
    # the weight sync's circuits by RFabric's Algorithm 3 (OrchestrRL App. D): deterministic, and
    # a single demand period needs no exact model (the circuits problem has them)
    cp, why = weight_sync_circuits(problem, placed.plan)
    circuits = plan_from_counts(allocate_greedy(cp)) if cp is not None else None
    stats["circuits"] = {"why": why} if cp is None else {"circuits": len(circuits.circuits)}
    plan = JobPlan(placement=placed.plan, rollout=knobs, replan=advice, circuits=circuits)
    with unclocked():  # the plan found is judged whatever the clock says (costmodels.solving)
        objective, breakdown = evaluate_job(problem, plan)
    stats["ratio"] = breakdown["rollout"]["ratio"]
    return SolverOutput(
        Status.FEASIBLE,
        plan,
        objective,
        message=(
            f"placement by {placement} ({placed.message}), then the generation knobs"
            + (
                " (stopped by the time limit)"
                if stats["knobs"].get("stopped") == "time limit"
                else ""
            )
            + ", the re-planning advice"
            + (f" ({unadvised})" if unadvised.startswith("not assessed") else "")
            + " and the weight sync's circuits"
        ),
        stats=stats,
    )


def _advice(
    problem: JobProblem, placement: PlacementPlan, deadline: Deadline
) -> tuple[ReplanAdvice | None, str]:
    """The re-planning advice, or None and why. It is advice, never credited to the step
    (``heuristics.job.replan``), so a limit that runs out before or while it is simulated leaves
    the plan without it rather than without a plan."""
    if deadline.expired():
        return None, "not assessed: the time limit was reached before its simulation"
    try:
        return advise_replan(problem, placement)
    except DeadlineExceeded:
        return None, "not assessed: the time limit was reached during its simulation"


def solve_sequential(
    problem: JobProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    placement: PlacementOption = "sha-ea",
    evaluations: EvaluationsOption = None,
    polish: PolishOption = JOB_POLISH,
    seed_candidates: SeedCandidatesOption = JOB_SEED_CANDIDATES,
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
        PlacementBudget(evaluations, polish, seed_candidates),
        rollout_epochs,
        placers,
        progress,
    )
