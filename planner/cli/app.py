"""The ``rlplan`` app: the root command, and every command of this package mounted on it. The
commands other installed packages add (``bench``, from the benchmarks layer above) join through
the ``rlplan.commands`` entry-point group (:func:`planner.cli.entry.composed_app`)."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from costmodels.limits import DEFAULT_MEMORY_LIMIT_GB
from planner.cli import calibrate, catalog, check, cosched, generation, plan, rollout

app = typer.Typer(
    name="rlplan",
    help=(
        "Plan LLM RL post-training deployments with real solvers on one set of cost models "
        "(`rlplan plan --help` lists the problems)."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)


def _print_version(value: bool) -> None:
    if value:
        from planner import __version__

        sys.stdout.write(f"rlplan {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="print rlplan's version and exit",
        ),
    ] = False,
    memory_limit_gb: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            max=1e6,
            help=(
                "refuse inputs whose simulation would need more memory than this, GB (default "
                f"{DEFAULT_MEMORY_LIMIT_GB:g}, or RLPLAN_MEMORY_LIMIT_GB)"
            ),
        ),
    ] = None,
) -> None:
    """Plan LLM RL post-training deployments with real solvers on one set of cost models."""
    if memory_limit_gb is not None:
        os.environ["RLPLAN_MEMORY_LIMIT_GB"] = repr(
            memory_limit_gb
        )  # read by costmodels.limits, in this process only


app.command("plan")(plan.build_plan_command())
app.command()(check.validate)
app.command()(check.evaluate)
app.command("catalog")(catalog.catalog)
app.command()(calibrate.calibrate)

presets_app = typer.Typer(
    help="List and show the shipped examples (specs and whole problems).",
    invoke_without_command=True,
)
presets_app.callback()(catalog.presets_list)
presets_app.command("show")(catalog.presets_show)
app.add_typer(presets_app, name="presets")

# the problems' own commands, by group: `rlplan simulate cosched` and its kin
simulate_app = typer.Typer(
    help=(
        "Request-level simulation (continuous batching under KV capacity) on the one decode model."
    ),
    no_args_is_help=True,
)
estimate_app = typer.Typer(
    help="Cost-model estimates without solving (generation makespan per TP/DP configuration).",
    no_args_is_help=True,
)
app.add_typer(estimate_app, name="estimate")
app.add_typer(simulate_app, name="simulate")
estimate_app.command("generation")(generation.estimate_generation)
simulate_app.command("generation")(generation.simulate_generation)
simulate_app.command("cosched")(cosched.simulate_cosched)
simulate_app.command("rollout")(rollout.simulate_rollout)
