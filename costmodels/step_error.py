"""How far to trust a predicted RL step: the judge's out-of-sample error on measured whole steps.

``costmodels/data/measured/step_error.json`` is written by ``python -m benchmarks.fidelity.steps``
(the whole-step section of ``benchmarks/results/fidelity``): for the step and for each stage
(generation, inference, training), the RMS of ln(predicted / measured) over the measured runs
held out of every calibration, the worst ratio and the runs it covers. A plan's summary and its
plan file carry the step's figure as its expected error: exp(RMS) - 1, a typical relative error,
not a bound. Runs are comparable when their generation waits for the step's tail the same way:
synchronous and one-step-off runs (the table's top level) apart from fully-async ones (its
``fully-async`` entry, which a fully-async workflow's plans carry). The rollout judge's step is
held to RollPacker's measured steps (``benchmarks/fidelity/rollout_steps.py``, its ``rollout``
entry); the replan judge has no whole-step measurement yet.
"""

from __future__ import annotations

import functools
import json
import math
from importlib import resources
from typing import Any

STAGES = ("step", "generation", "inference", "training")


@functools.lru_cache(maxsize=1)
def step_error_table() -> dict[str, Any]:
    """The shipped table (module doc), or an empty one when none is shipped."""
    path = resources.files("costmodels") / "data" / "measured" / "step_error.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text())


#: the judges the table measures: the placement judge at its top level (verl's runs), the others
#: under their own name (the rollout judge: RollPacker's, ``benchmarks.fidelity.rollout_steps``)
MEASURED_JUDGES = ("placement", "rollout")


#: the table entries of the workflow modes measured apart from the synchronous and one-step-off
#: runs of the table's top level
MODE_ENTRIES = ("fully-async",)


@functools.lru_cache(maxsize=64)
def expected_error(
    stage: str = "step", judge: str = "placement", mode: str = "sync"
) -> dict[str, Any] | None:
    """``{"relative": exp(rms_log) - 1, "rms_log", "worst_ratio", "runs", "source"}`` of one
    stage of one problem's judge for a workflow of ``mode`` (module doc), or None when no
    measurement covers it. Built once: every judged plan's breakdown shares it (read it, do not
    change it)."""
    if judge not in MEASURED_JUDGES:
        return None
    table = step_error_table()
    if judge != "placement":
        table = table.get(judge, {})
    elif mode in MODE_ENTRIES:
        table = table.get(mode, {})
    entry = table.get(stage)
    if not entry or entry.get("rms_log") is None:
        return None
    return {
        "relative": math.exp(entry["rms_log"]) - 1,
        "rms_log": entry["rms_log"],
        "worst_ratio": entry.get("worst_ratio"),
        "runs": len(entry.get("rows", [])),
        "source": table.get("source", ""),
    }


@functools.lru_cache(maxsize=8)
def expected_errors(
    judge: str = "placement", mode: str = "sync"
) -> dict[str, dict[str, Any] | None]:
    """:func:`expected_error` of the step and of every stage (``STAGES``), built once per judge
    and mode: the placement judge puts it in every breakdown, searches included."""
    return {stage: expected_error(stage, judge, mode) for stage in STAGES}


def describe(stage: str = "step", judge: str = "placement", mode: str = "sync") -> str:
    """One line for a summary: the expected error, per stage after the step's, and what it was
    measured on."""
    err = expected_error(stage, judge, mode)
    if err is None:
        return (
            f"expected error: not measured yet for the {judge} judge's {stage} (whole-step "
            "fidelity covers the placement and rollout judges)"
        )
    # short stage names: the line fits an 80-column summary
    short = {"generation": "gen", "inference": "inference", "training": "train"}
    line = f"expected error (RMS, {err['runs']} runs): {stage} ±{err['relative']:.0%}"
    if stage == "step":
        for other in STAGES[1:]:
            more = expected_error(other, judge, mode)
            if more is not None:
                line += f", {short[other]} ±{more['relative']:.0%}"
    return line
