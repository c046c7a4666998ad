"""The rollout problem's descriptor (RollPacker §3-§4)."""

from __future__ import annotations

from costmodels.problem import ProblemKind, SpecField
from costmodels.rollout.canned import canned_rollouts
from costmodels.rollout.check import check_rollout
from costmodels.rollout.judge import evaluate_rollout
from costmodels.rollout.plan import RolloutPlan
from costmodels.rollout.plot import plot_rollout
from costmodels.rollout.presets import rollout_presets
from costmodels.rollout.problem import JobSpec, RolloutProblem
from costmodels.rollout.summary import export_roll, rollout_summary


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
)
