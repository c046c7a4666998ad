"""Whole RL steps of the rollout judge against RollPacker's measured step times.

``python -m benchmarks.fidelity.rollout_steps --out benchmarks/results/fidelity`` writes
``rollout_steps.{csv,json,md}`` there and the rollout judge's expected step error under
``rollout`` in ``costmodels/data/measured/step_error.json`` (what ``rlplan plan rollout`` prints
as a step's expected error).

Measured: RollPacker §6.6 Table 3 (the stream trainer: no scaling, fixed 20/30/40% triggers,
adaptive) and Table 4 (fetch-once capped at 20-50%; its streaming row is Table 3's adaptive
one), long-round step times of RollPacker on Qwen2.5-7B/8k (claims.md). Predicted: the rollout
judge's mean long-round step of the same plans on the 7B/8k Table 2 job as RollPacker's artifact
trains it (no old log-prob pass, ``benchmarks.fidelity.rollout_rows.AS_RUN``), over
``benchmarks.fidelity.rollout_rows.SEEDS`` epochs, as ``benchmarks.rollout_breakdown``
reproduces Tables 3 and 4 (the rows: ``benchmarks.fidelity.rollout_rows``). The report's
*Sensitivity* section (``benchmarks.fidelity.rollout_sensitivity``; ``--no-sensitivity`` skips
it) fits the training MFU to Table 3's steps alone and tests it on Table 4's.

**Split.** Every row here is a test row: the rollout judge's only fitted constant, the training
MFU (``costmodels.rl_training.FITTED_MFU``), is fitted to RollPacker Table 1's stage shares
(veRL, 14B/16k), and nothing is fitted to these step times.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

from benchmarks.fidelity.rollout_rows import run
from benchmarks.fidelity.rollout_sensitivity import markdown as sensitivity_lines
from benchmarks.fidelity.rollout_sensitivity import sensitivity
from benchmarks.fidelity.steps_predict import ERROR_FILE
from benchmarks.publish import write_csv


def update_error_file(result: dict[str, Any], path: Path = ERROR_FILE) -> None:
    """Put the rollout judge's entry into ``step_error.json``, keeping the placement judge's."""
    table = json.loads(path.read_text()) if path.is_file() else {}
    table["rollout"] = result["error"]
    path.write_text(json.dumps(table, indent=1) + "\n")


def markdown(result: dict[str, Any], command: str) -> str:
    err = result["error"]["step"]
    lines = [
        "# Fidelity of the rollout judge: whole RL steps (RollPacker, Qwen2.5-7B/8k)",
        "",
        f"Made by `{command}` (`benchmarks/fidelity/rollout_steps.py`). Measured: RollPacker "
        "§6.6 Tables 3 and 4, long-round step times (claims.md). Predicted: the rollout judge's "
        f"mean long-round step of the same plan on `{result['job']}` as RollPacker's artifact "
        "trains it (no old log-prob pass: its launcher fakes the old log-probs, "
        f"`costmodels.rl_training.log_prob_field`), over {result['seeds']} epochs. Every row is "
        "out of sample (the training MFU is fitted to Table 1's shares).",
        "",
        "| row | table | measured s | predicted s | predicted / measured |",
        "|---|---|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['id']} | {r['table']} | {r['measured_s']:.1f} | {r['predicted_s']:.1f} | "
            f"{r['ratio']:.2f} |"
        )
    lines += [
        "",
        f"RMS log error {err['rms_log']:.2f} (±{math.exp(err['rms_log']) - 1:.0%}), worst "
        f"{err['worst_ratio']:.2f} ({err['worst_row']}): the rollout judge over-predicts "
        "RollPacker's steps. Every rollout plan's summary and plan file carries this figure as "
        "its expected step error.",
    ]
    if "sensitivity" in result:
        lines += sensitivity_lines(result["sensitivity"])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fidelity.rollout_steps",
        description="the rollout judge against RollPacker's measured steps",
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/fidelity"))
    parser.add_argument("--error-file", type=Path, default=ERROR_FILE)
    parser.add_argument(
        "--no-sensitivity",
        action="store_true",
        help="skip the training-efficiency sensitivity (its fit runs Table 3's rows ~15 times)",
    )
    args = parser.parse_args()
    start = time.time()
    result = run()
    if not args.no_sensitivity:
        result["sensitivity"] = sensitivity()
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "rollout_steps.csv", result["rows"])
    (args.out / "rollout_steps.json").write_text(json.dumps(result, indent=1) + "\n")
    command = f"python -m benchmarks.fidelity.rollout_steps --out {args.out}"
    (args.out / "rollout_steps.md").write_text(markdown(result, command))
    update_error_file(result, args.error_file)
    print(markdown(result, command))
    print(
        f"wrote {args.out}/rollout_steps.{{csv,json,md}} and {args.error_file} in "
        f"{time.time() - start:.1f} s"
    )


if __name__ == "__main__":
    main()
