"""How RollPacker's measured steps hold the rollout judge's training efficiency, and what it
leaves unexplained (``benchmarks/fidelity/rollout_steps.py``'s *Sensitivity* section).

The rollout judge's one fitted constant is the training MFU (``costmodels.rl_training``):
:data:`~costmodels.rl_training.FITTED_MFU` is the efficiency at which veRL's training share of
rlplan's run of RollPacker Table 1's job is the measured 22%, a share, fitted on veRL. RollPacker's
own steps (Tables 3 and 4, Qwen2.5-7B/8k on 16 H800) are absolute times of a different trainer:
RollPacker trains on Megatron-LM v0.12.2 with a distributed optimizer (RollPacker §5), so the two
sources need not agree on one efficiency. (The rows are judged as RollPacker's artifact trains,
without the old log-prob pass that veRL's Table 1 runs pay: ``rollout_rows.AS_RUN``.) This
module measures how far they disagree, with the calibration and test rows kept apart:

* **Fit on Table 3, test on Table 4.** The MFU minimising the RMS log error of Table 3's five rows
  (the stream trainer's scaling triggers) is found by bounded Brent search
  (``scipy.optimize.minimize_scalar``, :data:`MFU_RANGE`, :data:`XATOL`); Table 4's four
  fetch-once rows are its test rows. The fit never reads a Table 4 row.
* **What each setting says of the rest.** Per setting (the shipped fit, the Table 3 fit): each
  table's error, the stream trainer's gain from GPU scaling (no scaling over adaptive: measured
  124.2 / 115.2 s = 1.08x) and from streaming (fetch-once at 50% over streaming: measured
  132.0 / 115.2 s = 1.15x), predicted against measured, and veRL's training share of Table 1's job
  at that MFU (measured 22%).

Nothing here changes the judge: the shipped MFU stays, and these are what-ifs
(:func:`benchmarks.instances.rollout_problem`'s ``training_mfu``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from benchmarks.fidelity.rollout_rows import ROWS, run
from benchmarks.fidelity.steps_predict import ratio_error
from benchmarks.rollout_breakdown import PAPER_TABLE3, PAPER_TABLE4
from costmodels.rl_training import FITTED_MFU

#: the rows the training MFU is fitted to, and the rows it is tested on
CALIBRATION, TEST = "Table 3", "Table 4"
#: the MFU range the fit searches (a share of dense BF16 peak) and its tolerance
MFU_RANGE = (0.05, 0.6)
XATOL = 0.002
#: Table 1's measured training share of veRL's step (RollPacker §2.2: 21-23% over three tasks)
TABLE1_TRAINING_SHARE = 0.22
#: the stream trainer's measured gains: no scaling over adaptive scaling (Table 3), and fetching
#: once at 50% over streaming (Table 4, whose streaming row is Table 3's adaptive one)
MEASURED_SCALING_GAIN = PAPER_TABLE3["off"] / PAPER_TABLE3["adaptive"]
MEASURED_STREAMING_GAIN = PAPER_TABLE4["once-50%"] / PAPER_TABLE4["stream"]

#: the rows of the calibration table
CALIBRATION_ROWS = tuple(r for r in ROWS if ROWS[r][2] == CALIBRATION)

#: (MFU, the rows to predict or None for all) -> predicted long-round step per row, s
Predict = Callable[[float, Collection[str] | None], dict[str, float]]


def predicted_steps(mfu: float, rows: Collection[str] | None = None) -> dict[str, float]:
    """Every row's (or ``rows``') predicted long-round step (s) at training MFU ``mfu``."""
    return {r["id"]: r["predicted_s"] for r in run(only=rows, training_mfu=mfu)["rows"]}


def _error(steps: dict[str, float], table: str | None = None) -> dict[str, Any]:
    pairs = [
        (row, steps[row] / measured)
        for row, (_, measured, t) in ROWS.items()
        if row in steps and (table is None or t == table)
    ]
    return ratio_error(pairs)


def fit_mfu(predict: Predict = predicted_steps) -> float:
    """The training MFU minimising the RMS log error of the calibration rows (Table 3) alone."""
    from scipy.optimize import minimize_scalar

    def loss(mfu: float) -> float:
        # only the calibration rows are judged: the fit must not read a test row, nor pay for one
        steps = predict(mfu, CALIBRATION_ROWS)
        return _error({r: steps[r] for r in CALIBRATION_ROWS})["rms_log"]

    res = minimize_scalar(loss, bounds=MFU_RANGE, method="bounded", options={"xatol": XATOL})
    return float(res.x)


def table1_training_share(mfu: float) -> float:
    """veRL's mean training share of RollPacker Table 1's job over its three tasks at ``mfu``
    (``costmodels.rollout.table1``)."""
    from costmodels.rollout.table1 import TABLE1, veRL_shares

    return sum(veRL_shares(task, mfu=mfu)["training"] for task in TABLE1) / len(TABLE1)


def assess(
    label: str,
    mfu: float,
    predict: Predict = predicted_steps,
    share: Callable[[float], float] = table1_training_share,
) -> dict[str, Any]:
    """One setting: its rows, each table's error, the stream trainer's gains and Table 1's
    training share at ``mfu``."""
    steps = predict(mfu, None)
    return {
        "setting": label,
        "mfu": mfu,
        "steps": steps,
        "calibration": _error(steps, CALIBRATION),
        "test": _error(steps, TEST),
        "all": _error(steps),
        "scaling_gain": steps["T3 off"] / steps["T3 adaptive"],
        "streaming_gain": steps["T4 once-50%"] / steps["T3 adaptive"],
        "table1_training_share": share(mfu),
    }


def sensitivity(
    predict: Predict = predicted_steps, share: Callable[[float], float] = table1_training_share
) -> dict[str, Any]:
    """The shipped MFU and the one fitted to Table 3, each assessed (:func:`assess`)."""
    fitted = fit_mfu(predict)
    return {
        "settings": [
            assess("shipped (Table 1's share, veRL)", FITTED_MFU, predict, share),
            assess(f"fitted to {CALIBRATION}'s steps", fitted, predict, share),
        ],
        "fitted_mfu": fitted,
        "measured": {
            "scaling_gain": MEASURED_SCALING_GAIN,
            "streaming_gain": MEASURED_STREAMING_GAIN,
            "table1_training_share": TABLE1_TRAINING_SHARE,
        },
    }


def markdown(sens: dict[str, Any]) -> list[str]:
    """The *Sensitivity* section of ``rollout_steps.md``."""
    shipped, fitted = sens["settings"]
    m = sens["measured"]
    lines = [
        "",
        "## Sensitivity: the training efficiency",
        "",
        "The judge's one fitted constant is the training MFU, fitted to veRL's training share of "
        "RollPacker Table 1's job (a share, on veRL, with its old log-prob pass); RollPacker "
        "trains on Megatron-LM (§5), without one (the rows above). "
        f"Here the MFU is fitted to {CALIBRATION}'s five steps alone (bounded Brent search) and "
        f"tested on {TEST}'s four (`benchmarks/fidelity/rollout_sensitivity.py`). Gains: no "
        "GPU scaling over adaptive scaling (Table 3), fetch-once at 50% over streaming (Table 4).",
        "",
        f"| setting | MFU | {CALIBRATION} RMS log | {TEST} RMS log | worst (row) | scaling gain "
        f"(measured {m['scaling_gain']:.2f}x) | streaming gain (measured "
        f"{m['streaming_gain']:.2f}x) | Table 1 training share (measured "
        f"{m['table1_training_share']:.0%}) |",
        "|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for s in sens["settings"]:
        a = s["all"]
        lines.append(
            f"| {s['setting']} | {s['mfu']:.3f} | {s['calibration']['rms_log']:.2f} | "
            f"{s['test']['rms_log']:.2f} | {a['worst_ratio']:.2f} ({a['worst_row']}) | "
            f"{s['scaling_gain']:.2f}x | {s['streaming_gain']:.2f}x | "
            f"{s['table1_training_share']:.0%} |"
        )
    rows = " / ".join(f"{fitted['steps'][r] / ROWS[r][1]:.2f}" for r in ROWS)
    lines += [
        "",
        f"Fitted to Table 3, the MFU is {fitted['mfu']:.3f}, {fitted['mfu'] / shipped['mfu']:.1f}x "
        f"the shipped {shipped['mfu']:.3f}; Table 4, out of sample, then has RMS log error "
        f"{fitted['test']['rms_log']:.2f} (shipped {shipped['test']['rms_log']:.2f}); every "
        f"row's ratio there: {rows} ({', '.join(ROWS)}). At that MFU veRL's training share of "
        f"Table 1's job would be {fitted['table1_training_share']:.0%}, against the measured "
        f"{m['table1_training_share']:.0%}: one efficiency does not hold both sources. Either "
        "RollPacker's Megatron trainer runs this much nearer peak than veRL's, or rlplan's "
        "rollout of Table 1's veRL job is short (as the placement judge's generation is on "
        "verl's H20 runs, `steps.md`) and the share fit lowered the MFU to make up for it; the "
        "published figures cannot tell the two apart, so the shipped fit stays.",
        "",
        f"Apart from the efficiency, the judge's GPU scaling gains "
        f"{shipped['scaling_gain']:.2f}x at the shipped MFU and {fitted['scaling_gain']:.2f}x "
        f"at the fitted one, against the measured {m['scaling_gain']:.2f}x, and streaming "
        f"gains {shipped['streaming_gain']:.2f}x and {fitted['streaming_gain']:.2f}x over "
        f"fetching once at 50%, against the measured {m['streaming_gain']:.2f}x: no efficiency "
        "brings the rows together, because the stream trainer's overlap of training with the "
        "long round's tail is larger in the judge than RollPacker measured (the paper puts "
        "migration under 3 s and the decode slowdown within 1%, §6.6, so neither is the gap). "
        "That excess is the error left at the fitted MFU: the rows that overlap least (no "
        f"scaling {fitted['steps']['T3 off'] / ROWS['T3 off'][1]:.2f}, fetch-once "
        f"{min(fitted['steps'][r] / ROWS[r][1] for r in ROWS if ROWS[r][2] == TEST):.2f}-"
        f"{max(fitted['steps'][r] / ROWS[r][1] for r in ROWS if ROWS[r][2] == TEST):.2f}) are "
        "the over-predicted ones.",
    ]
    return lines
