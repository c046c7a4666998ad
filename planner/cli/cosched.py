"""``rlplan simulate cosched``: replay a job trace under the co-scheduling policies (RollMux
§7.4-7.5). The ``optimal`` policy re-solves the offline optimum (``formulations.cosched.partition``)
at every arrival; the command line, above both layers, hands it to the trace simulation in
``heuristics.cosched.cluster_trace`` (``docs/architecture.md``, "The house")."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from costmodels.errors import SpecError
from planner.cli.console import err, fail, out, say
from planner.io import build_problem
from planner.outputs import PLOT_SUFFIXES, check_output, write_picture


def simulate_cosched(
    trace: Annotated[
        str,
        typer.Option(
            help="jobs file or preset whose jobs carry arrival_s and duration_s, or a "
            "generator: philly:jobs=300,hours=580,mean_hours=14.4,workload=mixed,seed=0 or "
            "production:jobs=200,hours=192,seed=0 or "
            "production-mix:jobs=200,hours=336,seed=0 or "
            "philly-log:jobs=300,skip=0 (real Philly arrivals: the shipped public sample, or "
            "path=cluster_job_log)"
        ),
    ] = "philly:jobs=60,hours=120",
    policy: Annotated[
        list[str] | None,
        typer.Option(
            help=(
                "rollmux, rollmux-unpruned, random, greedy (§7.5: no SLO check), random-slo, "
                "greedy-slo, solo, colocated or optimal; repeat to compare (default: rollmux, "
                "random, greedy, solo, colocated)"
            )
        ),
    ] = None,
    baseline_slo_check: Annotated[
        bool,
        typer.Option(
            help=(
                "let random and greedy refuse placements that break an SLO (the paper's "
                "baselines do not)"
            )
        ),
    ] = False,
    seed: Annotated[int, typer.Option(min=0, max=2**63 - 1, help="seed of the random policy")] = 0,
    migration_gain: Annotated[
        float,
        typer.Option(
            min=0.5,
            max=4.0,
            help="long-tail migration's period gain in co-executed groups (§4.3; the "
            "replay measures 0.97-1.13, python -m benchmarks.cosched_migration); 1 is off",
        ),
    ] = 1.0,
    plot: Annotated[
        Path | None,
        typer.Option(
            help=("draw cost and GPUs over time and a Gantt chart of the largest group to this PNG")
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable result")] = False,
) -> None:
    """Replay a job trace on shared rollout and training pools (RollMux §7.4-7.5): each arrival
    placed by the policy, departures free capacity; cost over time, peak GPUs, SLO attainment
    (``heuristics.cosched.cluster_trace``). ``optimal`` re-solves the offline optimum at every
    arrival."""
    from costmodels.cosched.arrivals import GENERATORS, generate
    from formulations.cosched.partition import solve_cosched_optimal
    from heuristics.cosched.cluster_trace import POLICIES, simulate_trace

    policies = policy or ["rollmux", "random", "greedy", "solo", "colocated"]
    try:
        for p in policies:
            if p not in POLICIES:
                raise SpecError("--policy", p, f"known: {', '.join(POLICIES)}")
        if plot is not None:
            check_output(plot, "--plot", PLOT_SUFFIXES)
        data: Any = generate(trace) if trace.partition(":")[0] in GENERATORS else trace
        problem = build_problem("cosched", {"jobs": data})
        results = [
            simulate_trace(
                problem,
                p,
                seed=seed,
                baseline_slo_check=baseline_slo_check,
                migration_gain=migration_gain,
                solve_optimal=solve_cosched_optimal,
            )
            for p in policies
        ]
    except SpecError as exc:
        fail(str(exc.with_source(trace)))
    if plot is not None:
        from costmodels.cosched.group import cosched_model, round_robin_schedule
        from costmodels.cosched.plot import plot_trace

        first = results[0]
        gantt = None
        if first.snapshot:
            g = max(first.snapshot, key=lambda g: len(g.members))
            gantt = (
                round_robin_schedule(cosched_model(problem), g, 2),
                g.rollout_nodes if not g.colocated else 0,
                f"{first.policy}: the largest group when the most jobs ran, two meta-iterations",
            )
        write_picture(
            plot,
            lambda tmp: plot_trace(
                results,
                gantt,
                tmp,
                f"{len(problem.jobs.jobs)} jobs ({problem.jobs.name or trace})",
            ),
        )
        say(err, f"wrote {plot}")  # stderr: stdout may be --json
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    "trace": problem.jobs.name or trace,
                    "results": [r.to_dict() for r in results],
                },
                indent=2,
            )
            + "\n"
        )
        return
    out.print(_trace_table(results, problem, trace))
    for r in results:
        if r.unproven:
            out.print(
                f"{r.policy}: {r.unproven} of {len(r.decisions)} re-solves stopped at their "
                "time limit; those plans are the best found, not proven optimal"
            )


def _trace_table(results: list[Any], problem: Any, trace: str) -> Table:
    """Each policy's replay: cost, peak GPUs, SLO attainment, slowdown, decision latency."""
    table = Table(title=f"{len(problem.jobs.jobs)} jobs ({problem.jobs.name or trace})")
    table.caption = (
        "$/h: time-weighted mean and peak; GPUs: peak per pool; slowdown: mean wall time over "
        "time alone; latency: slowest placement decision"
    )
    for col in (
        "policy",
        "$/h",
        "peak $/h",
        "roll GPUs",
        "train GPUs",
        "SLO met",
        "slowdown",
        "latency",
    ):
        table.add_column(
            col, justify="left" if col == "policy" else "right", no_wrap=col == "policy"
        )
    for r in results:
        s = r.summary()
        table.add_row(
            r.policy,
            f"{s['mean_cost_per_h']:,.0f}",
            f"{s['peak_cost_per_h']:,.0f}",
            str(s["peak_rollout_gpus"]),
            str(s["peak_train_gpus"]),
            f"{s['slo_attainment']:.0%}",
            f"{s['mean_slowdown']:.2f}",
            f"{s['max_decision_s'] * 1e3:.1f} ms",
        )
    return table
