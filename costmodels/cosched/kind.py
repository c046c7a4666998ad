"""The co-scheduling problem's descriptor (RollMux §4)."""

from __future__ import annotations

from costmodels.cosched.canned import canned_coscheds
from costmodels.cosched.check import check_cosched
from costmodels.cosched.judge import evaluate_cosched
from costmodels.cosched.plan import CoschedulePlan
from costmodels.cosched.presets import cosched_presets
from costmodels.cosched.problem import CoscheduleProblem, JobsSpec
from costmodels.cosched.summary import cosched_summary
from costmodels.problem import CommandEntry, ProblemKind, SolverEntry, SpecField

SOLVERS = (
    SolverEntry(
        "rollmux",
        "heuristics.cosched.online:solve_rollmux",
        default=True,
        description=(
            "RollMux Algorithm 1: direct packing / rollout scaling into unsaturated groups at "
            "least marginal cost"
        ),
    ),
    SolverEntry(
        "random",
        "heuristics.cosched.online:solve_random",
        ignores=("SLO",),
        description=(
            "§7.5: a random group that can hold the job (memory, size; no SLO check), random "
            "nodes; its plans may break SLOs, as the paper's do"
        ),
    ),
    SolverEntry(
        "greedy",
        "heuristics.cosched.online:solve_greedy",
        ignores=("SLO",),
        description="§7.5: the most idle group that can hold the job (no SLO check)",
    ),
    SolverEntry(
        "random-slo",
        "heuristics.cosched.online:solve_random_slo",
        description="random, admitting a job only where every member keeps its SLO",
    ),
    SolverEntry(
        "greedy-slo",
        "heuristics.cosched.online:solve_greedy_slo",
        description="greedy, admitting a job only where every member keeps its SLO",
    ),
    SolverEntry(
        "solo",
        "heuristics.cosched.online:solve_solo",
        description="Solo-D: every job alone on 1:1 rollout and training pools (§7.4)",
    ),
    SolverEntry(
        "colocated",
        "heuristics.cosched.online:solve_colocated",
        description="veRL-style: every job alone, both phases on training GPUs (§7.4)",
    ),
    SolverEntry(
        "optimal",
        "formulations.cosched.partition:solve_cosched_optimal",
        exact=True,
        time_limit=120.0,
        inject={"warm_start": "heuristics.cosched.online:solve_rollmux"},
        description=(
            "the offline optimum: set partitioning over feasible groups (canonical pinnings) on "
            "HiGHS, warm-started by Algorithm 1; -O space=algorithm1 for what it can build"
        ),
    ),
    SolverEntry(
        "bruteforce",
        "formulations.cosched.bruteforce:solve_cosched_bruteforce",
        exact=True,
        time_limit=300.0,
        description=(
            "every grouping of up to 6 jobs (the paper's brute-force optimum; ground truth)"
        ),
    ),
)

KIND = ProblemKind(
    name="cosched",
    summary="pack RL jobs into co-execution groups on shared rollout and training pools (RollMux)",
    title="Coschedule",
    fields=(SpecField("jobs", JobsSpec, "RL jobs spec file or preset", default="rollmux-mixed"),),
    problem_type=CoscheduleProblem,
    build=CoscheduleProblem,
    plan_type=CoschedulePlan,
    evaluate=evaluate_cosched,
    check=check_cosched,
    objective=(
        "provisioning cost in $/h of every group's rollout and training GPUs (RollMux §4.2), "
        "every job within its SLO"
    ),
    units="$/h",
    solvers=SOLVERS,
    presets=cosched_presets(),
    summary_table=cosched_summary,
    size=lambda problem: len(problem.jobs.jobs),
    size_label="jobs",
    bench_extras={
        "slo_attainment": "slo_attainment",
        "group_count": "group_count",
        "rollout_gpus": "rollout_gpus",
        "train_gpus": "train_gpus",
    },
    canned=canned_coscheds,
    commands=(
        CommandEntry(
            "simulate",
            "cosched",
            "heuristics.cosched.cli:simulate_cosched_command",
            inject={"solve_optimal": "formulations.cosched.partition:solve_cosched_optimal"},
        ),
    ),
)
