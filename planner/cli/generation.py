"""The generation simulator's and decode sweep's commands, which the re-planning problem owns
(OrchestrRL §2.1, §4.1): ``rlplan estimate generation`` (the makespan T_k of the remaining
requests under every TP x DP configuration) and ``rlplan simulate generation`` (one generation
step on the request-level simulator, optionally under an OrchestrRL scheme)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from costmodels.errors import SpecError
from costmodels.key_values import parse_key_values
from costmodels.limits import (
    INSTANCE_BYTES,
    MAX_BLOCK_SIZE,
    MAX_NUM_SEQS,
    MAX_SIMULATED_GPUS,
    MAX_TOKENS,
    REQUEST_BYTES,
    check_memory,
)
from planner.cli.console import err, fail, out, say
from planner.efficiency_choice import ENGINE_HELP, PROFILE_HELP, efficiency
from planner.io import read_text
from planner.outputs import PLOT_SUFFIXES, check_output, write_picture
from planner.planfile import json_safe

#: ``--max-num-seqs`` of both commands: the engine's cap on concurrent sequences per instance
MaxNumSeqsOption = Annotated[
    int,
    typer.Option(min=1, max=MAX_NUM_SEQS, help="engine's max concurrent sequences per instance"),
]


def estimate_generation(
    model: Annotated[
        str, typer.Option(help="model name from the catalog (e.g. Qwen2.5-14B)")
    ] = "Qwen2.5-14B",
    gpu: Annotated[str, typer.Option(help="GPU type from the catalog")] = "H800",
    gpus: Annotated[
        int, typer.Option(min=1, max=MAX_SIMULATED_GPUS, help="GPU budget (TP x DP)")
    ] = 8,
    lengths: Annotated[
        str,
        typer.Option(
            help=(
                "histogram CSV (remaining,count[,context]) or NAME:key=value,... (uniform, "
                "lognormal, constant)"
            )
        ),
    ] = "uniform:low=256,high=4096,n=512,context=1024",
    bin_tokens: Annotated[
        int,
        typer.Option(
            "--bin", min=1, max=MAX_TOKENS, help="bin width in tokens for named distributions"
        ),
    ] = 256,
    max_num_seqs: MaxNumSeqsOption = 256,
    gpus_per_node: Annotated[
        int, typer.Option(min=1, max=64, help="TP stays inside a node of this many GPUs")
    ] = 8,
    seed: Annotated[
        int, typer.Option(min=0, max=2**63 - 1, help="seed for sampling a named distribution")
    ] = 0,
    profile: Annotated[str | None, typer.Option(help=PROFILE_HELP)] = None,
    engine: Annotated[str | None, typer.Option(help=ENGINE_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable rows")] = False,
) -> None:
    """Makespan of the remaining requests under every feasible TP x DP configuration
    (OrchestrRL T_k, §2.1/§4.1), fastest first."""
    from costmodels.catalog import get_gpu, get_model
    from costmodels.decode import ServingParams, sweep
    from costmodels.generation.lengths import parse_distribution, parse_histogram_csv

    try:
        m = get_model(model)
        g = get_gpu(gpu)
        path = Path(lengths)
        if path.exists():
            hist = parse_histogram_csv(read_text(path), str(path))
        else:
            hist = parse_distribution(lengths, seed=seed, bin_tokens=bin_tokens)
        params = ServingParams(max_num_seqs=max_num_seqs, efficiency=efficiency(profile, engine))
    except SpecError as exc:
        fail(exc)
    except ValueError as exc:
        fail(exc)
    rows = sweep(m, g, gpus, hist.requests(), params, gpus_per_node)
    if not rows:
        fail(f"no TP degree divides {gpus} GPUs within a {gpus_per_node}-GPU node for {model}")
    if as_json:
        sys.stdout.write(
            json.dumps(
                json_safe(
                    {
                        "model": model,
                        "gpu": gpu,
                        "gpus": gpus,
                        "requests": hist.total,
                        "configurations": rows,
                        "efficiency": params.efficiency.summary(),
                    }
                ),
                indent=2,
            )
            + "\n"
        )
        return
    out.print(_sweep_table(rows, model, gpu, gpus, hist))
    best = rows[0]
    out.print(f"fastest: TP={best['tp']} x DP={best['dp']}", highlight=False)
    e = params.efficiency
    fitted = e.profile_for(g, best["tp"])  # the kernels the fastest configuration was judged on
    kernels = (
        f"kernels: the {gpu} profile fitted to {fitted.source or 'measurements'} at TP "
        f"{', '.join(map(str, sorted(fitted.weight_efficiency)))}"
        if fitted is not None
        else f"efficiency: compute {e.compute:.0%} of peak, HBM {e.hbm:.0%}, "
        f"NVLink hop {params.hop_latency_ms * 1e3:.1f} us"
    )
    engine = "" if e.engine == "custom" else f" ({e.engine} engine)"
    layers = f" + {e.decode_layer_overhead_us:.0f} us/layer" if e.decode_layer_overhead_us else ""
    out.print(
        f"{kernels}, decode step overhead{engine} {e.decode_step_overhead_ms:.2f} ms + "
        f"{e.decode_sequence_overhead_us:.0f} us/seq{layers}",
        highlight=False,
    )


def parse_instances(text: str, model: Any) -> list[tuple[int, int]]:
    """``4xTP2`` or ``2xTP4,1xTP8`` -> [(count, tp), ...]. A TP group sits on one 8-GPU node and
    splits the model's heads (vLLM refuses a TP that does not divide the query heads, and one
    that neither divides nor is a multiple of the KV heads); at most
    :data:`~costmodels.limits.MAX_SIMULATED_GPUS` GPUs in all."""
    import re

    from costmodels.decode import feasible_tps

    out = []
    allowed = feasible_tps(model, 8, 8)
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*TP(\d+)\s*", part)
        if not m or int(m.group(1)) <= 0 or int(m.group(2)) <= 0:
            raise SpecError("--instances", text, "expected COUNTxTPk[,COUNTxTPk...], e.g. 4xTP2")
        count, tp = int(m.group(1)), int(m.group(2))
        if tp not in allowed:
            raise SpecError(
                "--instances",
                text,
                f"TP{tp} does not fit an 8-GPU node or split {model.name}'s heads; TP is one of "
                f"{', '.join(map(str, allowed))}",
            )
        out.append((count, tp))
    gpus = sum(count * tp for count, tp in out)
    if gpus > MAX_SIMULATED_GPUS:
        raise SpecError("--instances", text, f"{gpus:,} GPUs; at most {MAX_SIMULATED_GPUS:,}")
    return out


#: ``synthetic:prompts=P,n=N,max=M,step=S``'s arguments when not given
SYNTHETIC_DEFAULTS = {"prompts": 64, "n": 16, "max": 16384, "step": 0}


def simulation_requests(lengths: str, seed: int, read_text: Callable[[Path], str]) -> list[Any]:
    """A trace file (Vidur CSV, plain CSV, RollPacker JSONL), ``synthetic:prompts=P,n=N,max=M``,
    or a named distribution (its histogram's bins: context as prompt, upper bound as output)."""
    from costmodels.generation.lengths import parse_distribution
    from costmodels.generation.request_traces import read_trace, synthetic_trace
    from costmodels.generation.requests import Request

    path = Path(lengths)
    if path.exists():
        return read_trace(read_text(path), str(path))
    if lengths.startswith("synthetic"):
        given = parse_key_values(
            lengths.partition(":")[2],
            dict.fromkeys(SYNTHETIC_DEFAULTS, int),
            field="lengths",
            name="synthetic",
        )
        args = {**SYNTHETIC_DEFAULTS, **given}
        for key, value in given.items():
            if value < (0 if key == "step" else 1):
                raise SpecError(
                    f"lengths.{key}",
                    value,
                    "synthetic takes prompts, n, max (integers > 0) and step (>= 0)",
                )
        if args["max"] > MAX_TOKENS:
            raise SpecError("lengths.max", args["max"], f"at most {MAX_TOKENS:,} tokens")
        check_memory(
            "lengths.prompts", lengths, args["prompts"] * args["n"], REQUEST_BYTES, "requests"
        )
        return synthetic_trace(
            args["prompts"], args["n"], args["max"], seed=seed, step=args["step"]
        )
    hist = parse_distribution(lengths, seed=seed)
    return [Request(i, r.context, r.remaining) for i, r in enumerate(hist.requests())]


def simulate_generation(
    model: Annotated[str, typer.Option(help="model name from the catalog")] = "Qwen2.5-14B",
    gpu: Annotated[str, typer.Option(help="GPU type from the catalog")] = "H800",
    instances: Annotated[
        str, typer.Option(help="serving instances, e.g. 4xTP2 or 2xTP2,1xTP4")
    ] = "4xTP2",
    lengths: Annotated[
        str,
        typer.Option(
            help=(
                "trace file (Vidur CSV, prompt_tokens/output_tokens/group CSV, RollPacker "
                "JSONL), synthetic:prompts=P,n=N,max=M, or NAME:key=value"
            )
        ),
    ] = "synthetic:prompts=64,n=8,max=8192",
    max_num_seqs: MaxNumSeqsOption = 256,
    memory_utilization: Annotated[
        float, typer.Option(min=0.01, max=1, help="share of GPU memory the engine may use")
    ] = 0.9,
    block_size: Annotated[
        int, typer.Option(min=1, max=MAX_BLOCK_SIZE, help="KV cache block size in tokens")
    ] = 16,
    seed: Annotated[int, typer.Option(min=0, max=2**63 - 1, help="seed for synthetic lengths")] = 0,
    profile: Annotated[str | None, typer.Option(help=PROFILE_HELP)] = None,
    engine: Annotated[str | None, typer.Option(help=ENGINE_HELP)] = None,
    plot: Annotated[
        Path | None,
        typer.Option(help="also draw the timeline and remaining-requests curve to this PNG"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable result")] = False,
    policy: Annotated[
        str,
        typer.Option(
            help=(
                "none, verl-to (best static TP), verl-lo (largest TP), proactive, reactive or "
                "orchestrrl (OrchestrRL Algorithm 1; needs uniform TP on whole 8-GPU nodes)"
            )
        ),
    ] = "none",
    dispatch: Annotated[
        str,
        typer.Option(
            help=(
                "how requests reach instances: chunked (verl: each instance a contiguous "
                "chunk of the batch, a prompt's responses together) or round-robin"
            )
        ),
    ] = "chunked",
) -> None:
    """Simulate one generation step: makespan, preemptions, idle GPU-seconds (continuous
    batching, KV blocks, recompute preemption; ``costmodels.generation.engine``), optionally
    under an OrchestrRL scheme (``heuristics.replan.online``)."""
    from costmodels.catalog import get_gpu, get_model
    from costmodels.decode import ServingParams

    try:
        if plot is not None:
            check_output(plot, "--plot", PLOT_SUFFIXES)
        m, g = get_model(model), get_gpu(gpu)
        params = ServingParams(
            max_num_seqs=max_num_seqs,
            memory_utilization=memory_utilization,
            efficiency=efficiency(profile, engine),
        )
        insts = serving_instances(instances, m, g, params)
        try:
            reqs = simulation_requests(lengths, seed, read_text)
        except SpecError:
            raise
        except ValueError as exc:
            raise SpecError("--lengths", lengths, str(exc)) from None
        result, details = _simulate_step(
            policy, dispatch, model, gpu, instances, insts, reqs, params, block_size, seed
        )
    except SpecError as exc:
        fail(exc)
    except ValueError as exc:  # the engine refuses what the options and the lengths ask together
        fail(f"--instances {instances} with --lengths {lengths}: {exc}")
    if plot is not None:
        from costmodels.generation.plot import plot_simulation

        write_picture(
            plot,
            lambda tmp: plot_simulation(
                result, tmp, f"{model} on {instances} x {gpu}: {len(reqs)} requests"
            ),
        )
        say(err, f"wrote {plot}")  # stderr: stdout may be --json
    doc = {
        "model": model,
        "gpu": gpu,
        "configuration": instances,
        "request_count": len(reqs),
        "policy": policy,
        "dispatch": dispatch,
        "policy_details": details,
        **result.to_dict(),
    }
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    out.print(
        f"{len(reqs)} requests on {instances} x {gpu} ({model}): makespan "
        f"{result.makespan_s:.1f} s, "
        f"{result.tokens_per_s:,.0f} tokens/s, {result.preemptions} preemptions, "
        f"{result.idle_gpu_s:,.0f} idle GPU-s",
        highlight=False,
    )
    if policy != "none":
        applied = [p for p in details.get("plans", []) if p["applied"]]
        out.print(
            f"policy {policy}: TP{details.get('tp')}"
            + (
                f", {len(applied)} re-plans applied at "
                + ", ".join(f"{p['time']:.0f} s" for p in applied)
                if applied
                else ""
            )
            + (
                f", {details['migrations']} balancing migrations"
                if details.get("migrations")
                else ""
            ),
            highlight=False,
        )


def _simulate_step(
    policy: str,
    dispatch: str,
    model: str,
    gpu: str,
    instances: str,
    insts: list,
    reqs: list,
    params: Any,
    block_size: int,
    seed: int,
) -> tuple[Any, dict]:
    """One step of ``simulate generation``: the instances as given under ``dispatch``, or an
    OrchestrRL scheme (``heuristics.replan.online``); SpecError names the option at fault."""
    from costmodels.generation.engine import simulate
    from heuristics.replan.online import DISPATCH, SCHEMES, assignment, run_scheme

    if dispatch not in DISPATCH:
        raise SpecError("--dispatch", dispatch, f"known: {', '.join(DISPATCH)}")
    if policy == "none":
        first = assignment(reqs, len(insts), dispatch)
        return simulate(insts, reqs, first, block_size=block_size), {}
    if policy not in SCHEMES:
        raise SpecError("--policy", policy, f"known: {', '.join(SCHEMES)}")
    if len({i.tp for i in insts}) != 1:
        raise SpecError("--instances", instances, "a policy starts from one uniform TP")
    return run_scheme(
        policy,
        model,
        gpu,
        sum(i.tp for i in insts),
        insts[0].tp,
        reqs,
        None,
        params,
        block_size,
        seed=seed,
        dispatch=dispatch,
    )


def _sweep_table(rows: list[Any], model: str, gpu: str, gpus: int, hist: Any) -> Table:
    """The sweep's configurations, fastest first."""
    table = Table(
        title=(
            f"{model} on {gpus} x {gpu}: {hist.total} requests, remaining up to "
            f"{max(hist.upper)} tokens"
        )
    )
    for col in (
        "TP",
        "DP",
        "makespan s",
        "KV tokens / instance",
        "peak batch",
        "decode steps",
        "feasible",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            str(r["tp"]),
            str(r["dp"]),
            f"{r['makespan_s']:.1f}",
            f"{r['kv_capacity_tokens']:,}",
            str(r["peak_batch"]),
            str(r["steps"]),
            "yes" if r["feasible"] else "no (KV)",
        )
    return table


def serving_instances(text: str, model: Any, gpu: Any, params: Any) -> list[Any]:
    """``--instances`` (``4xTP2,1xTP4``) as engine instances, each with room for a KV cache."""
    from costmodels.decode import Instance

    layout = parse_instances(text, model)
    check_memory(
        "--instances",
        text,
        sum(count for count, _ in layout),
        INSTANCE_BYTES,
        "serving instances",
    )
    insts = [Instance(model, gpu, tp, params) for count, tp in layout for _ in range(count)]
    for inst in insts:
        if inst.kv_capacity_tokens() <= 0:
            raise SpecError(
                "--instances",
                text,
                f"{model.name} does not fit TP{inst.tp} on {gpu.name} with room for a KV cache",
            )
    return insts
