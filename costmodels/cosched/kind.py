"""The co-scheduling problem's descriptor (RollMux §4)."""

from __future__ import annotations

from costmodels.cosched.canned import canned_coscheds
from costmodels.cosched.check import check_cosched
from costmodels.cosched.judge import evaluate_cosched
from costmodels.cosched.plan import CoschedulePlan
from costmodels.cosched.presets import cosched_presets
from costmodels.cosched.problem import CoscheduleProblem, JobsSpec
from costmodels.cosched.summary import cosched_summary
from costmodels.problem import ProblemKind, SpecField

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
)
