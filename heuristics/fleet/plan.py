"""The fleet planner (``costmodels.fleet``'s module doc): the stages in order, each answer fed to
the next, as RollMux plans a fleet (§4: phases first, then groups) with HetRL's placement and
RollPacker's knobs for each job.

1. **Phases.** Each job alone: generation on its rollout GPUs, the rest on its training GPUs,
   their parallelism by StreamRL's coordinate descent over the two sides
   (:func:`heuristics.placement.streamrl.tune_split`; the synchronous step is separable in the
   two sides, so this is each side's best), judged on the fleet's ``phases`` lengths. Jobs of one
   type (workflow and GPUs) are tuned once.
2. **Groups.** A co-scheduling solver (injected: RollMux Algorithm 1 by default, the offline
   optimum with ``cosched=optimal``) on the co-scheduling problem those phases make.
3. **Each job in its group.** Its placement tuned again on its pinned rollout GPUs and its
   group's training GPUs (the best co-located plan in a co-located group), then RollPacker's
   knobs on the rollout problem that placement leaves (:func:`heuristics.job.knobs.choose_knobs`,
   once per distinct rollout problem).

Stage 3 does not feed back into stage 2: with ``phases: worst-case`` (the default, RollMux's
conservative planning) the knobs cannot change a phase time, since every response is at the cap.
With ``phases: expected`` they could; the planner says what they are worth per job instead of
re-grouping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from costmodels.fleet.derive import (
    cosched_problem,
    member_problem,
    phase_times,
    rollout_devices,
    solo_problem,
    train_devices,
)
from costmodels.fleet.judge import evaluate_fleet
from costmodels.fleet.plan import FleetPlan, JobPhases
from costmodels.fleet.problem import FleetProblem
from costmodels.job.derive import rollout_problem
from costmodels.job.plan import JobPlan
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import best_colocated, placement_keeper
from costmodels.solving import Deadline, SolverOutput, Status, unclocked
from heuristics.job.knobs import DEFAULT_EPOCHS, choose_knobs
from heuristics.placement.streamrl import tune_split

#: the share of a time limit the grouping stage always gets, however long the phases took
GROUPING_SHARE = 0.1

Coscheduler = Literal["rollmux", "optimal", "greedy-slo", "random-slo", "solo", "colocated"]


def split_placement(problem: PlacementProblem, deadline: Deadline) -> PlacementPlan | None:
    """The best plan with generation on the rollout zone's GPUs and the rest on the training
    zone's (module doc, stage 1), or None when none fits."""
    keep = placement_keeper(problem)
    for _ in tune_split(problem, keep, rollout_devices(problem), train_devices(problem)):
        if deadline.expired() and keep.plan is not None:
            break
    return keep.plan


def _phases(fp: FleetProblem, deadline: Deadline) -> tuple[dict[str, JobPhases], str]:
    """Stage 1 (module doc); an empty mapping and the reason when a job fits nowhere."""
    out: dict[str, JobPhases] = {}
    by_type: dict[tuple[str, int, int], JobPhases | None] = {}
    for job in fp.fleet.jobs:
        key = (fp.workflows[job.name].model_dump_json(), job.rollout_gpus, job.train_gpus)
        if key not in by_type:
            plan = split_placement(solo_problem(fp, job.name), deadline)
            by_type[key] = None
            if plan is not None:
                roll, train = phase_times(fp, job.name, plan)
                by_type[key] = JobPhases(rollout_s=roll, train_s=train, placement=plan)
        phases = by_type[key]
        if phases is None:
            return {}, (
                f"job {job.name} does not fit its {job.rollout_gpus} rollout and "
                f"{job.train_gpus} training GPUs alone"
            )
        out[job.name] = phases
    return out, ""


def solve_fleet(
    problem: FleetProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    cosched: Annotated[
        Coscheduler, Field(description="the co-scheduling solver that groups the jobs")
    ] = "rollmux",
    rollout_epochs: Annotated[
        int,
        Field(ge=0, le=10**4, description="simulated epochs per job type's knobs (0: none)"),
    ] = DEFAULT_EPOCHS,
    coschedulers: Mapping[str, Callable[..., SolverOutput]],
) -> SolverOutput:
    """The three stages (module doc)."""
    deadline = Deadline(time_limit)
    phases, why = _phases(problem, deadline)
    if not phases:
        return SolverOutput(Status.INFEASIBLE, message=why)
    cp = cosched_problem(problem, {n: (p.rollout_s, p.train_s) for n, p in phases.items()})
    grouped = coschedulers[cosched](
        cp,
        # at least a tenth of the limit: past it an online rule leaves the jobs still to come
        # alone (heuristics.cosched.online), and grouping them is the point of a fleet plan
        time_limit=None
        if time_limit is None
        else max(deadline.remaining(), GROUPING_SHARE * time_limit),
        seed=seed,
    )
    if grouped.plan is None:
        return SolverOutput(grouped.status, message=f"co-scheduling ({cosched}): {grouped.message}")
    jobs, knobs = _members(problem, grouped.plan, deadline, rollout_epochs)
    if isinstance(jobs, str):
        return SolverOutput(Status.INFEASIBLE, message=jobs)
    capped = " (time limit: some jobs without knobs)" if deadline.expired() else ""
    plan = FleetPlan(phases=phases, cosched=grouped.plan, jobs=jobs)
    with unclocked():  # the plan found is judged whatever the clock says (costmodels.solving)
        objective, _ = evaluate_fleet(problem, plan)
    return SolverOutput(
        Status.FEASIBLE,
        plan,
        objective,
        message=(
            f"{len(phases)} jobs in {len(grouped.plan.groups)} groups by {cosched}; knobs for "
            f"{knobs} rollout problems{capped}"
        ),
        stats={
            "cosched": {
                "solver": cosched,
                "status": grouped.status.value,
                "message": grouped.message,
            },
            "knob_types": knobs,
        },
    )


def _members(
    fp: FleetProblem, grouping: Any, deadline: Deadline, epochs: int
) -> tuple[dict[str, JobPlan] | str, int]:
    """Stage 3 (module doc): every job's plan in its group, or why one has none."""
    jobs: dict[str, JobPlan] = {}
    chosen: dict[int, Any] = {}
    for gi, group in enumerate(grouping.groups):
        for member in group.jobs:
            jp = member_problem(fp, gi, group, member.name)
            if group.colocated:
                placement = best_colocated(jp.placement, deadline)[1]
            else:
                placement = split_placement(jp.placement, deadline)
            if placement is None:
                return f"job {member.name} fits no placement on its group {gi}'s GPUs", 0
            rp, _ = rollout_problem(jp, placement)
            knobs = None
            if rp is not None and epochs > 0 and (id(rp) in chosen or not deadline.expired()):
                if id(rp) not in chosen:
                    chosen[id(rp)] = choose_knobs(rp, deadline, epochs)[0]
                knobs = chosen[id(rp)]
            jobs[member.name] = JobPlan(placement=placement, rollout=knobs)
    return jobs, len(chosen)
