"""The judge's prediction of one of verl's published steps (``benchmarks.fidelity.steps``), and
the error measures its report and sensitivity share: the case's response lengths (lognormal,
sigma fixed, median given), the judge's stages and diagnostics for verl's plan, the ratio error
of a set of rows, and the staleness ablation's order. ``steps`` fits and reports;
``steps_sensitivity`` varies the judge's unmeasured constants; both predict here."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from scipy.optimize import minimize_scalar

from benchmarks.fidelity.steps_cases import (
    CALIBRATION,
    PROMPT_TOKENS,
    SPECS,
    CaseSpec,
    lognormal,
    measured_stages,
    plan,
    problem,
)
from costmodels.generation.request_traces import TraceParams
from costmodels.placement.check import check_placement
from costmodels.placement.decode_cost import workflow_replica_lengths
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.plan import TaskPlacement
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.task_cost import task_cost
from costmodels.workflow import (
    ACTOR_GENERATION,
    ACTOR_TRAINING,
    WorkflowSpec,
)

STAGES = ("step", "generation", "inference", "training")
#: the stage the median is fitted to (module doc)
FIT_STAGE = "training"
SIGMA = math.hypot(TraceParams().sigma_prompt, TraceParams().sigma_response)
#: the part of that spread a prompt's responses share (``ResponseLengths.prompt_share``): the
#: same traces' sigma_prompt^2 / sigma^2, not fitted
PROMPT_SHARE = TraceParams().sigma_prompt ** 2 / SIGMA**2
#: the expected step error per judge that plans and summaries carry (``steps.py`` and
#: ``rollout_steps.py`` write their entries)
ERROR_FILE = (
    Path(__file__).resolve().parents[2] / "costmodels" / "data" / "measured" / "step_error.json"
)
SIGMA_SOURCE = (
    "sigma = hypot(sigma_prompt, sigma_response) of costmodels.generation.request_traces "
    "(RollPacker §2.2, OrchestrRL Fig. 3a, RollMux Fig. 11)"
)


def lengths(median: float, spec: CaseSpec, sigma: float = SIGMA) -> dict[str, Any]:
    """The case's lognormal (the median cut at the case's cap, which the workflow requires)."""
    return lognormal(
        min(median, float(spec.max_response)),
        sigma,
        f"median fitted to verl {'+'.join(CALIBRATION)} {FIT_STAGE}; {SIGMA_SOURCE}",
        PROMPT_SHARE,
    )


def predict(
    spec: CaseSpec,
    median: float,
    prompt: int = PROMPT_TOKENS,
    efficiency: dict[str, Any] | None = None,
    sigma: float = SIGMA,
) -> dict[str, Any]:
    """The judge's step and stages for one case, with its plan's validity and diagnostics
    (``efficiency``: :func:`~benchmarks.fidelity.steps_cases.problem`'s; ``sigma``: the
    lengths' spread)."""
    prob = problem(spec, lengths(median, spec, sigma), prompt, efficiency)
    pl = plan(spec, prob)
    ev = evaluate_placement(prob, pl)
    tasks = ev.breakdown["tasks"]
    gen = tasks[ACTOR_GENERATION]
    # verl's old_log_prob is actor training's recompute of the old log-probs, timed apart
    log_prob = tasks[ACTOR_TRAINING].get("log_prob_s", 0.0)
    out: dict[str, Any] = {
        "step": ev.objective,
        "generation": gen["time_s"],
        "inference": log_prob,
        "training": tasks[ACTOR_TRAINING]["time_s"] - log_prob,
        "weight_transfer": ev.breakdown["phases"]["weight_transfer_s"],
        "violations": [str(v) for v in check_placement(prob, pl)],
        "decode_batch": max(gen["decode_batch"]),
        "mean_response": prob.workflow.mean_response_length,
        "peak_memory": ev.breakdown["memory"]["peak_utilization"],
    }
    # diagnostic, not a valid plan: generation with verl's batch (every sequence of a replica in
    # flight up to max_num_seqs), as vLLM runs once training has offloaded (colocated)
    g = pl.task(ACTOR_GENERATION)
    per_replica = math.ceil(prob.workflow.samples / g.dp)
    wide = pl.model_copy(
        update={
            "tasks": [
                t.model_copy(
                    update={"decode_batch": min(prob.workflow.decode_batch_size, per_replica)}
                )
                if t.task == ACTOR_GENERATION
                else t
                for t in pl.tasks
            ]
        }
    )
    out["generation_at_verl_batch"] = evaluate_placement(prob, wide).breakdown["tasks"][
        ACTOR_GENERATION
    ]["time_s"]
    out["verl_batch"] = min(prob.workflow.decode_batch_size, per_replica)
    wf = prob.workflow
    out["longest_response"] = float(max(workflow_replica_lengths(wf, per_replica)))
    out["one_at_cap"] = one_at_cap(prob, g)
    out["generation_mean_rank"] = mean_rank_generation(prob, g, out["decode_batch"])
    return out


#: the least median the fit may take, tokens
MIN_MEDIAN = 32.0


def calibration_rows(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The rows the fit may read: :data:`CALIBRATION` only."""
    return {i: rows[i] for i in CALIBRATION}


def fit_median(
    rows: dict[str, dict[str, Any]],
    stage: str = FIT_STAGE,
    prompt: int = PROMPT_TOKENS,
    sigma: float = SIGMA,
) -> dict[str, Any]:
    """The lognormal median (tokens) that makes the judge's ``stage`` match the calibration
    rows (least squares in log ratio over log median), the spread held at ``sigma``; test rows
    are never read."""
    cal = calibration_rows(rows)
    cap = min(SPECS[i].max_response for i in cal)

    def ratio(i: str, row: dict[str, Any], median: float) -> float:
        predicted = predict(SPECS[i], median, prompt, sigma=sigma)[stage]
        return predicted / measured_stages(SPECS[i], row)[stage]

    def loss(log_median: float) -> float:
        return sum(math.log(ratio(i, r, math.exp(log_median))) ** 2 for i, r in cal.items())

    lo, hi = math.log(MIN_MEDIAN), math.log(cap)
    res = minimize_scalar(loss, bounds=(lo, hi), method="bounded", options={"xatol": 1e-3})
    median = math.exp(float(res.x))
    ratios = {i: ratio(i, r, median) for i, r in cal.items()}
    return {
        "median": median,
        "sigma": sigma,
        "stage": stage,
        "rows": list(cal),
        "ratios": ratios,
        "at_bound": bool(min(res.x - lo, hi - res.x) < 0.01),
        "prompt_tokens": prompt,
    }


def compared_generation(spec: CaseSpec, pred: dict[str, Any]) -> float:
    """The judge's figure verl's generation is held against: one-step-off rows measure
    ``generate_sequences``, the ranks' mean (:func:`mean_rank_generation`), the others the
    driver's ``gen``, the slowest rank."""
    return pred["generation_mean_rank"] if spec.mode == "one-step-off" else pred["generation"]


def mean_rank_generation(prob: PlacementProblem, gen: TaskPlacement, dbs: int) -> float:
    """Seconds the judge gives a generation replica holding a random share of the step: its
    stratified quantiles with its own longest (of its share), not the step's. verl's
    ``generate_sequences`` timing is this figure's measured twin: ``reduce_timing`` averages it
    over the ranks (``fsdp_workers.py``: "We calculate the average timing across all ranks"),
    while the driver's ``gen`` waits for the slowest rank, which is the phase the judge costs."""
    wf = prob.workflow
    per_replica = wf.samples // gen.dp
    return _one_replica(
        prob, gen, dbs, global_batch=per_replica // wf.responses_per_prompt, mini_batch=None
    )


def one_at_cap(prob: PlacementProblem, gen: TaskPlacement) -> float:
    """Seconds the judge gives one response decoded alone to the cap on one generation replica:
    generation's floor whenever a step holds one response that runs to the cap."""
    return _one_replica(prob, gen, 1, global_batch=1, responses_per_prompt=1, response_lengths={})


def _one_replica(prob: PlacementProblem, gen: TaskPlacement, dbs: int, **workflow: Any) -> float:
    """The judge's seconds for ``gen``'s first replica alone at ``dbs``, on the problem's
    workflow with ``workflow``'s fields replaced (the step that replica's share makes)."""
    fields = {**prob.workflow.model_dump(), **workflow}
    one = PlacementProblem(prob.cluster, WorkflowSpec.model_validate(fields), prob.params)
    task = next(t for t in one.tasks if t.name == ACTOR_GENERATION)
    replica = gen.model_copy(update={"dp": 1, "devices": gen.devices[:1], "decode_batch": dbs})
    return task_cost(one, task, replica)[0]["time_s"]


#: rows whose errors are pooled: generation waits for the tail (sync, one-step-off) or need not
#: (fully-async); ``costmodels.step_error`` gives each workflow mode its group's figures
ERROR_GROUPS = {"waits": ("sync", "one-step-off"), "fully-async": ("fully-async",)}


def ratio_error(pairs: list[tuple[str, float]]) -> dict[str, Any]:
    """RMS of log(ratio), the worst ratio and its row over (row id, predicted / measured) pairs:
    one entry of ``step_error.json``."""
    if not pairs:
        return {"rms_log": None, "worst_ratio": None, "rows": []}
    logs = [math.log(x) for _, x in pairs]
    worst = max(pairs, key=lambda p: abs(math.log(p[1])))
    return {
        "rms_log": math.sqrt(sum(v * v for v in logs) / len(logs)),
        "worst_ratio": worst[1],
        "worst_row": worst[0],
        "rows": [i for i, _ in pairs],
    }


#: verl fully_async.md's staleness ablation on 64 + 64 GPUs (B7 is its staleness-0 row)
STALENESS_ABLATION = ("B7", "B8", "B9", "B6")


def staleness_order() -> list[str]:
    """The ablation's rows by staleness."""
    return sorted(STALENESS_ABLATION, key=lambda i: SPECS[i].staleness)


def same_order(measured: list[float], predicted: list[float]) -> bool:
    """Whether every pair of rows the measurement orders strictly keeps that order predicted."""
    n = len(measured)
    return all(
        (measured[i] - measured[j]) * (predicted[i] - predicted[j]) > 0
        for i in range(n)
        for j in range(i + 1, n)
        if measured[i] != measured[j]
    )
