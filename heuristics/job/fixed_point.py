"""A job plan whose placement sees its knobs: iterate placement and knobs to a fixed point
(``costmodels.job``).

The knobs change generation's time by a ratio r (``costmodels.job.judge``), and generation's time
decides how many GPUs, of which type and at what TP a placement gives it. Starting from the
sequential plan (:mod:`heuristics.job.sequential`: the placement blind to the knobs, r = 1):

1. re-solve the placement with generation's cost multiplied by the last r
   (``CostParams.generation_scale``), the same solver, seed and budget;
2. choose the knobs for the new placement (:func:`heuristics.job.knobs.choose_knobs`) and judge
   the job plan with its own r (the job judge, never the scaled placement problem);
3. stop when the placement repeats (a fixed point), r moves less than :data:`R_TOLERANCE`, or
   after ``rounds`` re-solves.

The plan returned is the best the job judge saw, so never worse than the sequential one. r is
one number per placement, a first-order picture of a knob effect that depends on the generation
GPUs and TP: a placement judged under the previous r is then judged under its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import Field

from costmodels.job.problem import JobProblem
from costmodels.placement.problem import PlacementProblem
from costmodels.solving import Deadline, SolverOutput, Status
from heuristics.job.knobs import DEFAULT_EPOCHS
from heuristics.job.sequential import (
    JOB_POLISH,
    JOB_SEED_CANDIDATES,
    EvaluationsOption,
    PlacementBudget,
    PlacementOption,
    PolishOption,
    RolloutEpochsOption,
    SeedCandidatesOption,
    plan_in_sequence,
)

#: a ratio that moved less than this since the last round ends the iteration
R_TOLERANCE = 0.005


def _scaled(problem: PlacementProblem, r: float) -> PlacementProblem:
    params = problem.params.model_copy(update={"generation_scale": r})
    return PlacementProblem(problem.cluster, problem.workflow, params, problem.target)


def solve_fixed_point(
    problem: JobProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    placement: PlacementOption = "sha-ea",
    evaluations: EvaluationsOption = None,
    polish: PolishOption = JOB_POLISH,
    seed_candidates: SeedCandidatesOption = JOB_SEED_CANDIDATES,
    rollout_epochs: RolloutEpochsOption = DEFAULT_EPOCHS,
    rounds: Annotated[
        int, Field(ge=1, le=20, description="placement re-solves after the sequential plan")
    ] = 2,
    placers: Mapping[str, Callable[..., SolverOutput]],
) -> SolverOutput:
    deadline = Deadline(time_limit)
    budget = PlacementBudget(evaluations, polish, seed_candidates)
    first = plan_in_sequence(
        problem, problem.placement, deadline, seed, placement, budget, rollout_epochs, placers
    )
    if first.plan is None:
        return first
    best, best_s = first.plan, float(first.objective)
    history: list[dict[str, Any]] = [
        {"generation_scale": 1.0, "step_s": best_s, "ratio": first.stats["ratio"]}
    ]
    r, seen = first.stats["ratio"], {best.placement.model_dump_json()}
    stop = "no knobs: the placement is the sequential one" if best.rollout is None else ""
    for _ in range(rounds if not stop else 0):
        if deadline.expired():
            stop = "time limit"
            break
        out = plan_in_sequence(
            problem,
            _scaled(problem.placement, r),
            deadline,
            seed,
            placement,
            budget,
            rollout_epochs,
            placers,
        )
        if out.plan is None:
            stop = f"the re-solve found no plan: {out.message}"
            break
        step = float(out.objective)  # judged on the job's own problem (plan_in_sequence)
        history.append({"generation_scale": r, "step_s": step, "ratio": out.stats["ratio"]})
        if step < best_s * (1 - 1e-9):
            best, best_s = out.plan, step
        key = out.plan.placement.model_dump_json()
        if key in seen:
            stop = "fixed point: the placement repeats"
            break
        seen.add(key)
        if abs(out.stats["ratio"] - r) < R_TOLERANCE:
            stop = "fixed point: the knobs' ratio settled"
            break
        r = out.stats["ratio"]
    else:
        stop = stop or f"{rounds} re-solves"
    return SolverOutput(
        Status.FEASIBLE,
        best,
        best_s,
        message=f"placement ({placement}) and knobs iterated: {stop}; "
        f"{best_s / float(first.objective):.3f}x the sequential plan's step",
        stats={"rounds": history, "sequential_step_s": first.objective},
    )
