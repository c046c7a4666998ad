"""``rlplan simulate rollout``: replay rollout plans for one epoch on the generation simulator,
step by step (RollPacker Fig. 10)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from costmodels.errors import SpecError
from planner.cli.console import err, fail, out, say, say_violations
from planner.efficiency_choice import ENGINE_HELP, PROFILE_HELP, efficiency_update
from planner.io import build_problem
from planner.outputs import PLOT_SUFFIXES, check_output, write_picture
from planner.planfile import load_plan_and_problem
from planner.solve import check_plan


def _runs(
    job: str | None,
    plans: list[Path],
    setting: list[str] | None,
    profile: str | None,
    engine: str | None,
) -> tuple[str, list[tuple[str, Any, Any]]]:
    """The (label, plan, problem) runs ``--plan`` and ``--setting`` ask for, and the job's name.
    A baseline is judged on the job the plan was made for, unless ``--job`` names another; with
    ``--profile``/``--engine`` every run is on the same kernels and engine."""
    from costmodels.rollout.space import paper_plan, verl_plan

    named = {"paper": paper_plan, "verl": verl_plan}
    runs: list[tuple[str, Any, Any]] = []
    for path in plans:
        other, p = load_plan_and_problem(path)
        if getattr(other, "kind", None) != "rollout":
            kind = getattr(other, "kind", "?")
            raise SpecError("--plan", str(path), f"holds a {kind} plan, not a rollout plan")
        runs.append((path.name, p, other))
    if job is None and runs:
        problem, job = runs[0][2], str(plans[0])
    else:
        job = job or "rollout-7b-8k"
        problem = build_problem("rollout", {"job": job})
    if profile is not None or engine is not None:
        from costmodels.rollout.kind import KIND as ROLLOUT

        assert ROLLOUT.with_efficiency is not None
        update = efficiency_update(profile, engine)
        problem = ROLLOUT.with_efficiency(problem, update)
        runs = [(label, p, ROLLOUT.with_efficiency(prob, update)) for label, p, prob in runs]
    for name in setting or ([] if plans else ["verl", "paper"]):
        if name not in named:
            raise SpecError("--setting", name, f"known: {', '.join(named)}")
        runs.append((name, named[name](problem.workload), problem))
    return job, runs


def simulate_rollout(
    job: Annotated[
        str | None,
        typer.Option(
            help="rollout job file or preset (rlplan presets --kind job) the named settings "
            "run on [default: the first --plan's own job, else rollout-7b-8k]"
        ),
    ] = None,
    plan: Annotated[
        list[Path] | None,
        typer.Option(
            help=(
                "a plan file written by `rlplan plan rollout`, replayed on its own job; "
                "repeat to compare"
            )
        ),
    ] = None,
    run_invalid: Annotated[
        bool,
        typer.Option(
            "--run-invalid",
            help="replay a plan the validator rejects instead of refusing it (exit 1)",
        ),
    ] = False,
    setting: Annotated[
        list[str] | None,
        typer.Option(
            help=(
                "a named plan: paper (RollPacker's settings) or verl (synchronous); repeat to "
                "compare"
            )
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(help=PROFILE_HELP + "; a file's training fit sets the job's training MFU"),
    ] = None,
    engine: Annotated[str | None, typer.Option(help=ENGINE_HELP)] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            help=(
                "draw per-step rollout time, max response and step breakdown of the first "
                "plan, the second as baseline (Fig. 10a/b), to this PNG"
            )
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable steps")] = False,
) -> None:
    """Replay rollout plans on the generation simulator for one epoch and print every step:
    round kind, TP, rollout, exposed reward and training, longest response, preemptions, when
    the stream trainer scaled (RollPacker Fig. 10). Without --plan or --setting: verl and
    paper."""
    from costmodels.rollout.judge import evaluate_rollout

    try:
        if plot is not None:
            check_output(plot, "--plot", PLOT_SUFFIXES)
        job, runs = _runs(job, plan or [], setting, profile, engine)
    except SpecError as exc:
        fail(exc)
    for label, p, prob in runs:
        violations = check_plan(prob, p)[0]
        if violations and not run_invalid:
            say_violations(err, violations)
            fail(
                f"{label}: the plan violates {len(violations)} constraint(s); --run-invalid "
                "replays it anyway",
                code=1,
            )
    results = [(label, p, *evaluate_rollout(prob, p)) for label, p, prob in runs]
    if plot is not None:
        from costmodels.rollout.plot import plot_rollout

        label, p, obj, b = results[0]
        base = results[1][3] if len(results) > 1 else None
        title = f"{label}: {obj:.1f} s/step" + (
            f" (dashed: {results[1][0]}, {results[1][2]:.1f} s/step)" if base else ""
        )
        write_picture(plot, lambda tmp: plot_rollout(runs[0][2], p, b, tmp, title, baseline=base))
        say(err, f"wrote {plot}")  # stderr: stdout may be --json
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    "job": job,
                    "results": [
                        {
                            "plan": label,
                            "knobs": p.model_dump(),
                            "objective_s": obj,
                            "breakdown": b,
                        }
                        for label, p, obj, b in results
                    ],
                },
                indent=2,
                default=str,
            )
            + "\n"
        )
        return
    for label, _, obj, b in results:
        out.print(_steps_table(label, obj, b))
    if len(results) > 1:
        base = results[0][2]
        out.print(
            "; ".join(
                f"{label}: {base / obj:.2f}x the speed of {results[0][0]}"
                for label, _, obj, _ in results[1:]
            ),
            markup=False,
            highlight=False,
        )


def _steps_table(label: str, objective: float, breakdown: dict[str, Any]) -> Table:
    """One replayed plan, a row per step (RollPacker Fig. 10)."""
    table = Table(title=f"{label}: {objective:.1f} s per step over {breakdown['rounds']} rounds")
    for col in (
        "step",
        "round",
        "TP",
        "rollout s",
        "reward s",
        "train s",
        "step s",
        "max resp",
        "preempt",
        "scaled at s",
    ):
        table.add_column(col, justify="right")
    for i, st in enumerate(breakdown["steps"], 1):
        table.add_row(
            str(i),
            st["kind"],
            str(st["tp"]),
            f"{st['rollout_s']:.1f}",
            f"{st['reward_s']:.1f}",
            f"{st['train_s']:.1f}",
            f"{st['step_s']:.1f}",
            str(st["max_response"]),
            str(st["preemptions"]),
            "-" if st["scaled_at_s"] is None else f"{st['scaled_at_s']:.1f}",
        )
    return table
