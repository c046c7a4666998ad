"""``steps.md``: the whole-step section of the fidelity report (:mod:`benchmarks.fidelity.steps`)
as markdown."""

from __future__ import annotations

from typing import Any

from benchmarks.fidelity.steps_cases import CALIBRATION, NETWORK, PROMPT_TOKENS

COMMAND = "python -m benchmarks.fidelity.steps --out benchmarks/results/fidelity"


def _f(x: Any, fmt: str = ".0f") -> str:
    return "-" if x is None else format(x, fmt)


def _ratios(fit: dict[str, Any]) -> str:
    return ", ".join(f"{v:.2f}" for v in fit["ratios"].values())


def _cell(r: dict[str, Any], stage: str) -> str:
    meas = r["measured"][stage]
    if "predicted" not in r:
        return f"{_f(meas)} / -"
    ratio = r["ratio"][stage]
    return f"{_f(meas)} / {_f(r['predicted'][stage])} ({_f(ratio, '.2f')})"


def markdown(result: dict[str, Any]) -> str:
    fit, rows, summ = result["fit"], result["rows"], result["summary"]
    net = NETWORK["intra_zone"]
    lines = [
        "# Fidelity of the judge: whole RL steps (verl, Qwen2.5-Math-7B DAPO, H20)",
        "",
        f"Made by `{COMMAND}` (`benchmarks/fidelity/steps.py`; problems, plans and assumptions in "
        "`benchmarks/fidelity/steps_cases.py`). Measured: verl `docs/advance/one_step_off.md` "
        "(A rows) and `docs/advance/fully_async.md` (B rows) at volcengine/verl@b178a3cd, copied "
        "to `benchmarks/fidelity/data/verl_published_steps.csv`. Predicted: `evaluate_placement` "
        "with the default kernels (aic-vllm) and the engine verl ran (A: eager, B: cuda-graph).",
        "",
        "Assumed: Qwen2.5-7B for Qwen2.5-Math-7B (same architecture); nodes of 8 H20 on NVLink, "
        f"{net['bandwidth_gbps']:g} Gb/s per GPU and {net['latency_ms'] * 1000:g} us between "
        f"nodes; real prompt {PROMPT_TOKENS} tokens (verl removes padding; the cap is 2048); "
        "GRPO without reward model; verl's old_log_prob costed as rlplan's reference inference "
        "(fully-async rows run none: `reference_pass: false`); FSDP2 with Ulysses SP=4 as TP4 "
        "DP=N/4 for training and the log-prob pass (each sequence split over 4 GPUs), Megatron "
        "as the scripts' TP2 PP2.",
        "",
        f"**Split.** Calibration: {', '.join(CALIBRATION)}. Test: every other modelled row. "
        f"**Fit**: lognormal response lengths, sigma {fit['sigma']:.2f} (fixed: "
        "`costmodels.generation.request_traces`), median fitted to "
        f"{'+'.join(fit['rows'])}'s `{fit['stage']}`: **{fit['median']:.0f} tokens**"
        f"{' (at its bound)' if fit['at_bound'] else ''}. For comparison, fitting the median to "
        f"B1's whole step instead gives {result['fit_to_step']['median']:.0f} tokens"
        f"{' (at its bound)' if result['fit_to_step']['at_bound'] else ''} (B1 step ratio "
        f"{_ratios(result['fit_to_step'])} at best); with the 2048-token prompt cap as the "
        f"prompt, the training fit gives {result['fit_prompt_cap']['median']:.0f} tokens"
        f"{' (at its bound)' if result['fit_prompt_cap']['at_bound'] else ''}, B1 training "
        f"ratio {_ratios(result['fit_prompt_cap'])} at best.",
        "",
        "## Per row: measured / predicted seconds (predicted / measured)",
        "",
        "| row | mode | GPUs | split | step | gen | old_log_prob | update_actor |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['id']} | {r['mode']} | {r['gpus']} | {r['split']} | "
            + " | ".join(_cell(r, s) for s in ("step", "generation", "inference", "training"))
            + " |"
        )
    lines += [
        "",
        "One-step-off rows (A2, A4): gen is `generate_sequences` (overlapped with training), "
        'which verl averages over the ranks (`reduce_timing`: "We calculate the average timing '
        "across all ranks\"), so it is held against the judge's mean rank: a replica with a "
        "random share of the step and its own longest response, not the step's; the step is "
        "`wait_prev_gen + old_log_prob + update_actor` as measured, max(generation, inference + "
        "training) as judged, generation there being the slowest replica.",
        "",
        "Fully-async rows (B2-B9; `mode: fully-async`, verl `fully_async_policy`, rollout TP4, "
        "4 local updates of 128 prompts per weight sync): verl publishes the trainer's wait "
        "(`gen(wait)`), not generation, and runs no `old_log_prob` (it trains on the rollout's "
        "log-probs), so only the step and `update_actor` are compared; the predicted "
        "generation and inference are the judge's (rlplan's GRPO always places a reference "
        "pass, which the judge's trainer pays and verl's does not).",
        "",
        "## Summary (test rows only)",
        "",
        "| runs | stage | RMS log error | worst ratio (row) | rows |",
        "|---|---|---:|---:|---|",
    ]
    for group, errors in (
        ("sync, one-step-off", summ["errors"]),
        ("fully-async", summ["errors_fully_async"]),
    ):
        for stage, e in errors.items():
            if e["rms_log"] is None:
                continue
            lines.append(
                f"| {group} | {stage} | {_f(e['rms_log'], '.2f')} | "
                f"{_f(e['worst_ratio'], '.2f')} ({e.get('worst_row', '-')}) | "
                f"{', '.join(e['rows'])} |"
            )
    worst = max(
        (s for s in summ["errors"] if s != "step" and summ["errors"][s]["rms_log"] is not None),
        key=lambda s: summ["errors"][s]["rms_log"],
    )
    lines += [
        "",
        f"Most off stage (RMS log error over the sync and one-step-off test rows): **{worst}**.",
    ]
    sc, ab = summ["scaling_64_to_128"], summ["staleness_ablation"]
    lines += [
        "",
        f"**Check** ({sc['check']}): step(B3)/step(B5) measured "
        f"{sc['measured_step_ratio_B3_over_B5']:.3f}, predicted "
        f"{sc['predicted_step_ratio_B3_over_B5']:.3f}: "
        f"{'holds' if sc['holds'] else 'does NOT hold'}.",
        "",
        f"**Check** ({ab['check']}): rows {', '.join(ab['rows'])} at staleness "
        f"{', '.join(f'{x:g}' for x in ab['staleness'])}: measured "
        f"{' / '.join(f'{x:.0f}' for x in ab['measured_step'])} s, predicted "
        f"{' / '.join(f'{x:.0f}' for x in ab['predicted_step'])} s (the judge's generation "
        f"{' / '.join(f'{x:.0f}' for x in ab['predicted_generation'])} s): "
        f"{'holds' if ab['holds'] else 'does NOT hold'}.",
        "",
        "**The tail's share of synchronous generation.** verl's driver times `gen` until the "
        "slowest rank returns (with the engine's switch from training and back), while "
        "`generate_sequences` is the ranks' mean; their ratio bounds from above how much longer "
        "the slowest rank takes than the mean one. The judge's is its generation (the replica "
        "holding the step's longest response) over its mean rank: "
        + "; ".join(
            f"{i} measured {t['measured']:.2f}, predicted {t['predicted']:.2f}"
            for i, t in summ["tail_share"].items()
        )
        + ". Where a rank's own longest response already reaches the cap (A3: 1 024 responses "
        "a rank, 8 192-token cap) the judge's ranks are equal; verl's are not, because a "
        "rank's responses come from its own 64 prompts (verl hands each rank a chunk of "
        "prompts, and a hard prompt's responses are all long), an imbalance the judge's "
        "independent per-replica lengths do not carry.",
        "",
        "## Diagnostics",
        "",
        "| row | judge's dbs per replica | verl's batch | gen at verl's batch (s; ratio) | "
        "mean rank's gen (s) | mean / longest response (tokens) | one response to the cap "
        "alone (s) | peak memory | plan valid |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        d = r.get("diagnostics")
        if not d:
            continue
        gen_meas = r["measured"]["generation"]
        wide = d["generation_at_verl_batch"]
        lines.append(
            f"| {r['id']} | {d['decode_batch']} | {d['verl_batch']} | {wide:.0f}; "
            f"{_f(wide / gen_meas if gen_meas else None, '.2f')} | "
            f"{d['generation_mean_rank']:.0f} | {d['mean_response']:.0f} / "
            f"{d['longest_response']:.0f} | {d['one_at_cap']:.0f} | {d['peak_memory']:.0%} | "
            f"{'yes' if not d['violations'] else d['violations'][0]} |"
        )
    lines += [
        "",
        "*gen at verl's batch*: the same plan with `decode_batch` = every sequence of a replica "
        "up to `max_num_seqs` (what vLLM holds once colocated training has offloaded); not a "
        "valid rlplan plan (rlplan keeps training's weights, gradients and optimizer resident "
        "during generation), shown to separate the judge's batch from its decode physics. "
        "*longest*: the longest response of the replica the judge costs (its stratified "
        "quantiles, the longest replaced by the step's); "
        "*one response to the cap alone*: the judge's time for a single response decoded from "
        "the prompt to the cap on one generation replica, generation's floor whenever a step "
        "holds a response that runs to the cap (DAPO shapes the reward of overlong responses "
        "because some do).",
        "",
        "## Not modelled",
        "",
    ]
    lines += [f"* {r['id']}: {r['reason']}" for r in rows if r["split"] == "not modelled"]
    lines.append("")
    return "\n".join(lines)
