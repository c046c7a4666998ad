"""The H20's derived kernel profile held to measured H20-class silicon: AIConfigurator's GEMMs.

The judge's H20 profile is the H100's fitted one, its efficiencies taken as shares of the H20's
own peaks (``costmodels.calibration.DERIVED``): an assumption, for the shipped AIConfigurator
(aiconfigurator-core 0.12.0) has no H20 data. Its repository once did:
``src/aiconfigurator/systems/data/h20_sxm/sglang/0.5.1.post1/gemm_perf.txt.bak`` at
ai-dynamo/aiconfigurator@3359b493d^ (removed in 3359b493d, "remove h20_sxm data"), GEMM
latencies measured by AIConfigurator's SGLang collector on an "NVIDIA H20-3e", the H20's die (the
same 148 dense TFLOP/s) with 141 GB of HBM3e at 4.8 TB/s where the H20 has 96 GB of HBM3 at 4.0.
Beside them, the H100-SXM's GEMMs from the same collector (SGLang 0.5.6.post2, bf16, the
installed aiconfigurator-core) on the same (m, n, k) grid.

Per GEMM, the achieved share of each part's peak: HBM share = bytes moved (bf16 A, B and C) /
latency / peak bandwidth, FLOP share = 2 m n k / latency / peak dense FLOP/s. Their H20-3e /
H100 ratios, median over the grid's weight-sized GEMMs (n k >= 2048^2), in the two regimes the
judge's profile separates: the weight stream (m <= 8: decode at small batch, the long tail's
regime) and the GEMM's compute (m >= 1024). The compute ratio carries to the H20 as measured
(the same SMs); the stream ratio does if the H20's HBM3 reaches the share of its peak the
H20-3e's HBM3e does, and not at all if the SMs, not the memory, limit a GEMV (then the H20
reaches the same bytes per second, a share of 4.0 TB/s near the H100's): the two bounds of
``steps_sensitivity``'s measured setting.

    python -m benchmarks.fidelity.h20_kernels --extract /work/.mirror/.../repo   # re-extract
    python -m benchmarks.fidelity.h20_kernels --out benchmarks/results/fidelity

The extract (``data/aic_h20_3e_gemm.csv``) is shipped, so the analysis needs neither.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
from pathlib import Path
from typing import Any

from costmodels.catalog import get_gpu

DATA = Path(__file__).parent / "data" / "aic_h20_3e_gemm.csv"
#: where the H20-3e's measured GEMMs are (the commit before their removal)
SOURCE_COMMIT = "3359b493d^"
SOURCE_PATH = "src/aiconfigurator/systems/data/h20_sxm/sglang/0.5.1.post1/gemm_perf.txt.bak"
#: the H100's, same collector, in the installed aiconfigurator-core
H100_VERSION = "0.5.6.post2"
#: peaks, bytes/s and FLOP/s: H20-3e 4.8 TB/s HBM3e and the H20 die's 148 dense bf16 TFLOP/s
#: (NVIDIA's H20 141GB specification; not a catalog GPU); H100-SXM the catalog's
PEAK = {
    "H20-3e": (4.8e12, 148e12),
    "H100-SXM": (
        get_gpu("H100-SXM").hbm_gb_per_s * 1e9,
        get_gpu("H100-SXM").tflops_bf16_dense * 1e12,
    ),
}
#: the H20's (96 GB HBM3) peak bandwidth, bytes/s: the catalog's
H20_HBM = get_gpu("H20").hbm_gb_per_s * 1e9
#: weight-sized GEMMs (at least a 2048 x 2048 bf16 weight, 8 MB): the stream dominates at small m
MIN_WEIGHT = 2048 * 2048
#: the two regimes: the weight stream (decode at small batch) and the GEMM's compute
STREAM_M, COMPUTE_M = (1, 2, 4, 8), (1024, 2048, 4096, 8192)


def extract(mirror: Path, out: Path = DATA) -> int:
    """The matched (m, n, k) rows of the H20-3e's fp16 and the H100's bf16 GEMMs (module doc)
    from a git mirror of ai-dynamo/aiconfigurator and the installed aiconfigurator-core."""
    import os

    import aiconfigurator_core
    import pandas as pd

    text = subprocess.run(
        ["git", "--git-dir", str(mirror), "show", f"{SOURCE_COMMIT}:{SOURCE_PATH}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = list(csv.DictReader(text.splitlines()))
    h20 = {
        (int(r["m"]), int(r["n"]), int(r["k"])): float(r["latency"])
        for r in rows
        if r["gemm_dtype"] == "float16"
    }
    base = Path(os.path.dirname(aiconfigurator_core.__file__)) / "systems" / "data" / "h100_sxm"
    frame = pd.read_parquet(base / "gemm" / "sglang" / H100_VERSION / "gemm_perf.parquet")
    frame = frame[frame.gemm_dtype == "bfloat16"]
    h100 = {
        (int(m), int(n), int(k)): float(t)
        for m, n, k, t in frame[["m", "n", "k", "latency"]].values
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    keys = sorted(k for k in h20 if k in h100 and k[1] * k[2] >= MIN_WEIGHT)
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["m", "n", "k", "h20_3e_ms", "h100_ms"])
        for key in keys:
            w.writerow([*key, h20[key], h100[key]])
    return len(keys)


def read(path: Path = DATA) -> list[dict[str, float]]:
    with path.open(newline="") as fh:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(fh)]


def shares(row: dict[str, float], gpu: str, ms: float) -> tuple[float, float]:
    """(HBM share, FLOP share) of ``gpu``'s peaks one GEMM reached in ``ms`` milliseconds."""
    m, n, k = row["m"], row["n"], row["k"]
    moved = 2 * (n * k + m * k + m * n)
    bandwidth, flops = PEAK[gpu]
    return moved / (ms * 1e-3) / bandwidth, 2 * m * n * k / (ms * 1e-3) / flops


def analyse(rows: list[dict[str, float]] | None = None) -> dict[str, Any]:
    """Per m, the median shares of both parts and their ratios; the two regimes' ratios."""
    rows = rows if rows is not None else read()
    # each GEMM's (HBM, FLOP) shares on both parts, once
    measured = [
        (r, shares(r, "H20-3e", r["h20_3e_ms"]), shares(r, "H100-SXM", r["h100_ms"])) for r in rows
    ]

    def median(ms: Any, value: Any) -> float:
        return statistics.median(value(*x) for x in measured if int(x[0]["m"]) in ms)

    per_m = {
        m: {
            "gemms": sum(int(x[0]["m"]) == m for x in measured),
            "hbm_share": [median((m,), lambda r, a, b: a[0]), median((m,), lambda r, a, b: b[0])],
            "flop_share": [median((m,), lambda r, a, b: a[1]), median((m,), lambda r, a, b: b[1])],
            "ratio": median((m,), lambda r, a, b: r["h100_ms"] / r["h20_3e_ms"]),
        }
        for m in sorted({int(r["m"]) for r in rows})
    }
    # the other bound: the H20 moves the H20-3e's bytes per second (SM-limited GEMVs), capped at
    # its own peak, a share of its HBM against the H100's share
    h20_stream = median(STREAM_M, lambda r, a, b: a[0]) * PEAK["H20-3e"][0] / H20_HBM
    return {
        "per_m": per_m,
        "stream_share_ratio": median(STREAM_M, lambda r, a, b: a[0] / b[0]),
        "compute_share_ratio": median(COMPUTE_M, lambda r, a, b: a[1] / b[1]),
        "stream_share_ratio_same_bytes": min(1.0, h20_stream)
        / median(STREAM_M, lambda r, a, b: b[0]),
        "gemms": len(rows),
        "source": f"ai-dynamo/aiconfigurator@{SOURCE_COMMIT}:{SOURCE_PATH} (H20-3e, SGLang "
        f"0.5.1.post1) against aiconfigurator-core 0.12.0's h100_sxm SGLang {H100_VERSION}",
    }


def markdown(result: dict[str, Any], command: str) -> str:
    lines = [
        "# The H20's derived kernel profile against measured H20-3e GEMMs",
        "",
        f"Made by `{command}` (`benchmarks/fidelity/h20_kernels.py`, whose docstring states the "
        f"data and the method). {result['gemms']} weight-sized GEMMs measured on both parts by "
        "AIConfigurator's SGLang collector: " + result["source"] + ". Shares are of each part's "
        "own peaks (H20-3e 4.8 TB/s, 148 TFLOP/s; H100-SXM 3.35 TB/s, 989 TFLOP/s), medians.",
        "",
        "| m (tokens) | H20-3e HBM share | H100 HBM share | H20-3e FLOP share | H100 FLOP share "
        "| H100 ms / H20-3e ms |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for m, x in result["per_m"].items():
        lines.append(
            f"| {m} | {x['hbm_share'][0]:.3f} | {x['hbm_share'][1]:.3f} | "
            f"{x['flop_share'][0]:.3f} | {x['flop_share'][1]:.3f} | {x['ratio']:.2f} |"
        )
    lines += [
        "",
        "The derived profile gives the H20 the H100's shares. Measured, the H20 die reaches "
        f"{result['compute_share_ratio']:.2f}x the H100's share of its FLOP/s in compute-bound "
        "GEMMs (m >= 1024: fewer SMs, each better fed) and "
        f"{result['stream_share_ratio']:.2f}x its share of HBM bandwidth at decode's small "
        "batches (m <= 8), or "
        f"{result['stream_share_ratio_same_bytes']:.2f}x if the H20's slower HBM3 moves the "
        "same bytes per second as the H20-3e's (SM-limited). `steps.md` (*Sensitivity*) "
        "judges verl's H20 rows with both.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    from benchmarks.publish import command_line

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/fidelity"))
    ap.add_argument("--extract", type=Path, help="git dir of an ai-dynamo/aiconfigurator mirror")
    args = ap.parse_args(argv)
    if args.extract:
        print(f"wrote {extract(args.extract)} rows to {DATA}")
    result = analyse()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "h20_kernels.json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result, command_line("benchmarks.fidelity.h20_kernels", argv))
    (args.out / "h20_kernels.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
