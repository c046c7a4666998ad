"""RollPacker Table 1 on rlplan's simulator: where a veRL step's time goes, and the training MFU
fitted to it (``costmodels.rl_training``).

Table 1 measures veRL training Qwen2.5-14B with 16k responses on 32 H800 (GRPO, P0 = 128,
R0 = 8) on three tasks: math (rollout 72% / reward 5% / training 23%), code (66 / 13 / 21) and
LLM-as-a-judge (71 / 7 / 22). rlplan runs the ``rollout-14b-16k`` job (RollPacker Table 2's 14B
setting) under veRL's plan (no speculation, synchronous reward, fixed TP 2) with every prompt of
the task's reward kind (rule, sandbox, judge) and the rollout engine verl ran then (``eager``:
verl's default up to 0.5). The stage shares are of the mean step: rollout until the last
response, the reward time left after it, training.
"""

from __future__ import annotations

from typing import Any

#: task -> (reward kind, (rollout, reward, training) shares measured)
TABLE1 = {
    "math": ("rule", (0.72, 0.05, 0.23)),
    "code": ("sandbox", (0.66, 0.13, 0.21)),
    "judge": ("judge", (0.71, 0.07, 0.22)),
}
JOB = "rollout-14b-16k"


def table1_problem(
    task: str,
    engine: str = "eager",
    mfu: float | None = None,
    dataset_prompts: int = 1280,
    seed: int = 0,
) -> Any:
    from costmodels.rollout.presets import table2_job
    from costmodels.rollout.problem import JobSpec, RolloutProblem

    kind, _ = TABLE1[task]
    job = table2_job(JOB, dataset_prompts=dataset_prompts, seed=seed)
    job["workload"]["reward"] = {k: float(k == kind) for k in ("rule", "sandbox", "judge")}
    job["workload"]["engine"] = engine
    if mfu is not None:
        job["workload"]["training"] = {**job["workload"]["training"], "mfu": mfu}
    spec = JobSpec.model_validate(job)
    spec.check()
    return RolloutProblem(spec)


def veRL_shares(
    task: str, engine: str = "eager", mfu: float | None = None, dataset_prompts: int = 1280
) -> dict[str, float]:
    """Rollout, reward and training shares of veRL's mean step on the task, and the step."""
    from costmodels.rollout.judge import evaluate_rollout
    from costmodels.rollout.space import verl_plan

    problem = table1_problem(task, engine, mfu, dataset_prompts)
    step, b = evaluate_rollout(problem, verl_plan(problem.workload))
    total = b["rollout_s"] + b["reward_s"] + b["train_s"]
    return {
        "rollout": b["rollout_s"] / total,
        "reward": b["reward_s"] / total,
        "training": b["train_s"] / total,
        "step_s": step,
        "rollout_s": b["rollout_s"],
        "reward_s": b["reward_s"],
        "train_s": b["train_s"],
    }


def fit_mfu(engine: str = "eager", dataset_prompts: int = 1280) -> float:
    """The training MFU at which veRL's mean training share over the three tasks is Table 1's
    (22.0%): one number, found by bisection (the share falls as the MFU rises)."""
    from scipy.optimize import brentq

    target = sum(s[2] for _, s in TABLE1.values()) / len(TABLE1)

    def gap(mfu: float) -> float:
        return (
            sum(veRL_shares(t, engine, mfu, dataset_prompts)["training"] for t in TABLE1)
            / len(TABLE1)
            - target
        )

    return round(float(brentq(gap, 0.02, 1.0, xtol=1e-4)), 3)
