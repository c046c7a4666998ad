"""The re-planning problem's descriptor (OrchestrRL §4.1, Eq. 1)."""

from __future__ import annotations

from costmodels.problem import CommandEntry, ProblemKind, SolverEntry, SpecField
from costmodels.replan.canned import canned_replans
from costmodels.replan.check import check_replan
from costmodels.replan.judge import evaluate_replan
from costmodels.replan.plan import ReplanPlan
from costmodels.replan.presets import replan_presets
from costmodels.replan.problem import ReplanProblem, ReplanSpec
from costmodels.replan.summary import replan_summary

SOLVERS = (
    SolverEntry(
        "milp",
        "formulations.replan.milp:solve_replan_milp",
        exact=True,
        default=True,
        time_limit=120.0,
        inject={"warm_start": "heuristics.replan.greedy:solve_greedy"},
        description=(
            "Eq. 1 exactly on HiGHS (numpy-built matrix via highspy), warm-started by greedy"
        ),
    ),
    SolverEntry(
        "greedy",
        "heuristics.replan.greedy:solve_greedy",
        time_limit=10.0,
        description=(
            "configuration mixes ranked by a fluid bound, LPT assignment on the exact T_j, local "
            "search"
        ),
    ),
    SolverEntry(
        "verl-to",
        "heuristics.replan.greedy:solve_verl_to",
        description="veRL-TO (OrchestrRL §6): the best single TP over the pool",
    ),
    SolverEntry(
        "verl-lo",
        "heuristics.replan.greedy:solve_verl_lo",
        description="veRL-LO (OrchestrRL §6): the largest TP everywhere",
    ),
    SolverEntry(
        "keep",
        "heuristics.replan.greedy:solve_keep",
        description="the current instances, requests re-balanced",
    ),
    SolverEntry(
        "bruteforce",
        "formulations.replan.bruteforce:solve_replan_bruteforce",
        exact=True,
        time_limit=300.0,
        description=(
            "enumerate every layout and split (tiny states only; ground truth for the MILP)"
        ),
    ),
)


def _with_efficiency(problem: ReplanProblem, update: dict) -> ReplanProblem:
    serving = problem.spec.serving
    eff = serving.efficiency.model_copy(update=update)
    return ReplanProblem(
        problem.spec.model_copy(update={"serving": serving.model_copy(update={"efficiency": eff})})
    )


KIND = ProblemKind(
    name="replan",
    summary="re-plan a generation pool's parallelism and requests mid-step (OrchestrRL Eq. 1)",
    title="Replan",
    fields=(
        SpecField("state", ReplanSpec, "generation-pool state file or preset", default="replan-64"),
    ),
    problem_type=ReplanProblem,
    build=lambda state: ReplanProblem(state),
    with_efficiency=_with_efficiency,
    plan_type=ReplanPlan,
    evaluate=evaluate_replan,
    check=check_replan,
    objective=(
        "remaining makespan in seconds, max over instances of T_j + C_mig + C_sw (OrchestrRL Eq. 1)"
    ),
    units="s",
    solvers=SOLVERS,
    presets=replan_presets(),
    summary_table=replan_summary,
    size=lambda problem: problem.spec.nodes * problem.spec.gpus_per_node,
    size_label="GPUs",
    bench_extras={
        "migrated_requests": "migrated_requests",
        "switched_instances": "switched_instances",
        "gpus": "gpus",
    },
    canned=canned_replans,
    commands=(
        CommandEntry("estimate", "generation", "heuristics.replan.cli:estimate_generation_command"),
        CommandEntry("simulate", "generation", "heuristics.replan.cli:simulate_generation_command"),
    ),
)
