"""The rollout problem's descriptor (RollPacker §3-§4)."""

from __future__ import annotations

from costmodels.problem import CommandEntry, ProblemKind, SolverEntry, SpecField
from costmodels.rollout.canned import canned_rollouts
from costmodels.rollout.check import check_rollout
from costmodels.rollout.judge import evaluate_rollout
from costmodels.rollout.plan import RolloutPlan
from costmodels.rollout.plot import plot_rollout
from costmodels.rollout.presets import rollout_presets
from costmodels.rollout.problem import JobSpec, RolloutProblem
from costmodels.rollout.summary import export_roll, rollout_summary

SOLVERS = (
    SolverEntry(
        "search",
        "heuristics.rollout.search:solve_search",
        default=True,
        time_limit=900.0,
        description=(
            "coordinate descent over η, TP per round, stream trainer, reward and timeout on the "
            "simulator (whole space when small)"
        ),
    ),
    SolverEntry(
        "paper",
        "heuristics.rollout.search:solve_paper",
        description=(
            "RollPacker's settings: η = 1.25, the §4.2 TP rule, async reward with λ = 1.5, "
            "adaptive stream trainer"
        ),
    ),
    SolverEntry(
        "verl",
        "heuristics.rollout.search:solve_verl",
        description=(
            "veRL's synchronous rollout: no speculation, reward after rollout, no stream trainer"
        ),
    ),
    SolverEntry(
        "exhaustive",
        "formulations.rollout.exhaustive:solve_exhaustive",
        exact=True,
        time_limit=1800.0,
        description=(
            "every plan of the discrete space, one simulated epoch per rollout setting (the "
            "optimum on small jobs)"
        ),
    ),
)


def _with_efficiency(problem: RolloutProblem, update: dict) -> RolloutProblem:
    """The job with ``--profile``'s kernels and training fit and ``--engine``'s serving mode: the
    kernel fields go to the workload, a training MFU fitted on the job's GPU type to its training
    stage, the engine by name (the workload names its engine rather than carrying overheads)."""
    wl = problem.workload
    changes: dict = {k: update[k] for k in ("kernels", "profiles") if k in update}
    if update.get("engine") is not None:
        changes["engine"] = update["engine"]
    mfu = update.get("training_mfu", {}).get(wl.gpu)
    if mfu is not None:
        changes["training"] = wl.training.model_copy(update={"mfu": mfu})
    job = problem.job.model_copy(update={"workload": wl.model_copy(update=changes)})
    return RolloutProblem(JobSpec.model_validate(job.model_dump()))


KIND = ProblemKind(
    name="rollout",
    summary=(
        "batch a synchronous RL job's rollouts: tail batching, TP per round, reward timeouts, "
        "stream trainer (RollPacker)"
    ),
    title="Rollout",
    fields=(SpecField("job", JobSpec, "rollout job spec file or preset", default="rollout-7b-8k"),),
    problem_type=RolloutProblem,
    build=RolloutProblem,
    with_efficiency=_with_efficiency,
    plan_type=RolloutPlan,
    evaluate=evaluate_rollout,
    check=check_rollout,
    objective=(
        "mean step time over one simulated epoch: rollout, exposed reward and exposed training "
        "per P0 prompts trained (RollPacker §6)"
    ),
    units="s/step",
    solvers=SOLVERS,
    presets=rollout_presets(),
    summary_table=rollout_summary,
    plot=plot_rollout,
    exports={"roll": export_roll},
    size=lambda problem: problem.workload.gpus,
    size_label="GPUs",
    bench_extras={
        "rollout_s": "rollout_s",
        "reward_s": "reward_s",
        "train_s": "train_s",
        "bubble_s": "bubble_s",
    },
    canned=canned_rollouts,
    commands=(
        CommandEntry("simulate", "rollout", "heuristics.rollout.cli:simulate_rollout_command"),
    ),
)
