"""The fleet problem's descriptor (``costmodels.fleet``): pools and RL jobs described as jobs, one
plan of every stage, the provisioning cost in $/h."""

from __future__ import annotations

from costmodels.cosched.kind import KIND as COSCHED
from costmodels.fleet.canned import canned_fleets
from costmodels.fleet.check import check_fleet
from costmodels.fleet.judge import evaluate_fleet
from costmodels.fleet.plan import FleetPlan
from costmodels.fleet.presets import fleet_presets
from costmodels.fleet.problem import FleetProblem, FleetSpec
from costmodels.fleet.summary import fleet_summary, fleet_verl
from costmodels.problem import ProblemKind, SpecField, evaluated_table

KIND = ProblemKind(
    name="fleet",
    summary="plan a fleet of RL jobs on shared pools: phases, groups, each job's plan",
    title="Fleet",
    fields=(SpecField("fleet", FleetSpec, "fleet spec file or preset", default="fleet-six"),),
    problem_type=FleetProblem,
    build=FleetProblem,
    plan_type=FleetPlan,
    evaluate=evaluate_fleet,
    check=check_fleet,
    objective=(
        "provisioning cost in $/h of every group's rollout and training GPUs (RollMux §4.2) on "
        "the judge's phase times, every job within its SLO"
    ),
    units="$/h",
    presets=fleet_presets(),
    summary_table=fleet_summary,
    evaluate_table=evaluated_table(fleet_summary),
    exports={"verl": fleet_verl},
    size=lambda problem: len(problem.fleet.jobs),
    size_label="jobs",
    bench_extras=COSCHED.bench_extras,  # its objective and breakdown are co-scheduling's
    canned=canned_fleets,
)
