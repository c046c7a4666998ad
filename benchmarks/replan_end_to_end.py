"""OrchestrRL end to end on the generation simulator (OrchestrRL §6): generation steps
with drifting, heavy-tailed lengths under veRL-TO (best static TP by sweep), veRL-LO (TP 8),
+proactive planning, +reactive balancing and both, plus the ARIMA forecast error.

    python -m benchmarks.replan_end_to_end --out benchmarks/results/replan

Settings (paper §6.1-6.2): Qwen2.5-14B on 16 generation GPUs at 15k and 25k max length,
Qwen2.5-32B on 24 generation GPUs; 64 prompts x 16 responses per step, group-aware synthetic
lengths drifting 5%/step (``TraceParams(drift=0.05)``); steps 12-15 are measured, steps 0-11 are
the forecast's history. Throughput = samples per second of generation (the paper's end-to-end
figure also contains the one-step-asynchronous training, which overlaps generation and is the
same for every scheme). veRL-TO here is an oracle: the static TP with the best total on the
measured steps themselves; the paper's veRL-TO ran TP2 (its case study: eight TP=2 instances),
so the table also starts OrchestrRL from static TP2 and compares the two. Writes
``end_to_end.csv/json``, ``forecast.json`` and the remaining-
requests curves of one step (Fig. 11) with the reconfiguration marked.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.publish import write_csv
from costmodels.generation.request_traces import TraceParams, synthetic_trace
from costmodels.generation.requests import Request
from heuristics.replan import online
from heuristics.replan.forecast import forecast_quantiles, lengths_from_quantiles, relative_error

SETTINGS = [("Qwen2.5-14B", 2, 15360), ("Qwen2.5-14B", 2, 25600), ("Qwen2.5-32B", 3, 15360)]
HISTORY, MEASURED = 12, 4
PROMPTS, RESPONSES = 64, 16
PAPER = {"Qwen2.5-14B/15360": 1.31, "Qwen2.5-14B/25600": 1.42, "Qwen2.5-32B/15360": 1.32}


def step_requests(step: int, max_len: int, seed: int = 0) -> list[Request]:
    return synthetic_trace(
        PROMPTS, RESPONSES, max_len, seed=seed, step=step, params=TraceParams(drift=0.05)
    )


def run(out_dir: Path) -> dict:
    from costmodels.catalog import get_model
    from costmodels.decode import feasible_tps

    rows, curves, forecast_rows = [], {}, []
    for model, nodes, max_len in SETTINGS:
        key = f"{model}/{max_len}"
        tps = feasible_tps(get_model(model), 8, 8)
        steps = [step_requests(s, max_len) for s in range(HISTORY + MEASURED)]
        lengths = [np.array([r.output for r in st]) for st in steps]
        measured = range(HISTORY, HISTORY + MEASURED)
        # one ARIMA forecast per measured step, from the steps before it (every scheme plans on it)
        forecasts = {
            s: lengths_from_quantiles(forecast_quantiles(lengths[s - HISTORY : s]), 4096, max_len)
            for s in measured
        }
        # veRL-TO: the static TP with the best total over the measured steps; veRL-LO: TP 8
        static = {
            tp: [online.static_run(model, "H800", nodes * 8, tp, steps[s]) for s in measured]
            for tp in tps
        }
        best_tp = min(tps, key=lambda tp: sum(r.makespan_s for r in static[tp]))
        schemes = {
            "veRL-TO": [r.makespan_s for r in static[best_tp]],
            "veRL-LO": [r.makespan_s for r in static[max(tps)]],
        }
        detail: dict[str, list] = {}
        small = min(t for t in tps if t >= 2)
        schemes[f"static TP{small}"] = [r.makespan_s for r in static[small]]
        for name, pro, rea, start in (
            ("+proactive", True, False, best_tp),
            ("+reactive", False, True, best_tp),
            ("OrchestrRL", True, True, best_tp),
            (f"OrchestrRL from TP{small}", True, True, small),
        ):
            spans, logs = [], []
            for s in measured:
                res, log = online.policy_run(
                    model, "H800", nodes, 8, start, steps[s], forecasts[s], pro, rea, tps
                )
                spans.append(res.makespan_s)
                logs.append(log)
                if s == HISTORY:
                    curves.setdefault(key, {})[name] = (res.remaining_curve(), log)
            schemes[name] = spans
            detail[name] = logs
        curves.setdefault(key, {})["veRL-TO"] = (static[best_tp][0].remaining_curve(), {})
        curves[key]["veRL-LO"] = (static[max(tps)][0].remaining_curve(), {})
        curves[key][f"static TP{small}"] = (static[small][0].remaining_curve(), {})
        n = PROMPTS * RESPONSES * MEASURED
        base = n / sum(schemes["veRL-TO"])
        base_small = n / sum(schemes[f"static TP{small}"])
        for name, spans in schemes.items():
            thr = n / sum(spans)
            rows.append(
                {
                    "setting": key,
                    "gpus": nodes * 8,
                    "scheme": name,
                    "verl_to_tp": best_tp,
                    "samples_per_s": thr,
                    "vs_verl_to": thr / base,
                    "vs_static_tp2": thr / base_small,
                    "step_makespans_s": spans,
                    "reconfigurations": sum(
                        sum(p["applied"] for p in lg["plans"]) for lg in detail.get(name, [])
                    ),
                    "migrations": sum(lg["migrations"] for lg in detail.get(name, [])),
                    "paper_orchestrrl_vs_verl_to": PAPER.get(key)
                    if name.startswith("OrchestrRL")
                    else None,
                }
            )
        # forecast error: ARIMA vs last step, over the measured steps
        for s in measured:
            forecast_rows.append(
                {
                    "setting": key,
                    "step": s,
                    "arima": relative_error(forecasts[s], lengths[s]),
                    "last_step": relative_error(lengths[s - 1], lengths[s]),
                }
            )
    return {"rows": rows, "curves": curves, "forecast": forecast_rows}


def write(result: dict, out_dir: Path, command: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = result["rows"]
    keys = [
        "setting",
        "gpus",
        "scheme",
        "verl_to_tp",
        "samples_per_s",
        "vs_verl_to",
        "vs_static_tp2",
        "reconfigurations",
        "migrations",
        "paper_orchestrrl_vs_verl_to",
    ]
    write_csv(out_dir / "end_to_end.csv", [{k: r[k] for k in keys} for r in rows])
    fc = result["forecast"]
    summary = {
        m: {k: float(np.mean([r[m][k] for r in fc])) for k in ("histogram", "work")}
        for m in ("arima", "last_step")
    }
    (out_dir / "end_to_end.json").write_text(
        json.dumps(
            {"command": command, "rows": rows, "forecast": fc, "forecast_mean": summary}, indent=2
        )
        + "\n"
    )
    table = [
        "| setting | scheme | samples/s | vs veRL-TO (oracle static) | vs static TP2 | re-plans "
        "applied | migrations | paper |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        paper = (
            ""
            if r["paper_orchestrrl_vs_verl_to"] is None
            else f"{r['paper_orchestrrl_vs_verl_to']}x vs its veRL-TO"
        )
        table.append(
            f"| {r['setting']} | {r['scheme']} | {r['samples_per_s']:.2f} | {r['vs_verl_to']:.3f} "
            f"| {r['vs_static_tp2']:.3f} | {r['reconfigurations']} | {r['migrations']} | {paper} |"
        )
    (out_dir / "end_to_end.md").write_text(
        "# OrchestrRL end to end on the generation simulator\n\nCommand: `"
        + command
        + "`\n\n"
        + (__doc__ or "").split("\n\n", 2)[2]
        + "\n\n"
        + "\n".join(table)
        + "\n\nForecast error (mean over measured steps and settings): "
        + ", ".join(
            f"{m}: histogram {v['histogram']:.1%}, work {v['work']:.1%}" for m, v in summary.items()
        )
        + "\n\n![remaining requests](remaining_requests.png)\n"
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = list(result["curves"])
    fig, axes = plt.subplots(1, len(settings), figsize=(5 * len(settings), 3.6))
    for ax, key in zip(np.atleast_1d(axes), settings, strict=True):
        for name, ((t, left), log) in result["curves"][key].items():
            ax.plot(t, left, label=name, drawstyle="steps-post")
            for p in log.get("plans", []) if log else []:
                if p["applied"] and name.startswith("OrchestrRL"):
                    ax.axvline(p["time"], color=ax.lines[-1].get_color(), ls=":", lw=1)
        ax.set_title(key)
        ax.set_xlabel("time in step (s); dotted: re-plans applied")
        ax.set_ylabel("remaining requests")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "remaining_requests.png", dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench-out/replan"))
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    result = run(args.out)
    write(
        result,
        args.out,
        "python -m benchmarks.replan_end_to_end "
        + " ".join(sys.argv[1:] if argv is None else argv),
    )
    for r in result["rows"]:
        print(
            f"{r['setting']:22s} {r['scheme']:20s} {r['samples_per_s']:.2f} samples/s  "
            f"x{r['vs_verl_to']:.3f} vs veRL-TO  x{r['vs_static_tp2']:.3f} vs TP2  reconf "
            f"{r['reconfigurations']} mig {r['migrations']}"
        )
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
