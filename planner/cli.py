"""The ``rlplan`` command line (typer + rich).

Exit codes (docs/architecture.md, "Interfaces people use"): 0 a plan was written / the check
passed; 1 no feasible plan, or a plan file with violations; 2 bad input or usage, with one line
naming the file, field and value.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from costmodels.errors import SpecError, from_validation
from costmodels.limits import DEFAULT_MEMORY_LIMIT_GB
from costmodels.problem import COMMAND_GROUPS, CommandKit, ProblemKind, SolvedPlan, Summary
from planner.io import build_problem, load_problem, read_text, solvable_kind, write_atomic
from planner.outputs import PLOT_SUFFIXES, check_distinct, check_output, write_picture
from planner.planfile import read_plan_file, recheck, result_to_json
from planner.presets import get_preset, presets
from planner.registry import UnknownSolverError, default_registry, resolve
from planner.result import Result
from planner.solve import solve

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
presets_app = typer.Typer(
    help="List and show the shipped examples (specs and whole problems).",
    invoke_without_command=True,
)
app.add_typer(presets_app, name="presets")

out = Console()
err = Console(stderr=True)


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


def fail(message: str | Exception, code: int = 2) -> NoReturn:
    """One line on stderr and exit ``code``; an exception is rendered as its one-line message
    (pydantic's several-line report as its first error)."""
    if isinstance(message, ValidationError):
        message = from_validation(message)
    err.print("[bold red]error:[/] ", end="")
    err.print(" ".join(str(message).split()), markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


PROFILE_HELP = (
    "decode and prefill kernels: aic-vllm (default: the shipped profiles fitted to "
    "AIConfigurator's vLLM "
    "measurements), a file `rlplan calibrate` wrote (its GPU types first, the shipped ones for "
    "the rest), or flat "
    "(the fixed compute and HBM fractions of rlplan 0.x)"
)


ENGINE_HELP = (
    "serving engine's CPU time per decode step: cuda-graph (default: vLLM's, and verl's since "
    "0.6) or "
    "eager (enforce_eager, verl's up to 0.5 and the papers' veRL baselines; fitted to OrchestrRL "
    "§2.1)"
)


def _efficiency_update(profile: str | None, engine: str | None) -> dict[str, Any]:
    """The efficiency fields ``--profile`` and ``--engine`` set."""
    from costmodels.profiles import engine_profiles
    from planner.io import load_profile_file

    update: dict[str, Any] = {}
    if profile == "flat" and not Path(profile).exists():
        update.update(kernels="flat", profiles={})
    elif profile is not None:
        try:
            profiles, training = load_profile_file(profile)
            update["profiles"] = profiles
            if training:
                update["training_mfu"] = {gpu: fit.mfu for gpu, fit in training.items()}
        except SpecError as exc:
            raise exc if exc.source else SpecError("--profile", profile, exc.reason) from None
    if engine is not None:
        engines = engine_profiles()
        if engine not in engines:
            raise SpecError("--engine", engine, f"one of {', '.join(engines)}")
        update.update(engines[engine].efficiency_update())
    return update


def _efficiency(profile: str | None, engine: str | None = None) -> Any:
    """The default efficiency set, with ``--profile``'s fitted profiles and ``--engine``'s
    overheads when given."""
    from costmodels.efficiency import Efficiency

    return Efficiency(**_efficiency_update(profile, engine))


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
    for col in ("solver", "exact", "default limit", "description"):
        table.add_column(col)
    for s in reg.solvers(problem):
        name = s.name + (" (default)" if s.name == reg.default(problem) else "")
        table.add_row(name, "yes" if s.exact else "no", f"{s.time_limit:g} s", s.description)
    return table


def _options_table(problem: str) -> Table:
    table = Table(title=f"options (-O key=value) of the solvers for `{problem}`")
    for col in ("solver", "option", "type", "default", "meaning"):
        table.add_column(col)
    for s in default_registry().solvers(problem):
        for i, (name, kind, default, meaning) in enumerate(s.option_help()):
            table.add_row(s.name if i == 0 else "", name, kind, default, meaning)
    return table


def _print_solver_help(problem: str) -> NoReturn:
    out.print(_solver_table(problem))
    out.print(_options_table(problem))
    out.print(
        "Every solver also takes --time-limit S (default: its limit above, a cap it stops at; a "
        "search given --time-limit uses all of it) and --seed N.",
        highlight=False,
    )
    raise typer.Exit(0)


def render(summary: Summary) -> Table:
    """A problem's :class:`Summary` as a rich table."""
    table = Table(title=summary.title)
    for i, col in enumerate(summary.columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for row in summary.rows:
        table.add_row(*row)
    table.caption = summary.caption or None
    return table


def _breakdown_summary(title: str, objective: float | None, breakdown: dict[str, Any]) -> Summary:
    rows = [("objective", f"{objective:.6g}" if objective is not None else "-")]
    rows += [(str(k), str(v)) for k, v in breakdown.items()]
    return Summary(title, ("field", "value"), rows)


def _file_fields() -> dict[str, list[ProblemKind]]:
    """Spec fields read from files, by name, with the problems that have them (CLI options)."""
    fields: dict[str, list[ProblemKind]] = {}
    for kind in default_registry().solvable():
        for f in kind.fields:
            if f.file:
                fields.setdefault(f.name, []).append(kind)
    return fields


def default_output(problem: str) -> str:
    """The plan file ``rlplan plan`` writes without ``-o``: one per problem, so planning one
    problem never overwrites another's plan."""
    return f"{problem}-plan.json"


def plan_command(  # noqa: C901
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
    """``rlplan plan``: see :func:`plan` for the options (built from the problem descriptors)."""
    reg = default_registry()
    given = {k: v for k, v in fields.items() if v is not None}
    problem = problem or reg.solvable()[0].name
    try:
        if problem in {k.name for k in reg.kinds()}:
            kind = solvable_kind(problem, None, reg)
            stray = sorted(set(given) - {f.name for f in kind.fields})
            if stray:
                fail(f"--{stray[0]} does not apply to a {problem} problem")
            prob = None  # built after `--solver help`, which needs no inputs
        else:
            if given:
                fail(
                    f"--{sorted(given)[0]} goes with a problem name "
                    f"({', '.join(reg.problems())}), not with a problem file"
                )
            prob = load_problem(problem)
            kind = reg.kind_of(prob)
        if solver == "help":
            _print_solver_help(kind.name)
        # outputs are checked before solving, so a bad path never costs a search or loses its plan
        output = output if output is not None else default_output(kind.name)
        targets: dict[str, Path] = {}
        if output == "-" and export:
            fail(
                f"--export {export[0]}: an export is written beside the plan file "
                f"(PLAN.{export[0]}.yaml); give -o a file, not - (stdout)"
            )
        if output != "-":
            targets["-o"] = check_output(output, "-o")
            for fmt in export or []:
                targets[f"--export {fmt}"] = check_output(
                    Path(output).with_suffix(f".{fmt}.yaml"), f"--export {fmt}"
                )
        if plot is not None:
            targets["--plot"] = check_output(plot, "--plot", PLOT_SUFFIXES)
        check_distinct(targets)
        for flag, value in (("--profile", profile), ("--engine", engine)):
            if value is not None and kind.with_efficiency is None:
                fail(
                    f"{flag}: a {kind.name} problem has no decode kernels to calibrate; "
                    f"{', '.join(k.name for k in reg.solvable() if k.with_efficiency)} take one"
                )
        _check_target(kind, target)
        if prob is None:
            prob = build_problem(kind.name, {**kind.defaults(), **given})
        if profile is not None or engine is not None:
            assert kind.with_efficiency is not None
            prob = kind.with_efficiency(prob, _efficiency_update(profile, engine))
        if target is not None:
            assert kind.with_target is not None
            prob = kind.with_target(prob, target)
        info = reg.get(kind.name, solver)
        options = _parse_options(option or [])
        options.update(_executor_options(info, executor, ray_address, options))
        for fmt in export or []:
            if fmt not in kind.exports:
                supported = (
                    ", ".join(f"{e} ({k.name})" for k in reg.solvable() for e in k.exports)
                    or "none"
                )
                fail(f"--export {fmt}: not available for {kind.name} plans; exports: {supported}")
        if plot is not None and kind.plot is None:
            fail(
                "--plot: pictures exist for "
                f"{', '.join(k.name for k in reg.solvable() if k.plot)} plans, not {kind.name}"
            )
        info.validate_options(
            options
        )  # solve() checks again; here so a bad value never opens a progress display
        result = _solve_with_progress(prob, info, time_limit, seed, options, quiet)
        if target is not None and result.success:
            assert kind.with_target is not None
            free = solve(
                kind.with_target(prob, None), info.name, time_limit=time_limit, seed=seed, **options
            )
            result.stats["target"] = restriction_cost(target, result, free)
    except SpecError as exc:
        fail(exc)
    except (UnknownSolverError, ValueError) as exc:
        fail(exc)
    if not result.success:
        detail = "; ".join(result.violations[:5])
        fail(
            f"no feasible plan: {result.solver} ended with status {result.status.value}. "
            f"{result.message} {detail}".strip(),
            code=1,
        )
    if result.objective is None or not math.isfinite(result.objective):
        fail(
            f"no usable plan: {result.solver}'s plan has objective {result.objective} (the cost "
            "model overflowed or the plan serves nothing)",
            code=1,
        )
    text = result_to_json(result)
    if result.clock:  # on stderr even with --quiet or -o -: this plan is not reproducible as is
        err.print(
            f"note: {result.clock} (the plan file records it under `clock`; the solver's default "
            "budget without --time-limit is reproducible)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if output == "-":
        sys.stdout.write(text)
    else:
        write_atomic(Path(output), text)
        for fmt in export or []:
            snippet = kind.exports[fmt](result.problem, result.plan)
            target = Path(output).with_suffix(f".{fmt}.yaml")
            write_atomic(target, export_text(snippet))
            caveats = snippet.get("not_expressible") or []
            out.print(
                f"wrote {target}"
                + (
                    f" ({len(caveats)} settings not expressible there, listed in the file)"
                    if caveats
                    else ""
                ),
                highlight=False,
            )
    if plot is not None:
        write_picture(
            plot,
            lambda tmp: kind.plot(
                result.problem,
                result.plan,
                result.breakdown,
                tmp,
                f"{kind.name} by {result.solver}: ",
            ),
        )
    if not quiet and output != "-":
        # what came back and why the solver stopped, apart (a time-capped MILP and a
        # finished search are both "feasible")
        status = result.status.value + (
            f": {result.termination.phrase}" if result.termination is not None else ""
        )
        if kind.summary_table is not None:
            summary = kind.summary_table(
                SolvedPlan(
                    result.problem,
                    result.plan,
                    result.objective,
                    result.breakdown,
                    result.solver,
                    status,
                )
            )
        else:
            summary = _breakdown_summary(
                f"{kind.name} by {result.solver} ({status})", result.objective, result.breakdown
            )
        out.print(render(summary))
        for line in outcome_lines(result) + target_lines(result, kind.units):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        out.print(f"wrote {output}" + (f" and {plot}" if plot is not None else ""))


def export_text(snippet: dict[str, Any]) -> str:
    """An export's file: its ``document`` (what the framework loads) under its ``comments``, or,
    for an export without one, the whole mapping."""
    header = "".join(f"# {line}\n" for line in snippet.get("comments", []))
    return header + yaml.safe_dump(snippet.get("document", snippet), sort_keys=False)


def _check_target(kind: ProblemKind, target: str | None) -> None:
    """``--target`` names a framework this problem knows (before any work starts)."""
    if target is None:
        return
    if kind.with_target is None:
        having = ", ".join(k.name for k in default_registry().solvable() if k.with_target)
        fail(f"--target {target}: {kind.name} plans have no framework restriction ({having} do)")
    if target not in kind.targets:
        fail(
            f"--target {target!r}: not a framework rlplan plans for; choose "
            + ", ".join(kind.targets)
        )


def restriction_cost(target: str, restricted: Result, free: Result) -> dict[str, Any]:
    """What ``--target`` costs: the restricted plan against the same solver, seed and budget on
    the unrestricted space (an exact solver's ratio is between two optima)."""
    row: dict[str, Any] = {
        "framework": target,
        "objective": restricted.objective,
        "unrestricted_objective": free.objective if free.success else None,
        "unrestricted_status": free.status.value,
        "ratio": None,
    }
    if free.success and free.objective and restricted.objective is not None:
        row["ratio"] = restricted.objective / free.objective
    return row


def target_lines(result: Result, units: str) -> list[str]:
    """The ``--target`` line under the summary: what running in that framework costs."""
    row = result.stats.get("target")
    if not row:
        return []
    if row["ratio"] is None:
        return [
            f"--target {row['framework']}: the unrestricted solve found no plan "
            f"({row['unrestricted_status']}), so its cost is unknown"
        ]
    return [
        f"--target {row['framework']}: {100 * (row['ratio'] - 1):+.1f}% against the best plan "
        f"of the whole space ({row['unrestricted_objective']:.6g} {units}, "
        f"{result.solver} {row['unrestricted_status']}, same seed and budget)"
    ]


def outcome_lines(result: Result) -> list[str]:
    """What a person should know about how the search ended, under the summary table: the
    solver's own words (e.g. SHA-EA's "the StreamRL seed was not beaten"), the gap to the
    proven bound when there is one, and whether a time limit stopped it."""
    said = result.message.strip()
    lines = (
        [said if said.lower().startswith(result.solver.lower()) else f"{result.solver}: {said}"]
        if said
        else []
    )
    if result.bound is not None and result.gap is not None:
        lines.append(
            f"bound {result.bound:.6g}, gap {100 * result.gap:.3g}%"
            + (" (proven optimal)" if result.gap <= 1e-9 else "")
        )
    limit = (
        result.time_limit
        if result.time_limit is not None
        else result.stats.get("default_time_limit")
    )
    if limit is not None:
        whose = "its" if result.time_limit is not None else "the default"
        used = f"took {result.wall_time_s:.1f} s of {whose} {limit:g} s limit"
        lines.append(
            used + ("" if result.time_limit is not None else " (--time-limit S to change it)")
        )
    return lines


def _executor_options(
    info: Any, executor: str | None, ray_address: str | None, options: dict[str, Any]
) -> dict[str, Any]:
    """``--executor`` / ``--ray-address`` as the solver's ``executor`` / ``ray_address`` options
    (SHA-EA's evaluations on Ray); a solver that evaluates in its own process gets a clear no."""
    given = {
        k: v for k, v in (("executor", executor), ("ray_address", ray_address)) if v is not None
    }
    if not given:
        return {}
    flag = "--executor" if executor is not None else "--ray-address"
    if executor is not None and executor not in ("local", "ray"):
        fail(f"{flag} {executor}: use local or ray")
    if "executor" not in info.options:
        distributed = [
            s.name for s in default_registry().solvers(info.problem) if "executor" in s.options
        ]
        fail(
            f"{flag}: solver {info.name!r} runs in this process; the solvers that distribute "
            "their evaluations take it "
            f"({', '.join(distributed) or 'none here'})"
        )
    clash = sorted(k for k in given if k in options)
    if clash:
        fail(f"{flag} and -O {clash[0]}=... both set {clash[0]}: give one")
    if ray_address is not None and executor == "local":
        fail(f"--ray-address {ray_address} needs --executor ray (it is local)")
    return {
        "executor": executor or "ray",
        **({"ray_address": ray_address} if ray_address is not None else {}),
    }


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
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no summary table")] = False,
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
    from the descriptors), then these (:func:`_build_plan_command` joins the three)."""


def _build_plan_command() -> Any:
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


app.command("plan")(_build_plan_command())


#: seconds between progress lines on stderr when it is not a terminal (RLPLAN_PROGRESS_EVERY)
PROGRESS_EVERY_S = 5.0


def _solve_with_progress(
    prob: Any, info: Any, time_limit: float | None, seed: int, options: dict[str, Any], quiet: bool
) -> Result:
    """Solve with a live display on a terminal (a bar for solvers that count evaluations, a
    spinner with the clock for the others) and, outside one, a progress line on stderr every few
    seconds, so a long run in CI or under ``nohup`` is never silent. ``--quiet`` shows neither."""
    if quiet:
        return solve(prob, info.name, time_limit=time_limit, seed=seed, **options)
    limit = time_limit if time_limit is not None else info.time_limit
    what = f"{info.problem} by {info.name}, limit {limit:g} s" + (
        "" if time_limit is not None else " (default)"
    )
    if sys.stderr.isatty():
        return _solve_on_terminal(prob, info, what, time_limit, seed, options)
    state: dict[str, Any] = {"used": None, "budget": None, "best": math.inf}

    def remember(used: int, budget: int, best: float) -> None:
        state.update(used=used, budget=budget, best=best)

    every = float(os.environ.get("RLPLAN_PROGRESS_EVERY", PROGRESS_EVERY_S) or PROGRESS_EVERY_S)
    done = threading.Event()
    start = time.perf_counter()

    def heartbeat() -> None:
        while not done.wait(every):
            line = f"rlplan: solving {what}: {time.perf_counter() - start:.0f} s"
            if state["used"] is not None:
                line += f", {state['used']}/{state['budget']} evaluations"
            if math.isfinite(state["best"]):
                line += f", best {state['best']:.6g}"
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    thread = threading.Thread(target=heartbeat, name="rlplan-progress", daemon=True)
    thread.start()
    try:
        return solve(
            prob, info.name, time_limit=time_limit, seed=seed, progress=remember, **options
        )
    finally:
        done.set()
        thread.join()


def _solve_on_terminal(
    prob: Any, info: Any, what: str, time_limit: float | None, seed: int, options: dict[str, Any]
) -> Result:
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = [SpinnerColumn(), TextColumn("[progress.description]{task.description}")]
    if info.takes_progress:
        columns += [
            BarColumn(),
            TextColumn("{task.completed}/{task.total} evaluations"),
            TextColumn("best {task.fields[best]}"),
        ]
    with Progress(*columns, TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task(f"solving {what}", total=None, best="-")

        def report(used: int, budget: int, best: float) -> None:
            bar.update(
                task, completed=used, total=budget, best=f"{best:.6g}" if best < math.inf else "-"
            )

        return solve(prob, info.name, time_limit=time_limit, seed=seed, progress=report, **options)


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
        fail(exc)
    if as_json:
        out.print_json(
            json.dumps({"file": str(plan_file), "valid": not violations, "violations": violations})
        )
    elif violations:
        err.print(
            f"invalid: {plan_file}: {len(violations)} violation(s)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        for v in violations:
            err.print(f"  {v}", markup=False, highlight=False, soft_wrap=True)
    else:
        out.print(
            f"valid: {plan_file} ({doc.problem} plan by {doc.solver}, objective "
            f"{doc.objective:.6g})",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    raise typer.Exit(1 if violations else 0)


@app.command()
def evaluate(
    plan_file: Annotated[
        Path,
        typer.Argument(
            help="a plan JSON written by `rlplan plan`, or a problem file with a `plan:` section"
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="print the breakdown as JSON")] = False,
) -> None:
    """Print a plan's cost breakdown (per task, per component) as the cost model computes it."""
    from planner.planfile import load_plan_and_problem
    from planner.solve import check_plan

    try:
        problem, plan = load_plan_and_problem(plan_file)
    except SpecError as exc:
        fail(exc)
    violations, objective, breakdown = check_plan(problem, plan)
    if violations:
        for v in violations:
            err.print(f"  {v}", markup=False, highlight=False, soft_wrap=True)
        fail(f"{plan_file}: the plan violates {len(violations)} constraint(s)", code=1)
    if as_json:
        from planner.planfile import json_safe

        sys.stdout.write(
            json.dumps(json_safe({"objective": objective, "breakdown": breakdown}), indent=2) + "\n"
        )
        return
    kind = default_registry().kind_of(problem)
    if kind.evaluate_table is not None:
        out.print(render(kind.evaluate_table(problem, plan, objective, breakdown, str(plan_file))))
    else:
        out.print(render(_breakdown_summary(str(plan_file), objective, breakdown)))


@presets_app.callback()
def presets_list(
    ctx: typer.Context,
    kind: Annotated[str | None, typer.Option(help="only this kind")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable list")] = False,
) -> None:
    """List the shipped presets (any CLI option that takes a file also takes a preset name)."""
    if ctx.invoked_subcommand is not None:
        return
    kinds = sorted({p.kind for p in presets()})
    if kind is not None and kind not in kinds:
        fail(f"--kind: no presets of kind {kind!r}; kinds: {', '.join(kinds)}")
    if as_json:
        sys.stdout.write(
            json.dumps(
                [
                    {"name": p.name, "kind": p.kind, "description": p.description}
                    for p in presets(kind)
                ],
                indent=2,
            )
            + "\n"
        )
        return
    table = Table(title="rlplan presets")
    for col in ("name", "kind", "description"):
        table.add_column(col)
    for p in presets(kind):
        table.add_row(p.name, p.kind, p.description)
    out.print(table)
    out.print(
        "Show one with `rlplan presets show NAME`; save it with `rlplan presets show NAME > "
        "my.yaml`."
    )


@app.command("catalog")
def catalog(
    what: Annotated[str, typer.Argument(help="gpus or models")] = "gpus",
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable list")] = False,
) -> None:
    """List the GPU types or models rlplan knows (the names cluster and workflow files use)."""
    from costmodels.catalog import gpu_catalog, model_catalog

    if what not in ("gpus", "models"):
        fail(f"catalog: unknown list {what!r}; use gpus or models")
    items = list((gpu_catalog() if what == "gpus" else model_catalog()).values())
    if as_json:
        sys.stdout.write(json.dumps([i.model_dump(mode="json") for i in items], indent=2) + "\n")
        return
    if what == "gpus":
        title = "GPU types (cluster files: nodes[].gpu; custom ones under gpus:)"
        columns = ("name", "BF16 TFLOP/s", "memory GB", "HBM GB/s", "link GB/s", "$/h")
        rows = [
            (
                g.name,
                f"{g.tflops_bf16_dense:g}",
                f"{g.memory_gb:g}",
                f"{g.hbm_gb_per_s:g}",
                f"{g.link_gb_per_s:g}",
                f"{g.usd_per_hour:g}" if g.usd_per_hour is not None else "-",
            )
            for g in items
        ]
    else:
        title = "models (workflow files: models.actor etc.; custom ones under custom_models:)"
        columns = ("name", "params (B)", "layers", "hidden", "heads / KV heads", "MoE")
        rows = [
            (
                m.name,
                f"{m.params_b:g}",
                str(m.layers),
                str(m.hidden),
                f"{m.query_heads} / {m.kv_heads}",
                "yes" if m.is_moe else "",
            )
            for m in items
        ]
    table = render(Summary(title, columns, rows))
    out.print(table)


@presets_app.command("show")
def presets_show(name: Annotated[str, typer.Argument(help="preset name")]) -> None:
    """Print a preset in the format its files use (YAML; demands as CSV), ready to copy and edit."""
    p = get_preset(name)
    if p is None:
        fail(f"no preset named {name!r}; see `rlplan presets`")
    data = p.data()
    sys.stdout.write(p.text(data) if p.text is not None else yaml.safe_dump(data, sort_keys=False))


def command_kit() -> CommandKit:
    """What a problem's own commands borrow from the planner (see :class:`CommandKit`)."""
    from planner.planfile import json_safe, load_plan_and_problem
    from planner.solve import check_plan

    return CommandKit(
        out=out,
        err=err,
        fail=fail,
        build_problem=build_problem,
        load_plan_and_problem=load_plan_and_problem,
        check_plan=check_plan,
        efficiency_update=_efficiency_update,
        efficiency=_efficiency,
        profile_help=PROFILE_HELP,
        engine_help=ENGINE_HELP,
        check_output=check_output,
        write_picture=write_picture,
        plot_suffixes=PLOT_SUFFIXES,
        read_text=read_text,
        json_safe=json_safe,
    )


def mount_problem_commands(root: typer.Typer) -> None:
    """Mount every registered problem's own commands (``ProblemKind.commands``) under their
    groups (``rlplan simulate <problem>`` comes from that problem's descriptor): this module names
    no
    problem. A command module is imported here, its heavy imports stay inside its commands."""
    kit = command_kit()
    groups: dict[str, typer.Typer] = {}
    for kind in default_registry().kinds():
        for entry in kind.commands:
            if entry.group not in COMMAND_GROUPS:
                raise ValueError(
                    f"{kind.name}: command {entry.name!r} joins unknown group {entry.group!r}; "
                    f"groups: {', '.join(COMMAND_GROUPS)}"
                )
            if entry.group not in groups:
                groups[entry.group] = typer.Typer(
                    help=COMMAND_GROUPS[entry.group], no_args_is_help=True
                )
                root.add_typer(groups[entry.group], name=entry.group)
            injected = {key: resolve(target) for key, target in entry.inject.items()}
            groups[entry.group].command(entry.name)(resolve(entry.target)(kit, **injected))


mount_problem_commands(app)
