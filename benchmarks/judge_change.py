"""Every published result before and after the calibrated judge, and the decisions it changed.

The judge moved from flat efficiencies (compute 0.5, HBM 0.8, ring all-reduces of 1.5 µs hops,
0.2 ms + 10 µs per sequence of engine time, 10 FLOPs per parameter-token at 50% MFU for
training) to fitted profiles (``costmodels.profiles``: AIConfigurator's vLLM kernels with
all-reduces interpolated in their measured times, vLLM's CUDA-graph engine;
``costmodels.rl_training``: training fitted to RollPacker Table 1; veRL's synchronous judge
scoring padded sequences). This
reads the published CSVs of the commit before the change from git, the re-run ones from the
working tree, and re-derives the decisions that matter (the fastest TP, the exact placement, the
re-planner's baseline TP, the rollout search's TP) on both judges.

    python -m benchmarks.judge_change --before 3f89002 --out benchmarks/results/judge-change

A later judge change reuses the tables with its own title and without those decisions (which
compare the flat and calibrated judges); the decisions it changed are the plans in its tables:

    python -m benchmarks.judge_change --before 04721ab --no-decisions \
        --title "The expected longest response" "the top quantile F^-1(1 - 1/2n) of n responses" \
        --out benchmarks/results/judge-change-longest
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.publish import command_line

ROOT = Path(__file__).resolve().parents[1]
#: (title, result file, key columns, value columns)
TABLES = (
    (
        "Generation simulator speed (s of CPU per simulated step; target 16 384 requests on 128 "
        "instances < 0.3 s)",
        "benchmarks/results/generation/results.csv",
        ["case"],
        ["engine_s", "makespan_s"],
    ),
    (
        "OrchestrRL end to end (samples/s and gain over veRL-TO; paper 1.31-1.42x)",
        "benchmarks/results/replan/end_to_end.csv",
        ["setting", "scheme"],
        ["verl_to_tp", "samples_per_s", "vs_verl_to"],
    ),
    (
        "OrchestrRL T_k forecast error",
        "benchmarks/results/replan/tk_error.csv",
        ["seed", "model", "tp", "progress"],
        ["predicted_s", "simulated_s"],
    ),
    (
        "RollPacker Table 2 ladder (speed-up over veRL)",
        "benchmarks/results/rollout/table2.csv",
        ["job", "step"],
        ["step_s", "speedup", "paper_speedup"],
    ),
    (
        "RollPacker rollout TP (the search's and the §4.2 rule's)",
        "benchmarks/results/rollout/tp.csv",
        ["job"],
        ["best_fixed_tp", "best_per_kind", "fixed_configured_s", "best_fixed_s", "paper_rule_s"],
    ),
    (
        "RollPacker Table 3 (stream trainer, 7B/8k; paper long step 115-124 s)",
        "benchmarks/results/rollout/table3.csv",
        ["trigger"],
        ["step_s", "long_step_s"],
    ),
    (
        "RollMux long-tail migration",
        "benchmarks/results/cosched/migration.csv",
        ["pair", "seed"],
        ["period_without_s", "period_with_s", "gain"],
    ),
    (
        "RollMux traces",
        "benchmarks/results/cosched/trace.csv",
        ["trace", "seed", "policy"],
        ["mean_cost_per_h", "slo_attainment"],
    ),
    (
        "RollMux quality (ratio to the optimum)",
        "benchmarks/results/cosched/quality.csv",
        ["jobs", "seed"],
        ["optimal_per_h", "rollmux_ratio", "greedy_ratio"],
    ),
    (
        "Whole steps against verl's measured runs (predicted / measured)",
        "benchmarks/results/fidelity/steps.csv",
        ["id"],
        ["predicted_step", "ratio_step", "predicted_generation", "ratio_generation"],
    ),
    (
        "Placements with long-tailed response lengths (`benchmarks.long_tail`)",
        "benchmarks/results/long-tail/results.csv",
        ["cluster", "workflow"],
        ["long_tail_s", "long_tail_gen_gpus", "long_tail_gen_tp", "long_tail_gen_dp"],
    ),
    (
        "Fully asynchronous placements",
        "benchmarks/results/fully-async/results.csv",
        ["cluster", "workflow", "setting"],
        ["objective_s", "generation_s", "gen_gpus", "gen_tp", "gen_dp"],
    ),
    (
        "Job plans (sequential, fixed point, joint)",
        "benchmarks/results/job-plans/results.csv",
        ["instance"],
        ["sequential_s", "placement_s", "knobs", "generation_ratio", "joint_s"],
    ),
    (
        "Fleet plans",
        "benchmarks/results/fleet-plans/results.csv",
        ["fleet", "phases"],
        ["cost_per_h", "groups", "rollout_gpus", "mean_step_s", "optimal_cost_per_h"],
    ),
)
#: bench suites re-run on the calibrated judge
SUITES = ("placement", "scenarios", "scale", "replan", "cosched/suite", "rollout/suite")


def _bold_if(text: str, changed: bool) -> str:
    """Markdown bold when the value changed."""
    return f"**{text}**" if changed else text


def _old_csv(commit: str, path: str) -> pd.DataFrame | None:
    try:
        text = subprocess.run(
            ["git", "show", f"{commit}:{path}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except subprocess.CalledProcessError:
        return None
    return pd.read_csv(io.StringIO(text))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def compare(
    before: pd.DataFrame, after: pd.DataFrame, keys: list[str], values: list[str]
) -> pd.DataFrame:
    """One row per key present in both: each value as ``before -> after``."""
    values = [v for v in values if v in before.columns and v in after.columns]
    merged = before[keys + values].merge(
        after[keys + values], on=keys, suffixes=("_before", "_after")
    )
    return merged


def _markdown_table(df: pd.DataFrame, keys: list[str], values: list[str]) -> list[str]:
    values = [v for v in values if f"{v}_before" in df.columns]
    lines = ["| " + " | ".join(keys + values) + " |", "|" + "---|" * (len(keys) + len(values))]
    for _, r in df.iterrows():
        cells = [_fmt(r[k]) for k in keys]
        for v in values:
            a, b = r[f"{v}_before"], r[f"{v}_after"]
            cells.append(_fmt(b) if _fmt(a) == _fmt(b) else f"{_fmt(a)} → **{_fmt(b)}**")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def suite_rows(commit: str, suite: str) -> pd.DataFrame | None:
    """Per instance of a bench suite: the best objective and the solver that found it, before and
    after."""
    before = _old_csv(commit, f"benchmarks/results/{suite}/runs.csv")
    path = ROOT / "benchmarks" / "results" / suite / "runs.csv"
    if before is None or not path.exists():
        return None
    after = pd.read_csv(path)

    def best(df: pd.DataFrame) -> pd.DataFrame:
        ok = df[df["status"].isin(["optimal", "feasible"])]
        idx = ok.groupby("instance")["objective"].idxmin()
        out = ok.loc[idx, ["instance", "objective", "solver"]].rename(
            columns={"objective": "best", "solver": "found_by"}
        )
        ratios = ok.groupby("instance")["ratio"].max().rename("worst_ratio")
        return out.merge(ratios, on="instance")

    return best(before).merge(best(after), on="instance", suffixes=("_before", "_after"))


def _placement_summary(plan: Any, problem: Any) -> str:
    gpu_of = {d.id: d.gpu.name for d in problem.topology.devices}
    parts = []
    for t in plan.tasks:
        kinds = sorted({gpu_of[g] for g in t.all_devices()})
        parts.append(f"{t.task} {t.tp}x{t.pp}x{t.dp} on {'+'.join(kinds)}")
    return "; ".join(parts)


def decisions() -> dict[str, Any]:
    """The decisions re-derived on both judges (module doc)."""
    from costmodels.catalog import get_gpu, get_model
    from costmodels.decode import ServingParams, sweep
    from costmodels.efficiency import Efficiency
    from costmodels.generation.lengths import parse_distribution
    from costmodels.placement.kind import KIND as PLACEMENT
    from planner.io import build_problem
    from planner.solve import solve

    flat, calibrated = Efficiency(kernels="flat"), Efficiency()
    out: dict[str, Any] = {"fastest_tp": [], "placement": []}
    for phase, lengths in (
        ("early", "uniform:low=256,high=4096,n=512,context=1024"),
        ("tail", "uniform:low=4096,high=14336,n=32,context=4096"),
    ):
        for model in ("Qwen3-8B", "Qwen2.5-14B", "Qwen2.5-32B"):
            for gpu in ("H100-SXM", "H800", "A100-80GB", "L40S"):
                reqs = parse_distribution(lengths, seed=0).requests()
                row = {"phase": phase, "model": model, "gpu": gpu}
                for label, eff in (("before", flat), ("after", calibrated)):
                    rows = sweep(
                        get_model(model), get_gpu(gpu), 8, reqs, ServingParams(efficiency=eff)
                    )
                    row[f"fastest_{label}"] = (
                        f"TP{rows[0]['tp']}" if rows and rows[0]["feasible"] else "none"
                    )
                out["fastest_tp"].append(row)
    for cluster, workflow in (
        ("small-8", "grpo-sync-qwen3-8b"),
        ("small-8", "ppo-sync-qwen3-4b"),
        ("small-16", "grpo-sync-qwen3-8b"),
        ("small-16", "grpo-async-qwen3-8b"),
    ):
        base = build_problem("placement", {"cluster": cluster, "workflow": workflow})
        row: dict[str, Any] = {"instance": f"{cluster}/{workflow}"}
        for label, kernels in (("before", "flat"), ("after", "aic-vllm")):
            problem = PLACEMENT.with_efficiency(base, {"kernels": kernels})
            result = solve(problem, "ilp", time_limit=600)
            row[f"objective_{label}"] = result.objective
            row[f"plan_{label}"] = (
                _placement_summary(result.plan, problem) if result.plan is not None else "none"
            )
        row["changed"] = row["plan_before"] != row["plan_after"]
        out["placement"].append(row)
    return out


#: the report's title and its *before*'s description for the change this tool was written for
CALIBRATED = ("The calibrated judge", "flat kernels and training")


def write(
    out: Path,
    commit: str,
    command: str,
    title: tuple[str, str] = CALIBRATED,
    with_decisions: bool = True,
) -> dict[str, Any]:
    """The report of one judge change: ``title`` is (the change, what *before* judged with);
    ``with_decisions`` re-derives the flat and calibrated judges' decisions (:func:`decisions`,
    the calibrated judge's change only: other changes name theirs in the tables)."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# {title[0]}: before and after\n\nMade by `{command}`. *Before*: the "
        "published results of commit "
        f"`{commit}` ({title[1]}); *after*: the same commands re-run on the "
        "current judge. "
        "Bold: a value that changed; a table without one did not change (or its command was "
        "not re-run, the change not reaching it).\n"
    ]
    summary: dict[str, Any] = {"command": command, "before": commit, "tables": {}}
    for title, path, keys, values in TABLES:
        before = _old_csv(commit, path)
        if before is None or not (ROOT / path).exists():
            continue
        df = compare(before, pd.read_csv(ROOT / path), keys, values)
        summary["tables"][path] = json.loads(df.to_json(orient="records"))
        lines += [f"## {title}\n", f"`{path}`\n", *_markdown_table(df, keys, values), ""]
    for suite in SUITES:
        df = suite_rows(commit, suite)
        if df is None:
            continue
        summary["tables"][f"suite:{suite}"] = json.loads(df.to_json(orient="records"))
        lines += [
            f"## Bench suite `{suite}`: best plan per instance\n",
            *_markdown_table(df, ["instance"], ["best", "found_by", "worst_ratio"]),
            "",
        ]
    if with_decisions:
        lines += _decision_lines(summary)
    (out / "README.md").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def _decision_lines(summary: dict[str, Any]) -> list[str]:
    """:func:`decisions` as markdown, kept in ``summary`` too."""
    lines: list[str] = []
    dec = decisions()
    summary["decisions"] = dec
    changed = [r for r in dec["fastest_tp"] if r["fastest_before"] != r["fastest_after"]]
    lines += [
        "## Decisions re-derived on both judges\n",
        f"### Fastest TP x DP on 8 GPUs ({len(changed)} of {len(dec['fastest_tp'])} changed)\n",
        "| phase | model | GPU | before | after |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['phase']} | {r['model']} | {r['gpu']} | {r['fastest_before']} | "
        f"{_bold_if(r['fastest_after'], r['fastest_before'] != r['fastest_after'])} |"
        for r in dec["fastest_tp"]
    ]
    lines += [
        "",
        "### Exact placement (ILP) on the small clusters\n",
        "| instance | objective before → after | plan before | plan after |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['instance']} | {_fmt(r['objective_before'])} → {_fmt(r['objective_after'])} | "
        f"{r['plan_before']} | "
        f"{'**' + r['plan_after'] + '**' if r['changed'] else 'same'} |"
        for r in dec["placement"]
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.judge_change", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--before", default="3f89002", help="commit whose published results are the flat judge's"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/judge-change"))
    parser.add_argument(
        "--title",
        nargs=2,
        metavar=("CHANGE", "BEFORE"),
        default=CALIBRATED,
        help="the change's name and what the before commit judged with",
    )
    parser.add_argument(
        "--no-decisions",
        action="store_true",
        help="skip re-deriving the flat and calibrated judges' decisions",
    )
    args = parser.parse_args(argv)
    write(
        args.out,
        args.before,
        command_line("benchmarks.judge_change", sys.argv[1:] if argv is None else argv),
        tuple(args.title),
        not args.no_decisions,
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
