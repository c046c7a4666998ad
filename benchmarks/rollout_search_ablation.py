"""Where the rollout search's gain over RollPacker's settings comes from: one knob group at a time.

For each Table 2 job the search (``heuristics.rollout.search``, seed 0, its default work budget)
returns a plan; this takes RollPacker's settings (``costmodels.rollout.space.paper_plan``) and
applies the search's values of one knob group only — speculation (η_P, η_R), TP (short, long,
rule), the stream trainer (trigger, share), reward (mode, timeout, λ, race), fetch — and reports
each group's gain alone next to the whole plan's. For TP it also reports what changed
underneath: rollout seconds per round kind and the preemptions, at the paper's TP and at the
searched one. Measured: TP carries the most on 14B and 32B and speculation on 7B. On 14B much of
TP's share is the §4.2 rule falling to TP1 in long rounds (no round preempts, so only "halve
after four calm steps" fires); on 32B it is decode scaling with TP in long rounds at no
preemption, where §4.2 argues a larger TP's communication "erodes performance".

    python -m benchmarks.rollout_search_ablation --out benchmarks/results/rollout
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.instances import rollout_problem
from benchmarks.publish import command_line, parse_out_dir, write_csv
from costmodels.rollout.check import check_rollout
from costmodels.rollout.judge import evaluate_rollout
from costmodels.rollout.plan import RolloutPlan
from costmodels.rollout.presets import TABLE2
from costmodels.rollout.space import paper_plan
from planner import solve

GROUPS = {
    "speculation (η)": ("eta_prompts", "eta_responses"),
    "TP": ("short_tp", "long_tp", "tp_rule"),
    "stream trainer": ("scale", "scale_at", "scale_fraction"),
    "reward": ("reward", "timeout", "timeout_lambda", "race"),
    "fetch": ("fetch", "fetch_cap"),
}


def _with(base: RolloutPlan, source: RolloutPlan, keys: tuple[str, ...]) -> RolloutPlan:
    return RolloutPlan(**{**base.model_dump(), **{k: getattr(source, k) for k in keys}})


def _round_kinds(b: dict[str, Any]) -> dict[str, float]:
    return {f"rollout_{k}_s": v for k, v in b["rollout_s_by_kind"].items()}


def run() -> list[dict[str, Any]]:
    rows = []
    for name in TABLE2:
        problem = rollout_problem(name)
        paper = paper_plan(problem.workload)
        found = solve(problem, solver="search", seed=0)
        searched = RolloutPlan.model_validate(found.plan.model_dump())
        base, b0 = evaluate_rollout(problem, paper)
        best = found.objective
        rows.append({"job": name, "group": "RollPacker's settings", "step_s": base, "gain": 1.0})
        for group, keys in GROUPS.items():
            plan = _with(paper, searched, keys)
            if plan == paper:
                continue
            if check_rollout(problem, plan):
                rows.append({"job": name, "group": group, "step_s": None, "gain": None})
                continue
            obj, b = evaluate_rollout(problem, plan)
            row = {"job": name, "group": group, "step_s": obj, "gain": base / obj}
            row["values"] = {k: getattr(searched, k) for k in keys}
            if group == "TP":
                row.update(
                    {
                        **_round_kinds(b),
                        "preemptions": b["preemptions"],
                        **{f"paper_{k}": v for k, v in _round_kinds(b0).items()},
                        "paper_preemptions": b0["preemptions"],
                    }
                )
            rows.append(row)
        rows.append(
            {"job": name, "group": "the searched plan", "step_s": best, "gain": base / best}
        )
    return rows


def write(rows: list[dict[str, Any]], out: Path, command: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    flat = [{k: v for k, v in r.items() if k != "values"} for r in rows]
    write_csv(out / "search_ablation.csv", flat)
    (out / "search_ablation.json").write_text(
        json.dumps({"command": command, "rows": rows}, indent=2, default=str) + "\n"
    )
    lines = [
        "# Where the rollout search's gain comes from",
        "",
        f"Command: `{command}`",
        "",
        (__doc__ or "").split("\n\n")[1].strip(),
        "",
        "| job | knob group applied to RollPacker's settings | searched values | step s | gain |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        values = ", ".join(f"{k}={v}" for k, v in r.get("values", {}).items())
        step = "invalid alone" if r["step_s"] is None else f"{r['step_s']:.1f}"
        gain = "" if r["gain"] is None else f"{r['gain']:.3f}"
        lines.append(f"| {r['job']} | {r['group']} | {values} | {step} | {gain} |")
    lines += [
        "",
        "TP underneath (rollout s per round kind, preemptions; paper's TP → searched):",
        "",
    ]
    for r in rows:
        if r["group"] == "TP" and r["step_s"] is not None:
            kinds = [k for k in r if k.startswith("rollout_")]
            parts = [f"{k[8:-2]} {r['paper_' + k]:.1f} → {r[k]:.1f} s" for k in kinds]
            lines.append(
                f"- {r['job']}: {', '.join(parts)}; preemptions {r['paper_preemptions']} → "
                f"{r['preemptions']}"
            )
    (out / "search_ablation.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    out = parse_out_dir(__doc__, "bench-out/rollout", argv)
    rows = run()
    command = command_line("benchmarks.rollout_search_ablation", argv)
    write(rows, out, command)
    print((out / "search_ablation.md").read_text())


if __name__ == "__main__":
    main()
