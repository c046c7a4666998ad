"""``rlplan plan``: a problem's inputs from the command line to :func:`planner.plan`, and its
outcome rendered (the summary table, how the search ended, the files written). The command's
options are built from the registered problems' descriptors: one ``--<field>`` per spec field, so
this module names no problem."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from costmodels.errors import SpecError
from costmodels.problem import ProblemKind
from planner import planning
from planner.cli.console import err, fail, out, say
from planner.cli.progress import watch
from planner.cli.render import print_solver_help, render
from planner.efficiency_choice import ENGINE_HELP, PROFILE_HELP
from planner.planning import PlanOutcome, PlanRequest, default_output, resolve_kind
from planner.registry import UnknownSolverError, default_registry


def _parse_options(pairs: list[str]) -> dict[str, Any]:
    """``-O key=value`` pairs as the solver's options, each value read as YAML (``10`` a number,
    ``true`` a boolean). A key given twice is refused, not "the last one wins": a command line
    edited in a hurry (or built by a script) would otherwise run with a value nobody checked."""
    options: dict[str, Any] = {}
    given: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            fail(f"--option expects key=value, got {pair!r}")
        key, raw = pair.split("=", 1)
        if key in given:
            fail(f"-O: {key} given twice ({key}={given[key]} and {key}={raw}); give it once")
        given[key] = raw
        try:
            options[key] = yaml.safe_load(raw)
        except yaml.YAMLError:
            options[key] = raw
    return options


def _file_fields() -> dict[str, list[ProblemKind]]:
    """Spec fields read from files, by name, with the problems that have them (CLI options)."""
    fields: dict[str, list[ProblemKind]] = {}
    for kind in default_registry().solvable():
        for f in kind.fields:
            if f.file:
                fields.setdefault(f.name, []).append(kind)
    return fields


def plan_command(
    problem: str | None,
    fields: dict[str, str | None],
    solver: str | None,
    time_limit: float | None,
    seed: int,
    option: list[str] | None,
    output: str | None,
    quiet: bool,
    export: list[str] | None,
    plot: Path | None,
    executor: str | None = None,
    ray_address: str | None = None,
    profile: str | None = None,
    engine: str | None = None,
    target: str | None = None,
) -> None:
    """``rlplan plan``: see :func:`plan_options` for the options (built from the problem
    descriptors)."""
    try:
        kind, built = resolve_kind(problem, fields)
        if solver == "help":
            print_solver_help(kind.name)
        output = output if output is not None else default_output(kind.name)
        request = PlanRequest(
            problem=built if built is not None else problem,  # a problem file is read once
            fields=fields,
            solver=solver,
            time_limit=time_limit,
            seed=seed,
            options=_parse_options(option or []),
            executor=executor,
            ray_address=ray_address,
            profile=profile,
            engine=engine,
            target=target,
            output=None if output == "-" else output,
            exports=tuple(export or ()),
            plot=plot,
            watch=None if quiet else watch,
        )
        outcome = planning.plan(request)
    except UnknownSolverError as exc:
        fail(f"--solver: {exc}")
    except (SpecError, ValueError) as exc:
        fail(exc)
    if not outcome.ok:
        fail(str(outcome.failure), code=1)
    _report(outcome, output, plot, quiet)


def _report(outcome: PlanOutcome, output: str, plot: Path | None, quiet: bool) -> None:
    """What ``rlplan plan`` says after a plan: a clock note, the exports written, the summary,
    how the search ended and the files written (the plan itself on stdout for ``-o -``)."""
    result = outcome.result
    if result.clock:  # on stderr even with --quiet or -o -: this plan is not reproducible as is
        say(
            err,
            f"note: {result.clock} (the plan file records it under `clock`; the solver's default "
            "budget without --time-limit is reproducible)",
        )
    if output == "-":
        sys.stdout.write(outcome.plan_json)
    for path, snippet in zip(outcome.written[1:], outcome.exports.values(), strict=False):
        caveats = snippet.get("not_expressible") or []
        out.print(
            f"wrote {path}"
            + (
                f" ({len(caveats)} settings not expressible there, listed in the file)"
                if caveats
                else ""
            ),
            highlight=False,
        )
    if output == "-":
        return
    wrote = f"wrote {output}" + (f" and {plot}" if plot is not None else "")
    if quiet:  # the one result line, and what was written
        say(
            out,
            f"{outcome.kind.name} by {result.solver}: {result.objective:.6g} "
            f"{outcome.kind.units} ({result.status.value}); {wrote}",
        )
        return
    assert outcome.summary is not None
    out.print(render(outcome.summary))
    for line in outcome.notes:
        say(out, line)
    out.print(wrote)


def _complete_problem(incomplete: str) -> list[str]:
    """Shell completion of ``rlplan plan <TAB>``: problem names and whole-problem presets."""
    reg = default_registry()
    names = reg.problems() + [p.name for p in reg.presets("problem")]
    return [n for n in names if n.startswith(incomplete)]


def _complete_solver(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of ``--solver``: the solvers of the problem named on the line (all
    solvers when it is a file), and ``help``."""
    reg = default_registry()
    words = [
        ctx.params.get("problem"),
        *ctx.args,
    ]  # during completion the positional may still sit in args
    problem = next((w for w in words if w in reg.problems()), None) or (
        reg.problems()[0] if not any(words) else None
    )
    kinds = [problem] if problem is not None else reg.problems()
    names = sorted({s.name for k in kinds for s in reg.solvers(k)}) + ["help"]
    return [n for n in names if n.startswith(incomplete)]


def _registered(what: str) -> str:
    """Comma-separated names of the solvable problems that have ``what`` (an option's help)."""
    return ", ".join(k.name for k in default_registry().solvable() if getattr(k, what))


_REG = default_registry()
_TIME_LIMIT_HELP = (
    "seconds a search may use; the best plan found by then is returned. Default: the solver's own "
    "cap "
    "(`--solver help` lists them), here "
    + ", ".join(f"{p} {_REG.get(p).name} {_REG.get(p).time_limit:g} s" for p in _REG.problems())
)
_OUTPUT_HELP = (
    "plan JSON file; `-` for stdout. Default: <problem>-plan.json ("
    + ", ".join(default_output(p) for p in _REG.problems()[:2])
    + ", ...)"
)
_EXPORTS = sorted({e for k in _REG.solvable() for e in k.exports})
_EXPORT_HELP = f"also write a framework config snippet: {', '.join(_EXPORTS) or 'none'}"


def plan_options(
    solver: Annotated[
        str | None,
        typer.Option(
            help="solver name; `help` lists them and their options", autocompletion=_complete_solver
        ),
    ] = None,
    time_limit: Annotated[
        float | None, typer.Option("--time-limit", show_default=False, help=_TIME_LIMIT_HELP)
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            min=0,
            max=2**63 - 1,
            help="random seed, 0 to 2^63-1 (same input, seed and budget: same plan)",
        ),
    ] = 0,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "-O",
            help="solver option key=value (repeatable); `--solver help` lists them",
        ),
    ] = None,
    output: Annotated[
        str | None, typer.Option("--output", "-o", show_default=False, help=_OUTPUT_HELP)
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="one result line and the files written: no table, no progress"
        ),
    ] = False,
    export: Annotated[list[str] | None, typer.Option("--export", help=_EXPORT_HELP)] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help=f"also draw the plan to this PNG ({_registered('plot')})"),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            show_default=False,
            help=(
                "where a search's evaluations run: local (default; -O workers=N for a process "
                "pool) or ray (SHA-EA)"
            ),
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            show_default=False,
            help=(
                "run the evaluations on this Ray cluster (e.g. auto, ray://head:10001); implies "
                "--executor ray"
            ),
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            show_default=False,
            help=(f"{PROFILE_HELP} ({_registered('with_efficiency')}); the plan file records them"),
        ),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine", show_default=False, help=f"{ENGINE_HELP} ({_registered('with_efficiency')})"
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            show_default=False,
            help=(
                "plan only what this framework runs as planned: "
                f"{', '.join(sorted({t for k in _REG.solvable() for t in k.targets}))} "
                f"({_registered('with_target')}); every solver's space is restricted, and the "
                "same solve without it reports what the restriction costs (twice the time)"
            ),
        ),
    ] = None,
) -> None:
    """The options ``rlplan plan`` takes for every problem. The command is ``rlplan plan
    [PROBLEM] [--<field> ...] <these>``: the positional problem, then one ``--<field>`` per spec
    field of the registered problems (``--cluster``, ``--fabric``, ...; :func:`_file_fields`,
    from the descriptors), then these (:func:`build_plan_command` joins the three)."""


def build_plan_command() -> Any:
    """The typer command ``plan``: the problem argument, one ``--<field>`` option per spec field
    of the registered problems (the descriptors decide, not this module), and
    :func:`plan_options`."""
    reg = default_registry()
    names = ", ".join(reg.problems())
    P = inspect.Parameter
    params = [
        P(
            "problem",
            P.POSITIONAL_OR_KEYWORD,
            default=None,
            annotation=Annotated[
                str | None,
                typer.Argument(
                    help=f"{names}, or a problem file / preset name; default {reg.problems()[0]}",
                    show_default=False,
                    autocompletion=_complete_problem,
                ),
            ],
        )
    ]
    file_fields = _file_fields()
    for name, kinds in file_fields.items():
        helps = "; ".join(f"{k.spec_field(name).help} ({k.name})" for k in kinds)
        params.append(
            P(
                name,
                P.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[str | None, typer.Option(help=helps)],
            )
        )
    params += [
        p.replace(kind=P.KEYWORD_ONLY)
        for p in inspect.signature(plan_options, eval_str=True).parameters.values()
    ]

    def plan(**kwargs: Any) -> None:
        fields = {name: kwargs.pop(name) for name in file_fields}
        plan_command(kwargs.pop("problem"), fields, **kwargs)

    plan.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    plan.__doc__ = (
        "Solve a planning problem and write its plan JSON. With no arguments: the shipped default "
        f"example ({reg.problems()[0]}: "
        + ", ".join(f"{k}={v}" for k, v in reg.solvable()[0].defaults().items())
        + ")."
    )
    return plan
