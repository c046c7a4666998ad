"""Which placement decisions a long-tailed response-length distribution changes, and what planning
with HetRL's constant model costs when the tail is real.

Each instance (cluster x workflow preset) is solved twice with the exact ILP (seed 0): once with
the preset's ``constant`` response lengths (HetRL Appendix B: every response at the maximum
``response_length``) and once with a lognormal of the same cap, median 420 tokens and sigma 0.93:
``costmodels.generation.request_traces.TraceParams``'s defaults (median 420,
sqrt(sigma_prompt^2 + sigma_response^2) = sqrt(0.75^2 + 0.55^2) = 0.93, of which a prompt's
responses share 0.75^2 / 0.93^2 = 0.65, ``prompt_share``; hard prompts left out), calibrated
there to RollPacker §2.2. Per instance: both optima, both plans' decisions, whether
they differ, and the regret of planning with the wrong model: the constant-optimal plan judged
under the long-tail problem over the long-tail optimum (>= 1 since the ILP's plan is optimal).
Every plan is checked by the validator and every ILP result must be proven optimal before it is
counted; an instance whose ILP does not prove an optimum within ``TIME_LIMIT_S`` is dropped (a
row saying so), and small-16 / ppo-async-qwen3-4b is left out (``SKIPPED``: over 60 s here).

    python -m benchmarks.long_tail --out benchmarks/results/long-tail
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.publish import command_line, instance_args, publish_rows, redraw, save_figure
from costmodels.placement.check import check_placement
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.presets import placement_presets, recorded_tail
from costmodels.response_lengths import ResponseLengths
from planner import solve
from planner.io import build_problem

CLUSTERS = ("small-8", "small-16")
WORKFLOWS = (
    "grpo-sync-qwen3-4b",
    "grpo-async-qwen3-4b",
    "ppo-sync-qwen3-4b",
    "ppo-async-qwen3-4b",
)
#: TraceParams()'s response lengths (module doc), cut at the preset's cap: the
#: ``-tail`` workflow presets' distribution
LONG_TAIL = recorded_tail()
#: left out: its ILP takes over 60 s here (2 loaded cores), the brief's limit
SKIPPED = {
    ("small-16", "ppo-async-qwen3-4b"): (
        "ILP over 60 s on 2 loaded cores (constant: 55 s to its optimum; long tail: not proven "
        "at 60 s, gap 11%)"
    ),
}
#: an ILP that proves no optimum within this many seconds (a cap with room for a loaded machine:
#: the kept instances take up to ~50 s each) drops its instance
TIME_LIMIT_S = 120.0
#: generation load shares differing by more than this count as a changed balance
SHARE_TOL = 1e-3


def workflow(name: str, long_tail: bool) -> dict[str, Any]:
    """The preset workflow ``name`` as a dict, with the long-tail distribution when asked."""
    wf = {p.name: p for p in placement_presets()}[name].build()
    if long_tail:
        wf["response_lengths"] = dict(LONG_TAIL)
    return wf


def _gpu_types(devices: list[str]) -> str:
    """``2xa100+2xl40s`` from GPU ids ``<type>-<node>:<index>``."""
    counts: dict[str, int] = {}
    for d in devices:
        kind = d.split(":")[0].rsplit("-", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    return "+".join(f"{n}x{k}" for k, n in sorted(counts.items()))


def decisions(plan: Any) -> dict[str, Any]:
    """What a placement plan decides: the task grouping, generation's and actor training's GPUs
    and parallel strategy, and generation's load shares across replicas."""
    gen = plan.task("actor_generation")
    trn = plan.task("actor_training")
    shares = gen.batch_shares or [1.0 / gen.dp] * gen.dp
    return {
        "grouping": " | ".join("+".join(sorted(g.tasks)) for g in plan.groups),
        "gen_gpus": len(gen.all_devices()),
        "gen_types": _gpu_types(gen.all_devices()),
        "gen_tp": gen.tp,
        "gen_pp": gen.pp,
        "gen_dp": gen.dp,
        "gen_shares": [round(s, 4) for s in shares],
        "train_gpus": len(trn.all_devices()),
        "train_types": _gpu_types(trn.all_devices()),
        "train_tp": trn.tp,
        "train_pp": trn.pp,
        "train_dp": trn.dp,
    }


def _strategy_of(t: Any) -> tuple[int, int, int, int | None]:
    return (t.tp, t.pp, t.dp, t.decode_batch)


def changes(before: Any, after: Any) -> list[str]:
    """What differs between two plans of one workflow, load balance (shares, layer splits) left
    out: ``grouping`` (the partition of tasks, whatever its order), ``<task> strategy`` (TP, PP,
    DP or decode batch) or else ``<task> GPUs`` (which GPUs, or their order in the mesh)."""

    def partition(plan: Any) -> set[frozenset[str]]:
        return {frozenset(g.tasks) for g in plan.groups}

    out = ["grouping"] if partition(before) != partition(after) else []
    for t in before.tasks:
        u = after.task(t.task)
        if _strategy_of(t) != _strategy_of(u):
            out.append(f"{t.task} strategy")
        elif t.devices != u.devices:
            out.append(f"{t.task} GPUs")
    return out


def strategies(plan: Any) -> str:
    """Every task's GPUs and TP/PP/DP, in the plan's order."""
    return "; ".join(
        f"{t.task} {len(t.all_devices())} ({_gpu_types(t.all_devices())}) "
        f"TP{t.tp} PP{t.pp} DP{t.dp}"
        for t in plan.tasks
    )


def _solve(problem: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    r = solve(problem, "ilp", seed=0, time_limit=TIME_LIMIT_S)
    return r, time.perf_counter() - t0


def run_instance(
    cluster: str, workflow_name: str, keep: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Both optima of one instance, their decisions and the constant plan's regret (module doc);
    ``dropped`` says why an instance has none. ``keep``, when given, receives each model's
    problem and result (``keep["constant"] = (problem, result)``, likewise ``"long_tail"``)."""
    cap = workflow(workflow_name, False)["response_length"]
    row: dict[str, Any] = {
        "cluster": cluster,
        "workflow": workflow_name,
        "dropped": "",
        "cap": cap,
        "long_tail_mean_response": round(ResponseLengths(**LONG_TAIL).mean(cap), 1),
    }
    problems, results = {}, {}
    for model in ("constant", "long_tail"):
        problem = build_problem(
            "placement",
            {"cluster": cluster, "workflow": workflow(workflow_name, model == "long_tail")},
        )
        r, wall = _solve(problem)
        row[f"{model}_status"] = r.status.value
        row[f"{model}_wall_s"] = round(wall, 2)
        if r.status.value != "optimal" or r.plan is None:
            row["dropped"] = (
                f"{model}: ILP {r.status.value} after {wall:.0f} s "
                f"(limit {TIME_LIMIT_S:.0f} s) {r.message}"
            ).strip()
            return row
        bad = check_placement(problem, r.plan)
        if bad:
            row["dropped"] = f"{model}: invalid plan: {'; '.join(bad)}"
            return row
        problems[model], results[model] = problem, r
        if keep is not None:
            keep[model] = (problem, r)
    const, tail = results["constant"], results["long_tail"]
    row["constant_s"] = const.objective
    row["long_tail_s"] = tail.objective
    d_const, d_tail = decisions(const.plan), decisions(tail.plan)
    for key, value in d_const.items():
        row[f"constant_{key}"] = value
    for key, value in d_tail.items():
        row[f"long_tail_{key}"] = value
    row["constant_strategies"] = strategies(const.plan)
    row["long_tail_strategies"] = strategies(tail.plan)
    row["changes"] = ", ".join(changes(const.plan, tail.plan))
    row["structure_changed"] = bool(row["changes"])
    shares_c, shares_t = d_const["gen_shares"], d_tail["gen_shares"]
    row["gen_shares_changed"] = len(shares_c) != len(shares_t) or any(
        abs(a - b) > SHARE_TOL for a, b in zip(shares_c, shares_t, strict=True)
    )
    # the constant-optimal plan, run while the tail is real
    misjudged = evaluate_placement(problems["long_tail"], const.plan)
    row["constant_plan_under_long_tail_s"] = misjudged.objective
    row["regret"] = misjudged.objective / tail.objective
    assert row["regret"] >= 1 - 1e-9, (
        f"{cluster}/{workflow_name}: the constant plan beats the long-tail optimum "
        f"({misjudged.objective} < {tail.objective}): the ILP's optimum is not one"
    )
    phases_c = evaluate_placement(problems["constant"], const.plan).breakdown["phases"]
    phases_t = evaluate_placement(problems["long_tail"], tail.plan).breakdown["phases"]
    phases_m = misjudged.breakdown["phases"]
    for key in ("generation_s", "training_s"):
        row[f"constant_{key}"] = phases_c[key]
        row[f"long_tail_{key}"] = phases_t[key]
        row[f"constant_plan_under_long_tail_{key}"] = phases_m[key]
    return row


def _strategy(r: dict[str, Any], model: str, task: str) -> str:
    p = f"{model}_{task}_"
    text = f"{r[p + 'gpus']} ({r[p + 'types']}) TP{r[p + 'tp']}"
    if task == "train" or r[p + "pp"] > 1:
        text += f" PP{r[p + 'pp']}"
    return text + f" DP{r[p + 'dp']}"


def report(rows: list[dict[str, Any]], command: str) -> str:
    done = [r for r in rows if not r["dropped"]]
    caps = "/".join(sorted({str(r["cap"]) for r in done}))
    means = "/".join(sorted({f"{r['long_tail_mean_response']:g}" for r in done}))
    lines = [
        "# Which placement decisions the long tail changes",
        "",
        f'Made by `{command}`. Exact ILP (`planner.solve(problem, "ilp", seed=0)`), every result '
        "proven optimal and every plan validated by `check_placement`. *constant*: the preset's "
        f"HetRL model (every response at `response_length` = {caps}). *long tail*: lognormal, "
        f"median {LONG_TAIL['median']:g}, sigma {LONG_TAIL['sigma']:g}, cut at the same cap "
        f"(mean {means} tokens), prompt share {LONG_TAIL['prompt_share']:g}: "
        "`costmodels.generation.request_traces.TraceParams`'s defaults (sigma = "
        "sqrt(0.75^2 + 0.55^2), of which a prompt's responses share 0.75^2 / sigma^2; hard "
        "prompts left out), calibrated there to RollPacker §2.2. "
        "**Regret**: the constant-optimal plan judged under the long-tail problem over the "
        "long-tail optimum (>= 1 by optimality).",
        "",
        "| cluster | workflow | constant s/it | long tail s/it | constant plan under long tail "
        "s/it | regret | what changed (beside load shares) | generation (constant -> long tail) | "
        "training (constant -> long tail) | generation shares (constant -> long tail) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in done:
        gen = [_strategy(r, m, "gen") for m in ("constant", "long_tail")]
        trn = [_strategy(r, m, "train") for m in ("constant", "long_tail")]
        shares = [
            "/".join(f"{s:.2f}" for s in r[f"{m}_gen_shares"]) for m in ("constant", "long_tail")
        ]
        lines.append(
            f"| {r['cluster']} | {r['workflow']} | {r['constant_s']:.1f} | "
            f"{r['long_tail_s']:.1f} | {r['constant_plan_under_long_tail_s']:.1f} | "
            f"{r['regret']:.4f} | {r['changes'] or 'nothing'} | "
            + (gen[0] if gen[0] == gen[1] else f"{gen[0]} -> {gen[1]}")
            + " | "
            + (trn[0] if trn[0] == trn[1] else f"{trn[0]} -> {trn[1]}")
            + " | "
            + (shares[0] if shares[0] == shares[1] else f"{shares[0]} -> {shares[1]}")
            + " |"
        )
    lines += [
        "",
        "Groupings (constant; long tail):",
        "",
    ]
    for r in done:
        lines.append(
            f"- {r['cluster']} / {r['workflow']}: {r['constant_grouping']}; "
            f"{r['long_tail_grouping']}"
        )
    lines += ["", "Every task's strategy (constant; long tail):", ""]
    for r in done:
        lines.append(
            f"- {r['cluster']} / {r['workflow']}: {r['constant_strategies']}; "
            f"*long tail*: {r['long_tail_strategies']}"
        )
    dropped = [r for r in rows if r["dropped"]]
    if dropped:
        lines += ["", "Dropped:", ""]
        lines += [f"- {r['cluster']} / {r['workflow']}: {r['dropped']}" for r in dropped]
    lines += ["", "## Reading", "", READING]
    return "\n".join(lines) + "\n"


#: the README's reading of the published table (written after the run that made it; redraw
#: with ``--replot`` after editing)
READING = (
    "The tail makes every optimum 36-38% faster (mean response 504 of 1024 tokens), but not "
    "evenly: for the same plan, generation (costed by continuous batching for the replica that "
    "drew the step's longest response and the most loaded prompts, judge module doc) falls by "
    "50-56%, while training and inference (costed on the expected packed sequence P + E[L]) "
    "fall by only 25-27%, so the balance between the phases moves. Synchronous steps run the "
    "phases one after another, so the balance barely matters: generation's GPUs stay, small-8 "
    "GRPO takes fewer, deeper generation replicas (TP2 DP4 -> TP2 PP2 DP2: a prompt's "
    "responses stay on one replica, so fewer replicas wait for fewer unlucky prompts), small-16 "
    "GRPO re-splits the inference tasks (PP4 DP4 -> PP2 DP8), and the constant plan costs 0-2% "
    "more; the exception "
    "is small-16 PPO (4.4%), where the tail's optimum splits the six co-located tasks into an "
    "actor group on the A100s and a critic group on the L40S. Asynchronous workflows are where "
    "the decision changes: their period is max(generation's group, inference + training) over "
    "disjoint GPUs (the judge's group-aware overlap), and the constant model sized generation's "
    "group for 1024-token decodes, so under the tail that group idles while the long-tail "
    "optimum gives it fewer GPUs (4 A100 TP2 "
    "-> 2 A100 TP1 on small-8 GRPO, 6 -> 4 A100 on small-16 GRPO, 2 -> 1 A100 on small-8 PPO) "
    "and hands the rest to training and inference: the constant plan is 14-17% slower than the "
    "long-tail optimum. In short, the long tail moves the generation/training split of "
    "asynchronous workflows; how a synchronous step co-locates its tasks is almost unaffected."
)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """One bar per instance: the regret of the constant-optimal plan under the long tail. Saved
    as ``regret.png`` beside ``path`` (``publish_rows`` passes ``results.png``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in rows if not r["dropped"]]
    labels = [f"{r['cluster']}\n{r['workflow']}" for r in done]
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(done)), 4))
    colors = ["tab:red" if r["structure_changed"] else "tab:blue" for r in done]
    ax.bar(range(len(done)), [r["regret"] for r in done], color=colors)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(done)), labels, fontsize=7)
    top = max((r["regret"] for r in done), default=1.0)
    ax.set_ylim(0.99, max(1.01, top + 0.2 * (top - 0.99)))
    ax.set_ylabel("constant plan under long tail / long-tail optimum")
    ax.set_title(
        "Regret of planning with the constant model (red: the optimum's structure changed)"
    )
    save_figure(fig, path.with_name("regret.png"))


def main(argv: list[str] | None = None) -> None:
    args = instance_args(__doc__ or "", "benchmarks/results/long-tail", CLUSTERS, WORKFLOWS, argv)
    if args.replot:
        redraw(args.out, "results", report, plot, md="README.md")
        return
    rows = []
    for c in args.clusters:
        for w in args.workflows:
            if (c, w) in SKIPPED:
                rows.append({"cluster": c, "workflow": w, "dropped": SKIPPED[c, w]})
                continue
            rows.append(run_instance(c, w))
            print(rows[-1], flush=True)
    command = command_line("benchmarks.long_tail", argv)
    publish_rows(args.out, "results", rows, command, report, plot, md="README.md")


if __name__ == "__main__":
    main()
