"""The ``rlplan`` command line (typer + rich).

Exit codes (DESIGN.md): 0 a plan was written / the check passed; 1 no feasible plan, or a plan
file with violations; 2 bad input or usage, with one line naming the file, field and value.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import yaml
from rich.console import Console
from rich.table import Table

from costmodels.circuits.problem import pair_time_s
from costmodels.errors import SpecError
from planner.io import build_problem, load_problem, write_atomic
from planner.planfile import read_plan_file, recheck, result_to_json
from planner.plots import PLOTTERS
from planner.presets import get_preset, presets
from planner.registry import UnknownSolverError, default_registry
from planner.result import Result
from planner.solve import solve

app = typer.Typer(
    name="rlplan",
    help="Plan LLM RL post-training deployments: placement (HetRL), circuits (RFabric), and more.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
presets_app = typer.Typer(help="List and show the shipped example clusters, workflows, fabrics and problems.", invoke_without_command=True)
app.add_typer(presets_app, name="presets")
estimate_app = typer.Typer(help="Cost-model estimates without solving (generation makespan per TP/DP configuration).", no_args_is_help=True)
app.add_typer(estimate_app, name="estimate")

out = Console()
err = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    err.print("[bold red]error:[/] ", end="")
    err.print(message, markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _parse_options(pairs: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            fail(f"--option expects key=value, got {pair!r}")
        key, raw = pair.split("=", 1)
        try:
            options[key] = yaml.safe_load(raw)
        except yaml.YAMLError:
            options[key] = raw
    return options


def _solver_table(problem: str) -> Table:
    reg = default_registry()
    table = Table(title=f"solvers for `{problem}`")
    for col in ("solver", "exact", "options", "description"):
        table.add_column(col)
    for s in reg.solvers(problem):
        name = s.name + (" (default)" if s.name == reg.default(problem) else "")
        table.add_row(name, "yes" if s.exact else "no", ", ".join(s.options) or "-", s.description)
    return table


def _placement_summary(result: Result) -> Table:
    plan = result.plan
    b = result.breakdown
    topo = result.problem.topology
    gpu_of = {d.id: d.gpu.name for d in topo.devices}
    table = Table(title=f"placement by {result.solver}: {result.objective:.2f} s/iteration, "
                        f"{b['throughput_samples_per_s']:.1f} samples/s ({result.status.value})")
    table.add_column("task", no_wrap=True)
    for col in ("grp", "TP", "PP", "DP"):
        table.add_column(col, justify="right")
    table.add_column("GPUs", justify="right")
    for col in ("time s", "comp", "comm", "hbm"):
        table.add_column(col, justify="right", no_wrap=True)
    group_of = plan.group_of()
    for tp_ in plan.tasks:
        c = b["tasks"][tp_.task]
        comm = c["tp_s"] + c["pp_s"] + c["dp_s"]
        table.add_row(tp_.task, str(group_of[tp_.task]), str(tp_.tp), str(tp_.pp), str(tp_.dp),
                      str(len(tp_.all_devices())), f"{c['time_s']:.1f}",
                      f"{c['comp_s']:.1f}", f"{comm:.1f}", f"{c['hbm_s']:.1f}")
    ph = b["phases"]
    groups = []
    for gi, g in enumerate(plan.groups):
        mix: dict[str, int] = {}
        for d in g.devices:
            mix[gpu_of[d]] = mix.get(gpu_of[d], 0) + 1
        groups.append(f"group {gi}: " + " + ".join(f"{k} {name}" for name, k in mix.items()))
    table.caption = ("; ".join(groups) + "\n" +f"generation {ph['generation_s']:.2f} s + inference {ph['inference_s']:.2f} s + training {ph['training_s']:.2f} s"
                     f" + {ph['weight_transfer']} {ph['weight_transfer_s']:.2f} s; peak memory {b['memory']['peak_utilization']:.0%}"
                     f" on {b['memory']['tightest_device']}")
    return table


def _breakdown_table(title: str, objective: float | None, breakdown: dict[str, Any]) -> Table:
    table = Table(title=title)
    table.add_column("field")
    table.add_column("value")
    table.add_row("objective", f"{objective:.6g}" if objective is not None else "-")
    for k, v in breakdown.items():
        table.add_row(k, str(v))
    return table


def _circuits_summary(result: Result) -> Table:
    b = result.breakdown
    fabric = result.problem.fabric
    counts = result.plan.counts()
    link = fabric.link_gbps
    table = Table(title=f"circuits by {result.solver}: bottleneck {b['bottleneck_s']:.4g} s, {b['circuits']} circuits, "
                        f"{b['ports_used']} of {sum(fabric.degrees().values())} ports ({result.status.value})")
    for col in ("pair", "demand GB", "circuits", "pair time s"):
        table.add_column(col, justify="right")
    rows = sorted(result.problem.pair_demand().items(), key=lambda kv: -pair_time_s(kv[1], counts.get(kv[0], 0), link))
    for pair, d in rows[:10]:
        c = counts.get(pair, 0)
        table.add_row("-".join(sorted(pair)), f"{d / 1e9:.3g}", str(c), f"{pair_time_s(d, c, link):.4g}" if c else "inf (no circuit)")
    table.caption = (f"slowest {min(10, len(rows))} of {len(rows)} demanded pairs"
                     + (f"; {b['uncovered_pairs']} pairs ({b['uncovered_gb']:.3g} GB) have no circuit" if b["uncovered_pairs"] else ""))
    return table


def _broadcast_summary(result: Result) -> Table:
    b = result.breakdown
    table = Table(title=f"weight sync by {result.solver}: {b['total_s']:.3g} s ({result.status.value})")
    table.add_column("part")
    table.add_column("seconds", justify="right")
    table.add_column("detail")
    table.add_row("Phase A", f"{b['phase_a_s']:.3g}", f"{b['waves']} waves, {b['inter_pod_edges']} inter-PoD transfers, {b['inter_pod_gb']:.0f} GB")
    table.add_row("Phase B", f"{b['phase_b_s']:.3g}", f"{len(result.plan.phase_b)} intra-PoD fan-out trees")
    table.caption = f"shard {b['shard_gb']:.3g} GB; each wave pays the OCS reconfiguration delay ({result.problem.spec.ocs_device})"
    return table


def _generic_summary(result: Result) -> Table:
    return _breakdown_table(f"{result.kind} by {result.solver} ({result.status.value})", result.objective, result.breakdown)


@app.command()
def plan(
    problem: Annotated[str, typer.Argument(help="placement, circuits, broadcast, or a problem file / preset name")] = "placement",
    cluster: Annotated[str | None, typer.Option(help="cluster spec file or preset (placement)")] = None,
    workflow: Annotated[str | None, typer.Option(help="workflow spec file or preset (placement)")] = None,
    fabric: Annotated[str | None, typer.Option(help="fabric spec file or preset (circuits)")] = None,
    demand: Annotated[str | None, typer.Option(help="demand CSV (src,dst,bytes) or preset (circuits)")] = None,
    sync: Annotated[str | None, typer.Option(help="weight-sync spec file or preset (broadcast)")] = None,
    solver: Annotated[str | None, typer.Option(help="solver name; `help` lists them")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="seconds; the best plan found by then is returned")] = None,
    seed: Annotated[int, typer.Option(help="random seed (same seed, same plan)")] = 0,
    option: Annotated[list[str] | None, typer.Option("--option", "-O", help="solver option key=value (repeatable)")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="plan JSON file; `-` for stdout")] = "plan.json",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no summary table")] = False,
    export: Annotated[list[str] | None, typer.Option("--export", help="also write a framework config snippet: verl, roll (placement)")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="also draw the plan to this PNG (circuits, broadcast)")] = None,
) -> None:
    """Solve a planning problem and write its plan JSON. With no arguments: the shipped default
    placement example (HetRL testbed, GRPO sync on Qwen3-8B)."""
    defaults = {"placement": {"cluster": "hetrl-single-region", "workflow": "grpo-sync-qwen3-8b"},
                "circuits": {"fabric": "fabric-8", "demand": "demand-alltoall-8"},
                "broadcast": {"sync": "weight-sync-example"}}
    try:
        if problem in defaults:
            given = {"cluster": cluster, "workflow": workflow, "fabric": fabric, "demand": demand, "sync": sync}
            fields = {k: (given[k] if given[k] is not None else v) for k, v in defaults[problem].items()}
            stray = [k for k, v in given.items() if v is not None and k not in fields]
            if stray:
                fail(f"--{stray[0]} does not apply to a {problem} problem")
            kind = problem
            if solver == "help":
                out.print(_solver_table(kind))
                raise typer.Exit(0)
            prob = build_problem(kind, fields)
        else:
            if any(v is not None for v in (cluster, workflow, fabric, demand, sync)):
                fail("spec options go with `placement`, `circuits` or `broadcast`, not with a problem file")
            prob = load_problem(problem)
            kind = prob.kind
            if solver == "help":
                out.print(_solver_table(kind))
                raise typer.Exit(0)
        options = _parse_options(option or [])
        for fmt in export or []:
            if fmt not in ("verl", "roll") or kind != "placement":
                fail(f"--export {fmt}: supported for placement plans: verl, roll")
        if plot is not None and kind not in PLOTTERS:
            fail(f"--plot: pictures exist for {', '.join(PLOTTERS)} plans, not {kind}")
        if plot is not None and not plot.parent.is_dir():
            fail(f"--plot: no such directory {str(plot.parent)!r}")
        info = default_registry().get(kind, solver)
        if "progress" in info.options and sys.stderr.isatty() and not quiet:
            result = _solve_with_progress(prob, solver, time_limit, seed, options)
        else:
            result = solve(prob, solver, time_limit=time_limit, seed=seed, **options)
    except SpecError as exc:
        fail(str(exc))
    except (UnknownSolverError, TypeError, ValueError) as exc:
        fail(str(exc))
    if not result.success:
        detail = "; ".join(result.violations[:5])
        fail(f"no feasible plan: {result.solver} ended with status {result.status.value}. {result.message} {detail}".strip(), code=1)
    text = result_to_json(result)
    if output == "-":
        sys.stdout.write(text)
    else:
        write_atomic(Path(output), text)
        from costmodels.placement.export import export_roll, export_verl

        for fmt in export or []:
            snippet = (export_verl if fmt == "verl" else export_roll)(result.problem, result.plan)
            target = Path(output).with_suffix(f".{fmt}.yaml")
            write_atomic(target, yaml.safe_dump(snippet, sort_keys=False))
            out.print(f"wrote {target}" + (f" ({len(snippet['not_expressible'])} settings not expressible there, listed in the file)" if snippet["not_expressible"] else ""), highlight=False)
    if plot is not None:
        import tempfile

        # draw to a temporary file first: no partial picture on failure
        with tempfile.NamedTemporaryFile(suffix=".png", dir=plot.parent, delete=False) as tmp:
            PLOTTERS[kind](result.problem, result.plan, result.breakdown, Path(tmp.name), f"{kind} by {result.solver}: ")
        Path(tmp.name).replace(plot)
    if not quiet and output != "-":
        summaries = {"placement": _placement_summary, "circuits": _circuits_summary, "broadcast": _broadcast_summary}
        out.print(summaries.get(result.kind, _generic_summary)(result))
        out.print(f"wrote {output}" + (f" and {plot}" if plot is not None else ""))


def _solve_with_progress(prob: Any, solver: str | None, time_limit: float | None, seed: int, options: dict[str, Any]) -> Result:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} evaluations"),
                  TextColumn("best {task.fields[best]}"), TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task(f"searching ({solver or 'default'})", total=None, best="-")

        def report(used: int, budget: int, best: float) -> None:
            bar.update(task, completed=used, total=budget, best=f"{best:.2f} s" if best < float("inf") else "-")

        return solve(prob, solver, time_limit=time_limit, seed=seed, progress=report, **options)


@app.command()
def validate(
    plan_file: Annotated[Path, typer.Argument(help="a plan JSON written by `rlplan plan`")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable verdict")] = False,
) -> None:
    """Re-check a plan file against its own inputs: exit 0 when valid, 1 with the violations."""
    try:
        doc = read_plan_file(plan_file)
        violations = recheck(doc, str(plan_file))
    except SpecError as exc:
        fail(str(exc))
    if as_json:
        out.print_json(json.dumps({"file": str(plan_file), "valid": not violations, "violations": violations}))
    elif violations:
        err.print(f"invalid: {plan_file}: {len(violations)} violation(s)", markup=False, highlight=False, soft_wrap=True)
        for v in violations:
            err.print(f"  {v}", markup=False, highlight=False, soft_wrap=True)
    else:
        out.print(f"valid: {plan_file} ({doc.problem} plan by {doc.solver}, objective {doc.objective:.6g})", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(1 if violations else 0)


def _task_table(breakdown: dict[str, Any], title: str) -> Table:
    table = Table(title=title)
    table.add_column("task", no_wrap=True)
    for col in ("time", "comp", "tp", "pp", "dp", "bubble", "hbm"):
        table.add_column(col, justify="right", no_wrap=True)
    for name, c in breakdown["tasks"].items():
        table.add_row(name, *(f"{c[k]:.2f}" for k in ("time_s", "comp_s", "tp_s", "pp_s", "dp_s", "bubble_s", "hbm_s")))
    ph = breakdown["phases"]
    table.caption = (f"seconds; iteration {breakdown['iteration_time_s']:.2f} s = generation {ph['generation_s']:.2f}"
                     f" + inference {ph['inference_s']:.2f} + training {ph['training_s']:.2f} + {ph['weight_transfer']}"
                     f" {ph['weight_transfer_s']:.2f};"
                     f" rings {'exact' if breakdown['ring_exact'] else 'upper bounds (heuristic)'}")
    return table


@app.command()
def evaluate(
    plan_file: Annotated[Path, typer.Argument(help="a plan JSON written by `rlplan plan`, or a problem file with a `plan:` section")],
    as_json: Annotated[bool, typer.Option("--json", help="print the breakdown as JSON")] = False,
) -> None:
    """Print a plan's cost breakdown (per task, per component) as the cost model computes it."""
    from planner.planfile import load_plan_and_problem
    from planner.solve import check_plan

    try:
        problem, plan = load_plan_and_problem(plan_file)
    except SpecError as exc:
        fail(str(exc))
    violations, objective, breakdown = check_plan(problem, plan)
    if violations:
        for v in violations:
            err.print(f"  {v}", markup=False, highlight=False, soft_wrap=True)
        fail(f"{plan_file}: the plan violates {len(violations)} constraint(s)", code=1)
    if as_json:
        from planner.planfile import json_safe

        sys.stdout.write(json.dumps(json_safe({"objective": objective, "breakdown": breakdown}), indent=2) + "\n")
        return
    if problem.kind == "placement":
        out.print(_task_table(breakdown, f"{plan_file}: {objective:.2f} s per iteration"))
    else:
        out.print(_breakdown_table(str(plan_file), objective, breakdown))


@estimate_app.command("generation")
def estimate_generation(
    model: Annotated[str, typer.Option(help="model name from the catalog (e.g. Qwen2.5-14B)")] = "Qwen2.5-14B",
    gpu: Annotated[str, typer.Option(help="GPU type from the catalog")] = "H800",
    gpus: Annotated[int, typer.Option(help="GPU budget (TP x DP)")] = 8,
    lengths: Annotated[str, typer.Option(help="histogram CSV (remaining,count[,context]) or NAME:key=value,... (uniform, lognormal, constant)")] = "uniform:low=256,high=4096,n=512,context=1024",
    bin_tokens: Annotated[int, typer.Option("--bin", help="bin width in tokens for named distributions")] = 256,
    max_num_seqs: Annotated[int, typer.Option(help="engine's max concurrent sequences per instance")] = 256,
    gpus_per_node: Annotated[int, typer.Option(help="TP stays inside a node of this many GPUs")] = 8,
    seed: Annotated[int, typer.Option(help="seed for sampling a named distribution")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable rows")] = False,
) -> None:
    """Makespan of the remaining requests under every feasible TP x DP configuration
    (OrchestrRL T_k, §2.1/§4.1), fastest first."""
    from costmodels.catalog import get_gpu, get_model
    from costmodels.decode import ServingParams, sweep
    from costmodels.generation.lengths import parse_distribution, parse_histogram_csv

    try:
        if gpus <= 0:
            raise SpecError("--gpus", gpus, "must be > 0")
        m = get_model(model)
        g = get_gpu(gpu)
        path = Path(lengths)
        if path.exists():
            hist = parse_histogram_csv(path.read_text(encoding="utf-8"), str(path))
        else:
            hist = parse_distribution(lengths, seed=seed, bin_tokens=bin_tokens)
        params = ServingParams(max_num_seqs=max_num_seqs)
    except SpecError as exc:
        fail(str(exc))
    except ValueError as exc:
        fail(str(exc))
    rows = sweep(m, g, gpus, hist.requests(), params, gpus_per_node)
    if not rows:
        fail(f"no TP degree divides {gpus} GPUs within a {gpus_per_node}-GPU node for {model}")
    if as_json:
        from planner.planfile import json_safe

        sys.stdout.write(json.dumps(json_safe({"model": model, "gpu": gpu, "gpus": gpus, "requests": hist.total, "configurations": rows}), indent=2) + "\n")
        return
    table = Table(title=f"{model} on {gpus} x {gpu}: {hist.total} requests, remaining up to {max(hist.upper)} tokens")
    for col in ("TP", "DP", "makespan s", "KV tokens / instance", "peak batch", "decode steps", "feasible"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r["tp"]), str(r["dp"]), f"{r['makespan_s']:.1f}", f"{r['kv_capacity_tokens']:,}", str(r["peak_batch"]), str(r["steps"]), "yes" if r["feasible"] else "no (KV)")
    out.print(table)
    best = rows[0]
    out.print(f"fastest: TP={best['tp']} x DP={best['dp']}", highlight=False)


@presets_app.callback()
def presets_list(ctx: typer.Context, kind: Annotated[str | None, typer.Option(help="only this kind")] = None) -> None:
    """List the shipped presets (any CLI option that takes a file also takes a preset name)."""
    if ctx.invoked_subcommand is not None:
        return
    table = Table(title="rlplan presets")
    for col in ("name", "kind", "description"):
        table.add_column(col)
    for p in presets(kind):
        table.add_row(p.name, p.kind, p.description)
    out.print(table)
    out.print("Show one with `rlplan presets show NAME`; save it with `rlplan presets show NAME > my.yaml`.")


@presets_app.command("show")
def presets_show(name: Annotated[str, typer.Argument(help="preset name")]) -> None:
    """Print a preset as YAML (demand presets as CSV), ready to copy and edit."""
    p = get_preset(name)
    if p is None:
        fail(f"no preset named {name!r}; see `rlplan presets`")
    data = p.data()
    if p.kind == "demand":
        sys.stdout.write("src,dst,bytes\n" + "".join(f"{r['src']},{r['dst']},{r['bytes']:.0f}\n" for r in data))
    else:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
