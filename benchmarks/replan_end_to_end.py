"""OrchestrRL end to end on the generation simulator (OrchestrRL §6): generation steps
with drifting, heavy-tailed lengths under veRL-TO (TP2, verl's chunked dispatch), the oracle
static TP, veRL-LO (TP 8), +proactive planning, +reactive balancing and both, plus the ARIMA
forecast error.

    python -m benchmarks.replan_end_to_end --out benchmarks/results/replan

Settings (paper §6.1-6.2): Qwen2.5-14B on 16 generation GPUs at 15k and 25k max length,
Qwen2.5-32B on 24 generation GPUs; 64 prompts x 16 responses per step, group-aware synthetic
lengths drifting 5%/step (``TraceParams(drift=0.05)``); steps 12-15 are measured, steps 0-11 are
the forecast's history. Throughput = samples per second of generation (the paper's end-to-end
figure also contains the one-step-asynchronous training, which overlaps generation and is the
same for every scheme). Every scheme dispatches as verl does (contiguous chunks of the batch,
a prompt's responses on one instance; ``heuristics.replan.online``). veRL-TO is the paper's:
static TP2 (its case study: eight TP=2 instances); the oracle static TP is the best static TP on
the measured steps themselves, chunked and (kinder) round-robin. OrchestrRL and its ablations
start from TP2 like the paper's, once more from the oracle TP, and once dispatching round-robin
(OrchestrRL places its own requests, so it need not inherit verl's chunks). Writes
``end_to_end.csv/json``, ``forecast.json`` and the remaining-
requests curves of one step (Fig. 11) with the reconfiguration marked.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.publish import command_line, parse_out_dir, save_figure, write_csv
from costmodels.generation.request_traces import TraceParams, synthetic_trace
from costmodels.generation.requests import Request
from heuristics.replan import online
from heuristics.replan.forecast import forecast_quantiles, lengths_from_quantiles, relative_error

SETTINGS = [("Qwen2.5-14B", 2, 15360), ("Qwen2.5-14B", 2, 25600), ("Qwen2.5-32B", 3, 15360)]
HISTORY, MEASURED = 12, 4
PROMPTS, RESPONSES = 64, 16
PAPER = {"Qwen2.5-14B/15360": 1.31, "Qwen2.5-14B/25600": 1.42, "Qwen2.5-32B/15360": 1.32}
#: OrchestrRL §6.2.1's ablation over veRL-TO: proactive alone 1.24 / 1.19 and reactive alone
#: 1.18 / 1.14 on the 14B settings (no 32B ablation reported)
#: times a single forced switch is tried at (s into the step)
SWITCH_TIMES = (5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0)
#: planner looks measured (``heuristics.replan.policies.ProactivePlanner``): the fixed period
#: (the default) against event-driven looks and other acceptance margins
EVENT_VARIANTS = {
    "every 30 s (default)": {},
    "every 15 s": {"period": 15.0},
    "+ forecast (first tick)": {"events": ("forecast",)},
    "+ progress (every 10% done)": {"events": ("progress",)},
    "+ KV pressure": {"events": ("kv",)},
    "+ decode-rate drop": {"events": ("rate",)},
    "+ all four events": {"events": ("forecast", "progress", "kv", "rate")},
    "margin 5%": {"epsilon_rel": 0.05},
    "margin 20%": {"epsilon_rel": 0.2},
}
PAPER_ROWS = {
    "OrchestrRL": PAPER,
    "+proactive": {"Qwen2.5-14B/15360": 1.24, "Qwen2.5-14B/25600": 1.19},
    "+reactive": {"Qwen2.5-14B/15360": 1.18, "Qwen2.5-14B/25600": 1.14},
}


def step_requests(step: int, max_len: int, seed: int = 0) -> list[Request]:
    return synthetic_trace(
        PROMPTS, RESPONSES, max_len, seed=seed, step=step, params=TraceParams(drift=0.05)
    )


def _policy_step(
    model: str,
    nodes: int,
    steps: list,
    forecasts: dict,
    tps: list[int],
    s: int,
    pro: bool,
    rea: bool,
    start: int,
    **kw: Any,
) -> tuple:
    """Step ``s`` of a setting under the proactive planner and/or the balancer from TP ``start``."""
    return online.policy_run(
        model, "H800", nodes, 8, start, steps[s], forecasts[s], pro, rea, tps, **kw
    )


def run(out_dir: Path) -> dict:
    """Every setting (module doc): the schemes' throughput, the forced-switch timing, the
    planner's event variants and the forecast error; the remaining-requests curves of each
    setting's first measured step."""
    result: dict[str, Any] = {"rows": [], "curves": {}, "forecast": [], "timing": [], "events": []}
    for model, nodes, max_len in SETTINGS:
        _Setting(model, nodes, max_len).run(result)
    return result


class _Setting:
    """One setting's steps, forecasts and static baselines, shared by its experiments."""

    def __init__(self, model: str, nodes: int, max_len: int) -> None:
        from costmodels.catalog import get_model
        from costmodels.decode import feasible_tps

        self.model, self.nodes = model, nodes
        self.key = f"{model}/{max_len}"
        self.tps = feasible_tps(get_model(model), 8, 8)
        self.steps = [step_requests(s, max_len) for s in range(HISTORY + MEASURED)]
        self.lengths = [np.array([r.output for r in st]) for st in self.steps]
        self.measured = range(HISTORY, HISTORY + MEASURED)
        # one ARIMA forecast per measured step, from the steps before it (every scheme plans on it)
        self.forecasts = {
            s: lengths_from_quantiles(
                forecast_quantiles(self.lengths[s - HISTORY : s]), 4096, max_len
            )
            for s in self.measured
        }
        # static baselines, each over the measured steps: veRL-TO as the paper ran it (TP2, its
        # case study's eight TP=2 instances) with verl's chunked dispatch; the oracle static TP
        # (the best total on these very steps) chunked and, kinder, round-robin; veRL-LO (TP8)
        self.small = min(t for t in self.tps if t >= 2)
        self.step_run = functools.partial(
            _policy_step, model, nodes, self.steps, self.forecasts, self.tps
        )
        self.detail: dict[str, list] = {}

    def run(self, result: dict[str, Any]) -> None:
        """The setting's experiments in order, their rows appended to ``result``."""
        self._static_schemes()
        self._policy_schemes(result["curves"])
        result["rows"] += self._throughput_rows()
        result["timing"] += self._timing_rows()
        result["events"] += self._event_rows()
        result["forecast"] += self._forecast_rows()

    def _static_schemes(self) -> None:
        """Every static TP under both dispatches; veRL-TO, the two oracles and veRL-LO."""
        model, nodes, tps, steps = self.model, self.nodes, self.tps, self.steps
        static = {
            (tp, d): [
                online.static_run(model, "H800", nodes * 8, tp, steps[s], dispatch=d)
                for s in self.measured
            ]
            for tp in tps
            for d in online.DISPATCH
        }
        total = {k: sum(r.makespan_s for r in v) for k, v in static.items()}
        best_tp, best_rr = (
            min(tps, key=lambda tp, d=d: total[(tp, d)]) for d in ("chunked", "round-robin")
        )
        small = self.small
        self.schemes = {
            f"veRL-TO (TP{small}, chunked)": [r.makespan_s for r in static[(small, "chunked")]],
            f"oracle static TP{best_tp} (chunked)": [
                r.makespan_s for r in static[(best_tp, "chunked")]
            ],
            f"oracle static TP{best_rr} (round-robin)": [
                r.makespan_s for r in static[(best_rr, "round-robin")]
            ],
            f"veRL-LO (TP{max(tps)}, chunked)": [
                r.makespan_s for r in static[(max(tps), "chunked")]
            ],
        }
        self.static, self.best_tp = static, best_tp
        self.baseline, self.oracle_name = next(iter(self.schemes)), list(self.schemes)[1]

    def _policy_schemes(self, curves: dict[str, Any]) -> None:
        """The proactive planner and the balancer alone and together (from TP2, from the oracle
        TP, dispatching round-robin); the curves of the first measured step."""
        key, small, best_tp = self.key, self.small, self.best_tp
        for name, pro, rea, start, dispatch in (
            ("+proactive", True, False, small, "chunked"),
            ("+reactive", False, True, small, "chunked"),
            ("OrchestrRL", True, True, small, "chunked"),
            (f"OrchestrRL from TP{best_tp}", True, True, best_tp, "chunked"),
            ("OrchestrRL, round-robin dispatch", True, True, small, "round-robin"),
        ):
            spans, logs = [], []
            for s in self.measured:
                res, log = self.step_run(s, pro, rea, start, dispatch=dispatch)
                spans.append(res.makespan_s)
                logs.append(log)
                if s == HISTORY:
                    curves.setdefault(key, {})[name] = (res.remaining_curve(), log)
            self.schemes[name] = spans
            self.detail[name] = logs
        for label, (tp, d) in (
            (self.baseline, (small, "chunked")),
            (self.oracle_name, (best_tp, "chunked")),
        ):
            curves.setdefault(key, {})[label] = (self.static[(tp, d)][0].remaining_curve(), {})

    def _throughput_rows(self) -> list[dict[str, Any]]:
        """Each scheme's samples per second against veRL-TO and the oracle static TP."""
        schemes, detail = self.schemes, self.detail
        n = PROMPTS * RESPONSES * MEASURED
        base = n / sum(schemes[self.baseline])
        base_oracle = n / sum(schemes[self.oracle_name])
        rows = []
        for name, spans in schemes.items():
            thr = n / sum(spans)
            rows.append(
                {
                    "setting": self.key,
                    "gpus": self.nodes * 8,
                    "scheme": name,
                    "oracle_tp": self.best_tp,
                    "samples_per_s": thr,
                    "vs_verl_to": thr / base,
                    "vs_oracle_static": thr / base_oracle,
                    "step_makespans_s": spans,
                    "reconfigurations": sum(
                        sum(p["applied"] for p in lg["plans"]) for lg in detail.get(name, [])
                    ),
                    "migrations": sum(lg["migrations"] for lg in detail.get(name, [])),
                    "paper_vs_verl_to": PAPER_ROWS.get(name, {}).get(self.key),
                }
            )
        return rows

    def _timing_rows(self) -> list[dict[str, Any]]:
        """When to plan: the best single switch in hindsight per step (the planner forced to
        look once, at t, and to apply any predicted gain), against the periodic planner's
        makespan."""
        schemes = self.schemes
        rows = []
        for s in self.measured:
            forced = {}
            for t in SWITCH_TIMES:
                res, _ = self.step_run(
                    s,
                    True,
                    False,
                    self.small,
                    planner_options={"first_at": t, "epsilon": 0.0, "epsilon_rel": 0.0},
                )
                forced[t] = res.makespan_s
            periodic = schemes["+proactive"][s - HISTORY]
            best = min(forced, key=forced.get)
            first = next(
                (
                    p["time"]
                    for p in self.detail["+proactive"][s - HISTORY]["plans"]
                    if p["applied"]
                ),
                None,
            )
            rows.append(
                {
                    "setting": self.key,
                    "step": s,
                    "static_s": schemes[self.baseline][s - HISTORY],
                    **{f"switch_at_{t:g}s": v for t, v in forced.items()},
                    "hindsight_best_s": best,
                    "hindsight_best_makespan_s": forced[best],
                    "planner_first_switch_s": first,
                    "planner_makespan_s": periodic,
                    "planner_vs_hindsight": periodic / forced[best],
                }
            )
        return rows

    def _event_rows(self) -> list[dict[str, Any]]:
        """Which looks pay: OrchestrRL under each event set and acceptance margin, vs the
        oracle."""
        rows = []
        for label, opts in EVENT_VARIANTS.items():
            spans = [
                self.step_run(s, True, True, self.small, planner_options=opts)[0].makespan_s
                for s in self.measured
            ]
            rows.append(
                {
                    "setting": self.key,
                    "planner": label,
                    "vs_oracle_static": sum(self.schemes[self.oracle_name]) / sum(spans),
                }
            )
        return rows

    def _forecast_rows(self) -> list[dict[str, Any]]:
        """Forecast error: ARIMA vs last step, over the measured steps."""
        lengths = self.lengths
        return [
            {
                "setting": self.key,
                "step": s,
                "arima": relative_error(self.forecasts[s], lengths[s]),
                "last_step": relative_error(lengths[s - 1], lengths[s]),
            }
            for s in self.measured
        ]


def write(result: dict, out_dir: Path, command: str) -> None:
    """``end_to_end.csv/json/md``, ``switch_timing.csv``, ``planner_events.csv`` and the
    remaining-requests figure."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = result["rows"]
    keys = [
        "setting",
        "gpus",
        "scheme",
        "oracle_tp",
        "samples_per_s",
        "vs_verl_to",
        "vs_oracle_static",
        "reconfigurations",
        "migrations",
        "paper_vs_verl_to",
    ]
    write_csv(out_dir / "end_to_end.csv", [{k: r[k] for k in keys} for r in rows])
    fc = result["forecast"]
    summary = {
        m: {k: float(np.mean([r[m][k] for r in fc])) for k in ("histogram", "work")}
        for m in ("arima", "last_step")
    }
    timing, events = result["timing"], result["events"]
    write_csv(out_dir / "switch_timing.csv", timing)
    write_csv(out_dir / "planner_events.csv", events)
    (out_dir / "end_to_end.json").write_text(
        json.dumps(
            {
                "command": command,
                "rows": rows,
                "forecast": fc,
                "forecast_mean": summary,
                "switch_timing": timing,
                "planner_events": events,
            },
            indent=2,
        )
        + "\n"
    )
    (out_dir / "end_to_end.md").write_text(
        "# OrchestrRL end to end on the generation simulator\n\nCommand: `"
        + command
        + "`\n\n"
        + (__doc__ or "").split("\n\n", 2)[2]
        + "\n\n"
        + "\n".join(_scheme_table(rows))
        + "\n\nForecast error (mean over measured steps and settings): "
        + ", ".join(
            f"{m}: histogram {v['histogram']:.1%}, work {v['work']:.1%}" for m, v in summary.items()
        )
        + "\n\n## When to re-plan\n\nA single switch forced at t (the planner looks once and "
        "applies any predicted gain; t in "
        + ", ".join(f"{t:g}" for t in SWITCH_TIMES)
        + " s), the best t in hindsight per step, against the periodic planner "
        "(+proactive, every 30 s, 10% + 5 s margin). Per-t makespans: `switch_timing.csv`.\n\n"
        + "\n".join(_timing_table(timing))
        + "\n\nOrchestrRL's throughput over the oracle static TP (chunked) when the planner also "
        "looks on events, or accepts at another margin (`planner_events.csv`):\n\n"
        + "\n".join(_event_table(events))
        + "\n\n![remaining requests](remaining_requests.png)\n"
    )
    _plot_curves(result["curves"], out_dir / "remaining_requests.png")


def _timing_table(timing: list[dict[str, Any]]) -> list[str]:
    """Per step: the static makespan, the best forced switch and the periodic planner's."""
    timing_table = [
        "| setting | step | static TP2 s | best single switch in hindsight | periodic planner: "
        "first switch, makespan | planner / hindsight |",
        "|---|---|---|---|---|---|",
    ]
    for r in timing:
        first = (
            "none" if r["planner_first_switch_s"] is None else f"{r['planner_first_switch_s']:g} s"
        )
        timing_table.append(
            f"| {r['setting']} | {r['step']} | {r['static_s']:.1f} | "
            f"at {r['hindsight_best_s']:g} s: {r['hindsight_best_makespan_s']:.1f} s | "
            f"{first}, {r['planner_makespan_s']:.1f} s | "
            f"{r['planner_vs_hindsight']:.3f} |"
        )
    return timing_table


def _event_table(events: list[dict[str, Any]]) -> list[str]:
    """Per planner variant (rows) and setting (columns): throughput over the oracle static TP."""
    settings_seen = list(dict.fromkeys(r["setting"] for r in events))
    event_table = [
        "| planner (OrchestrRL from TP2) | " + " | ".join(settings_seen) + " |",
        "|---|" + "---|" * len(settings_seen),
    ]
    for label in dict.fromkeys(r["planner"] for r in events):
        vals = {r["setting"]: r["vs_oracle_static"] for r in events if r["planner"] == label}
        event_table.append(
            f"| {label} | " + " | ".join(f"{vals[k]:.3f}" for k in settings_seen) + " |"
        )
    return event_table


def _scheme_table(rows: list[dict[str, Any]]) -> list[str]:
    """Per setting and scheme: throughput, its ratios, re-plans, migrations and the paper's."""
    table = [
        "| setting | scheme | samples/s | vs veRL-TO (TP2, chunked) | vs oracle static TP "
        "(chunked) | re-plans applied | migrations | paper vs veRL-TO |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        paper = "" if r["paper_vs_verl_to"] is None else f"{r['paper_vs_verl_to']}x"
        table.append(
            f"| {r['setting']} | {r['scheme']} | {r['samples_per_s']:.2f} | {r['vs_verl_to']:.3f} "
            f"| {r['vs_oracle_static']:.3f} | {r['reconfigurations']} | {r['migrations']} "
            f"| {paper} |"
        )
    return table


def _plot_curves(curves: dict[str, Any], path: Path) -> None:
    """Remaining requests over one step per setting and scheme, applied re-plans dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = list(curves)
    fig, axes = plt.subplots(1, len(settings), figsize=(5 * len(settings), 3.6))
    for ax, key in zip(np.atleast_1d(axes), settings, strict=True):
        for name, ((t, left), log) in curves[key].items():
            ax.plot(t, left, label=name, drawstyle="steps-post")
            for p in log.get("plans", []) if log else []:
                if p["applied"] and name.startswith("OrchestrRL"):
                    ax.axvline(p["time"], color=ax.lines[-1].get_color(), ls=":", lw=1)
        ax.set_title(key)
        ax.set_xlabel("time in step (s); dotted: re-plans applied")
        ax.set_ylabel("remaining requests")
        ax.legend(fontsize=7)
    save_figure(fig, path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    out = parse_out_dir(__doc__, "bench-out/replan", argv)
    t0 = time.perf_counter()
    result = run(out)
    write(
        result,
        out,
        command_line("benchmarks.replan_end_to_end", argv),
    )
    for r in result["rows"]:
        print(
            f"{r['setting']:22s} {r['scheme']:20s} {r['samples_per_s']:.2f} samples/s  "
            f"x{r['vs_verl_to']:.3f} vs veRL-TO  x{r['vs_oracle_static']:.3f} vs oracle  reconf "
            f"{r['reconfigurations']} mig {r['migrations']}"
        )
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
