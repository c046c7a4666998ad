"""RollPacker's measurements on rlplan's simulator (RollPacker §6): the Table 2 breakdown
(veRL, + tail batching, + reward scheduler, + parallelism planner, + stream trainer) on the three
Table 2 jobs beside the paper's figures; the η sensitivity of Fig. 11 (rollout time per period,
one factor at a time); fixed TP vs the §4.2 rule (as stated and with the latency guard) vs the
artifact's static second TP for long rounds vs the best TP per round type; the stream trainer's
Table 3 (no scaling, fixed 20/30/40% triggers, adaptive; again with training at 3x and 8x the
efficiency, ``table3_training``) and Table 4 (streaming vs fetch-once capped at 20-50%); the
adaptive sandbox timeout against the fixed 30 s on a code-only job. Every figure is a mean over
``--seeds`` epochs (each its own prompts and draws).

    python -m benchmarks.rollout_breakdown --out benchmarks/results/rollout
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.instances import rollout_problem
from benchmarks.publish import command_line, save_figure, write_csv, write_json
from costmodels.rl_training import FITTED_MFU
from costmodels.rollout.judge import evaluate_rollout
from costmodels.rollout.plan import RolloutPlan
from costmodels.rollout.presets import TABLE2, table2_job
from costmodels.rollout.replay import rollout_tps
from costmodels.rollout.space import ETAS, paper_plan, verl_plan

PAPER_TABLE2 = {
    "rollout-7b-8k": (1.30, 2.01, 2.01, 2.03),
    "rollout-14b-16k": (1.48, 1.99, 2.02, 2.22),
    "rollout-32b-32k": (2.21, 2.48, 2.52, 2.56),
}
PAPER_TABLE3 = {
    "off": 124.2,
    "fixed-20%": 122.7,
    "fixed-30%": 118.2,
    "fixed-40%": 119.8,
    "adaptive": 115.2,
}
#: Table 3's stream-trainer variants: no scaling, the fixed triggers, the adaptive trigger
TABLE3_TRIGGERS: dict[str, dict[str, Any]] = {
    "off": {},
    "fixed-20%": {"scale": "fixed", "scale_at": 0.2},
    "fixed-30%": {"scale": "fixed", "scale_at": 0.3},
    "fixed-40%": {"scale": "fixed", "scale_at": 0.4},
    "adaptive": {"scale": "adaptive"},
}
PAPER_TABLE4 = {
    "stream": 115.2,
    "once-20%": 128.6,
    "once-30%": 129.5,
    "once-40%": 133.8,
    "once-50%": 132.0,
}


def _plan(base: RolloutPlan, **kw: Any) -> RolloutPlan:
    return RolloutPlan(**{**base.model_dump(), **kw})


def with_reward(wl: Any, **kw: Any) -> RolloutPlan:
    """Tail batching at η = 1.25 with the reward scheduler, the rest as given."""
    return _plan(
        verl_plan(wl),
        eta_prompts=1.25,
        eta_responses=1.25,
        reward="async",
        timeout="adaptive",
        **kw,
    )


def table2_ladder(wl: Any) -> dict[str, RolloutPlan]:
    verl = verl_plan(wl)
    tb = _plan(verl, eta_prompts=1.25, eta_responses=1.25)
    reward = _plan(tb, reward="async", timeout="adaptive", timeout_lambda=1.5)
    par = _plan(reward, tp_rule=paper_plan(wl).tp_rule)
    return {
        "veRL": verl,
        "+ tail batching": tb,
        "+ reward": reward,
        "+ parallelism": par,
        "+ trainer": paper_plan(wl),
    }


def mean_over(name: str, seeds: range, plan_of: Any, key: str | None = None, **job: Any) -> float:
    vals = []
    for seed in seeds:
        pr = rollout_problem(name, seed=seed, **job)
        obj, b = evaluate_rollout(pr, plan_of(pr.workload))
        vals.append(obj if key is None else key(b))
    return float(np.mean(vals))


def long_step(name: str, seeds: range, kw: dict[str, Any], **job: Any) -> float:
    """Mean long-round step time (Tables 3 and 4's measure) of tail batching with the reward
    scheduler and ``kw`` set (``job``: :func:`rollout_problem`'s options)."""
    return mean_over(
        name,
        seeds,
        lambda wl: with_reward(wl, **kw),
        key=lambda b: b["step_s_by_kind"]["long"],
        **job,
    )


def period_rollout(b: dict[str, Any]) -> float:
    """Mean rollout time per step (rollout only, Fig. 11's measure)."""
    return float(np.mean([s["rollout_s"] for s in b["steps"]]))


def run(seeds: range) -> dict[str, Any]:
    """Every experiment of the module doc, each a list of rows; the Table 2 jobs first (the
    breakdown, Fig. 11's η, the TP rules), then Tables 3 and 4 and the sandbox timeout on the
    7B job."""
    out: dict[str, Any] = {
        "table2": [],
        "eta": [],
        "tp": [],
        "table3": [],
        "table3_training": [],
        "table4": [],
        "timeout": [],
    }
    for name in TABLE2:
        wl0 = rollout_problem(name).workload
        out["table2"] += _table2_rows(name, seeds, wl0)
        out["eta"] += _eta_rows(name, seeds)
        out["tp"].append(_tp_row(name, seeds, wl0))
    # Tables 3 and 4 (7B/8k, §6.6): stream trainer variants on top of the reward scheduler
    name = "rollout-7b-8k"
    out["table3"], out["table3_training"] = _table3_rows(name, seeds)
    out["table4"] = _table4_rows(name, seeds)
    out["timeout"] = _timeout_rows(name, seeds)
    return out


def _table2_rows(name: str, seeds: range, wl0: Any) -> list[dict[str, Any]]:
    """Table 2's ladder on job ``name``: each step's time and speedup over veRL."""
    ladder = table2_ladder(wl0)
    times = {label: mean_over(name, seeds, lambda wl, p=plan: p) for label, plan in ladder.items()}
    base = times["veRL"]
    paper = dict(
        zip(
            ["+ tail batching", "+ reward", "+ parallelism", "+ trainer"],
            PAPER_TABLE2[name],
            strict=True,
        )
    )
    return [
        {
            "job": name,
            "step": label,
            "step_s": t,
            "speedup": base / t,
            "paper_speedup": paper.get(label, 1.0),
        }
        for label, t in times.items()
    ]


def _eta_rows(name: str, seeds: range) -> list[dict[str, Any]]:
    """Fig. 11: one factor at a time, rollout time per step normalised to no tail batching."""
    rows = []
    plain = mean_over(name, seeds, lambda wl: verl_plan(wl), key=period_rollout)
    for which in ("responses", "prompts", "both"):
        for eta in ETAS[1:]:
            kw = (
                {"eta_responses": eta}
                if which == "responses"
                else {"eta_prompts": eta}
                if which == "prompts"
                else {"eta_prompts": eta, "eta_responses": eta}
            )
            r = mean_over(
                name, seeds, lambda wl, kw=kw: _plan(verl_plan(wl), **kw), key=period_rollout
            )
            rows.append(
                {
                    "job": name,
                    "vary": which,
                    "eta": eta,
                    "rollout_s": r,
                    "normalised": r / plain,
                }
            )
    return rows


def _tp_row(name: str, seeds: range, wl0: Any) -> dict[str, Any]:
    """The parallelism planner (§6.4): fixed TP (same for both round kinds), the §4.2 rule as
    stated and guarded, the artifact's static second TP, the best TP per round kind."""
    allowed = rollout_tps(wl0)
    fixed = {
        tp: mean_over(name, seeds, lambda wl, tp=tp: with_reward(wl, short_tp=tp, long_tp=tp))
        for tp in allowed
    }
    per_kind = {
        (s, lg): mean_over(
            name, seeds, lambda wl, s=s, lg=lg: with_reward(wl, short_tp=s, long_tp=lg)
        )
        for s in allowed
        for lg in allowed
    }
    rule, guarded = (
        mean_over(
            name,
            seeds,
            lambda wl, r=r: with_reward(wl, tp_rule=r, short_tp=wl.tp, long_tp=wl.tp),
        )
        for r in ("adaptive", "guarded")
    )
    # the artifact's mechanism: a static second TP for long rounds (multi_infer_tp), set
    # to the next TP up, the paper's direction for long rounds
    up = [tp for tp in allowed if tp > wl0.tp]
    second = up[0] if up else wl0.tp
    best = min(per_kind, key=per_kind.get)
    return {
        "job": name,
        "configured_tp": wl0.tp,
        "fixed_configured_s": fixed[wl0.tp],
        "best_fixed_tp": min(fixed, key=fixed.get),
        "best_fixed_s": min(fixed.values()),
        "paper_rule_s": rule,
        "guarded_rule_s": guarded,
        "artifact_second_tp": second,
        "artifact_second_tp_s": per_kind[(wl0.tp, second)],
        "best_per_kind": f"{best[0]}/{best[1]}",
        "best_per_kind_s": per_kind[best],
        **{f"fixed_tp{tp}_s": v for tp, v in fixed.items()},
    }


def _table3_rows(name: str, seeds: range) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Table 3: each scale trigger's step and long step; then the long steps again with training
    at 3x and 8x the efficiency (its compute 3x and 8x cheaper; at most 1: FITTED_MFU x 8 < 1)."""
    table3 = []
    for label, kw in TABLE3_TRIGGERS.items():
        all_steps = mean_over(name, seeds, lambda wl, kw=kw: with_reward(wl, **kw))
        long_steps = long_step(name, seeds, kw)
        table3.append(
            {
                "trigger": label,
                "step_s": all_steps,
                "long_step_s": long_steps,
                "paper_long_step_s": PAPER_TABLE3[label],
            }
        )
    # the fixed triggers' order is a trade between overlap (an early trigger frees GPUs sooner)
    # and starving freed GPUs (fewer prompts are done to train on): it turns on training's size
    # against rollout's, so the same rows are measured with training made 3x and 8x cheaper
    training = [
        {"training_cost": "1/1", "trigger": r["trigger"], "long_step_s": r["long_step_s"]}
        for r in table3
    ]
    for cheaper in (3, 8):
        for label, kw in TABLE3_TRIGGERS.items():
            training.append(
                {
                    "training_cost": f"1/{cheaper}",
                    "trigger": label,
                    "long_step_s": long_step(name, seeds, kw, training_mfu=FITTED_MFU * cheaper),
                }
            )
    return table3, training


def _table4_rows(name: str, seeds: range) -> list[dict[str, Any]]:
    """Table 4: streaming against fetch-once capped at 20-50%."""
    variants4 = {
        "stream": {"scale": "adaptive"},
        **{
            f"once-{c:.0%}": {"scale": "adaptive", "fetch": "once", "fetch_cap": c}
            for c in (0.2, 0.3, 0.4, 0.5)
        },
    }
    rows = []
    for label, kw in variants4.items():
        long_steps = long_step(name, seeds, kw)
        rows.append(
            {"fetch": label, "long_step_s": long_steps, "paper_step_s": PAPER_TABLE4[label]}
        )
    return rows


def _timeout_rows(name: str, seeds: range) -> list[dict[str, Any]]:
    """§4.3 / Fig. 13c: adaptive vs fixed sandbox timeout on a code-only 7B/8k job, async
    reward."""
    rows = []
    for lam in (None, 1.25, 1.5, 2.0):
        vals, rewards, cuts, timeouts = [], [], [], []
        for seed in seeds:
            job = table2_job(name, seed=seed)
            job["workload"]["reward"] = {"rule": 0, "sandbox": 1, "judge": 0}
            from planner.io import build_problem

            pr = build_problem("rollout", {"job": job})
            kw = (
                {"timeout": "fixed"}
                if lam is None
                else {"timeout": "adaptive", "timeout_lambda": lam}
            )
            obj, b = evaluate_rollout(
                pr,
                _plan(
                    verl_plan(pr.workload),
                    eta_prompts=1.25,
                    eta_responses=1.25,
                    reward="async",
                    **kw,
                ),
            )
            vals.append(obj)
            rewards.append(b["reward_s"])
            cuts.append(b["cut_finishing"])
            timeouts.append(b["timeouts"])
        rows.append(
            {
                "timeout": "fixed 30 s" if lam is None else f"adaptive λ={lam:g}",
                "step_s": float(np.mean(vals)),
                "exposed_reward_s": float(np.mean(rewards)),
                "timeouts": float(np.mean(timeouts)),
                "cut_finishing": float(np.mean(cuts)),
            }
        )
    return rows


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
    jobs = list(TABLE2)
    steps = ["+ tail batching", "+ reward", "+ parallelism", "+ trainer"]
    width = 0.2
    for i, step in enumerate(steps):
        ours = [
            next(r["speedup"] for r in results["table2"] if r["job"] == j and r["step"] == step)
            for j in jobs
        ]
        paper = [
            next(
                r["paper_speedup"] for r in results["table2"] if r["job"] == j and r["step"] == step
            )
            for j in jobs
        ]
        xs = np.arange(len(jobs)) + (i - 1.5) * width
        a.bar(xs, ours, width, label=f"{step} (rlplan)", color=plt.get_cmap("tab10")(i))
        a.scatter(
            xs, paper, marker="_", s=200, color="black", zorder=3, label="paper" if i == 0 else None
        )
    a.set_xticks(range(len(jobs)), [j.removeprefix("rollout-") for j in jobs])
    a.set_ylabel("speed-up over veRL (mean step time)")
    a.set_title("Table 2 breakdown (bars: rlplan, ticks: paper)")
    a.legend(fontsize=7)
    for which, style in (("responses", "o-"), ("prompts", "s--"), ("both", "^:")):
        for j, colour in zip(jobs, ("tab:blue", "tab:orange", "tab:green"), strict=True):
            rows = [r for r in results["eta"] if r["job"] == j and r["vary"] == which]
            b.plot(
                [1.0] + [r["eta"] for r in rows],
                [1.0] + [r["normalised"] for r in rows],
                style,
                color=colour,
                label=f"{j.removeprefix('rollout-')}, vary {which}",
                ms=4,
            )
    b.set_xlabel("η")
    b.set_ylabel("rollout time per step / no tail batching")
    b.set_title("Fig. 11: η sensitivity")
    b.legend(fontsize=6, ncol=3)
    save_figure(fig, path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench-out/rollout"))
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    results = run(range(args.seeds))
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(
        args.out / "breakdown.json",
        {"command": command_line("benchmarks.rollout_breakdown", argv), **results},
    )
    for key, rows in results.items():
        write_csv(args.out / f"{key}.csv", rows)
    plot(results, args.out / "breakdown.png")
    for key, rows in results.items():
        print(f"== {key}")
        for row in rows:
            print(
                "  "
                + ", ".join(
                    f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
                )
            )


if __name__ == "__main__":
    main()
