"""The co-scheduling problem's descriptor (RollMux). Its data shapes and job-mix preset have
landed; its plan, evaluator and solvers come with the RollMux issue, so the planner refuses a
``cosched`` problem at load until then."""

from __future__ import annotations

from costmodels.cosched.presets import cosched_presets
from costmodels.cosched.problem import CoscheduleProblem, JobsSpec
from costmodels.problem import ProblemKind, SpecField

KIND = ProblemKind(
    name="cosched",
    summary="pack RL jobs into co-execution groups on shared rollout and training pools (RollMux)",
    title="Coschedule",
    fields=(SpecField("jobs", JobsSpec, "RL jobs spec file or preset", default="rollmux-mixed"),),
    problem_type=CoscheduleProblem,
    build=CoscheduleProblem,
    presets=cosched_presets(),
)
