"""``python -m benchmarks.fidelity --out DIR``: the fidelity report
(:mod:`benchmarks.fidelity.report`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchmarks.fidelity.report import write_report


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fidelity", description="the judge against measurements"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/fidelity"))
    args = parser.parse_args()
    start = time.time()
    summary = write_report(args.out, "python -m benchmarks.fidelity " + " ".join(sys.argv[1:]))
    for label in ("flat", "calibrated"):
        for g in summary.get(label, {}).get("gpus", []):
            print(
                f"{label:10s} {g['gpu']:10s} {g['cases']:4d} cases  median ratio "
                f"{g['median_ratio']:.2f}  RMS log error {g['rms_log_error']:.3f}"
                f" (target {g['rms_target']})  fastest TP {g['fastest_tp_agreement']:.0%} (tail "
                f"{g['fastest_tp_tail_agreement']:.0%})"
                f"  prefill median {g['prefill_median_ratio']:.2f}"
            )
    print(f"wrote {args.out} in {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
