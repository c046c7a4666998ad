"""Which placement decisions fully asynchronous training changes, and what planning it as
one-step-off costs (verl ``fully_async_policy``; ``docs/placement.md``, "Modes").

Each instance (cluster x GRPO/PPO Qwen3-4B preset, with the long tail of
``benchmarks.long_tail``: lognormal median 420, sigma 0.93, cut at :data:`CAP` tokens) is solved
with the exact ILP (seed 0) under one-step-off (``mode: async``) and under ``fully-async`` at
the settings of verl's staleness ablation (``docs/advance/fully_async.md``): a rollouter that
drains before each sync (staleness 0, no partial rollout, 4 local updates per sync) and
rollouters that run ahead by 0.1, 0.5 and 2 steps with partial rollout (1 local update per
sync). Per setting: the optimum, its decisions (grouping, generation's and training's GPUs and
layouts), what changed from the one-step-off optimum, and the regret of deploying the
one-step-off plan under that setting (>= 1: the ILP's plan is optimal). Every plan is checked by
the validator and every ILP result must be proven optimal before it is counted.

    python -m benchmarks.fully_async --out benchmarks/results/fully-async
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.long_tail import LONG_TAIL, TIME_LIMIT_S, _solve, changes, decisions, strategies
from benchmarks.publish import command_line, instance_args, publish_rows, redraw, save_figure
from costmodels.placement.check import check_placement
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.presets import placement_presets
from planner.io import build_problem

CLUSTERS = ("small-8", "small-16")
#: the longest response, tokens: 4x the presets' 1 024, so the tail is long enough to hide (at
#: 1 024 small-8 GRPO's optimum is training-bound and every setting gives it; verl's DAPO runs
#: cap at 20-28K)
CAP = 4096
WORKFLOWS = ("grpo-async-qwen3-4b", "ppo-async-qwen3-4b")
#: small-16 PPO: its ILP runs past the long-tail benchmark's limit (``benchmarks.long_tail``)
SKIPPED = {("small-16", "ppo-async-qwen3-4b"): "ILP over 60 s here (benchmarks.long_tail)"}
#: (label, fully_async knobs or None for one-step-off): verl's ablation settings (module doc)
SETTINGS: tuple[tuple[str, dict[str, Any] | None], ...] = (
    ("one-step-off", None),
    ("drain (s=0)", {"staleness": 0.0, "partial_rollout": False, "updates_per_sync": 4}),
    ("s=0.1", {"staleness": 0.1}),
    ("s=0.5", {"staleness": 0.5}),
    ("s=2", {"staleness": 2.0}),
)


def workflow(name: str, knobs: dict[str, Any] | None) -> dict[str, Any]:
    """The preset with the long tail, one-step-off (``knobs`` None) or fully-async."""
    wf = {p.name: p for p in placement_presets()}[name].build()
    wf["response_lengths"] = dict(LONG_TAIL)
    wf["response_length"] = CAP
    if knobs is not None:
        wf.update(mode="fully-async", fully_async=dict(knobs))
    return wf


def run_instance(
    cluster: str, workflow_name: str, settings: tuple[tuple[str, Any], ...] = SETTINGS
) -> list[dict[str, Any]]:
    """One row per setting (module doc; the first is the baseline the others are compared
    with); a row's ``dropped`` says why it has no optimum."""
    rows: list[dict[str, Any]] = []
    base_plan = None
    for label, knobs in settings:
        problem = build_problem(
            "placement", {"cluster": cluster, "workflow": workflow(workflow_name, knobs)}
        )
        r, wall = _solve(problem)
        row: dict[str, Any] = {
            "cluster": cluster,
            "workflow": workflow_name,
            "setting": label,
            "status": r.status.value,
            "wall_s": round(wall, 2),
            "dropped": "",
        }
        rows.append(row)
        if r.status.value != "optimal" or r.plan is None:
            row["dropped"] = f"ILP {r.status.value} after {wall:.0f} s (limit {TIME_LIMIT_S:.0f} s)"
            continue
        bad = check_placement(problem, r.plan)
        if bad:
            row["dropped"] = f"invalid plan: {'; '.join(bad)}"
            continue
        phases = evaluate_placement(problem, r.plan).breakdown["phases"]
        row.update(
            objective_s=r.objective,
            generation_s=phases["generation_s"],
            trainer_s=phases["inference_s"] + phases["training_s"],
            strategies=strategies(r.plan),
            **decisions(r.plan),
        )
        if base_plan is None:
            base_plan = r.plan
            row.update(changes="", regret=1.0)
            continue
        row["changes"] = ", ".join(changes(base_plan, r.plan))
        deployed = evaluate_placement(problem, base_plan).objective
        row["one_step_off_plan_s"] = deployed
        row["regret"] = deployed / r.objective
        assert row["regret"] >= 1 - 1e-9, f"{cluster}/{workflow_name}/{label}: not an optimum"
    return rows


def report(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# What fully asynchronous training changes in a placement (exact, small clusters)",
        "",
        f"Made by `{command}` (`benchmarks/fully_async.py`). ILP optima (seed 0, proven), "
        "Qwen3-4B presets with the long tail of `benchmarks/results/long-tail` (lognormal "
        f"median 420, sigma 0.93), cut at {CAP} tokens. Settings: one-step-off (`mode: async`) and "
        "`mode: fully-async` as verl's staleness ablation runs it. *regret*: the one-step-off "
        "optimum deployed under the setting, over the setting's optimum.",
        "",
        "| cluster | workflow | setting | s/step | gen s | trainer s | generation GPUs "
        "| training GPUs | changed from one-step-off | regret |",
        "|---|---|---|---:|---:|---:|---|---|---|---:|",
    ]
    for r in rows:
        if r["dropped"]:
            lines.append(
                f"| {r['cluster']} | {r['workflow']} | {r['setting']} | - | - | - | - | - | "
                f"{r['dropped']} | - |"
            )
            continue
        lines.append(
            f"| {r['cluster']} | {r['workflow']} | {r['setting']} | {r['objective_s']:.2f} | "
            f"{r['generation_s']:.2f} | {r['trainer_s']:.2f} | {r['gen_gpus']} "
            f"({r['gen_types']}) TP{r['gen_tp']} DP{r['gen_dp']} | {r['train_gpus']} "
            f"({r['train_types']}) TP{r['train_tp']} PP{r['train_pp']} DP{r['train_dp']} | "
            f"{r['changes'] or '-'} | {r['regret']:.3f} |"
        )
    done = [r for r in rows if not r["dropped"] and r["setting"] != "one-step-off"]
    moved = [r for r in done if r["changes"]]
    lines += [
        "",
        f"{len(moved)} of {len(done)} fully-async settings move the optimum away from the "
        "one-step-off plan; the largest regret of keeping the one-step-off plan is "
        f"{max((r['regret'] for r in done), default=1.0):.3f}.",
        "",
        "Groupings and every task's layout:",
        "",
    ]
    lines += [
        f"- {r['cluster']} / {r['workflow']} / {r['setting']}: {r['grouping']}; {r['strategies']}"
        for r in rows
        if not r["dropped"]
    ]
    lines.append("")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Step time per setting and instance, the one-step-off plan's beside the optimum."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in rows if not r["dropped"]]
    instances = sorted({(r["cluster"], r["workflow"]) for r in done})
    fig, axes = plt.subplots(1, len(instances), figsize=(4.5 * len(instances), 4), squeeze=False)
    for ax, inst in zip(axes[0], instances, strict=True):
        mine = [r for r in done if (r["cluster"], r["workflow"]) == inst]
        x = range(len(mine))
        ax.bar(x, [r["objective_s"] for r in mine], color="tab:blue", label="optimum")
        ax.plot(
            x,
            [r.get("one_step_off_plan_s", r["objective_s"]) for r in mine],
            "o",
            color="tab:red",
            label="one-step-off plan",
        )
        ax.set_xticks(list(x), [r["setting"] for r in mine], rotation=30, fontsize=7)
        ax.set_title(f"{inst[0]} {inst[1]}", fontsize=8)
        ax.set_ylabel("s / step")
    axes[0][0].legend(fontsize=7)
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> None:
    args = instance_args(__doc__ or "", "benchmarks/results/fully-async", CLUSTERS, WORKFLOWS, argv)
    if args.replot:
        redraw(args.out, "results", report, plot, md="README.md")
        return
    rows: list[dict[str, Any]] = []
    for c in args.clusters:
        for w in args.workflows:
            if (c, w) in SKIPPED:
                rows.append(
                    {"cluster": c, "workflow": w, "setting": "all", "dropped": SKIPPED[c, w]}
                )
                continue
            for row in run_instance(c, w):
                rows.append(row)
                print(
                    {
                        k: row.get(k)
                        for k in (
                            "cluster",
                            "workflow",
                            "setting",
                            "objective_s",
                            "changes",
                            "regret",
                            "wall_s",
                        )
                    },
                    flush=True,
                )
    command = command_line("benchmarks.fully_async", argv)
    publish_rows(args.out, "results", rows, command, report, plot, md="README.md")


if __name__ == "__main__":
    main()
