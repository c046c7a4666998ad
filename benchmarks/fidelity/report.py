"""The fidelity report: the judge's predictions against measurements, per source.

Sources (``costmodels/data/measured/``, extracted by :mod:`benchmarks.fidelity.aic`):

* **AIConfigurator decode kernels**: a decode step's kernel time for Qwen3-8B, Qwen3-32B and
  Llama-3.1-8B on H100-SXM, H200, A100-80GB and L40S, TP 1-8, batch 1-256, context 1k-16k, vLLM,
  bf16. Compared with :func:`costmodels.decode.decode_step_time` (the judge's step without the
  engine's CPU overhead, which these kernel sums do not contain). Only the cases a serving engine
  can run are kept: the weights and the batch's KV fit the instance (``Instance.kv_capacity_tokens``).
* **AIConfigurator prefill**: a batch of prompts prefilled from an empty cache, against
  ``Instance.prefill_batch``.

Metrics, with the targets the calibration is held to:

* RMS log error ``sqrt(mean(ln(predicted / measured)^2))`` per GPU (target <= 0.08 on H100, H200
  and A100; <= 0.15 on L40S) and per GPU and TP;
* fastest-TP agreement: for each (GPU, model, batch, context), whether the TP with the shortest
  predicted step is the TP with the shortest measured one, over the TPs that fit (target >= 95%,
  tail cases, batch <= 8, included);
* the all-reduce term alone, predicted ``comm_s`` against the measured all-reduce kernels;
* prefill: the median of predicted / measured per GPU (target within +-20%).

Run ``python -m benchmarks.fidelity --out benchmarks/results/fidelity``: CSV of every case, a JSON
and markdown summary, and a predicted-vs-measured plot.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance, ServingParams

MEASURED = Path(__file__).resolve().parents[2] / "costmodels" / "data" / "measured"
#: the calibration's targets (RMS log error per GPU; the rest for every GPU)
RMS_TARGET = {"H100-SXM": 0.08, "H200": 0.08, "A100-80GB": 0.08, "L40S": 0.15}
FASTEST_TP_TARGET = 0.95
PREFILL_BAND = (0.8, 1.2)
TAIL_BATCH = 8


def _rows(name: str) -> list[dict[str, str]]:
    with (MEASURED / name).open(newline="") as fh:
        return list(csv.DictReader(fh))


def decode_cases(params: ServingParams | None = None) -> list[dict[str, Any]]:
    """Every measured decode case that fits its instance, with the judge's prediction beside it."""
    params = params or ServingParams()
    out = []
    instances: dict[tuple[str, str, int], Instance] = {}
    for r in _rows("aic_vllm_decode.csv"):
        key = (r["model"], r["gpu"], int(r["tp"]))
        if key not in instances:
            instances[key] = Instance(get_model(key[0]), get_gpu(key[1]), key[2], params)
        inst = instances[key]
        batch, context = int(r["batch"]), int(r["context"])
        if inst.kv_capacity_tokens() < batch * context:
            continue
        step = inst.decode_step(batch, float(batch * context))
        predicted = step["step_s"] - step.get("overhead_s", 0.0)
        measured = float(r["step_s"])
        out.append({"gpu": key[1], "model": key[0], "tp": key[2], "batch": batch, "context": context,
                    "measured_s": measured, "predicted_s": predicted, "ratio": predicted / measured,
                    "measured_allreduce_s": float(r["allreduce_s"]), "predicted_comm_s": step["comm_s"]})
    return out


def prefill_cases(params: ServingParams | None = None) -> list[dict[str, Any]]:
    params = params or ServingParams()
    out = []
    for r in _rows("aic_vllm_prefill.csv"):
        inst = Instance(get_model(r["model"]), get_gpu(r["gpu"]), int(r["tp"]), params)
        batch, tokens = int(r["batch"]), int(r["prompt_tokens"])
        if inst.kv_capacity_tokens() < batch * tokens:
            continue
        predicted = inst.prefill_batch([tokens] * batch)
        measured = float(r["prefill_s"])
        out.append({"gpu": r["gpu"], "model": r["model"], "tp": int(r["tp"]), "batch": batch, "prompt_tokens": tokens,
                    "measured_s": measured, "predicted_s": predicted, "ratio": predicted / measured})
    return out


def _rms_log(cases: list[dict[str, Any]]) -> float:
    return math.sqrt(statistics.fmean(math.log(c["ratio"]) ** 2 for c in cases))


def fastest_tp_agreement(cases: list[dict[str, Any]], tail: bool) -> dict[str, tuple[int, int]]:
    """Per GPU: (cases where the predicted fastest TP is the measured one, cases), over the
    (model, batch, context) points where at least two TPs fit; ``tail`` keeps batch <= 8 only."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for c in cases:
        if not tail or c["batch"] <= TAIL_BATCH:
            groups[(c["gpu"], c["model"], c["batch"], c["context"])].append(c)
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (gpu, *_), group in groups.items():
        if len(group) < 2:
            continue
        best_pred = min(group, key=lambda c: c["predicted_s"])["tp"]
        best_meas = min(group, key=lambda c: c["measured_s"])["tp"]
        out[gpu][0] += best_pred == best_meas
        out[gpu][1] += 1
    return {g: (a, n) for g, (a, n) in out.items()}


def summarise(decode: list[dict[str, Any]], prefill: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-GPU and per-(GPU, TP) figures, each beside its target."""
    by_gpu: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_gpu_tp: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for c in decode:
        by_gpu[c["gpu"]].append(c)
        by_gpu_tp[(c["gpu"], c["tp"])].append(c)
    tail = fastest_tp_agreement(decode, tail=True)
    every = fastest_tp_agreement(decode, tail=False)
    pre_by_gpu: dict[str, list[float]] = defaultdict(list)
    for c in prefill:
        pre_by_gpu[c["gpu"]].append(c["ratio"])
    gpus = []
    for gpu, cases in sorted(by_gpu.items()):
        rms = _rms_log(cases)
        agree_tail, n_tail = tail.get(gpu, (0, 0))
        agree, n = every.get(gpu, (0, 0))
        pre = statistics.median(pre_by_gpu[gpu]) if pre_by_gpu[gpu] else None
        gpus.append({"gpu": gpu, "cases": len(cases), "median_ratio": statistics.median(c["ratio"] for c in cases), "rms_log_error": rms,
                     "rms_target": RMS_TARGET.get(gpu), "rms_met": rms <= RMS_TARGET.get(gpu, 0.0),
                     "fastest_tp_agreement": agree / n if n else None, "fastest_tp_tail_agreement": agree_tail / n_tail if n_tail else None,
                     "fastest_tp_cases": n, "fastest_tp_tail_cases": n_tail,
                     "fastest_tp_met": bool(n and n_tail and agree / n >= FASTEST_TP_TARGET and agree_tail / n_tail >= FASTEST_TP_TARGET),
                     "prefill_median_ratio": pre, "prefill_met": pre is not None and PREFILL_BAND[0] <= pre <= PREFILL_BAND[1]})
    per_tp = []
    for (gpu, tp), cases in sorted(by_gpu_tp.items()):
        comm = [c["predicted_comm_s"] / c["measured_allreduce_s"] for c in cases if c["measured_allreduce_s"] > 0]
        per_tp.append({"gpu": gpu, "tp": tp, "cases": len(cases), "median_ratio": statistics.median(c["ratio"] for c in cases),
                       "rms_log_error": _rms_log(cases), "worst_ratio": max((c["ratio"] for c in cases), key=lambda x: abs(math.log(x))),
                       "allreduce_median_ratio": statistics.median(comm) if comm else None})
    return {"gpus": gpus, "per_tp": per_tp, "decode_cases": len(decode), "prefill_cases": len(prefill)}


def _markdown(summary: dict[str, Any], command: str) -> str:
    def f(x: Any, fmt: str = ".2f") -> str:
        return "-" if x is None else format(x, fmt)

    lines = [f"# Fidelity of the judge\n\nMade by `{command}`. Measured: AIConfigurator's vLLM database "
             "(`costmodels/data/measured/`, see `benchmarks/fidelity/report.py`). Ratio = predicted / measured.\n",
             "## Decode kernels and prefill, per GPU\n",
             "| GPU | cases | median ratio | RMS log error (target) | fastest TP agrees (tail, batch <= 8) | prefill median ratio (target 0.8-1.2) |",
             "|---|---:|---:|---:|---:|---:|"]
    for g in summary["gpus"]:
        lines.append(f"| {g['gpu']} | {g['cases']} | {f(g['median_ratio'])} | {f(g['rms_log_error'], '.3f')} ({f(g['rms_target'])}) "
                     f"{'met' if g['rms_met'] else 'not met'} | {f(g['fastest_tp_agreement'], '.0%')} ({f(g['fastest_tp_tail_agreement'], '.0%')}) "
                     f"| {f(g['prefill_median_ratio'])} {'met' if g['prefill_met'] else 'not met'} |")
    lines += ["\n## Decode kernels per GPU and TP\n", "| GPU | TP | cases | median ratio | RMS log error | worst ratio | all-reduce median ratio |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for r in summary["per_tp"]:
        lines.append(f"| {r['gpu']} | {r['tp']} | {r['cases']} | {f(r['median_ratio'])} | {f(r['rms_log_error'], '.3f')} | {f(r['worst_ratio'])} "
                     f"| {f(r['allreduce_median_ratio'])} |")
    return "\n".join(lines) + "\n"


def _plot(decode: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 6))
    for gpu in sorted({c["gpu"] for c in decode}):
        pts = [c for c in decode if c["gpu"] == gpu]
        ax.scatter([c["measured_s"] * 1e3 for c in pts], [c["predicted_s"] * 1e3 for c in pts], s=6, alpha=0.5, label=gpu)
    lo = min(min(c["measured_s"], c["predicted_s"]) for c in decode) * 1e3
    hi = max(max(c["measured_s"], c["predicted_s"]) for c in decode) * 1e3
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="measured decode step kernels, ms (AIConfigurator, vLLM)",
           ylabel="rlplan's decode step without engine overhead, ms", title="Decode kernels: predicted vs measured")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(out: Path, command: str = "python -m benchmarks.fidelity --out benchmarks/results/fidelity") -> dict[str, Any]:
    """Every case to ``decode.csv`` / ``prefill.csv``, the summary to ``summary.json`` and
    ``README.md``, the scatter to ``decode.png``; returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    decode, prefill = decode_cases(), prefill_cases()
    for name, rows in (("decode.csv", decode), ("prefill.csv", prefill)):
        with (out / name).open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows({k: (round(v, 9) if isinstance(v, float) else v) for k, v in r.items()} for r in rows)
    summary = summarise(decode, prefill)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "README.md").write_text(_markdown(summary, command))
    _plot(decode, out / "decode.png")
    return summary
