"""What ``rlplan plan placement`` and ``rlplan evaluate`` print for a placement plan, as plain
:class:`~costmodels.problem.Summary` tables (the CLI renders them)."""

from __future__ import annotations

from typing import Any

from costmodels import step_error
from costmodels.efficiency import kernels_phrase
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.problem import SolvedPlan, Summary


def _phases(breakdown: dict[str, Any]) -> str:
    ph = breakdown["phases"]
    reward = f" + reward {ph['reward_s']:.2f} s" if "reward_s" in ph else ""
    text = (
        f"generation {ph['generation_s']:.2f} s{reward} + inference {ph['inference_s']:.2f} s + "
        f"training {ph['training_s']:.2f} s"
        + (
            f" (old log-prob pass {ph['old_log_prob_s']:.2f} s of it)"
            if "old_log_prob_s" in ph
            else ""
        )
        + f" + {ph['weight_transfer']} {ph['weight_transfer_s']:.2f} s"
    )
    if "generation_group_busy_s" in ph:
        text += f" (async: generation's GPUs busy {ph['generation_group_busy_s']:.2f} s)"
    return text


def _efficiency(breakdown: dict[str, Any]) -> str:
    """The kernels, engine and latencies every term was derated with, and the model variant: the
    fitted profiles by name when the judge used them (``costmodels.profiles``), the flat compute
    and HBM fractions only when it did."""
    e, m = breakdown["efficiency"], breakdown["model"]
    if e.get("kernels", "flat") == "flat":
        kernels = f"efficiency: compute {e['compute']:.0%} of peak, HBM {e['hbm']:.0%}"
    else:
        kernels = kernels_phrase(f"{e['kernels']} profiles per GPU type", e.get("profiles", {}))
    text = (
        f"{kernels}, NVLink hop {e['intra_node_hop_latency_ms'] * 1e3:.1f} us, "
        f"engine {e.get('engine', 'cuda-graph')}: decode step overhead "
        f"{e['decode_step_overhead_ms']:.2f} ms + {e['decode_sequence_overhead_us']:.0f} us/seq"
        + (
            f" + {e['decode_layer_overhead_us']:.0f} us/layer"
            if e.get("decode_layer_overhead_us")
            else ""
        )
    )
    if e.get("per_gpu"):
        text += " (per-GPU overrides: " + ", ".join(sorted(e["per_gpu"])) + ")"
    if e.get("training_mfu"):  # a calibration's fitted training efficiency (rlplan calibrate)
        text += "; training and log-prob at " + ", ".join(
            f"{v:.1%} of {gpu}'s peak" for gpu, v in sorted(e["training_mfu"].items())
        )
    text += f"; decode model {m['decode']}"
    if "responses" in m:
        text += f"\nresponses: {m['responses']}"
    return text


def placement_summary(solved: SolvedPlan[PlacementProblem, PlacementPlan]) -> Summary:
    """Per task: group, parallel sizes, GPUs and cost components; the groups' GPU mix below."""
    problem, plan, breakdown = solved.problem, solved.plan, solved.breakdown
    gpu_of = {d.id: d.gpu.name for d in problem.topology.devices}
    group_of = plan.group_of()
    rows = []
    for tp_ in plan.tasks:
        c = breakdown["tasks"][tp_.task]
        comm = c["tp_s"] + c["pp_s"] + c["dp_s"]
        rows.append(
            (
                tp_.task,
                str(group_of[tp_.task]),
                str(tp_.tp),
                str(tp_.pp),
                str(tp_.dp),
                str(len(tp_.all_devices())),
                f"{c['time_s']:.1f}",
                f"{c['comp_s']:.1f}",
                f"{comm:.1f}",
                f"{c['decode_s']:.1f}",
            )
        )
    groups = []
    for gi, g in enumerate(plan.groups):
        mix: dict[str, int] = {}
        for d in g.devices:
            mix[gpu_of[d]] = mix.get(gpu_of[d], 0) + 1
        groups.append(f"group {gi}: " + " + ".join(f"{k} {name}" for name, k in mix.items()))
    mem = breakdown["memory"]
    return Summary(
        title=(
            f"placement by {solved.solver}: {solved.objective:.2f} s/iteration, "
            f"{breakdown['throughput_samples_per_s']:.1f} samples/s ({solved.status})"
        ),
        columns=(
            "task",
            "grp",
            "TP",
            "PP",
            "DP",
            "GPUs",
            "time s",
            "comp s",
            "comm s",
            "decode s",
        ),
        rows=rows,
        caption="; ".join(groups)
        + "\n"
        + _phases(breakdown)
        + f"; peak memory {mem['peak_utilization']:.0%} on {mem['tightest_device']}\n"
        + _efficiency(breakdown)
        + f"\n{step_error.describe(mode=problem.workflow.mode)}",
    )


def placement_cost_table(
    problem: PlacementProblem,
    plan: PlacementPlan,
    objective: float,
    breakdown: dict[str, Any],
    source: str,
) -> Summary:
    """``rlplan evaluate``: every cost component per task, in seconds."""
    keys: tuple[str, ...] = ("time_s", "comp_s", "tp_s", "pp_s", "dp_s", "bubble_s", "decode_s")
    # a long-tailed workflow's training and inference wait for their slowest rank
    # (``costmodels.straggler``); constant lengths have no such column
    waits = any("straggler_s" in c for c in breakdown["tasks"].values())
    if waits:
        keys += ("straggler_s",)
    if any("log_prob_s" in c for c in breakdown["tasks"].values()):
        keys += ("log_prob_s",)  # actor training's old log-prob pass (in its time_s)
    rows = [
        (name, *(f"{c.get(k, 0.0):.2f}" for k in keys)) for name, c in breakdown["tasks"].items()
    ]
    rings = "exact" if breakdown["ring_exact"] else "upper bounds (heuristic)"
    return Summary(
        title=f"{source}: {objective:.2f} s per iteration",
        columns=(
            "task",
            "time s",
            "comp s",
            "TP comm s",
            "PP comm s",
            "DP comm s",
            "bubble s",
            "decode s",
            *(("straggler s",) if waits else ()),
            *(("log-prob s",) if "log_prob_s" in keys else ()),
        ),
        rows=rows,
        caption=f"iteration {breakdown['iteration_time_s']:.2f} s = {_phases(breakdown)};"
        f" rings {rings}\n{_efficiency(breakdown)}"
        # the same expected error as the plan's own summary (costmodels.step_error)
        f"\n{step_error.describe(mode=problem.workflow.mode)}",
    )
