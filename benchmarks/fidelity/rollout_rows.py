"""RollPacker's measured long-round steps (§6.6 Tables 3 and 4, Qwen2.5-7B/8k on 16 H800) and the
rollout judge's prediction of each: the rows ``benchmarks.fidelity.rollout_steps`` reports and
``benchmarks.fidelity.rollout_sensitivity`` refits."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from benchmarks.fidelity.steps_predict import ratio_error
from benchmarks.rollout_breakdown import (
    PAPER_TABLE3,
    PAPER_TABLE4,
    TABLE3_TRIGGERS,
    long_step,
)

JOB = "rollout-7b-8k"
#: epochs averaged per row (``benchmarks.rollout_breakdown``'s default)
SEEDS = range(3)
#: row id -> (the plan's stream-trainer knobs, the measured long-round step, s, and its table)
ROWS: dict[str, tuple[dict[str, Any], float, str]] = {
    **{
        f"T3 {label}": (kw, PAPER_TABLE3[label], "Table 3") for label, kw in TABLE3_TRIGGERS.items()
    },
    **{
        f"T4 once-{c:.0%}": (
            {"scale": "adaptive", "fetch": "once", "fetch_cap": c},
            PAPER_TABLE4[f"once-{c:.0%}"],
            "Table 4",
        )
        for c in (0.2, 0.3, 0.4, 0.5)
    },
}
#: the job as RollPacker's artifact trains it, beside the preset's settings: no old log-prob
#: pass (its launcher fakes the old log-probs, ``costmodels.rl_training.log_prob_field``)
AS_RUN: dict[str, Any] = {"log_prob_pass": False}
SOURCE = (
    "benchmarks/fidelity/rollout_steps.py: RollPacker §6.6 Tables 3-4, long-round steps of "
    "Qwen2.5-7B/8k as its artifact trains (no old log-prob pass), all out of sample (the "
    "training MFU is fitted to Table 1's shares)"
)


def run(seeds: range = SEEDS, only: Collection[str] | None = None, **job: Any) -> dict[str, Any]:
    """Every row (or the rows ``only`` names) predicted, its ratio, and the error summary
    (``job``: what-ifs of :func:`benchmarks.instances.rollout_problem` over :data:`AS_RUN`, none
    for the published figures)."""
    rows = []
    for row_id, (kw, measured, table) in ROWS.items():
        if only is not None and row_id not in only:
            continue
        predicted = long_step(JOB, seeds, kw, **{**AS_RUN, **job})
        rows.append(
            {
                "id": row_id,
                "table": table,
                "measured_s": measured,
                "predicted_s": predicted,
                "ratio": predicted / measured,
            }
        )
    error = {"step": ratio_error([(r["id"], r["ratio"]) for r in rows]), "source": SOURCE}
    return {"job": JOB, "seeds": len(seeds), "rows": rows, "error": error}
